//! Dynamic batching stepped by hand, and its invariants over random arrivals: every request is
//! settled exactly once, a batch is one invocation that meets every member's deadline.

use super::*;
use crate::model::{Kind, Link, Platform, Request, Time, Unit};
use crate::policy::batching::Batching;
use crate::policy::{Allocator, IntervalStats, Objective, Scheduler};
use proptest::prelude::*;

const US: Time = 1_000;

/// Holds one warm FPGA throughout.
struct OneBoard;

impl Allocator for OneBoard {
    fn initial(&mut self) -> u32 {
        1
    }
    fn plan(&mut self, _: &IntervalStats) -> u32 {
        1
    }
}

/// A board with a 50 us invocation and nothing charged per byte, at the paper's speedup of 2.
fn platform() -> Platform {
    let mut p = Platform::default();
    p.fpga.link = Some(Link { invocation: 50 * US, bytes_per_s: 0.0, bytes_per_cpu_s: 0.0 });
    p
}

/// A hybrid pool (SporkE's dispatcher) holding one warm board, batching by `rule`.
fn engine(rule: Batching) -> Engine {
    let plan = Plan { batching: Some(rule), ..Plan::new(Scheduler::Spork(Objective::ENERGY)) };
    Engine::with_allocator(platform(), &plan, Box::new(OneBoard))
}

/// Records how held requests were settled, call by call.
#[derive(Default)]
struct Settled(Vec<Vec<(u64, Arrival)>>);

impl Effects for Settled {
    fn resolved(&mut self, held: &[(u64, Arrival)]) {
        self.0.push(held.to_vec());
    }
}

fn assigned(a: &Arrival) -> Assignment {
    match a {
        Arrival::Assigned(a) => *a,
        other => panic!("not booked: {other:?}"),
    }
}

#[test]
fn requests_close_together_share_one_invocation_once_the_delay_is_up() {
    let rule = Batching::new(8, &[], 200 * US).expect("valid");
    let mut e = engine(rule);
    let mut fx = Settled::default();
    e.begin(60_000_000_000, &mut fx);
    for (ticket, at) in [(1, 0), (2, 10 * US), (3, 20 * US)] {
        e.advance(at, true, &mut fx);
        let arrival = e.arrive_by(Request::new(at, 100 * US, 0), None, ticket, &mut fx);
        assert_eq!(arrival, Arrival::Held(ticket));
    }
    assert!(fx.0.is_empty(), "nothing settled before the delay is up");
    assert_eq!(e.next_event(true), Some(200 * US), "the batch's delay is the next event");
    e.advance(199 * US, true, &mut fx);
    assert!(fx.0.is_empty());
    e.advance(200 * US, true, &mut fx);
    assert_eq!(fx.0.len(), 1, "one batch");
    let batch: Vec<Assignment> = fx.0[0].iter().map(|(_, a)| assigned(a)).collect();
    assert_eq!(fx.0[0].iter().map(|(t, _)| *t).collect::<Vec<_>>(), vec![1, 2, 3]);
    for a in &batch {
        assert_eq!((a.kind, a.batch, a.start), (Kind::Fpga, 3, 200 * US));
        // 300 us of CPU work at speedup 2, and one invocation of 50 us.
        assert_eq!(a.finish, 200 * US + 150 * US + 50 * US);
        assert!(a.finish <= a.deadline);
    }
    e.end_of_trace(1_000_000, &mut fx);
    e.advance(Time::MAX, false, &mut fx);
    let o = e.finish();
    assert_eq!(o.pool.ledger(Kind::Fpga).served, 1, "one job on the board");
    assert_eq!((o.tally.served[Kind::Fpga], o.batches), (3, Some((1, 3))));
}

#[test]
fn a_preferred_size_closes_the_batch_on_the_arrival_that_fills_it() {
    let rule = Batching::new(8, &[2], 1_000 * US).expect("valid");
    let mut e = engine(rule);
    let mut fx = Settled::default();
    e.begin(60_000_000_000, &mut fx);
    e.advance(0, true, &mut fx);
    assert_eq!(e.arrive_by(Request::new(0, 100 * US, 0), None, 7, &mut fx), Arrival::Held(7));
    assert_eq!(e.arrive_by(Request::new(5 * US, 100 * US, 0), None, 8, &mut fx), Arrival::Held(8));
    assert_eq!(fx.0.len(), 1, "settled within the arrival that made it 2");
    assert!(fx.0[0].iter().all(|(_, a)| assigned(a).start == 5 * US && assigned(a).batch == 2));
    assert!(e.next_event(false) > Some(1_000 * US), "no batch left forming");
}

#[test]
fn a_request_the_batch_cannot_carry_in_time_closes_it_and_goes_its_own_way() {
    let rule = Batching::new(8, &[], 1_000 * US).expect("valid");
    let mut e = engine(rule);
    let mut fx = Settled::default();
    e.begin(60_000_000_000, &mut fx);
    e.advance(0, true, &mut fx);
    // 200 us due at 2 ms: alone it takes 150 us on the board.
    assert_eq!(e.arrive_by(Request::new(0, 200 * US, 0), None, 1, &mut fx), Arrival::Held(1));
    // 20 ms of work due at 200 ms: with the first, the batch would take 10.15 ms, past 2 ms.
    let second = e.arrive_by(Request::new(10 * US, 20_000 * US, 0), None, 2, &mut fx);
    assert_eq!(fx.0.len(), 1, "the first batch closed at once");
    let first = assigned(&fx.0[0][0].1);
    assert_eq!((first.start, first.finish, first.batch), (10 * US, 160 * US, 1));
    assert_eq!(second, Arrival::Held(2), "the second opens the next batch, on the board behind the first");
}

#[test]
fn members_a_late_board_cannot_serve_in_time_are_placed_alone_by_the_dispatcher() {
    let rule = Batching::new(8, &[], 100 * US).expect("valid");
    let mut e = engine(rule);
    let mut fx = Settled::default();
    e.begin(60_000_000_000, &mut fx);
    e.advance(0, true, &mut fx);
    for (t, at) in [(1, 0), (2, 10 * US)] {
        assert_eq!(e.arrive_by(Request::new(at, 100 * US, 0), None, t, &mut fx), Arrival::Held(t));
    }
    // The live board reports a backlog past both deadlines (1 ms, 1.01 ms).
    let board = Unit { worker: crate::model::WorkerId(0), cu: 0 };
    assert_eq!(e.pool().worker(board.worker).kind, Kind::Fpga);
    e.observe_backlog(board, 5_000 * US);
    e.advance(100 * US, true, &mut fx);
    assert_eq!(fx.0.len(), 2, "each placed alone, the one due first first");
    let (a, b) = (&fx.0[0][0], &fx.0[1][0]);
    assert_eq!((a.0, b.0), (1, 2));
    for (_, arrival) in [a, b] {
        let booked = assigned(arrival);
        assert_eq!((booked.kind, booked.batch), (Kind::Cpu, 1), "a CPU, spun up for it");
    }
}

/// What a random run settled: for each ticket, how often, and the bookings.
#[derive(Default)]
struct Ledger {
    settled: std::collections::HashMap<u64, u32>,
    booked: Vec<Assignment>,
}

impl Effects for Ledger {
    fn resolved(&mut self, held: &[(u64, Arrival)]) {
        for (t, a) in held {
            *self.settled.entry(*t).or_default() += 1;
            if let Arrival::Assigned(a) = a {
                self.booked.push(*a);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_request_is_settled_once_and_a_batch_meets_every_members_deadline(
        gaps in proptest::collection::vec(0..200u64, 1..200),
        sizes in proptest::collection::vec(10..2_000u64, 200),
        max in 1..16u32,
        delay in 0..500u64,
    ) {
        let rule = Batching::new(max, &[], delay * US).expect("valid");
        let mut e = engine(rule);
        let mut fx = Ledger::default();
        e.begin(60_000_000_000, &mut fx);
        let (mut at, mut direct, mut direct_fpga, mut held) = (0, 0u64, 0u64, Vec::new());
        for (i, gap) in gaps.iter().enumerate() {
            at += gap * US;
            e.advance(at, true, &mut fx);
            match e.arrive_by(Request::new(at, sizes[i] * US, 0), None, i as u64, &mut fx) {
                Arrival::Held(t) => held.push(t),
                Arrival::Assigned(a) => {
                    direct += 1;
                    direct_fpga += u64::from(a.kind == Kind::Fpga);
                    prop_assert_eq!(a.batch, 1);
                }
                Arrival::Rejected => direct += 1,
            }
        }
        e.end_of_trace(at + 1, &mut fx);
        e.advance(Time::MAX, false, &mut fx);
        for t in &held {
            prop_assert_eq!(fx.settled.get(t).copied(), Some(1), "ticket {} settled once", t);
        }
        prop_assert_eq!(fx.settled.len(), held.len());
        for a in fx.booked.iter().filter(|a| a.batch > 1) {
            prop_assert_eq!(a.kind, Kind::Fpga);
            prop_assert!(a.finish <= a.deadline, "a batch member missed: {:?}", a);
        }
        let o = e.finish();
        prop_assert_eq!(o.tally.served_total() + o.tally.rejected, direct + held.len() as u64);
        let (_, carried) = o.batches.unwrap_or_default();
        prop_assert!(carried <= held.len() as u64);
        // One board job per distinct (unit, start) among the settled: a batch is one invocation.
        let jobs: std::collections::HashSet<_> =
            fx.booked.iter().filter(|a| a.kind == Kind::Fpga).map(|a| (a.unit(), a.start)).collect();
        for a in fx.booked.iter().filter(|a| a.kind == Kind::Fpga) {
            let same = fx.booked.iter().filter(|b| (b.unit(), b.start) == (a.unit(), a.start)).count();
            prop_assert_eq!(same as u32, a.batch, "a batch's members share its one job");
        }
        prop_assert_eq!(o.pool.ledger(Kind::Fpga).served, direct_fpga + jobs.len() as u64);
    }
}

//! The engine stepped by hand: each call's effects and the pool's state after it.

use super::*;
use crate::model::time::from_secs;
use crate::model::{Kind, PerKind, Platform, Request, Time, WorkerId, WorkerState};
use crate::policy::{Caps, Scheduler};

const MS: Time = 1_000_000;

fn request(at: Time, size: Time) -> Request {
    Request::new(at, size, 0)
}

fn engine(scheduler: Scheduler, caps: Caps, headroom: u32) -> Engine {
    let plan = Plan { caps, ..Plan::new(scheduler) };
    Engine::new(Platform::default(), &plan, &Oracle { demand: None, headroom })
}

#[test]
fn a_burst_cpu_spins_up_serves_and_idles_out() {
    let mut e = engine(Scheduler::CpuDynamic, Caps::NONE, 0);
    let mut fx = Vec::new();
    e.begin(from_secs(60.0), &mut fx);
    assert!(fx.is_empty(), "CPU-dynamic holds no FPGA");
    let Arrival::Assigned(a) = e.arrive(request(MS, 10 * MS), &mut fx) else { panic!("rejected") };
    assert_eq!(a.kind, Kind::Cpu);
    assert_eq!((a.start, a.finish), (6 * MS, 16 * MS), "queued behind its 5 ms spin-up");
    assert_eq!(fx, vec![Action::SpinUp { worker: a.worker, kind: Kind::Cpu, ready_at: 6 * MS }]);
    fx.clear();
    // Idle from 16 ms; released once idle for its 5 ms timeout, not before.
    e.advance(20 * MS, true, &mut fx);
    assert!(fx.is_empty());
    e.advance(21 * MS, true, &mut fx);
    assert_eq!(fx, vec![Action::Release { worker: a.worker, kind: Kind::Cpu }]);
    assert_eq!(e.pool().worker(a.worker).state, WorkerState::SpinningDown);
    e.advance(30 * MS, true, &mut fx);
    assert_eq!(e.pool().worker(a.worker).state, WorkerState::Off);
}

#[test]
fn a_prewarmed_pool_is_ready_at_zero_and_drains_after_the_trace() {
    // FPGA-static with no demand and headroom 2 holds 1 + 2 FPGAs from the start.
    let mut e = engine(Scheduler::FpgaStatic, Caps::NONE, 2);
    let mut fx = Vec::new();
    e.begin(from_secs(20.0), &mut fx);
    assert_eq!(fx.len(), 3);
    assert!(fx.iter().all(|a| matches!(a, Action::SpinUp { kind: Kind::Fpga, ready_at: 0, .. })));
    let Arrival::Assigned(a) = e.arrive(request(MS, 10 * MS), &mut fx) else { panic!("rejected") };
    assert_eq!((a.kind, a.start), (Kind::Fpga, MS), "an FPGA at once, at the speedup: 5 ms");
    assert_eq!(a.finish, 6 * MS);
    fx.clear();
    // Held within the target through the trace; after it, each idles out on its timer.
    e.advance(from_secs(19.0), true, &mut fx);
    assert!(fx.is_empty(), "{fx:?}");
    e.advance(Time::MAX, false, &mut fx);
    assert_eq!(fx.iter().filter(|a| matches!(a, Action::Release { .. })).count(), 3);
    assert!(e.pool().is_empty());
    let o = e.finish();
    assert_eq!((o.tally.served[Kind::Fpga], o.tally.misses), (1, 0));
    assert_eq!(o.pool.ledger(Kind::Fpga).spin_ups, 3);
}

#[test]
fn a_failed_board_is_released_and_its_requests_go_to_a_cpu() {
    let mut e = engine(Scheduler::FpgaStatic, Caps::NONE, 0);
    let mut fx = Vec::new();
    e.begin(from_secs(20.0), &mut fx);
    let Arrival::Assigned(a) = e.arrive(request(MS, 10 * MS), &mut fx) else { panic!("rejected") };
    fx.clear();
    e.fail_worker(a.worker, 2 * MS, &mut fx);
    assert_eq!(fx, vec![Action::Release { worker: a.worker, kind: Kind::Fpga }]);
    // FPGA-static places only on FPGAs; the rescue rule puts the re-run on a CPU with its deadline.
    let Arrival::Assigned(b) = e.redispatch_on_cpu(a.request, 2 * MS, a.deadline, &mut fx) else {
        panic!("rejected")
    };
    assert_eq!((b.kind, b.deadline), (Kind::Cpu, a.deadline));
}

#[test]
fn a_cap_with_no_worker_of_an_allowed_type_rejects_and_counts() {
    let mut e = engine(Scheduler::CpuDynamic, Caps(PerKind::new(Some(0), None)), 0);
    let mut fx = Vec::new();
    e.begin(from_secs(1.0), &mut fx);
    assert_eq!(e.arrive(request(MS, MS), &mut fx), Arrival::Rejected);
    assert!(fx.is_empty());
    e.advance(Time::MAX, false, &mut fx);
    let o = e.finish();
    assert_eq!((o.tally.rejected, o.capped, o.tally.served_total()), (1, 1, 0));
}

#[test]
fn a_rising_target_spins_fpgas_up_at_the_tick_within_the_cap() {
    // SporkE sees a busy first interval (4 CPU-seconds of work per second) and, at the 10 s tick,
    // spins FPGAs up for the interval after (ready at 20 s); the cap clips them to 1.
    let mut e =
        engine(Scheduler::Spork(crate::policy::Objective::ENERGY), Caps(PerKind::new(None, Some(1))), 0);
    let mut fx = Vec::new();
    e.begin(from_secs(100.0), &mut fx);
    for i in 0..2_000u64 {
        e.advance(i * 5 * MS, true, &mut fx);
        e.arrive(request(i * 5 * MS, 20 * MS), &mut fx);
    }
    fx.retain(|a| matches!(a, Action::SpinUp { kind: Kind::Fpga, .. }));
    e.advance(from_secs(20.0), true, &mut fx);
    let fpgas: Vec<&Action> =
        fx.iter().filter(|a| matches!(a, Action::SpinUp { kind: Kind::Fpga, .. })).collect();
    assert_eq!(fpgas.len(), 1, "{fx:?}");
    assert!(matches!(fpgas[0], Action::SpinUp { ready_at, .. } if *ready_at == from_secs(20.0)), "{fpgas:?}");
    assert!(e.target() <= 1 && e.pool().allocated(Kind::Fpga) == 1);
}

fn admitting(admission: crate::policy::Admission) -> Engine {
    // FPGA-static with no demand and headroom 0: one FPGA, warm at 0, FPGAs only.
    let plan = Plan { admission, ..Plan::new(Scheduler::FpgaStatic) };
    Engine::new(Platform::default(), &plan, &Oracle { demand: None, headroom: 0 })
}

/// Thirty 10 ms requests (5 ms on the board, 100 ms deadlines) at once on one board: (booked, rejected, misses).
fn burst_on_one_board(e: &mut Engine) -> (u64, u64, u64) {
    let mut fx = Vec::new();
    e.begin(from_secs(20.0), &mut fx);
    for _ in 0..30 {
        e.arrive(request(MS, 10 * MS), &mut fx);
    }
    let t = e.tally();
    (t.served_total(), t.rejected, t.misses)
}

#[test]
fn bounded_admission_keeps_a_boards_queue_within_deadlines() {
    use crate::policy::Admission;
    let (booked, rejected, misses) = burst_on_one_board(&mut admitting(Admission::QueueLate));
    assert_eq!((booked, rejected), (30, 0), "the paper's rule queues every request");
    assert!(misses > 0, "and the tail of the queue misses");
    let (booked, rejected, misses) = burst_on_one_board(&mut admitting(Admission::RejectLate));
    assert_eq!(misses, 0, "nothing queued into a miss");
    assert!(booked > 0 && rejected > 0 && booked + rejected == 30, "{booked} + {rejected}");
}

#[test]
fn an_observed_backlog_moves_the_boards_queue_out() {
    use crate::policy::Admission;
    let mut fx = Vec::new();
    for admission in [Admission::QueueLate, Admission::RejectLate] {
        let mut e = admitting(admission);
        e.begin(from_secs(20.0), &mut fx);
        let board = WorkerId(0);
        e.observe_backlog(board.into(), from_secs(1.0));
        assert_eq!(e.pool().worker(board).busy_until, from_secs(1.0));
        e.observe_backlog(board.into(), MS);
        assert_eq!(e.pool().worker(board).busy_until, from_secs(1.0), "an earlier drain changes nothing");
        match (admission, e.arrive(request(MS, 10 * MS), &mut fx)) {
            (Admission::QueueLate, Arrival::Assigned(a)) => assert_eq!(a.start, from_secs(1.0)),
            (Admission::RejectLate, Arrival::Rejected) => {}
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_cpu_floor_is_warm_at_zero_held_while_idle_and_released_after_the_trace() {
    let plan =
        Plan { min_cpu: 2, caps: Caps(PerKind::new(Some(3), None)), ..Plan::new(Scheduler::CpuDynamic) };
    let mut e = Engine::new(Platform::default(), &plan, &Oracle::default());
    let mut fx = Vec::new();
    e.begin(from_secs(20.0), &mut fx);
    assert_eq!(fx.len(), 2);
    assert!(fx.iter().all(|a| matches!(a, Action::SpinUp { kind: Kind::Cpu, ready_at: 0, .. })));
    fx.clear();
    let Arrival::Assigned(a) = e.arrive(request(MS, 10 * MS), &mut fx) else { panic!("rejected") };
    assert_eq!((a.kind, a.start), (Kind::Cpu, MS), "a warm CPU, no spin-up");
    // Tighter deadlines: the other warm CPU, then a third, spun up; above the floor, it idles out.
    let Arrival::Assigned(b) = e.arrive_by(request(MS, 10 * MS), Some(12 * MS), 1, &mut fx) else { panic!() };
    let Arrival::Assigned(c) = e.arrive_by(request(MS, 10 * MS), Some(17 * MS), 2, &mut fx) else { panic!() };
    assert_eq!((b.start, c.start), (MS, 6 * MS));
    assert_eq!(fx.iter().filter(|a| matches!(a, Action::SpinUp { .. })).count(), 1, "{fx:?}");
    fx.clear();
    e.advance(from_secs(19.0), true, &mut fx);
    let released: Vec<_> = fx.iter().filter(|a| matches!(a, Action::Release { .. })).collect();
    assert_eq!(released.len(), 1, "only the CPU above the floor: {fx:?}");
    assert_eq!(e.pool().allocated(Kind::Cpu), 2);
    fx.clear();
    e.advance(Time::MAX, false, &mut fx);
    assert_eq!(
        fx.iter().filter(|a| matches!(a, Action::Release { .. })).count(),
        2,
        "the floor ends with the trace"
    );
    assert!(e.pool().is_empty());
    let o = e.finish();
    assert_eq!((o.tally.served[Kind::Cpu], o.tally.misses), (3, 0));
    assert_eq!(o.pool.ledger(Kind::Cpu).spin_ups, 3);
    assert!([a.worker, b.worker, c.worker].iter().all(|w| w.0 < 3));
}

#[test]
fn a_margin_plans_a_clients_deadline_early_but_misses_count_against_the_deadline() {
    let plan = Plan { min_cpu: 1, margin: 4 * MS, ..Plan::new(Scheduler::CpuDynamic) };
    let mut e = Engine::new(Platform::default(), &plan, &Oracle::default());
    let mut fx = Vec::new();
    e.begin(from_secs(20.0), &mut fx);
    let Arrival::Assigned(first) = e.arrive_by(request(0, 5 * MS), Some(20 * MS), 0, &mut fx) else {
        panic!("rejected")
    };
    // Behind the first it would finish at 10 ms, by its 11 ms deadline but not by 11 - 4 = 7 ms: a
    // client's request goes to a new CPU (5 ms to spin up, done at 10 ms)...
    let Arrival::Assigned(stated) = e.arrive_by(request(0, 5 * MS), Some(11 * MS), 1, &mut fx) else {
        panic!("rejected")
    };
    assert_ne!(stated.worker, first.worker);
    assert_eq!((stated.finish, stated.deadline), (10 * MS, 11 * MS), "booked by the client's deadline");
    // ...while a request with no stated deadline (the profile's, 10 x 5 ms) plans to the deadline.
    let Arrival::Assigned(own) = e.arrive(request(0, 5 * MS), &mut fx) else { panic!("rejected") };
    assert_eq!(own.worker, first.worker, "the busiest CPU that meets 50 ms");
    e.advance(Time::MAX, false, &mut fx);
    let o = e.finish();
    assert_eq!(o.tally.misses, 0, "10 ms is past the plan but within the deadline: no miss");
}

/// SporkE on the paper's platform (S = 2: a board pays) under 3 CPUs' worth of steady load, its
/// boards in truth `truth` times as fast as a CPU (each board answer takes its request's size over
/// `truth`, as a live pool reports through `observe_service`); the FPGA target at each of
/// `intervals` ticks and the speedup at the end.
fn spork_e_with_boards_at(truth: f64, intervals: u64) -> (Vec<u32>, f64) {
    let mut e = engine(Scheduler::Spork(crate::policy::Objective::ENERGY), Caps::NONE, 0);
    let mut fx = Vec::new();
    let interval = e.platform().interval();
    e.begin(interval * intervals as Time, &mut fx);
    let mut targets = Vec::new();
    for t in 0..intervals {
        for i in 0..1000 {
            let at = t * interval + i * interval / 1000;
            e.advance(at, false, &mut fx);
            for _ in 0..3 {
                if let Arrival::Assigned(a) = e.arrive(request(at, interval / 1000), &mut fx) {
                    let booked = a.finish - a.start;
                    let size = a.request.size as f64;
                    let took = if a.kind == Kind::Fpga { (size / truth) as Time } else { booked };
                    e.observe_service(a.kind, booked, a.request.arrival, took);
                }
            }
        }
        targets.push(e.target());
    }
    e.advance(Time::MAX, false, &mut fx);
    (targets, e.finish().speedup)
}

#[test]
fn boards_slower_than_calibrated_are_let_go_once_their_answers_show_it() {
    // Calibrated S = 2 pays; boards that are in truth S = 0.2 (10x slower than booked), below the 1/3 a
    // board needs at the paper's powers: the observed S replaces the calibration and no board is held.
    let (held, s) = spork_e_with_boards_at(0.2, 8);
    assert!(held.iter().take(3).any(|&n| n > 0), "boards held while S = 2 stood: {held:?}");
    assert_eq!(held.last(), Some(&0), "a board that never pays is still held: {held:?}");
    assert!((s - 0.2).abs() < 0.02, "observed S {s}");
    // Boards answering as booked: S and the boards stay.
    let (held, s) = spork_e_with_boards_at(2.0, 8);
    assert_eq!(s, 2.0);
    assert!(held.iter().skip(2).all(|&n| n > 0), "{held:?}");
}

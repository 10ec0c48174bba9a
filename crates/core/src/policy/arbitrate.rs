//! Scarce boards: a fixed number of boards shared by several pools (one per application, or per
//! served kernel), each with its own allocator.
//!
//! At each interval tick a pool bids: the FPGAs its allocator wants, the FPGAs it holds, and what each
//! board saves it ([`Value`]). [`arbitrate`] grants boards one at a time to the bid whose next board
//! saves the most. A pool's savings shrink with every board it gets (efficient-first packs the
//! busiest boards first, so its k-th board serves only what the first k - 1 leave), so this greedy
//! order maximises the total saved. A board a pool does not hold yet is charged its reconfiguration
//! (spin-up at busy power), so a board moves between pools only when its new owner saves more than
//! the old one loses plus the reconfiguration. When the wants fit, every pool gets its want.
//!
//! [`Books`] keeps the machine's count: a pool's cap is its grant, but never more than the boards
//! other pools do not hold or have been promised, so the boards in use never exceed the count while
//! a board is on its way from one pool to another (its old owner drains it, it spins down, and the
//! new owner's next tick configures it).
//!
//! Units: savings are in the objective's busy-FPGA-second units (see [`super::objective`]); pools
//! that share boards share the boards' power and price, so their units agree.

use super::objective::Objective;
use crate::model::{Platform, time::to_secs};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What each board saves one pool in an interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Value {
    /// FPGA-seconds of work the pool ran in its last interval (Algorithm 1's `F + C/S`).
    pub work_s: f64,
    /// The interval T_s, seconds.
    pub interval_s: f64,
    /// FPGA-seconds one board serves in an interval: T_s times its compute units.
    pub board_s: f64,
    /// Saved per FPGA-second served on a board instead of CPUs: `S*cpu_busy - fpga_busy + fpga_idle`.
    pub per_busy_s: f64,
    /// Holding a board idle for an interval: `T_s*fpga_idle`.
    pub idle: f64,
    /// Configuring a board for this pool: spin-up time at busy rate.
    pub reconfigure: f64,
}

impl Value {
    /// The value of boards to a pool on `platform` minimising `objective` that ran `work_s`
    /// FPGA-seconds of work in its last interval.
    pub fn of(objective: &Objective, platform: &Platform, work_s: f64) -> Value {
        let r = objective.rates(platform);
        let interval_s = to_secs(platform.interval());
        Value {
            work_s: if work_s.is_finite() { work_s.max(0.0) } else { 0.0 },
            interval_s,
            board_s: platform.board_capacity_s(),
            per_busy_s: platform.fpga.speedup * r.cpu_busy - r.fpga_busy + r.fpga_idle,
            idle: interval_s * r.fpga_idle,
            reconfigure: to_secs(platform.fpga.spin_up) * r.fpga_busy,
        }
    }

    /// Whether a board this pool uses fully saves it anything: a pool whose boards lose even then
    /// (its speedup too low for the objective's rates) is never granted one.
    pub fn pays(&self) -> bool {
        self.board_s * self.per_busy_s - self.idle > 0.0
    }

    /// What the pool's `k`-th board (from 1) saves it in an interval, when it holds `held` already.
    /// Positive exactly when the board's share of the work exceeds Algorithm 1's breakeven threshold
    /// (for a board it holds).
    pub fn gain(&self, k: u32, held: u32) -> f64 {
        let before = f64::from(k.saturating_sub(1)) * self.board_s;
        let served = (self.work_s - before).clamp(0.0, self.board_s);
        let moved = if k > held { self.reconfigure } else { 0.0 };
        served * self.per_busy_s - self.idle - moved
    }
}

/// One pool's claim for the coming interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bid {
    /// FPGAs its allocator wants.
    pub want: u32,
    /// FPGAs it holds (allocated or spinning down).
    pub held: u32,
    /// What each board saves it.
    pub value: Value,
}

/// Boards granted to each bid: at most its want, `boards` at most in all, none to a pool whose
/// boards do not pay even fully used ([`Value::pays`]). When the wants fit, each bid gets its want;
/// otherwise boards go one at a time to the largest next saving (ties: a board the pool holds
/// already, then the earlier bid).
pub fn arbitrate(boards: u32, bids: &[Bid]) -> Vec<u32> {
    let want = |b: &Bid| if b.value.pays() { b.want } else { 0 };
    let wanted: u64 = bids.iter().map(|b| u64::from(want(b))).sum();
    if wanted <= u64::from(boards) {
        return bids.iter().map(want).collect();
    }
    let mut grants = vec![0u32; bids.len()];
    let mut heap: BinaryHeap<Next> =
        bids.iter().enumerate().filter(|(_, b)| want(b) > 0).map(|(i, b)| Next::of(i, b, 1)).collect();
    for _ in 0..boards {
        let Some(next) = heap.pop() else { break };
        grants[next.pool] += 1;
        let bid = &bids[next.pool];
        if grants[next.pool] < want(bid) {
            heap.push(Next::of(next.pool, bid, grants[next.pool] + 1));
        }
    }
    grants
}

/// A pool's next board in the grant order.
#[derive(Clone, Copy, Debug)]
struct Next {
    gain: f64,
    held: bool,
    pool: usize,
}

impl Next {
    fn of(pool: usize, bid: &Bid, k: u32) -> Next {
        Next { gain: bid.value.gain(k, bid.held), held: k <= bid.held, pool }
    }
}

impl Ord for Next {
    fn cmp(&self, other: &Self) -> Ordering {
        self.gain.total_cmp(&other.gain).then(self.held.cmp(&other.held)).then(other.pool.cmp(&self.pool))
    }
}

impl PartialOrd for Next {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Next {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Next {}

/// How boards are shared between pools: the rule, and the two baselines it is measured against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sharing {
    /// By expected saving, each interval ([`arbitrate`]).
    Arbitrate,
    /// A fixed share each: the boards divided evenly, the remainder to the first pools.
    EvenSplit,
    /// Whoever wants a free board gets it and keeps it until its own allocator lets it go.
    FirstCome,
}

impl Sharing {
    /// Every rule.
    pub const ALL: [Sharing; 3] = [Sharing::Arbitrate, Sharing::EvenSplit, Sharing::FirstCome];

    /// Kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Sharing::Arbitrate => "arbitrate",
            Sharing::EvenSplit => "even-split",
            Sharing::FirstCome => "first-come",
        }
    }
}

/// The machine's boards and what each pool last bid and may hold.
#[derive(Clone, Debug)]
pub struct Books {
    boards: u32,
    sharing: Sharing,
    bids: Vec<Option<Bid>>,
    /// Per pool: the most it may hold until its next claim (its cap, or what it holds if more).
    reserved: Vec<u32>,
}

impl Books {
    /// `boards` boards shared by `pools` pools under `sharing`, none claimed yet.
    pub fn new(boards: u32, pools: usize, sharing: Sharing) -> Books {
        Books { boards, sharing, bids: vec![None; pools], reserved: vec![0; pools] }
    }

    /// Records `pool`'s bid and returns its FPGA cap until its next claim: its grant among the latest
    /// bids of every pool, within the boards no other pool holds or may still spin up.
    pub fn claim(&mut self, pool: usize, bid: Bid) -> u32 {
        self.bids[pool] = Some(bid);
        let grant = match self.sharing {
            Sharing::Arbitrate => {
                let bids: Vec<Bid> = self.bids.iter().map(|b| b.unwrap_or(Bid { want: 0, ..bid })).collect();
                arbitrate(self.boards, &bids)[pool]
            }
            Sharing::EvenSplit => bid.want.min(self.even_share(pool)),
            Sharing::FirstCome => bid.want,
        };
        let others: u32 = self.reserved.iter().enumerate().filter(|&(i, _)| i != pool).map(|(_, r)| *r).sum();
        let cap = grant.min(self.boards.saturating_sub(others));
        self.reserved[pool] = cap.max(bid.held);
        cap
    }

    /// A pool joins (a model loaded at run time): its index, with no bid and nothing held yet.
    pub fn add_pool(&mut self) -> usize {
        self.bids.push(None);
        self.reserved.push(0);
        self.bids.len() - 1
    }

    /// A pool has stopped (its model unloaded and its workers gone): it bids for nothing and holds
    /// nothing, so its boards go to the others at their next claims.
    pub fn retire(&mut self, pool: usize) {
        if let (Some(b), Some(r)) = (self.bids.get_mut(pool), self.reserved.get_mut(pool)) {
            *b = None;
            *r = 0;
        }
    }

    /// The count of boards changes (hosts with boards joined or left). A pool holding more than its
    /// next cap then drains down to it, as when a board moves.
    pub fn set_boards(&mut self, boards: u32) {
        self.boards = boards;
    }

    /// `pool`'s fixed share under [`Sharing::EvenSplit`].
    fn even_share(&self, pool: usize) -> u32 {
        let n = self.bids.len().max(1) as u32;
        self.boards / n + u32::from((pool as u32) < self.boards % n)
    }

    /// Boards `pool` may hold until its next claim.
    pub fn reserved(&self, pool: usize) -> u32 {
        self.reserved[pool]
    }
}

/// Where an engine sharing boards with other pools claims its cap at each interval tick (the driver
/// provides it: one pool's handle on shared [`Books`]).
pub trait BoardShare: Send {
    /// Records the pool's bid; returns its FPGA cap until its next claim.
    fn claim(&mut self, bid: Bid) -> u32;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_that_joins_bids_and_a_retired_pool_frees_its_boards() {
        let bid = |want, held| bid(want, held, 50.0);
        let mut books = Books::new(4, 1, Sharing::FirstCome);
        assert_eq!(books.claim(0, bid(4, 4)), 4);
        let late = books.add_pool();
        assert_eq!(late, 1);
        // Every board is held by the first pool: the newcomer gets none until they are freed.
        assert_eq!(books.claim(late, bid(2, 0)), 0);
        books.retire(0);
        assert_eq!(books.claim(late, bid(2, 0)), 2);
        assert_eq!(books.reserved(0), 0);
    }
    use proptest::prelude::*;

    fn value(work_s: f64) -> Value {
        Value { work_s, interval_s: 10.0, board_s: 10.0, per_busy_s: 1.0, idle: 2.0, reconfigure: 1.0 }
    }

    fn bid(want: u32, held: u32, work_s: f64) -> Bid {
        Bid { want, held, value: value(work_s) }
    }

    #[test]
    fn gain_is_the_boards_share_of_the_work_less_idle_and_reconfiguration() {
        let v = value(25.0);
        // Boards 1 and 2 serve whole intervals, board 3 the remaining 5 s, board 4 nothing.
        assert_eq!([v.gain(1, 4), v.gain(2, 4), v.gain(3, 4), v.gain(4, 4)], [8.0, 8.0, 3.0, -2.0]);
        assert_eq!(v.gain(3, 2), 2.0, "a board not held pays its reconfiguration");
    }

    #[test]
    fn wants_that_fit_are_granted_whole() {
        assert_eq!(arbitrate(8, &[bid(3, 0, 0.0), bid(5, 0, 0.0)]), vec![3, 5]);
    }

    #[test]
    fn scarce_boards_go_to_the_larger_saving() {
        // Pool 0 would keep two boards busy; pool 1 one board half the interval.
        let bids = [bid(2, 0, 20.0), bid(2, 0, 5.0)];
        assert_eq!(arbitrate(2, &bids), vec![2, 0]);
        assert_eq!(arbitrate(3, &bids), vec![2, 1]);
    }

    #[test]
    fn a_held_board_moves_only_when_the_saving_beats_its_reconfiguration() {
        // Pool 0 holds the board and saves 9.5 - 2 = 7.5 with it; pool 1 would save 10 - 2 - 1 = 7.
        assert_eq!(arbitrate(1, &[bid(1, 1, 9.5), bid(1, 0, 10.0)]), vec![1, 0]);
        // Pool 0's work fell: its board saves 3.5 - 2 = 1.5; it moves.
        assert_eq!(arbitrate(1, &[bid(1, 1, 3.5), bid(1, 0, 10.0)]), vec![0, 1]);
        // Equal savings: the holder keeps it.
        assert_eq!(arbitrate(1, &[bid(1, 0, 10.0), bid(1, 1, 9.0)]), vec![0, 1]);
    }

    #[test]
    fn a_pool_whose_boards_lose_never_gets_one_and_the_faster_model_gets_them_first() {
        // Default powers (CPU 150 W, FPGA 50/20 W): a board pays above S = 1/3.
        let pool = |s: f64, work_s: f64, want: u32| {
            let mut p = Platform::default();
            p.fpga.speedup = s;
            Bid { want, held: 0, value: Value::of(&Objective::ENERGY, &p, work_s) }
        };
        let slow = pool(0.19, 100.0, 10);
        assert!(!slow.value.pays());
        assert_eq!(arbitrate(20, &[slow, pool(2.0, 30.0, 3)]), vec![0, 3], "plenty of boards");
        // Scarce boards, equal work: the model with the larger S saves more per second on each.
        let (fast, slower) = (pool(4.0, 30.0, 3), pool(0.5, 30.0, 3));
        assert!(fast.value.gain(1, 0) > slower.value.gain(1, 0));
        assert_eq!(arbitrate(3, &[slower, fast]), vec![0, 3]);
        assert_eq!(arbitrate(4, &[slower, fast]), vec![1, 3]);
    }

    #[test]
    fn the_baselines_split_evenly_or_keep_what_they_took_first() {
        let mut even = Books::new(5, 2, Sharing::EvenSplit);
        assert_eq!(even.claim(0, bid(9, 0, 100.0)), 3, "5 boards: 3 to the first pool");
        assert_eq!(even.claim(1, bid(9, 0, 100.0)), 2);
        let mut first = Books::new(5, 2, Sharing::FirstCome);
        assert_eq!(first.claim(1, bid(4, 0, 1.0)), 4, "the first to ask takes what it wants");
        assert_eq!(first.claim(0, bid(9, 0, 100.0)), 1, "the larger saving gets only what is left");
    }

    #[test]
    fn books_never_promise_a_board_another_pool_still_holds() {
        let mut books = Books::new(1, 2, Sharing::Arbitrate);
        assert_eq!(books.claim(0, bid(1, 0, 10.0)), 1);
        // Pool 1's work is larger, but pool 0 holds the board until it releases it.
        assert_eq!(books.claim(1, bid(1, 0, 30.0)), 0);
        // Pool 0 loses the arbitration: its cap drops to 0, but it still holds the board.
        assert_eq!(books.claim(0, bid(1, 1, 2.5)), 0);
        assert_eq!(books.reserved(0), 1);
        assert_eq!(books.claim(1, bid(1, 0, 30.0)), 0, "not before pool 0 let it go");
        // Pool 0 released it: pool 1 gets it.
        assert_eq!(books.claim(0, bid(1, 0, 2.5)), 0);
        assert_eq!(books.claim(1, bid(1, 0, 30.0)), 1);
    }

    fn arb_bid() -> impl Strategy<Value = Bid> {
        (0u32..12, 0u32..12, 0.0f64..150.0).prop_map(|(want, held, work)| bid(want, held, work))
    }

    proptest! {
        /// Grants never exceed the boards or a bid's want, and leave no board idle that a bid wants.
        #[test]
        fn grants_fit_the_boards_and_the_wants(boards in 0u32..40, bids in prop::collection::vec(arb_bid(), 0..6)) {
            let grants = arbitrate(boards, &bids);
            let total: u32 = grants.iter().sum();
            let wanted: u32 = bids.iter().map(|b| b.want).sum();
            prop_assert!(total <= boards);
            prop_assert_eq!(total, wanted.min(boards));
            for (g, b) in grants.iter().zip(&bids) {
                prop_assert!(*g <= b.want);
            }
        }

        /// However pools interleave their claims, when each spins up no more than its cap and lets go
        /// of boards in between, the boards held never exceed the machine's.
        #[test]
        fn books_never_overcommit(
            boards in 0u32..10,
            sharing in prop::sample::select(Sharing::ALL.to_vec()),
            claims in prop::collection::vec((0usize..3, arb_bid(), 0u32..3), 1..60),
        ) {
            let mut books = Books::new(boards, 3, sharing);
            let mut held = [0u32; 3];
            for (pool, mut b, released) in claims {
                held[pool] = held[pool].saturating_sub(released);
                b.held = held[pool];
                let cap = books.claim(pool, b);
                held[pool] = held[pool].max(cap.min(b.want));
                prop_assert!(held.iter().sum::<u32>() <= boards, "{held:?} > {boards}");
            }
        }
    }
}

//! Spork's allocator: Algorithms 1 and 2 of the paper.
//!
//! Every interval it turns the last interval's work into the FPGA count that would have served it
//! (NeededFPGAs), records that count in the histogram conditioned on the count two intervals earlier
//! (H), and picks the FPGA count for the next interval that minimises the expected objective over
//! H[n_{t-1}], charging new FPGAs their spin-up amortised over the expected lifetime from L.
//!
//! Past the paper's range, where one board too few costs far more than one too many (a fast board
//! against power-hungry CPUs), each histogram is shrunk toward the changes seen from every count
//! (see [`TAIL_FRACTILE`]): a histogram of a few samples cannot show the upper tail such a
//! platform must hold boards for.

use super::{Allocator, IntervalStats, needed_fpgas};
use crate::model::{Platform, pool::Released, time::to_secs};
use crate::policy::objective::{Objective, Rates};
use std::collections::{BTreeMap, HashMap};

/// Observed frequencies of one quantity (a needed-FPGA count).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    bins: BTreeMap<u32, u64>,
    total: u64,
    version: u64,
}

impl Histogram {
    /// Records one observation.
    pub fn add(&mut self, value: u32) {
        *self.bins.entry(value).or_default() += 1;
        self.total += 1;
        self.version += 1;
    }

    /// `(value, probability)` pairs in increasing value order.
    pub fn probabilities(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        let total = self.total as f64;
        self.bins.iter().map(move |(&v, &c)| (v, c as f64 / total))
    }

    /// Smallest and largest observed value.
    pub fn range(&self) -> Option<(u32, u32)> {
        Some((*self.bins.first_key_value()?.0, *self.bins.last_key_value()?.0))
    }

    /// Number of observations.
    pub fn total(&self) -> u64 {
        self.total
    }
}

/// Holding one more board pays when the chance that it is needed exceeds the newsvendor fractile
/// `q* = idle / (S x CPU busy - board busy + idle)` (over-allocating costs an idle board, under-
/// allocating the CPUs' work less the board's). A histogram of k samples puts no mass above its
/// largest: it under-allocates wherever `q* < 1/(k+1)`. Below this fractile (at the paper's powers,
/// S > 4: one missing board costs more than 32 idle ones) each histogram is shrunk toward the pooled
/// changes with the weight of one sample; at and above it (the paper's range, S <= 4) Algorithm 2
/// runs as written, so the paper's figures are unchanged.
pub const TAIL_FRACTILE: f64 = 0.03;

/// The weight, in samples, of the pooled changes a histogram is shrunk toward.
const PRIOR_WEIGHT: f64 = 1.0;

#[derive(Clone, Copy, Debug)]
struct Cached {
    hist_version: u64,
    changes_total: u64,
    n_curr: u32,
    lifetime_version: u64,
    choice: u32,
}

/// Spork's predictive FPGA allocator (SporkE, SporkC, SporkB or any weighted objective).
#[derive(Clone, Debug)]
pub struct SporkAllocator {
    objective: Objective,
    rates: Rates,
    breakeven_s: f64,
    interval_s: f64,
    /// FPGA-seconds one board serves in an interval (the interval times its compute units).
    board_s: f64,
    /// Compute units per board.
    units: f64,
    spin_up_s: f64,
    speedup: f64,
    /// Needed counts of the last three intervals, newest last: [n_{t-3}, n_{t-2}, n_{t-1}].
    recent: [Option<u32>; 3],
    hist: HashMap<u32, Histogram>,
    /// Every observed change n_t - n_{t-2}, whatever count it started from.
    changes: BTreeMap<i64, u64>,
    changes_total: u64,
    /// Whether predictions shrink toward `changes` (below [`TAIL_FRACTILE`]).
    tail_prior: bool,
    /// Sum and count of FPGA lifetimes (seconds) keyed by the count already allocated at allocation.
    lifetimes: HashMap<u32, (f64, u64)>,
    lifetime_version: u64,
    cache: HashMap<u32, Cached>,
}

impl SporkAllocator {
    /// An allocator minimising `objective` on `platform`, with empty history (no warm-up).
    pub fn new(objective: Objective, platform: &Platform) -> Self {
        let mut a = SporkAllocator {
            objective,
            rates: objective.rates(platform),
            breakeven_s: objective.breakeven_secs(platform),
            interval_s: to_secs(platform.interval()),
            board_s: platform.board_capacity_s(),
            units: f64::from(platform.fpga_compute_units()),
            spin_up_s: to_secs(platform.fpga.spin_up),
            speedup: platform.fpga.speedup,
            recent: [None; 3],
            hist: HashMap::new(),
            changes: BTreeMap::new(),
            changes_total: 0,
            tail_prior: false,
            lifetimes: HashMap::new(),
            lifetime_version: 0,
            cache: HashMap::new(),
        };
        a.tail_prior = a.fractile().is_some_and(|q| q < TAIL_FRACTILE);
        a
    }

    /// The newsvendor fractile of one more board ([`TAIL_FRACTILE`]); `None` where a full board
    /// does not pay.
    pub fn fractile(&self) -> Option<f64> {
        let (board_busy, board_speedup) = self.per_board();
        let idle = self.rates.fpga_idle;
        let saving = board_speedup * self.rates.cpu_busy - board_busy;
        (saving > 0.0).then(|| idle / (saving + idle))
    }

    /// Algorithm 1's NeededFPGAs for an interval that ran `stats`.
    pub fn needed(&self, stats: &IntervalStats) -> u32 {
        needed_fpgas(stats.fpga_seconds(self.speedup), self.board_s, self.breakeven_s)
    }

    /// The histogram of counts seen two intervals after `n`.
    pub fn histogram(&self, n: u32) -> Option<&Histogram> {
        self.hist.get(&n)
    }

    /// Average lifetime in seconds of FPGAs allocated when `rank` were already allocated.
    pub fn average_lifetime(&self, rank: u32) -> Option<f64> {
        self.lifetimes.get(&rank).map(|&(sum, n)| sum / n as f64)
    }

    /// Records an FPGA lifetime directly (what [`Allocator::on_release`] does).
    pub fn record_lifetime(&mut self, rank: u32, lifetime_s: f64) {
        let e = self.lifetimes.entry(rank).or_default();
        e.0 += lifetime_s;
        e.1 += 1;
        self.lifetime_version += 1;
    }

    /// Records one needed count as observed two intervals after `earlier` (Algorithm 1, line 9).
    pub fn observe(&mut self, earlier: u32, needed: u32) {
        self.hist.entry(earlier).or_default().add(needed);
        *self.changes.entry(i64::from(needed) - i64::from(earlier)).or_default() += 1;
        self.changes_total += 1;
    }

    /// What the next count may be after `n_prev`, `(count, probability)` in increasing count: H[n_prev]
    /// as observed, or (with the tail prior) shrunk toward the pooled changes shifted to `n_prev`,
    /// which also gives an unseen count a distribution. Empty when nothing applies.
    pub fn distribution(&self, n_prev: u32) -> Vec<(u32, f64)> {
        let hist = self.hist.get(&n_prev);
        if !self.tail_prior || self.changes_total == 0 {
            return hist.map(|h| h.probabilities().collect()).unwrap_or_default();
        }
        let mut weights = BTreeMap::<u32, f64>::new();
        let mut total = PRIOR_WEIGHT;
        if let Some(h) = hist {
            h.bins.iter().for_each(|(&v, &c)| *weights.entry(v).or_default() += c as f64);
            total += h.total as f64;
        }
        let pooled = self.changes_total as f64;
        for (&d, &c) in &self.changes {
            let v = (i64::from(n_prev) + d).clamp(0, i64::from(u32::MAX)) as u32;
            *weights.entry(v).or_default() += PRIOR_WEIGHT * c as f64 / pooled;
        }
        weights.into_iter().map(|(v, w)| (v, w / total)).collect()
    }

    /// Expected objective over one interval of holding `candidate` FPGAs given `hist`, with `n_curr`
    /// allocated now (Algorithm 2, lines 10-24), in busy-FPGA-seconds.
    pub fn expected_cost(&self, candidate: u32, hist: &Histogram, n_curr: u32) -> f64 {
        self.expected_cost_over(candidate, hist.probabilities(), n_curr)
    }

    /// [`SporkAllocator::expected_cost`] over any distribution of the next count.
    fn expected_cost_over(
        &self,
        candidate: u32,
        dist: impl IntoIterator<Item = (u32, f64)>,
        n_curr: u32,
    ) -> f64 {
        let r = &self.rates;
        let ts = self.interval_s;
        let mut total = 0.0;
        // Amortised spin-up of the FPGAs this candidate adds. An FPGA whose rank has no recorded
        // lifetime yet is charged its whole spin-up (a lifetime of one interval).
        for rank in n_curr..candidate {
            let life = self.average_lifetime(rank).unwrap_or(ts);
            let epochs = (life / ts).ceil().max(1.0);
            total += r.fpga_busy * self.spin_up_s / epochs;
        }
        let (board_busy, board_speedup) = self.per_board();
        for (n, prob) in dist {
            let (c, n) = (candidate as f64, n as f64);
            let interval = if c > n {
                (c - n) * r.fpga_idle + n * board_busy // over-allocation
            } else {
                c * board_busy + (n - c) * board_speedup * r.cpu_busy // under-allocation
            };
            total += prob * interval * ts;
        }
        total
    }

    /// A fully busy board's rate and the CPU-seconds it stands for per second: with N compute units
    /// it draws its idle rate once and N CUs' dynamic rate, and serves N CUs' work (the paper's board
    /// when N = 1).
    fn per_board(&self) -> (f64, f64) {
        let r = &self.rates;
        if self.units == 1.0 {
            return (r.fpga_busy, self.speedup);
        }
        (r.fpga_idle + self.units * (r.fpga_busy - r.fpga_idle), self.units * self.speedup)
    }

    /// Algorithm 2: the FPGA count minimising the expected objective given the count `n_prev` needed
    /// in the last interval; `n_prev` itself when that count was never seen. Candidates are every
    /// integer from the smallest to the largest bin; ties go to the smaller count.
    pub fn predict(&mut self, n_prev: u32, n_curr: u32) -> u32 {
        let hist_version = self.hist.get(&n_prev).map_or(0, |h| h.version);
        let changes_total = if self.tail_prior { self.changes_total } else { 0 };
        if let Some(c) = self.cache.get(&n_prev)
            && c.hist_version == hist_version
            && c.changes_total == changes_total
            && c.n_curr == n_curr
            && c.lifetime_version == self.lifetime_version
        {
            return c.choice;
        }
        let dist = self.distribution(n_prev);
        let (Some(&(lo, _)), Some(&(hi, _))) = (dist.first(), dist.last()) else {
            return n_prev; // never seen (Algorithm 2, line 5)
        };
        let mut best = (f64::INFINITY, lo);
        for candidate in lo..=hi {
            let cost = self.expected_cost_over(candidate, dist.iter().copied(), n_curr);
            if cost < best.0 {
                best = (cost, candidate);
            }
        }
        let cached = Cached {
            hist_version,
            changes_total,
            n_curr,
            lifetime_version: self.lifetime_version,
            choice: best.1,
        };
        self.cache.insert(n_prev, cached);
        best.1
    }
}

impl SporkAllocator {
    /// Algorithm 2 given the last interval's needed count `n_prev` (however it was counted): records
    /// it two intervals after the count it follows, then predicts from `n_prev` with `n_curr` held.
    pub fn learn_and_predict(&mut self, n_prev: u32, n_curr: u32) -> u32 {
        self.recent = [self.recent[1], self.recent[2], Some(n_prev)];
        if let Some(n3) = self.recent[0] {
            self.observe(n3, n_prev);
        }
        self.predict(n_prev, n_curr)
    }

    /// Algorithm 1's rounding of a (fractional) FPGA count: the remainder's work is worth an FPGA
    /// only past the breakeven.
    pub fn round(&self, fpgas: f64) -> u32 {
        needed_fpgas(fpgas * self.interval_s, self.board_s, self.breakeven_s)
    }
}

impl Allocator for SporkAllocator {
    fn plan(&mut self, stats: &IntervalStats) -> u32 {
        if stats.index == 0 {
            return stats.fpgas_allocated; // no interval has run yet: nothing to learn from
        }
        self.learn_and_predict(self.needed(stats), stats.fpgas_allocated)
    }

    fn on_release(&mut self, released: &Released) {
        if released.kind == crate::model::Kind::Fpga {
            self.record_lifetime(released.rank, to_secs(released.lifetime));
        }
    }

    fn respeed(&mut self, platform: &Platform) {
        self.speedup = platform.fpga.speedup;
        self.breakeven_s = self.objective.breakeven_secs(platform);
        self.tail_prior = self.fractile().is_some_and(|q| q < TAIL_FRACTILE);
        // Predictions weigh boards by their speed: none cached at the old one stands.
        self.cache.clear();
    }
}

#[cfg(test)]
mod tests {
    //! Algorithm 2 on histograms computed by hand. Defaults: T_s = 10 s, S = 2, energy rates in
    //! busy-FPGA units: CPU busy 150/50 = 3, FPGA busy 1, FPGA idle 20/50 = 0.4.
    use super::*;

    fn energy() -> SporkAllocator {
        SporkAllocator::new(Objective::ENERGY, &Platform::default())
    }

    fn hist(values: &[u32]) -> Histogram {
        let mut h = Histogram::default();
        values.iter().for_each(|&v| h.add(v));
        h
    }

    #[test]
    fn unseen_count_keeps_previous_need() {
        let mut a = energy();
        assert_eq!(a.predict(7, 0), 7);
    }

    #[test]
    fn over_and_under_allocation_by_hand() {
        let a = energy();
        let h = hist(&[2, 4]); // p = 1/2 each
        // Candidate 3 with 3 allocated (no spin-up): n=2 over: 1*0.4 + 2*1 = 2.4; n=4 under:
        // 3*1 + 1*2*3 = 9. Expected (2.4 + 9)/2 * 10 s = 57.
        assert!((a.expected_cost(3, &h, 3) - 57.0).abs() < 1e-9);
        // Candidate 4: n=2 over: 2*0.4 + 2 = 2.8; n=4 exact: 4. (2.8 + 4)/2*10 = 34.
        assert!((a.expected_cost(4, &h, 4) - 34.0).abs() < 1e-9);
        // Candidate 2: n=2 exact 2; n=4 under: 2 + 2*2*3 = 14. (2 + 14)/2*10 = 80.
        assert!((a.expected_cost(2, &h, 2) - 80.0).abs() < 1e-9);
    }

    #[test]
    fn amortised_spin_up_uses_lifetimes() {
        let mut a = energy();
        let h = hist(&[1]);
        // Holding 1 with 0 allocated: spin-up 1*10 s / 1 epoch = 10, plus busy 10 => 20.
        assert!((a.expected_cost(1, &h, 0) - 20.0).abs() < 1e-9);
        // Rank 0 FPGAs have lived 35 s on average: ceil(35/10) = 4 epochs, 10/4 = 2.5.
        a.record_lifetime(0, 30.0);
        a.record_lifetime(0, 40.0);
        assert!((a.expected_cost(1, &h, 0) - 12.5).abs() < 1e-9);
        // Already allocated: no spin-up term.
        assert!((a.expected_cost(1, &h, 1) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn predict_picks_minimum_including_values_between_bins() {
        let mut a = energy();
        for v in [0, 10, 10, 10] {
            a.observe(5, v);
        }
        // Energy strongly prefers FPGAs: holding 10 beats any value in between and 0.
        assert_eq!(a.predict(5, 10), 10);
        // Cost: idle FPGAs cost as much as busy ones, so the candidate drops below the top bin
        // only if under-allocation is cheaper; with p(10) = 3/4, S*C_c/C_f = 1.36 > 1, holding 10 wins.
        let mut c = SporkAllocator::new(Objective::COST, &Platform::default());
        for v in [0, 10, 10, 10] {
            c.observe(5, v);
        }
        assert_eq!(c.predict(5, 10), 10);
        // With p(10) = 1/4 cost prefers the bottom: each extra FPGA costs 1 and saves 0.25*1.36.
        let mut c2 = SporkAllocator::new(Objective::COST, &Platform::default());
        for v in [0, 0, 0, 10] {
            c2.observe(5, v);
        }
        assert_eq!(c2.predict(5, 10), 0);
        // Energy in the same case still holds some: each extra costs 0.75*0.4 idle vs saves 0.25*(6-1).
        let mut e2 = energy();
        for v in [0, 0, 0, 10] {
            e2.observe(5, v);
        }
        assert_eq!(e2.predict(5, 10), 10);
    }

    #[test]
    fn ties_go_to_the_smaller_count() {
        // Make idle FPGAs free and CPU work cost exactly the FPGA busy rate: every candidate between
        // the bins then costs the same, and the smallest must win.
        let mut p = Platform::default();
        p.fpga.idle_power_w = 0.0;
        p.cpu.busy_power_w = 25.0; // S * 25 = 50 = FPGA busy
        let mut a = SporkAllocator::new(Objective::ENERGY, &p);
        a.observe(3, 1);
        a.observe(3, 4);
        assert_eq!(a.predict(3, 4), 1);
    }

    /// The counts `objective`'s allocator plans on `platform` over `intervals` of steady work
    /// (`work_s` FPGA-seconds per interval, all of it run on CPUs).
    fn plans(objective: Objective, platform: &Platform, work_s: f64, intervals: usize) -> Vec<u32> {
        let mut a = SporkAllocator::new(objective, platform);
        let cpu = crate::model::time::from_secs(work_s * platform.fpga.speedup);
        (1..=intervals)
            .map(|index| a.plan(&IntervalStats { index, fpga_work: 0, cpu_work: cpu, fpgas_allocated: 0 }))
            .collect()
    }

    fn at_speedup(s: f64) -> Platform {
        let mut p = Platform::default();
        p.fpga.speedup = s;
        p
    }

    #[test]
    fn no_board_below_a_third_at_the_paper_powers_and_boards_above() {
        // CPU 150 W busy, FPGA 50 W busy, 20 W idle: a full board pays when S x 150 > 50.
        for s in [0.1, 0.19, 0.3, 0.333] {
            assert!(plans(Objective::ENERGY, &at_speedup(s), 90.5, 8).iter().all(|&n| n == 0), "S = {s}");
        }
        for s in [0.334, 0.5, 2.0] {
            let p = plans(Objective::ENERGY, &at_speedup(s), 90.5, 8);
            assert!(p.iter().skip(3).all(|&n| n == 9), "S = {s}: {p:?}");
        }
    }

    #[test]
    fn cost_and_weighted_objectives_gate_at_their_own_speedup() {
        // Cost: a board pays above 0.982 / 0.668 = 1.47; balanced between the two.
        assert!(plans(Objective::COST, &at_speedup(1.46), 90.5, 8).iter().all(|&n| n == 0));
        assert!(plans(Objective::COST, &at_speedup(1.48), 90.5, 8).iter().skip(3).all(|&n| n == 9));
        let b = Objective::BALANCED.paying_speedup(&Platform::default());
        assert!(b > 1.0 / 3.0 && b < 1.47, "{b}");
        assert!(plans(Objective::BALANCED, &at_speedup(b * 0.99), 90.5, 8).iter().all(|&n| n == 0));
        assert!(plans(Objective::BALANCED, &at_speedup(b * 1.01), 90.5, 8).iter().skip(3).all(|&n| n == 9));
    }

    proptest::proptest! {
        /// Whatever the powers, prices, compute units and speedup: the allocator holds boards for a
        /// heavy steady load exactly when a fully used board pays at its objective.
        #[test]
        fn boards_are_held_exactly_where_a_full_board_pays(
            s in 0.05..8.0f64,
            cpu_w in 20.0..300.0f64,
            busy_w in 5.0..200.0f64,
            idle_frac in 0.0..1.0f64,
            cus in 1..5u32,
            energy in 0.0..=1.0f64,
        ) {
            let mut p = at_speedup(s);
            p.cpu.busy_power_w = cpu_w;
            p.fpga.busy_power_w = busy_w;
            p.fpga.idle_power_w = busy_w * idle_frac;
            p.fpga.compute_units = cus;
            let o = Objective::weighted(energy).unwrap_or(Objective::ENERGY);
            // Skip the knife edge, where the two forms may round apart.
            proptest::prop_assume!(o.full_board_saving(&p).abs() > 1e-9);
            let held = plans(o, &p, 20.5 * p.board_capacity_s(), 6).last().copied().unwrap_or(0);
            proptest::prop_assert_eq!(held > 0, o.board_pays(&p), "held {}", held);
        }
    }

    #[test]
    fn the_tail_prior_engages_past_the_papers_speedups_only() {
        // The paper's powers: q* = 0.4 / (3S - 1 + 0.4); S = 4 gives 3.5%, S = 8 1.7%.
        for (s, busy_w, on) in [(1.0, 50.0, false), (2.0, 50.0, false), (4.0, 50.0, false), (8.0, 50.0, true)]
            .into_iter()
            .chain([(4.0, 25.0, false), (8.0, 25.0, true), (4.0, 100.0, false), (8.0, 100.0, true)])
        {
            let mut p = at_speedup(s);
            p.fpga.busy_power_w = busy_w;
            let a = SporkAllocator::new(Objective::ENERGY, &p);
            assert_eq!(a.tail_prior, on, "S = {s} at {busy_w} W: q* = {:?}", a.fractile());
        }
        assert_eq!(SporkAllocator::new(Objective::ENERGY, &at_speedup(0.2)).fractile(), None);
    }

    #[test]
    fn past_the_papers_range_a_sparse_histogram_borrows_the_tail_seen_from_other_counts() {
        let mut fast = SporkAllocator::new(Objective::ENERGY, &at_speedup(8.0));
        let mut paper = SporkAllocator::new(Objective::ENERGY, &at_speedup(4.0));
        for a in [&mut fast, &mut paper] {
            // From 10, the load stayed at 10 three times; from 3 and 20 it rose by 2 twice.
            for (from, to) in [(10, 10), (10, 10), (10, 10), (3, 5), (3, 5), (20, 22), (20, 22)] {
                a.observe(from, to);
            }
        }
        // Algorithm 2 as written: H[10] = {10}, so 10 boards; an unseen count keeps itself.
        assert_eq!(paper.predict(10, 10), 10);
        assert_eq!(paper.predict(7, 7), 7);
        // Shrunk: P(12 | 10) = (1 * 4/7) / 4 = 1/7 > q* = 1.7%: the 11th and 12th boards pay.
        assert_eq!(fast.predict(10, 10), 12);
        // An unseen count gets the pooled changes: 7 + 2 with probability 4/7.
        assert_eq!(fast.predict(7, 7), 9);
        let d = fast.distribution(10);
        assert!((d.iter().map(|(_, p)| p).sum::<f64>() - 1.0).abs() < 1e-12, "{d:?}");
    }

    #[test]
    fn plan_updates_histogram_two_intervals_apart_and_caches() {
        let mut a = energy();
        let s = |fpga_s: f64| IntervalStats {
            index: 1,
            fpga_work: crate::model::time::from_secs(fpga_s),
            cpu_work: 0,
            fpgas_allocated: 0,
        };
        // Needed counts 1, 2, 3, 4: H[1] gets 3, H[2] gets 4.
        for w in [10.0, 20.0, 30.0, 40.0] {
            a.plan(&s(w));
        }
        assert_eq!(a.histogram(1).map(Histogram::total), Some(1));
        assert_eq!(a.histogram(2).map(Histogram::total), Some(1));
        assert!(a.histogram(3).is_none());
        // n_{t-1} = 1 now: H[1] = {3} so the prediction is 3, and a repeat hits the cache.
        assert_eq!(a.plan(&s(10.0)), 3);
        assert_eq!(a.predict(1, 0), 3);
    }
}

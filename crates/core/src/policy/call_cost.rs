//! A client request's CPU time as a fixed cost per call plus a cost per item, fitted to the answers.
//!
//! A per-item time alone (`policy::estimate`) charges a call's fixed cost (its hand-off, a kernel
//! process's wake-up, the kernel's own set-up) to its items: a run of 1-item requests that take
//! 200 us each teaches 200 us an item, and the next 15,000-item request is booked at 3 s and
//! refused as unable to meet its deadline, with nothing admitted to correct it. Where the recent
//! requests' sizes spread, an exponentially weighted least-squares line of time on items separates
//! the two; where they do not (every request alike), the split cannot be seen and the per-item time
//! stands, as before.

use crate::model::Time;
use crate::model::time::{from_secs, to_secs};

use super::estimate::{ALPHA, RecentQuantile, SizeEstimator, Statistic};

/// The least spread of the recent requests' items (their weighted standard deviation over their
/// mean) at which the line is believed: below it the sizes are too alike to tell a fixed cost from
/// a per-item one.
pub const MIN_SPREAD: f64 = 0.5;

/// Exponentially weighted sums of (items, seconds): each answer counts `1 - ALPHA` less at the next.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallCost {
    w: f64,
    x: f64,
    y: f64,
    xx: f64,
    xy: f64,
}

impl CallCost {
    /// No answers yet.
    pub fn new() -> Self {
        CallCost::default()
    }

    /// A request of `items` took `took`.
    pub fn observe(&mut self, items: u64, took: Time) {
        let (x, y) = (items as f64, to_secs(took));
        let keep = 1.0 - ALPHA;
        self.w = self.w * keep + 1.0;
        self.x = self.x * keep + x;
        self.y = self.y * keep + y;
        self.xx = self.xx * keep + x * x;
        self.xy = self.xy * keep + x * y;
    }

    /// The recent calls' mean items (weighted as the line is); `None` before any answer.
    pub fn mean_items(&self) -> Option<f64> {
        (self.w > 0.0).then(|| self.x / self.w)
    }

    /// The fitted (fixed seconds per call, seconds per item), once the sizes spread by at least
    /// [`MIN_SPREAD`] and the line is a cost (a positive slope; a negative intercept reads as none).
    pub fn line(&self) -> Option<(f64, f64)> {
        if self.w <= 0.0 {
            return None;
        }
        let (mx, my) = (self.x / self.w, self.y / self.w);
        let var = self.xx / self.w - mx * mx;
        // A NaN or non-positive variance (sizes all alike, or rounding) reads as no spread.
        if mx <= 0.0 || var.is_nan() || var <= 0.0 || var.sqrt() / mx < MIN_SPREAD {
            return None;
        }
        let slope = (self.xy / self.w - mx * my) / var;
        if slope.is_nan() || slope <= 0.0 || slope.is_infinite() {
            return None;
        }
        let fixed = my - slope * mx;
        // No negative fixed cost: the line through the mean with none.
        Some(if fixed >= 0.0 { (fixed, slope) } else { (0.0, my / mx) })
    }

    /// The estimated time of `items` on the line, if it is believed (at least 1 ns).
    pub fn estimate(&self, items: u64) -> Option<Time> {
        self.line().map(|line| on_line(line, items))
    }
}

/// The time of `items` on `(fixed seconds, seconds per item)`, at least 1 ns.
fn on_line((fixed, per_item): (f64, f64), items: u64) -> Time {
    from_secs(fixed + per_item * items as f64).max(1)
}

/// A call of fewer items than this share of the recent mean teaches the line only, not the per-item
/// statistic: its time is mostly the call's own, and divided by its few items it would read as a
/// per-item time many times the true one.
pub const SMALL_CALL: f64 = 0.25;

/// How a live pool sizes its clients' requests: the per-item statistic, the line once sizes spread
/// (and the fixed cost per call it last showed), and with a percentile statistic, that quantile of
/// how far answers ran past the line.
#[derive(Clone, Debug)]
pub struct ClientSizes {
    per_item: SizeEstimator,
    line: CallCost,
    fixed: Time,
    over_line: Option<RecentQuantile>,
}

impl ClientSizes {
    /// At `statistic`, from the calibration's `items_per_sec`, with no answers yet.
    pub fn new(statistic: Statistic, items_per_sec: f64) -> Self {
        ClientSizes {
            per_item: SizeEstimator::with(statistic, items_per_sec),
            line: CallCost::new(),
            fixed: 0,
            over_line: RecentQuantile::of(statistic),
        }
    }

    /// On the line (raised by the quantile of answers over it, once known) while it is believed;
    /// else the last fixed cost plus the per-item statistic.
    pub fn size(&self, items: u64) -> Time {
        match (self.line.estimate(items), self.over_line.as_ref().and_then(RecentQuantile::get)) {
            (Some(on), Some(ratio)) => ((on as f64 * ratio) as Time).max(1),
            (Some(on), None) => on,
            (None, _) => self.fixed.saturating_add(self.per_item.estimate(items)),
        }
    }

    /// A call of `items` took `took`; the relative error its size had. The per-item statistic
    /// learns only from calls whose items, not the call itself, take most of their time, net of
    /// the fixed cost: calls of at least [`SMALL_CALL`] of the recent mean items whose per-item part
    /// is at least the fixed cost. With sizes alike and no line yet (the fixed cost 0), that is
    /// every call, as before the line.
    pub fn observe(&mut self, items: u64, took: Time) -> Option<f64> {
        let size = self.size(items);
        if let Some(line) = self.line.line() {
            self.fixed = from_secs(line.0);
            if let Some(over) = self.over_line.as_mut() {
                over.push(took as f64 / on_line(line, items) as f64);
            }
        }
        let small = self.line.mean_items().is_some_and(|m| (items as f64) < m * SMALL_CALL);
        if !small && self.per_item.estimate(items) >= self.fixed {
            self.per_item.observe(items, took.saturating_sub(self.fixed).max(1));
        }
        self.line.observe(items, took);
        (items > 0 && took > 0).then(|| size.abs_diff(took) as f64 / took as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const US: f64 = 1e-6;

    #[test]
    fn requests_all_alike_show_no_line_and_the_per_item_time_stands() {
        let mut c = CallCost::new();
        assert_eq!(c.line(), None, "no answers");
        for _ in 0..50 {
            c.observe(15_000, from_secs(10.0 * US));
        }
        assert_eq!(c.line(), None, "one size: a fixed cost cannot be told from a per-item one");
    }

    #[test]
    fn one_item_requests_after_large_ones_do_not_book_the_next_large_one_past_its_deadline() {
        // The served satadd on a loaded 2-core VM: 15,368-item calls of ~1 ms, then 1-3 item calls
        // of ~200 us (the call itself), then a 15,368-item call with a 2 s deadline.
        let (mut c, mut per_item) = (CallCost::new(), SizeEstimator::new(1.5e9));
        let mut feed = |items: u64, secs: f64| {
            c.observe(items, from_secs(secs));
            per_item.observe(items, from_secs(secs));
        };
        for _ in 0..27 {
            feed(15_368, 1e-3);
        }
        for i in 0..27 {
            feed(1 + 2 * (i % 2), 200.0 * US);
        }
        let alone = to_secs(per_item.estimate(15_368));
        assert!(alone > 1.0, "the per-item time alone books the 1 ms call at {alone} s: the fault");
        let (fixed, slope) = c.line().expect("the sizes spread");
        let line = to_secs(c.estimate(15_368).expect("a line"));
        assert!((fixed - 200.0 * US).abs() < 20.0 * US, "fixed {fixed}");
        assert!((slope * 15_368.0 + fixed - 1e-3).abs() < 1e-4, "slope {slope}");
        assert!((line - 1e-3).abs() < 1e-4, "the line books it at {line} s");
    }

    proptest! {
        /// Whatever the true fixed and per-item costs, answers of spread sizes recover them.
        #[test]
        fn spread_sizes_recover_the_true_costs(
            fixed_us in 0.0f64..1_000.0, ns_per_item in 0.1f64..1_000.0, seed in 0u64..1_000,
        ) {
            let mut c = CallCost::new();
            for i in 0..200u64 {
                // Small and large calls alternate: the spread a line needs, in every window.
                let draw = i * 7_919 + seed * 104_729;
                let items = if i % 2 == 0 { 1 + draw % 1_000 } else { 10_000 + draw % 90_000 };
                let secs = fixed_us * US + ns_per_item * 1e-9 * items as f64;
                c.observe(items, from_secs(secs));
            }
            let (fixed, slope) = c.line().expect("spread sizes");
            prop_assert!((fixed - fixed_us * US).abs() < 1e-7 + 1e-3 * fixed_us * US, "{fixed}");
            prop_assert!((slope / (ns_per_item * 1e-9) - 1.0).abs() < 1e-3, "{slope}");
        }
    }
}

//! A rate trace: per-minute request rates, one request size, and the seed of its arrival process.
//!
//! Arrivals are a time-varying Poisson process whose rate moves linearly from each minute's rate to the
//! next minute's (the last minute holds its rate). They are drawn by inverting the cumulative
//! intensity, one exponential draw per arrival, so a 72 M-request trace streams without being stored.
//! With a size spread (`size_cv`), each request's size is drawn log-normal around the trace's size
//! from a stream of its own, so the arrivals are the same whatever the spread.

use crate::model::{Request, Time, time::to_secs};
use rand::{RngExt, SeedableRng, rngs::Xoshiro256PlusPlus};
use rand_distr::{Distribution, Exp1, LogNormal};

/// Seconds per rate bin.
pub const MINUTE_S: f64 = 60.0;

/// The widest size spread drawn (a coefficient of variation of 10 is already a heavy tail).
pub const MAX_SIZE_CV: f64 = 10.0;

/// Per-minute rates plus what is needed to replay them as requests.
#[derive(Clone, Debug, PartialEq)]
pub struct RateTrace {
    /// Requests per second at the start of each minute.
    pub minute_rates: Vec<f64>,
    /// CPU service time of every request (its mandatory part).
    pub size: Time,
    /// CPU service time of every request's optional part (0: none).
    pub optional: Time,
    /// Spread of request sizes: each is drawn log-normal with mean `size` and this coefficient of
    /// variation (0: every request is `size`, known in advance as in the paper).
    pub size_cv: f64,
    /// Length of the trace (at most `minute_rates.len()` minutes).
    pub duration: Time,
    /// Seed of the arrival process.
    pub seed: u64,
}

impl RateTrace {
    /// The requests, in arrival order.
    pub fn requests(&self) -> Arrivals<'_> {
        Arrivals {
            rates: &self.minute_rates,
            size: self.size,
            optional: self.optional,
            horizon_s: to_secs(self.duration).min(self.minute_rates.len() as f64 * MINUTE_S),
            rng: Xoshiro256PlusPlus::seed_from_u64(self.seed ^ 0x5eed_a771_7a15_0000),
            sizes: self.spread(),
            minute: 0,
            x: 0.0,
            segment: Segment::of(&self.minute_rates, 0),
        }
    }

    /// The size draws, if sizes spread.
    fn spread(&self) -> Option<(LogNormal<f64>, Xoshiro256PlusPlus)> {
        let cv = self.size_cv.clamp(0.0, MAX_SIZE_CV);
        let dist = LogNormal::from_mean_cv(to_secs(self.size), cv).ok().filter(|_| cv > 0.0)?;
        Some((dist, Xoshiro256PlusPlus::seed_from_u64(self.seed ^ 0x51e5_0f5a_e5ee_d000)))
    }

    /// Expected number of requests: the integral of the rate over the trace.
    pub fn expected_requests(&self) -> f64 {
        let horizon = to_secs(self.duration);
        (0..self.minute_rates.len())
            .map(|m| {
                let len = (horizon - m as f64 * MINUTE_S).clamp(0.0, MINUTE_S);
                Segment::of(&self.minute_rates, m).cum(len)
            })
            .sum()
    }
}

/// A minute of a rate trace (the rate linear within it): its start rate, slope and whole intensity, worked out once a
/// minute rather than once a request (the same arithmetic, so the same arrivals to the bit).
#[derive(Clone, Copy, Debug, Default)]
struct Segment {
    a: f64,
    s: f64,
    /// The intensity integrated over the whole minute.
    whole: f64,
}

impl Segment {
    /// Minute `m` of `rates` (zero past the end, where no arrival is drawn).
    fn of(rates: &[f64], m: usize) -> Self {
        if m >= rates.len() {
            return Segment::default();
        }
        let a = rates[m];
        let b = rates.get(m + 1).copied().unwrap_or(a);
        let part = Segment { a, s: (b - a) / MINUTE_S, whole: 0.0 };
        Segment { whole: part.cum(MINUTE_S), ..part }
    }

    /// The intensity integrated from the minute's start to `x` seconds into it.
    #[inline]
    fn cum(&self, x: f64) -> f64 {
        self.a * x + 0.5 * self.s * x * x
    }
}

/// Iterator over a rate trace's requests.
#[derive(Clone, Debug)]
pub struct Arrivals<'a> {
    rates: &'a [f64],
    size: Time,
    optional: Time,
    horizon_s: f64,
    rng: Xoshiro256PlusPlus,
    /// Each request's size, with a spread.
    sizes: Option<(LogNormal<f64>, Xoshiro256PlusPlus)>,
    minute: usize,
    /// Position within the current minute, in seconds.
    x: f64,
    /// The current minute's rates.
    segment: Segment,
}

impl Iterator for Arrivals<'_> {
    type Item = Request;

    #[inline]
    fn next(&mut self) -> Option<Request> {
        let mut need: f64 = self.rng.sample(Exp1);
        loop {
            if self.minute >= self.rates.len() {
                return None;
            }
            let seg = self.segment;
            let (a, s) = (seg.a, seg.s);
            // Intensity integrated from the current position to the end of the minute.
            let x0 = self.x;
            let left = seg.whole - seg.cum(x0);
            if need > left || left <= 0.0 {
                need -= left.max(0.0);
                self.minute += 1;
                self.x = 0.0;
                self.segment = Segment::of(self.rates, self.minute);
                continue;
            }
            // Solve a*x + s/2*x^2 = cum(x0) + need for x in [x0, 60].
            let c = seg.cum(x0) + need;
            let disc = (a * a + 2.0 * s * c).max(0.0);
            let x = (2.0 * c / (a + disc.sqrt())).clamp(x0, MINUTE_S);
            self.x = x;
            let t = self.minute as f64 * MINUTE_S + x;
            if t >= self.horizon_s {
                self.minute = self.rates.len();
                return None;
            }
            let size = match &mut self.sizes {
                Some((dist, rng)) => crate::model::time::from_secs(dist.sample(rng)).max(1),
                None => self.size,
            };
            let arrival = (t * 1e9) as Time;
            return Some(Request { arrival, size, optional: self.optional, nominal: self.size });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::time::from_secs;

    fn trace(rates: Vec<f64>, seed: u64) -> RateTrace {
        let duration = from_secs(rates.len() as f64 * MINUTE_S);
        RateTrace { minute_rates: rates, size: from_secs(0.01), optional: 0, size_cv: 0.0, duration, seed }
    }

    #[test]
    fn spread_sizes_have_the_mean_and_cv_asked_and_the_same_arrivals() {
        let fixed = trace(vec![2000.0; 5], 4);
        let spread = RateTrace { size_cv: 1.0, ..fixed.clone() };
        let (a, b): (Vec<_>, Vec<_>) = (fixed.requests().collect(), spread.requests().collect());
        assert!(a.iter().zip(&b).all(|(x, y)| x.arrival == y.arrival && y.nominal == x.size));
        assert_eq!(a.len(), b.len());
        let s: Vec<f64> = b.iter().map(|r| to_secs(r.size)).collect();
        let mean = s.iter().sum::<f64>() / s.len() as f64;
        let sd = (s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / s.len() as f64).sqrt();
        // 600,000 draws: the mean within 1%, the CV within 5% (a log-normal's tail converges slowly).
        assert!((mean / 0.01 - 1.0).abs() < 0.01, "{mean}");
        assert!((sd / mean - 1.0).abs() < 0.05, "{}", sd / mean);
    }

    #[test]
    fn count_matches_integral_of_rate() {
        let t = trace(vec![100.0, 300.0, 50.0, 0.0, 200.0], 3);
        let n = t.requests().count() as f64;
        let expected = t.expected_requests();
        // Poisson: standard deviation sqrt(expected) ~ 110; allow 4 sigma.
        assert!((n - expected).abs() < 4.0 * expected.sqrt(), "{n} vs {expected}");
    }

    #[test]
    fn arrivals_are_sorted_within_horizon_and_follow_the_ramp() {
        let t = trace(vec![0.0, 1000.0], 9);
        let v: Vec<_> = t.requests().collect();
        assert!(v.windows(2).all(|w| w[0].arrival <= w[1].arrival));
        assert!(v.last().is_some_and(|r| r.arrival < t.duration));
        // First minute ramps 0 -> 1000: the second half carries 3x the first half's requests.
        let half = from_secs(30.0);
        let minute = from_secs(60.0);
        let first = v.iter().filter(|r| r.arrival < half).count() as f64;
        let second = v.iter().filter(|r| r.arrival >= half && r.arrival < minute).count() as f64;
        assert!((second / first - 3.0).abs() < 0.2, "{first} {second}");
    }

    #[test]
    fn same_seed_same_arrivals() {
        let a: Vec<_> = trace(vec![500.0; 3], 1).requests().collect();
        let b: Vec<_> = trace(vec![500.0; 3], 1).requests().collect();
        let c: Vec<_> = trace(vec![500.0; 3], 2).requests().collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}

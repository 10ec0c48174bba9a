//! Synthetic traces as the paper builds them: a request size drawn from a bucket, per-minute rates from
//! the b-model scaled so that on average `workers` CPU workers are busy, then Poisson arrivals.

use super::bmodel::bmodel;
use super::rates::{MINUTE_S, RateTrace};
use super::size::SizeSpec;
use crate::model::{Time, time::to_secs};
use rand::{SeedableRng, rngs::Xoshiro256PlusPlus};

/// Parameters of a synthetic trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Synthetic {
    /// b-model bias: 0.5 (uniform) to 0.75 (highly variable).
    pub burstiness: f64,
    /// Trace length.
    pub duration: Time,
    /// Request size bucket or fixed size.
    pub size: SizeSpec,
    /// Mean number of CPU workers the load needs.
    pub workers: f64,
    /// Seed for the size, the rates and the arrivals.
    pub seed: u64,
    /// Size of each request's optional part, as a multiple of its mandatory size (0: none).
    pub optional_factor: f64,
    /// Spread of request sizes around the drawn size, a coefficient of variation (0: all equal).
    pub size_cv: f64,
}

/// Synthetic parameters out of range.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SyntheticError {
    /// Bias outside [0.5, 1).
    #[error(
        "burstiness {0} is out of range: the b-model bias must be at least 0.5 (uniform) and below 1 (the paper uses 0.5 to 0.75)"
    )]
    Burstiness(f64),
    /// Zero or absurd duration.
    #[error("duration must be at least one second and at most 30 days")]
    Duration,
    /// Optional part out of range.
    #[error(
        "optional factor {0} is out of range: give the optional part's size as 0 to 100 times the mandatory size"
    )]
    Optional(f64),
    /// Size spread out of range.
    #[error(
        "size CV {0} is out of range: give the spread of request sizes as a coefficient of variation from 0 (all equal) to 10"
    )]
    SizeCv(f64),
    /// Non-positive load.
    #[error("workers = {0}: the mean number of busy CPU workers must be above 0 and finite")]
    Workers(f64),
}

impl Synthetic {
    /// The paper's default: 2 hours of short requests at burstiness 0.6, 100 workers.
    pub fn paper_default(seed: u64) -> Self {
        Synthetic {
            burstiness: 0.6,
            duration: crate::model::time::from_secs(7200.0),
            size: SizeSpec::Short,
            workers: 100.0,
            seed,
            optional_factor: 0.0,
            size_cv: 0.0,
        }
    }

    /// Generates the rate trace.
    pub fn generate(&self) -> Result<RateTrace, SyntheticError> {
        if !(0.5..1.0).contains(&self.burstiness) {
            return Err(SyntheticError::Burstiness(self.burstiness));
        }
        let secs = to_secs(self.duration);
        if !(1.0..=30.0 * 86400.0).contains(&secs) {
            return Err(SyntheticError::Duration);
        }
        if !(self.workers > 0.0 && self.workers.is_finite()) {
            return Err(SyntheticError::Workers(self.workers));
        }
        if !(self.optional_factor.is_finite() && (0.0..=100.0).contains(&self.optional_factor)) {
            return Err(SyntheticError::Optional(self.optional_factor));
        }
        if !(self.size_cv.is_finite() && (0.0..=super::rates::MAX_SIZE_CV).contains(&self.size_cv)) {
            return Err(SyntheticError::SizeCv(self.size_cv));
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.seed);
        let size = self.size.draw(&mut rng);
        let minutes = (secs / MINUTE_S).ceil() as usize;
        let levels = (minutes as f64).log2().ceil() as u32;
        let mut bins = bmodel(1 << 52, self.burstiness, levels, &mut rng);
        bins.truncate(minutes);
        let mean = bins.iter().map(|&b| b as f64).sum::<f64>() / minutes as f64;
        let target = self.workers / to_secs(size);
        let minute_rates =
            bins.iter().map(|&b| if mean > 0.0 { b as f64 / mean * target } else { target }).collect();
        let optional = crate::model::time::from_secs(to_secs(size) * self.optional_factor.max(0.0));
        let (duration, seed, size_cv) = (self.duration, self.seed, self.size_cv);
        Ok(RateTrace { minute_rates, size, optional, size_cv, duration, seed })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::time::from_secs;

    #[test]
    fn mean_rate_gives_requested_workers() {
        let s = Synthetic { size: SizeSpec::Fixed(from_secs(0.01)), ..Synthetic::paper_default(4) };
        let t = s.generate().unwrap();
        assert_eq!(t.minute_rates.len(), 120);
        let mean = t.minute_rates.iter().sum::<f64>() / 120.0;
        assert!((mean - 10_000.0).abs() < 1e-6, "{mean}");
    }

    #[test]
    fn rejects_out_of_range() {
        let base = Synthetic::paper_default(1);
        assert_eq!(Synthetic { burstiness: 0.3, ..base }.generate(), Err(SyntheticError::Burstiness(0.3)));
        assert_eq!(Synthetic { workers: 0.0, ..base }.generate(), Err(SyntheticError::Workers(0.0)));
        assert_eq!(Synthetic { duration: 0, ..base }.generate(), Err(SyntheticError::Duration));
    }

    #[test]
    fn size_is_drawn_from_bucket() {
        for seed in 0..20 {
            let t =
                Synthetic { size: SizeSpec::Medium, ..Synthetic::paper_default(seed) }.generate().unwrap();
            assert!((from_secs(0.1)..=from_secs(1.0)).contains(&t.size));
        }
    }
}

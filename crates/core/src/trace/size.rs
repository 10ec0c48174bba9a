//! Request sizes: the paper's buckets, one size drawn per trace.

use crate::model::{Time, time::from_secs};
use rand::{Rng, RngExt};
use std::fmt;
use std::str::FromStr;

/// A request-size bucket or a fixed size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeSpec {
    /// 10 ms to 100 ms.
    Short,
    /// 100 ms to 1 s.
    Medium,
    /// 1 s to 10 s.
    Long,
    /// Exactly this CPU service time.
    Fixed(Time),
}

impl SizeSpec {
    /// The bucket's bounds in seconds (a fixed size is its own bounds).
    pub fn bounds_secs(&self) -> (f64, f64) {
        match *self {
            SizeSpec::Short => (0.010, 0.100),
            SizeSpec::Medium => (0.100, 1.0),
            SizeSpec::Long => (1.0, 10.0),
            SizeSpec::Fixed(t) => (crate::model::time::to_secs(t), crate::model::time::to_secs(t)),
        }
    }

    /// Draws one size, uniformly within the bucket, rounded to the microsecond.
    pub fn draw<R: Rng>(&self, rng: &mut R) -> Time {
        match *self {
            SizeSpec::Fixed(t) => t,
            _ => {
                let (lo, hi) = self.bounds_secs();
                let s = rng.random_range(lo..hi);
                from_secs((s * 1e6).round() / 1e6)
            }
        }
    }
}

impl fmt::Display for SizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeSpec::Short => f.write_str("short"),
            SizeSpec::Medium => f.write_str("medium"),
            SizeSpec::Long => f.write_str("long"),
            SizeSpec::Fixed(t) => {
                write!(f, "{}", humantime::format_duration(std::time::Duration::from_nanos(*t)))
            }
        }
    }
}

/// A size that is neither a bucket nor a duration.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("invalid request size '{0}': expected short, medium, long or a duration such as 10ms")]
pub struct InvalidSize(pub String);

impl FromStr for SizeSpec {
    type Err = InvalidSize;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "short" => Ok(SizeSpec::Short),
            "medium" => Ok(SizeSpec::Medium),
            "long" => Ok(SizeSpec::Long),
            other => humantime::parse_duration(other)
                .ok()
                .filter(|d| !d.is_zero())
                .map(|d| SizeSpec::Fixed(crate::model::time::from_duration(d)))
                .ok_or_else(|| InvalidSize(s.to_string())),
        }
    }
}

//! The production datasets (Azure Functions 2019, Alibaba microservices 2021) as the experiments
//! replay them: the paper's selection of heavy applications per size bucket, read once and shared.

use super::jobs::{Scale, TraceSource};
use spork_core::input::{InputError, Location};
use spork_core::trace::production::{App, read_alibaba, read_azure, select};
use spork_core::trace::{RateTrace, SizeSpec};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The size buckets replayed, in the order of the `size` parameter (0 short, 1 medium).
const BUCKETS: [SizeSpec; 2] = [SizeSpec::Short, SizeSpec::Medium];

/// The requests one replay of a dataset's selected windows may generate without `--force`: 2e10.
/// Table 8 replays every window 9 times and Table 9 three times more, so this is up to 2.4e11 simulated
/// requests, some four and a half hours of two cores at the evaluator's 7-8 M requests/s per core
/// (`spork simulate`'s budget is 5e9 for one command). The readers' rate bound
/// ([`spork_core::trace::production::MAX_RATE_PER_S`]) still lets one two-hour window ask for 7.2e10: this
/// refuses such a dataset before any request is generated.
pub const BUDGET_REQUESTS: f64 = 2e10;

/// One dataset's selected applications.
#[derive(Clone, Debug)]
pub struct Production {
    /// The `dataset` parameter: 0 for Azure, 1 for Alibaba.
    pub dataset: u32,
    /// Per size bucket (the `size` parameter), the selected applications' windows.
    pub buckets: Vec<(usize, Vec<Arc<RateTrace>>)>,
}

/// Where the datasets are.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// Azure Functions 2019 folder.
    pub azure: Option<PathBuf>,
    /// Azure day (default: the first present).
    pub azure_day: Option<u32>,
    /// Alibaba microservices 2021 folder.
    pub alibaba: Option<PathBuf>,
    /// Replay a dataset beyond [`BUDGET_REQUESTS`].
    pub force: bool,
}

impl Production {
    /// Selects `apps`' heavy applications per bucket, replaying `minutes` from the start.
    pub fn new(dataset: u32, apps: &[App], minutes: usize) -> Self {
        let buckets = BUCKETS
            .iter()
            .enumerate()
            .map(|(i, b)| {
                (i, select(apps, *b, 0, minutes, 1).into_iter().map(|(_, t)| Arc::new(t)).collect())
            })
            .collect();
        Production { dataset, buckets }
    }

    /// The requests one replay of every selected window generates (expected).
    pub fn requests(&self) -> f64 {
        self.traces().map(|t| t.expected_requests()).sum()
    }

    /// The selected windows, bucket after bucket.
    fn traces(&self) -> impl Iterator<Item = &RateTrace> + '_ {
        self.buckets.iter().flat_map(|(_, apps)| apps.iter().map(|t| &**t))
    }

    /// Every selected window: its point parameters, its trace index within the point, its trace.
    pub fn windows(&self) -> impl Iterator<Item = ([(&'static str, f64); 2], u32, TraceSource)> + '_ {
        self.buckets.iter().flat_map(move |(size, apps)| {
            let at = [("dataset", f64::from(self.dataset)), ("size", *size as f64)];
            apps.iter().enumerate().map(move |(i, t)| (at, i as u32, TraceSource::Production(t.clone())))
        })
    }
}

impl Sources {
    /// Reads the datasets given, Azure first, each refused if its selection is beyond
    /// [`BUDGET_REQUESTS`] (unless [`Sources::force`]).
    pub fn load(&self, scale: &Scale) -> Result<Vec<Production>, InputError> {
        let mut out = Vec::new();
        if let Some(dir) = &self.azure {
            let p = Production::new(0, &read_azure(dir, self.azure_day)?, scale.production_minutes);
            self.within_budget(dir, &p)?;
            out.push(p);
        }
        if let Some(dir) = &self.alibaba {
            let p = Production::new(1, &read_alibaba(dir)?, scale.production_minutes);
            self.within_budget(dir, &p)?;
            out.push(p);
        }
        Ok(out)
    }

    /// `p`, read from `dir`, within [`BUDGET_REQUESTS`], or `--force` given.
    fn within_budget(&self, dir: &Path, p: &Production) -> Result<(), InputError> {
        let requests = p.requests();
        if self.force || (requests.is_finite() && requests <= BUDGET_REQUESTS) {
            return Ok(());
        }
        let windows = p.traces().count();
        let heaviest = p.traces().map(RateTrace::expected_requests).fold(0.0, f64::max);
        Err(InputError::invalid(
            Location { path: dir.to_path_buf(), line: 0, column: 0 },
            "dataset",
            format!(
                "the applications selected ({windows}) replay about {requests:.3e} requests (the heaviest \
                 {heaviest:.3e}), beyond the budget of {BUDGET_REQUESTS:e} requests a dataset"
            ),
            "check the dataset's counts (one far above the others is corruption: download the file again), \
             or give --force to replay it anyway",
        ))
    }
}

/// The dataset's name for a `dataset` parameter value.
pub fn dataset_name(dataset: f64) -> &'static str {
    if dataset == 0.0 { "Azure" } else { "Alibaba" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spork_core::trace::production::{MAX_RATE_PER_S, write_azure};

    #[test]
    fn a_dataset_beyond_the_budget_is_refused_before_any_request_unless_forced() {
        // One short application at the readers' highest rate for two hours: 7.2e10 requests a replay.
        let dir = tempfile::tempdir().unwrap();
        let app = App { name: "o/a/f".into(), size_s: 0.05, minute_rates: vec![MAX_RATE_PER_S; 120] };
        write_azure(dir.path(), 1, &[app]).unwrap();
        let sources = Sources { azure: Some(dir.path().to_path_buf()), ..Sources::default() };
        let e = sources.load(&Scale::full()).unwrap_err().to_string();
        assert!(e.contains("applications selected (1) replay about 7.200e10 requests"), "{e}");
        assert!(e.contains("budget of 2e10") && e.contains("--force"), "{e}");
        let forced = Sources { force: true, ..sources.clone() }.load(&Scale::full()).unwrap();
        assert!((forced[0].requests() - 7.2e10).abs() < 1e6, "{}", forced[0].requests());
        // Within the budget: read as ever.
        let app = App { name: "o/a/f".into(), size_s: 0.05, minute_rates: vec![100.0; 120] };
        write_azure(dir.path(), 1, &[app]).unwrap();
        let p = sources.load(&Scale::full()).unwrap();
        assert!((p[0].requests() - 720_000.0).abs() < 1e-3, "{}", p[0].requests());
    }
}

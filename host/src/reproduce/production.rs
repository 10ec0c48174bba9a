//! The production datasets (Azure Functions 2019, Alibaba microservices 2021) as the experiments
//! replay them: the paper's selection of heavy applications per size bucket, read once and shared.

use super::jobs::{Scale, TraceSource};
use crate::input::InputError;
use crate::trace::production::{App, read_alibaba, read_azure, select};
use crate::trace::{RateTrace, SizeSpec};
use std::path::PathBuf;
use std::sync::Arc;

/// The size buckets replayed, in the order of the `size` parameter (0 short, 1 medium).
const BUCKETS: [SizeSpec; 2] = [SizeSpec::Short, SizeSpec::Medium];

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

    /// Every selected window: its point parameters, its trace index within the point, its trace.
    pub fn windows(&self) -> impl Iterator<Item = ([(&'static str, f64); 2], u32, TraceSource)> + '_ {
        self.buckets.iter().flat_map(move |(size, apps)| {
            let at = [("dataset", f64::from(self.dataset)), ("size", *size as f64)];
            apps.iter().enumerate().map(move |(i, t)| (at, i as u32, TraceSource::Production(t.clone())))
        })
    }
}

impl Sources {
    /// Reads the datasets given, Azure first.
    pub fn load(&self, scale: &Scale) -> Result<Vec<Production>, InputError> {
        let mut out = Vec::new();
        if let Some(dir) = &self.azure {
            out.push(Production::new(0, &read_azure(dir, self.azure_day)?, scale.production_minutes));
        }
        if let Some(dir) = &self.alibaba {
            out.push(Production::new(1, &read_alibaba(dir)?, scale.production_minutes));
        }
        Ok(out)
    }
}

/// The dataset's name for a `dataset` parameter value.
pub fn dataset_name(dataset: f64) -> &'static str {
    if dataset == 0.0 { "Azure" } else { "Alibaba" }
}

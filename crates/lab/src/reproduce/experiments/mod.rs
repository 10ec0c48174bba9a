//! The registry of the paper's experiments, one file each. This list is the only place that knows
//! them all: the runner, the report and the tests go through it. `brownout` is public: its comparison
//! of controllers is also `spork brownout`.

mod batching;
mod boards;
pub mod brownout;
mod cus;
mod deadline;
mod fig2;
mod fig3;
mod fig4;
mod fig5;
mod fig6;
mod fig7;
mod gaps;
mod release;
mod sizes;
mod speedup;
mod table8;
mod table9;

pub use batching::Batch;
pub use boards::Boards;
pub use brownout::Brownout;
pub use cus::Cus;
pub use deadline::Deadline;
pub use fig2::Fig2;
pub use fig3::Fig3;
pub use fig4::Fig4;
pub use fig5::Fig5;
pub use fig6::Fig6;
pub use fig7::Fig7;
pub use gaps::Gaps;
pub use release::Release;
pub use sizes::Sizes;
pub use speedup::Speedup;
pub use table8::Table8;
pub use table9::Table9;

use super::experiment::Experiment;
use super::jobs::{Job, SENSITIVITY, Scale, TraceSource, sim, synthetic};
use spork_core::model::Platform;
use spork_core::trace::SizeSpec;

/// Every experiment, in the order of the report (and of `claims.json`).
pub fn all() -> [&'static dyn Experiment; 17] {
    [
        &Fig2, &Fig3, &Fig4, &Fig5, &Fig6, &Speedup, &Release, &Fig7, &Boards, &Cus, &Deadline, &Sizes,
        &Batch, &Brownout, &Gaps, &Table9, &Table8,
    ]
}

/// The experiment named `id`.
pub fn by_id(id: &str) -> Option<&'static dyn Experiment> {
    all().into_iter().find(|e| e.id() == id)
}

/// Every experiment id, sorted (for messages).
pub fn ids() -> Vec<&'static str> {
    let mut ids: Vec<&'static str> = all().iter().map(|e| e.id()).collect();
    ids.sort_unstable();
    ids
}

/// The default platform at each FPGA speedup and busy power, with its point's coordinates
/// (`fpga_speedup`, `fpga_busy_w`): the grid of Figure 6 and of the speedup sweep.
fn speed_and_power(speedups: &[f64], busy_w: &[f64]) -> Vec<(Platform, [(&'static str, f64); 2])> {
    let mut points = Vec::new();
    for &speedup in speedups {
        for &busy in busy_w {
            let mut platform = Platform::default();
            platform.fpga.speedup = speedup;
            platform.fpga.busy_power_w = busy;
            points.push((platform, [("fpga_speedup", speedup), ("fpga_busy_w", busy)]));
        }
    }
    points
}

/// The four sensitivity schedulers on every synthetic trace of one point (Figures 5 to 7).
fn sensitivity_jobs(
    folder: &'static str,
    at: &[(&str, f64)],
    scale: &Scale,
    platform: Platform,
    burstiness: f64,
    size: SizeSpec,
) -> Vec<Job> {
    let mut jobs = Vec::new();
    for trace in 0..scale.traces {
        for s in SENSITIVITY {
            let source = synthetic(scale, burstiness, size, trace);
            jobs.push(sim(folder, at, trace, platform, source, s, None));
        }
    }
    jobs
}

#[cfg(test)]
mod tests;

/// [`synthetic`] with each request's size spread log-normal with coefficient of variation `cv`.
fn synthetic_with(scale: &Scale, burstiness: f64, size: SizeSpec, trace: u32, cv: f64) -> TraceSource {
    match synthetic(scale, burstiness, size, trace) {
        TraceSource::Synthetic(s) => {
            TraceSource::Synthetic(spork_core::trace::Synthetic { size_cv: cv, ..s })
        }
        other => other,
    }
}

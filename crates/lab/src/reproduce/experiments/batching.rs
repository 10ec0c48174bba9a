//! Beyond the paper: the cost of a board invocation, and dynamic batching. Each job on a board pays
//! a fixed invocation (its launch and DMA set-up) and its bytes over the host link (9 GB/s; a Sobel
//! request moves 2.8e8 bytes per CPU-second of its size, as `spork run` measured the kernel on this
//! project's VM); the paper's board pays neither (invocation 0). SporkE serves requests of 20 us,
//! 100 us, 1 ms and the paper's short bucket (10-100 ms) with invocations of 0, 50 us (the published
//! XRT figure, `model::link::published`) and 200 us, each size at a mean of 5,000 requests/s
//! (burstiness 0.6, ten-minute traces: small requests are many), with batching off and on
//! (`policy::batching`: up to 32 requests, 100 us queue delay, deadline-aware).

use crate::reproduce::aggregate::Table;
use crate::reproduce::charts::{EE, chart, lines};
use crate::reproduce::claims::{Check, Claim};
use crate::reproduce::experiment::{Experiment, Inputs, Tables};
use crate::reproduce::jobs::{Job, Scale, TraceSource, Work, params};
use crate::reproduce::metric::Metric::{self, EnergyEfficiency, MeanBatch, MissShare, P99Ms};
use crate::reproduce::plot::Chart;
use spork_core::model::time::{from_secs, to_secs};
use spork_core::model::{Link, Platform, Time};
use spork_core::policy::batching::Batching;
use spork_core::policy::release::ReleaseTiming;
use spork_core::policy::{Objective, Scheduler};
use spork_core::trace::{SizeSpec, Synthetic};

/// The batching experiment.
pub struct Batch;

/// Request sizes, by their mean in microseconds (the short bucket's is 55 ms).
const SIZES: [(f64, SizeSpec); 4] = [
    (20.0, SizeSpec::Fixed(20_000)),
    (100.0, SizeSpec::Fixed(100_000)),
    (1_000.0, SizeSpec::Fixed(1_000_000)),
    (55_000.0, SizeSpec::Short),
];

/// Invocation overheads swept, microseconds (0: the paper's board).
const INVOCATIONS: [f64; 3] = [0.0, 50.0, 200.0];

/// Mean requests per second at every size.
const RATE: f64 = 5_000.0;

/// Longest trace: at 5,000 requests/s ten minutes is three million requests a run.
const LONGEST: Time = 600_000_000_000;

/// Bytes a Sobel request moves per CPU-second of its size.
const BYTES_PER_CPU_S: f64 = 2.8e8;

/// The batching rule: Triton's usual shape (up to 32, a 100 us delay), deadline-aware.
fn rule() -> Batching {
    Batching::new(32, &[], 100_000).expect("a valid batching rule")
}

/// The paper's platform with a link of `invocation_us` (none at 0).
fn platform(invocation_us: f64) -> Platform {
    let mut p = Platform::default();
    p.fpga.link = (invocation_us > 0.0).then(|| Link {
        invocation: from_secs(invocation_us * 1e-6),
        bytes_per_s: 9e9,
        bytes_per_cpu_s: BYTES_PER_CPU_S,
    });
    p
}

/// Trace `i` of requests of `size` (mean `mean_us`) at [`RATE`].
fn trace(scale: &Scale, mean_us: f64, size: SizeSpec, i: u32) -> TraceSource {
    TraceSource::Synthetic(Synthetic {
        burstiness: 0.6,
        duration: scale.duration.min(LONGEST),
        size,
        workers: RATE * mean_us * 1e-6,
        seed: u64::from(i) + 1,
        optional_factor: 0.0,
        size_cv: 0.0,
    })
}

impl Experiment for Batch {
    fn id(&self) -> &'static str {
        "batching"
    }

    fn title(&self) -> &'static str {
        "Beyond the paper: the cost of a board invocation, and dynamic batching"
    }

    fn folders(&self) -> &'static [&'static str] {
        &["batching"]
    }

    fn jobs(&self, inputs: &Inputs) -> Vec<Job> {
        let mut jobs = Vec::new();
        for (mean_us, size) in SIZES {
            for invocation in INVOCATIONS {
                for i in 0..inputs.scale.traces {
                    for (series, batching) in [("off", None), ("on", Some(rule()))] {
                        jobs.push(Job {
                            folder: "batching",
                            params: params(&[("size_us", mean_us), ("invocation_us", invocation)]),
                            trace: i,
                            series: series.to_string(),
                            work: Work::Sim {
                                platform: platform(invocation),
                                trace: trace(&inputs.scale, mean_us, size, i),
                                scheduler: Scheduler::Spork(Objective::ENERGY),
                                dispatcher: None,
                                sizes: None,
                                release: ReleaseTiming::Drained,
                                fpga_boards: None,
                                batching,
                            },
                        });
                    }
                }
            }
        }
        jobs
    }

    fn charts(&self, _folder: &str, t: &Table) -> Vec<Chart> {
        let x = "request size (us, mean)";
        let at = [("invocation_us", 50.0)];
        vec![
            chart(
                "energy efficiency, 50 us invocations",
                x,
                EE,
                lines(t, "size_us", &at, EnergyEfficiency, 100.0),
                false,
            ),
            chart(
                "deadline misses, 50 us invocations",
                x,
                "misses (%)",
                lines(t, "size_us", &at, MissShare, 100.0),
                false,
            ),
            chart(
                "p99 latency, 50 us invocations",
                x,
                "p99 (ms)",
                lines(t, "size_us", &at, P99Ms, 1.0),
                true,
            ),
        ]
    }

    fn notes(&self, tables: &Tables) -> String {
        let Some(t) = tables.get("batching") else { return String::new() };
        let g = |s: &str, size: f64, inv: f64, m: Metric| {
            t.get(s, &[("size_us", size), ("invocation_us", inv)], m.key()).unwrap_or(f64::NAN)
        };
        let mut rows = String::from(
            "| size | invocation | energy eff. off / on | misses off / on | p99 ms off / on | requests per batch |\n\
             |---|---|---|---|---|---|\n",
        );
        for (size, _) in SIZES {
            for inv in INVOCATIONS {
                let batch = g("on", size, inv, MeanBatch);
                let batch = if batch > 0.0 { format!("{batch:.2}") } else { "none formed".into() };
                rows += &format!(
                    "| {} | {inv} us | {:.1}% / {:.1}% | {:.3}% / {:.3}% | {:.2} / {:.2} | {batch} |\n",
                    size_name(size),
                    100.0 * g("off", size, inv, EnergyEfficiency),
                    100.0 * g("on", size, inv, EnergyEfficiency),
                    100.0 * g("off", size, inv, MissShare),
                    100.0 * g("on", size, inv, MissShare),
                    g("off", size, inv, P99Ms),
                    g("on", size, inv, P99Ms),
                );
            }
        }
        let pts = |s: &str, size: f64, inv: f64| 100.0 * g(s, size, inv, EnergyEfficiency);
        let drop = |size: f64| pts("off", size, 0.0) - pts("off", size, 50.0);
        let gain = |size: f64| pts("on", size, 50.0) - pts("off", size, 50.0);
        format!(
            "\n{rows}\nReading: the paper's board (invocation 0) is where its figures hold; batching there \
             merges jobs whose sum costs the same, and costs only the wait for a batch (20 us requests: p99 \
             {:.2} ms off, {:.2} ms on). The published 50 us invocation costs SporkE {:.1} points of energy \
             efficiency on 20 us requests, {:.1} on 100 us, {:.1} on 1 ms and {:.1} on the short bucket: on \
             small requests a board pays mostly for its launches, so the allocator holds more boards, and \
             requests a board cannot serve in time go to CPUs. Batching takes back {:.1}, {:.1}, {:.1} and \
             {:.1} points by paying one launch per batch, and misses fall with it (20 us requests: {:.3}% off, \
             {:.3}% on): a request waits at most the queue delay (100 us) or until its batch's board frees, \
             never past the last start that meets its batch's earliest deadline. At 200 us a 20 us request \
             (deadline 200 us) cannot make its deadline on a board even alone, so all of them run on CPUs \
             with or without batching (no batch is formed). What the model leaves out: a real board's \
             invocation varies with its queue depth and the host's load, and a batch of images moves two \
             extra rows per member (`datapath::batch`).\n",
            g("off", 20.0, 0.0, P99Ms),
            g("on", 20.0, 0.0, P99Ms),
            drop(20.0),
            drop(100.0),
            drop(1_000.0),
            drop(55_000.0),
            gain(20.0),
            gain(100.0),
            gain(1_000.0),
            gain(55_000.0),
            100.0 * g("off", 20.0, 50.0, MissShare),
            100.0 * g("on", 20.0, 50.0, MissShare),
        )
    }

    fn claims(&self) -> Vec<Claim> {
        Vec::new()
    }

    fn checks(&self, t: &Table) -> Vec<Check> {
        let g = |s: &str, size: f64, inv: f64, m: Metric| {
            t.get(s, &[("size_us", size), ("invocation_us", inv)], m.key()).unwrap_or(f64::NAN)
        };
        let small = [20.0, 100.0];
        let points = |a: f64, b: f64| 100.0 * (a - b);
        let gains: Vec<f64> = small
            .iter()
            .map(|&s| points(g("on", s, 50.0, EnergyEfficiency), g("off", s, 50.0, EnergyEfficiency)))
            .collect();
        let costs: Vec<f64> = small
            .iter()
            .map(|&s| points(g("off", s, 0.0, EnergyEfficiency), g("off", s, 50.0, EnergyEfficiency)))
            .collect();
        let extra: Vec<f64> = SIZES
            .iter()
            .flat_map(|&(s, _)| {
                INVOCATIONS.map(|inv| points(g("on", s, inv, MissShare), g("off", s, inv, MissShare)))
            })
            .collect();
        vec![
            Check {
                finding: "The published 50 us invocation lowers SporkE's energy efficiency on 20 us and 100 us requests".into(),
                holds: costs.iter().all(|&c| c > 0.0),
                detail: format!("points lost: {costs:?}"),
            },
            Check {
                finding: "Batching raises SporkE's energy efficiency on 20 us and 100 us requests at 50 us invocations".into(),
                holds: gains.iter().all(|&c| c > 0.0),
                detail: format!("points gained: {gains:?}"),
            },
            Check {
                finding: "Batching adds no more than 0.1 points of deadline misses anywhere".into(),
                holds: extra.iter().all(|&d| d <= 0.1),
                detail: format!("extra misses, points: {extra:?}"),
            },
        ]
    }
}

/// A size as the table names it.
fn size_name(us: f64) -> String {
    match us {
        55_000.0 => "short (10-100 ms)".into(),
        u if u >= 1_000.0 => format!("{} ms", to_secs(from_secs(u * 1e-6)) * 1e3),
        u => format!("{u} us"),
    }
}

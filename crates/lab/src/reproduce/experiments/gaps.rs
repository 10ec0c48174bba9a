//! The paper's numbers that ours misses by more than 15%, each with the run that changes only its
//! likely cause: if that run lands within 15% of the paper, the cause is shown (and the report marks
//! the number explained); if not, it is not. Each cause is one of three kinds: a modelling choice we
//! made, a reading of an ambiguous sentence of the paper, or data we do not have. The runs are
//! small (one point each, the paper's ten traces), each beside the run it changes (a run another
//! experiment lists too, Figure 4's, 5's, Table 9's, the release experiment's, is done once), and the
//! checks assert that each cause that explains a number moves it the way the explanation says, so
//! CI's quick reproduction keeps them true.

use super::brownout::FOLD;
use crate::evaluate::brownout::Scenario;
use crate::reproduce::aggregate::Table;
use crate::reproduce::charts::{EE, chart, lines};
use crate::reproduce::claims::{At, Check, Claim, Measure, pick, ratio, value};
use crate::reproduce::experiment::{Experiment, Inputs};
use crate::reproduce::jobs::{Job, Scale, Work, params, sim, synthetic};
use crate::reproduce::metric::Metric::{
    self, CpuShare, EnergyEfficiency, FpgaSeconds, Iae, IaeOver, IdleShare, RelativeCost,
};
use crate::reproduce::plot::Chart;
use spork_core::model::platform::KeepIdle;
use spork_core::model::{Platform, time::from_secs, time::to_secs};
use spork_core::policy::brownout::ControllerKind;
use spork_core::policy::release::ReleaseTiming;
use spork_core::policy::{DispatcherKind, Objective, Scheduler};
use spork_core::trace::SizeSpec;
use std::borrow::Cow;

/// The causes' runs.
pub struct Gaps;

const SPORK_E: Scheduler = Scheduler::Spork(Objective::ENERGY);

/// SporkE's series with CPUs kept idle for their own spin-up, as ours.
const OURS_IDLE: &str = "SporkE, CPUs kept their spin-up";

/// The `cause` parameter of each cause's runs.
const IDLE: f64 = 1.0;
const NUMBERING: f64 = 2.0;
const LOAD: f64 = 3.0;
const ALLOCATED: f64 = 4.0;
const CURRENT: f64 = 5.0;
const RELEASE: f64 = 6.0;
const BROWNOUT: f64 = 7.0;

const IDLE_100: At = &[("cause", IDLE), ("fpga_busy_w", 100.0)];
const IDLE_25: At = &[("cause", IDLE), ("fpga_busy_w", 25.0)];
const IP_AT: [At; 3] = [
    &[("cause", NUMBERING), ("size", 0.0)],
    &[("cause", NUMBERING), ("size", 1.0)],
    &[("cause", NUMBERING), ("size", 2.0)],
];
const RR_AT: [At; 2] = [&[("cause", LOAD), ("size", 1.0)], &[("cause", LOAD), ("size", 2.0)]];
const FIG5_AT: At = &[("burstiness", 0.75), ("cause", CURRENT), ("fpga_spin_up_s", 10.0)];
const FIG4_AT: At = &[("burstiness", 0.75), ("cause", ALLOCATED)];
/// Figures 4 and 5 share this point (60 s spin-up, burstiness 0.75), under our release timing
/// (`planned` 0) and the paper's (1).
const RELEASE_AT: [At; 2] = [
    &[("burstiness", 0.75), ("cause", RELEASE), ("fpga_spin_up_s", 60.0), ("planned", 0.0)],
    &[("burstiness", 0.75), ("cause", RELEASE), ("fpga_spin_up_s", 60.0), ("planned", 1.0)],
];
const BROWNOUT_AT: At = &[("cause", BROWNOUT), ("setpoint_s", 1.0)];

const IDLE_CAUSE: &str = "a reading of an ambiguous sentence. Section 5.1: \"All schedulers keep workers idle \
    for as long as the allocation duration before spinning them down\". We keep each worker idle for its own \
    type's spin-up time (a CPU 5 ms); read as the allocation duration of the schedule, the scheduling interval \
    (10 s), CPUs idle out after 10 s too. This run keeps both: the paper's release timing (planned) and CPUs \
    kept idle one interval. Run: `spork simulate --scheduler spork-e --burstiness 0.6 --fpga-busy-power 100 \
    --release-timing planned --keep-idle interval` (and 25 W), 10 traces (`--seed 1..10`)";
const NUMBERING_CAUSE: &str = "a reading of an ambiguous sentence. Section 4 cites AutoScale's index packing \
    (\"workers are packed up to a threshold in busiest-first order\") without saying how a hybrid pool is \
    numbered; we number workers by their lowest free slot, so the CPUs that serve the start of a trace and every \
    burst take low numbers and, packed, never idle out. This run numbers every FPGA before every CPU. Run: \
    `spork simulate --scheduler spork-e --dispatcher index-packing-fpga-first --burstiness 0.6 --size short` \
    (medium, long), 10 traces";
const LOAD_CAUSE: &str = "data we do not have. The paper's Table 9 replays Azure production traces; ours are \
    b-model traces at burstiness 0.6, and round robin, which \"evenly distributes requests to both CPUs and \
    FPGAs and it rarely lets workers idle\" (section 5.3), holds close to the peak, so its efficiency follows \
    the trace's peak-to-mean. Table 8's FPGA-static efficiency on Azure medium (72%) \
    matches ours at burstiness 0.55 (72%), not 0.6 (50%). This run is round robin at burstiness 0.55. Run: \
    `spork simulate --scheduler spork-e --dispatcher round-robin --burstiness 0.55 --size medium` (long), \
    10 traces";
const CURRENT_CAUSE: &str = "a reading of an ambiguous sentence. Section 5.1: FPGA-dynamic \"maintains a \
    fixed excess headroom above the minimum FPGAs needed to meet current load\", the headroom \"based on an \
    integer multiple of the maximum difference in known request rates between consecutive intervals\". Ours \
    counts the work the interval that just ended ran, so the headroom must also cover the growth over the \
    interval it plans across; read as the known load of the interval that starts now, it needs less. This run \
    is that reading (`fpga-dynamic-now`, its least headroom searched as FPGA-dynamic's) at Figure 5's 10 s \
    spin-up and burstiness 0.75, against Figure 5's SporkE there. Run: `spork simulate --scheduler \
    fpga-dynamic-now,spork-e --burstiness 0.75 --fpga-spinup 10s`, 10 traces";
const ALLOCATED_CAUSE: &str = "a reading of an ambiguous sentence. Figure 4's panel counts \"FPGA spin ups\", \
    but the text says \"SporkE-ideal allocates up to 1.5x more FPGAs than MArk-ideal\": FPGAs held over time, \
    not spin-up events. This reads Figure 4's own runs (60 s spin-up, burstiness 0.75, where the ratio is \
    largest) as FPGA-seconds allocated. Run: `spork simulate --scheduler spork-e-ideal,mark-ideal --burstiness \
    0.75 --fpga-spinup 60s --json` (`fpga.allocated_s`), 10 traces";

const RELEASE_CAUSE: &str = "a reading of an ambiguous sentence. The paper plans n_{t+1} at the start of \
    interval t \"to have the time to spin up any needed FPGAs\" (section 4.2), keeps idle workers \"for as long \
    as the allocation duration\" (section 5.1) and deallocates them \"after keeping them idle for a fixed \
    duration\" (section 4.1). Ours lets a surplus FPGA go mid-interval once it has idled its timeout, judged \
    against the newest plan; the paper's reading (`--release-timing planned`, built, not our default) keeps \
    n_t through interval t and starts a surplus FPGA's countdown only once the pool holds a surplus, so SporkE \
    still holds the boards an under-predicted interval needs. This run is that reading at the point Figures 4 \
    and 5 share (60 s spin-up, burstiness 0.75, where both numbers peak), SporkE and FPGA-dynamic (its least \
    headroom searched again under it). The same reading takes Figure 5's FPGA-dynamic / SporkE cost at 100 s \
    from 8.5x to 6.9x, out of 15% of the paper's 8.4x, which our timing matches: neither timing fits every \
    number of Figure 5. Run: `spork simulate --scheduler spork-e,fpga-dynamic --burstiness 0.75 --fpga-spinup \
    60s --release-timing planned`, 10 traces (`--seed 1..10`)";
const BROWNOUT_CAUSE: &str = "a reading of an ambiguous sentence. The abstract's \"11-fold improvement in \
    maintaining response-time close to a set-point\" names no measure. Brownout bounds response times (the \
    BrownoutCC paper's title: \"Bounding the Response Times of Cloud Applications\"): a p95 under the set-point \
    costs optional content, which is reported apart (the optional ratio), not lateness. This reads \"close\" as \
    the p95's excess over the set-point, the IAE summed over the periods above it, on the brownout \
    experiment's own runs (set-point 1 s). Other measures of the same runs give other folds: the two-sided \
    IAE 8.0x (the brownout experiment's claim), and a squared error far more (51x over seed 1's periods, \
    from `spork brownout --seeds 1 --out DIR`'s brownout_periods.csv). Run: `spork brownout --seeds 5` \
    (the IAE over column, dimmer over event)";

/// A cause's claim: the paper's number, ours from the cause's run, and the numbers it tests.
const fn cause(
    percent: bool,
    finding: &'static str,
    paper: f64,
    ours: Measure,
    why: &'static str,
    explains: &'static [(&'static str, &'static str)],
) -> Claim {
    Claim { finding: Cow::Borrowed(finding), paper, ours, percent, cause: why, explains }
}

static CLAIMS: [Claim; 12] = [
    cause(
        true,
        "SporkE idle share of energy at 100 W, the paper's release timing, CPUs kept idle one interval",
        0.04,
        value(pick("SporkE", IDLE_100, IdleShare)),
        IDLE_CAUSE,
        &[
            ("fig6", "SporkE idle share of energy at 100 W"),
            ("release", "SporkE idle share of energy at 100 W, our release timing"),
            ("release", "SporkE idle share of energy at 100 W, the paper's release timing"),
        ],
    ),
    cause(
        true,
        "SporkE idle share of energy at 25 W, the paper's release timing, CPUs kept idle one interval",
        0.13,
        value(pick("SporkE", IDLE_25, IdleShare)),
        IDLE_CAUSE,
        &[
            ("fig6", "SporkE idle share of energy at 25 W"),
            ("release", "SporkE idle share of energy at 25 W, our release timing"),
            ("release", "SporkE idle share of energy at 25 W, the paper's release timing"),
        ],
    ),
    cause(
        true,
        "index-packing energy efficiency, short requests, FPGAs numbered first",
        0.855,
        value(pick("index-packing-fpga-first", IP_AT[0], EnergyEfficiency)),
        NUMBERING_CAUSE,
        &[("table9", "index-packing energy efficiency, short requests (paper: Azure short)")],
    ),
    cause(
        true,
        "index-packing energy efficiency, medium requests, FPGAs numbered first",
        0.819,
        value(pick("index-packing-fpga-first", IP_AT[1], EnergyEfficiency)),
        NUMBERING_CAUSE,
        &[("table9", "index-packing energy efficiency, medium requests (paper: Azure medium)")],
    ),
    cause(
        true,
        "index-packing energy efficiency, long requests, FPGAs numbered first",
        0.842,
        value(pick("index-packing-fpga-first", IP_AT[2], EnergyEfficiency)),
        NUMBERING_CAUSE,
        &[("table9", "index-packing energy efficiency, long requests (paper: Azure long)")],
    ),
    cause(
        true,
        "round-robin energy efficiency, medium requests, burstiness 0.55",
        0.836,
        value(pick("round-robin", RR_AT[0], EnergyEfficiency)),
        LOAD_CAUSE,
        &[("table9", "round-robin energy efficiency, medium requests (paper: Azure medium)")],
    ),
    cause(
        true,
        "round-robin energy efficiency, long requests, burstiness 0.55",
        0.856,
        value(pick("round-robin", RR_AT[1], EnergyEfficiency)),
        LOAD_CAUSE,
        &[("table9", "round-robin energy efficiency, long requests (paper: Azure long)")],
    ),
    cause(
        false,
        "FPGA-dynamic / SporkE cost, 10 s spin-up, burstiness 0.75, FPGA-dynamic on the current interval's load",
        3.6,
        ratio(pick("FPGA-dynamic-now", FIG5_AT, RelativeCost), pick("SporkE", FIG5_AT, RelativeCost)),
        CURRENT_CAUSE,
        &[("fig5", "FPGA-dynamic / SporkE cost, 10 s spin-up, burstiness 0.75")],
    ),
    cause(
        false,
        "SporkE-ideal / MArk-ideal FPGA-seconds allocated, burstiness 0.75",
        1.5,
        ratio(pick("SporkE-ideal", FIG4_AT, FpgaSeconds), pick("MArk-ideal", FIG4_AT, FpgaSeconds)),
        ALLOCATED_CAUSE,
        &[("fig4", "SporkE-ideal / MArk-ideal FPGA spin-ups, up to")],
    ),
    cause(
        true,
        "SporkE share of requests on CPUs, burstiness 0.75, the paper's release timing",
        0.22,
        value(pick("SporkE", RELEASE_AT[1], CpuShare)),
        RELEASE_CAUSE,
        &[("fig4", "SporkE share of requests on CPUs, up to")],
    ),
    cause(
        false,
        "SporkE / FPGA-dynamic energy efficiency, 60 s spin-up, burstiness 0.75, the paper's release timing",
        2.5,
        ratio(
            pick("SporkE", RELEASE_AT[1], EnergyEfficiency),
            pick("FPGA-dynamic", RELEASE_AT[1], EnergyEfficiency),
        ),
        RELEASE_CAUSE,
        &[("fig5", "SporkE / FPGA-dynamic energy efficiency, up to")],
    ),
    cause(
        false,
        "event-driven brownout against the dimmer, p95 over the set-point only: the dimmer's IAE over the \
         set-point over the event-based tuner's",
        11.0,
        ratio(pick("dimmer", BROWNOUT_AT, IaeOver), pick("event", BROWNOUT_AT, IaeOver)),
        BROWNOUT_CAUSE,
        &[("brownout", FOLD)],
    ),
];

/// SporkE at burstiness 0.6 under the paper's release timing with CPUs kept idle one interval, and
/// kept for their spin-up (the release experiment's `planned` runs), at Figure 6's two idle-share powers.
fn idle_jobs(scale: &Scale) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (busy, keep) in
        [100.0, 25.0].into_iter().flat_map(|b| [(b, KeepIdle::Interval), (b, KeepIdle::SpinUp)])
    {
        let mut platform = Platform { keep_idle: keep, ..Platform::default() };
        platform.fpga.busy_power_w = busy;
        for trace in 0..scale.traces {
            jobs.push(Job {
                folder: "gaps",
                params: params(&[("cause", IDLE), ("fpga_busy_w", busy)]),
                trace,
                series: if keep == KeepIdle::Interval { SPORK_E.to_string() } else { OURS_IDLE.into() },
                work: Work::Sim {
                    platform,
                    trace: synthetic(scale, 0.6, SizeSpec::Short, trace),
                    scheduler: SPORK_E,
                    dispatcher: None,
                    sizes: None,
                    release: ReleaseTiming::Planned,
                    fpga_boards: None,
                    batching: None,
                },
            });
        }
    }
    jobs
}

/// Table 9's dispatchers under one changed cause: index packing with FPGAs numbered first (all
/// sizes, burstiness 0.6), round robin at burstiness 0.55 (medium and long).
fn dispatch_jobs(scale: &Scale) -> Vec<Job> {
    let sizes = [SizeSpec::Short, SizeSpec::Medium, SizeSpec::Long];
    let mut jobs = Vec::new();
    for (i, size) in sizes.into_iter().enumerate() {
        for trace in 0..scale.traces {
            let (ip, source) = (IP_AT[i], synthetic(scale, 0.6, size, trace));
            for d in [DispatcherKind::IndexPackingFpgaFirst, DispatcherKind::IndexPacking] {
                jobs.push(sim("gaps", ip, trace, Platform::default(), source.clone(), SPORK_E, Some(d)));
            }
            if i > 0 {
                let source = synthetic(scale, 0.55, size, trace);
                let d = Some(DispatcherKind::RoundRobin);
                jobs.push(sim("gaps", RR_AT[i - 1], trace, Platform::default(), source, SPORK_E, d));
            }
        }
    }
    jobs
}

/// Figure 4's SporkE-ideal and MArk-ideal at burstiness 0.75 (the same runs as Figure 4's).
fn allocated_jobs(scale: &Scale) -> Vec<Job> {
    let mut platform = Platform::default();
    platform.fpga.spin_up = from_secs(60.0);
    let mut jobs = Vec::new();
    for trace in 0..scale.traces {
        for s in [Scheduler::SporkIdeal(Objective::ENERGY), Scheduler::MarkIdeal] {
            let source = synthetic(scale, 0.75, SizeSpec::Short, trace);
            jobs.push(sim("gaps", FIG4_AT, trace, platform, source, s, None));
        }
    }
    jobs
}

/// FPGA-dynamic on the current interval's load, and FPGA-dynamic and SporkE (Figure 5's own runs), at
/// 10 s spin-up and burstiness 0.75.
fn current_jobs(scale: &Scale) -> Vec<Job> {
    let mut platform = Platform::default();
    platform.fpga.spin_up = from_secs(10.0);
    let mut jobs = Vec::new();
    for trace in 0..scale.traces {
        for s in [Scheduler::FpgaDynamicNow, Scheduler::FpgaDynamic, SPORK_E] {
            let source = synthetic(scale, 0.75, SizeSpec::Short, trace);
            jobs.push(sim("gaps", FIG5_AT, trace, platform, source, s, None));
        }
    }
    jobs
}

/// SporkE and FPGA-dynamic where Figures 4 and 5 meet (60 s spin-up, burstiness 0.75) under both
/// release timings; those under ours are Figures 4's and 5's own runs (done once).
fn release_jobs(scale: &Scale) -> Vec<Job> {
    let mut platform = Platform::default();
    platform.fpga.spin_up = from_secs(60.0);
    let mut jobs = Vec::new();
    for trace in 0..scale.traces {
        for (at, timing) in RELEASE_AT.into_iter().zip([ReleaseTiming::Drained, ReleaseTiming::Planned]) {
            for s in [SPORK_E, Scheduler::FpgaDynamic] {
                let source = synthetic(scale, 0.75, SizeSpec::Short, trace);
                let mut job = sim("gaps", at, trace, platform, source, s, None);
                if let Work::Sim { release, .. } = &mut job.work {
                    *release = timing;
                }
                jobs.push(job);
            }
        }
    }
    jobs
}

/// The dimmer and the event-based tuner on the brownout reference scenario at the papers' 1 s
/// set-point: the brownout experiment's runs, read by another measure.
fn brownout_jobs(scale: &Scale) -> Vec<Job> {
    let duration_s = to_secs(scale.brownout_duration);
    let scenario = Scenario { duration_s, setpoint_s: 1.0, ..Scenario::default() };
    let mut jobs = Vec::new();
    for trace in 0..scale.brownout_seeds {
        for controller in [ControllerKind::Dimmer, ControllerKind::Event] {
            jobs.push(Job {
                folder: "gaps",
                params: params(BROWNOUT_AT),
                trace,
                series: controller.name().to_string(),
                work: Work::Brownout { scenario: scenario.clone(), controller, seed: u64::from(trace) + 1 },
            });
        }
    }
    jobs
}

impl Experiment for Gaps {
    fn id(&self) -> &'static str {
        "gaps"
    }

    fn title(&self) -> &'static str {
        "The differences over 15%: each cause, changed alone (beyond the paper)"
    }

    fn folders(&self) -> &'static [&'static str] {
        &["gaps"]
    }

    fn jobs(&self, inputs: &Inputs) -> Vec<Job> {
        let scale = &inputs.scale;
        let mut jobs = idle_jobs(scale);
        jobs.extend(dispatch_jobs(scale));
        jobs.extend(allocated_jobs(scale));
        jobs.extend(current_jobs(scale));
        jobs.extend(release_jobs(scale));
        jobs.extend(brownout_jobs(scale));
        jobs
    }

    fn charts(&self, _folder: &str, t: &Table) -> Vec<Chart> {
        vec![
            chart(
                "SporkE idle share, planned release, CPUs kept one interval",
                "FPGA busy power (W)",
                "idle share of energy (%)",
                lines(t, "fpga_busy_w", &[("cause", IDLE)], IdleShare, 100.0),
                false,
            ),
            chart(
                "index packing, FPGAs numbered first (0.6)",
                "size (short, medium, long)",
                EE,
                lines(t, "size", &[("cause", NUMBERING)], EnergyEfficiency, 100.0),
                false,
            ),
            chart(
                "round robin at burstiness 0.55",
                "size (medium, long)",
                EE,
                lines(t, "size", &[("cause", LOAD)], EnergyEfficiency, 100.0),
                false,
            ),
        ]
    }

    fn claims(&self) -> Vec<Claim> {
        CLAIMS.to_vec()
    }

    fn checks(&self, t: &Table) -> Vec<Check> {
        let get = |s: &str, at: At, m: Metric| t.get(s, at, m.key()).unwrap_or(f64::NAN);
        let idle =
            [IDLE_100, IDLE_25].map(|at| (get("SporkE", at, IdleShare), get(OURS_IDLE, at, IdleShare)));
        let ip = IP_AT.map(|at| {
            (
                get("index-packing-fpga-first", at, EnergyEfficiency),
                get("index-packing", at, EnergyEfficiency),
            )
        });
        let held = get("SporkE-ideal", FIG4_AT, FpgaSeconds) / get("MArk-ideal", FIG4_AT, FpgaSeconds);
        let on_cpus = RELEASE_AT.map(|at| get("SporkE", at, CpuShare));
        let efficiency = RELEASE_AT
            .map(|at| get("SporkE", at, EnergyEfficiency) / get("FPGA-dynamic", at, EnergyEfficiency));
        let fold = |m: Metric| get("dimmer", BROWNOUT_AT, m) / get("event", BROWNOUT_AT, m);
        let folds = (fold(Iae), fold(IaeOver));
        vec![
            Check {
                finding: "keeping CPUs idle one interval raises SporkE's idle share at 100 W and 25 W".into(),
                holds: idle.iter().all(|(a, b)| a > b),
                detail: format!("(kept one interval, kept their spin-up) at 100 W, 25 W: {idle:.4?}"),
            },
            Check {
                finding: "numbering FPGAs first raises index packing's efficiency at every size".into(),
                holds: ip.iter().all(|(a, b)| a > b),
                detail: format!("(FPGAs first, lowest free) short, medium, long: {ip:.3?}"),
            },
            Check {
                finding: "SporkE-ideal holds more FPGA-seconds than MArk-ideal at burstiness 0.75".into(),
                holds: held > 1.0,
                detail: format!("ratio {held:.3}"),
            },
            Check {
                finding: "the paper's release timing sends fewer of SporkE's requests to CPUs (60 s, 0.75)"
                    .into(),
                holds: on_cpus[1] < on_cpus[0],
                detail: format!("CPU share (ours, the paper's timing): {on_cpus:.4?}"),
            },
            Check {
                finding:
                    "the paper's release timing widens SporkE's efficiency lead on FPGA-dynamic (60 s, 0.75)"
                        .into(),
                holds: efficiency[1] > efficiency[0],
                detail: format!("SporkE / FPGA-dynamic (ours, the paper's timing): {efficiency:.3?}"),
            },
            Check {
                finding: "the dimmer's p95 errs more above the set-point than below it, against the event \
                          tuner's: its fold is larger counted above the set-point only"
                    .into(),
                holds: folds.1 > folds.0,
                detail: format!("dimmer / event IAE (both sides, above only): {folds:.2?}"),
            },
        ]
    }
}

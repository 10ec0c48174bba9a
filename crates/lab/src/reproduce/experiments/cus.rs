//! Beyond the paper: compute units per board at a fixed board count. A board of N CUs is N copies of
//! the kernel beside one shell: it serves N requests at once, each at the FPGA speedup, and draws its
//! idle (static) power once plus each serving CU's dynamic power (`model::ledger`). The pool may hold
//! at most 16 boards, a third of the mean load's worth at one CU; SporkE (CPUs take what the boards
//! cannot) and FPGA-static (FPGAs only, sized for the peak, clipped to the 16) run medium requests at
//! burstiness 0.6 with 1 to 16 CUs per board. The paper's board is the N = 1 column.

use crate::reproduce::aggregate::Table;
use crate::reproduce::charts::{EE, chart, lines};
use crate::reproduce::claims::{Check, Claim};
use crate::reproduce::experiment::{Experiment, Inputs, Tables};
use crate::reproduce::jobs::{Job, Work, params, synthetic};
use crate::reproduce::metric::Metric::{self, CpuShare, EnergyEfficiency, FpgaSpinUps, MissShare};
use crate::reproduce::plot::Chart;
use spork_core::model::Platform;
use spork_core::policy::release::ReleaseTiming;
use spork_core::policy::{Objective, Scheduler};
use spork_core::trace::SizeSpec;

/// The compute-units experiment.
pub struct Cus;

/// Compute units per board swept.
const CUS: [u32; 5] = [1, 2, 4, 8, 16];

/// Boards the pool may hold: the default trace's mean load is about 50 one-CU boards' worth.
const BOARDS: u32 = 16;

/// The two pools: hybrid (SporkE) and FPGA-only (FPGA-static, sized for the peak within the cap).
fn schedulers() -> [(Scheduler, &'static str); 2] {
    [(Scheduler::Spork(Objective::ENERGY), "SporkE"), (Scheduler::FpgaStatic, "FPGA-static")]
}

impl Experiment for Cus {
    fn id(&self) -> &'static str {
        "cus"
    }

    fn title(&self) -> &'static str {
        "Beyond the paper: compute units per board at a fixed board count"
    }

    fn folders(&self) -> &'static [&'static str] {
        &["cus"]
    }

    fn jobs(&self, inputs: &Inputs) -> Vec<Job> {
        let scale = &inputs.scale;
        let mut jobs = Vec::new();
        for cus in CUS {
            let mut platform = Platform::default();
            platform.fpga.compute_units = cus;
            for trace in 0..scale.traces {
                for (scheduler, name) in schedulers() {
                    jobs.push(Job {
                        folder: "cus",
                        params: params(&[("cus", f64::from(cus))]),
                        trace,
                        series: name.to_string(),
                        work: Work::Sim {
                            platform,
                            trace: synthetic(scale, 0.6, SizeSpec::Medium, trace),
                            scheduler,
                            dispatcher: None,
                            sizes: None,
                            release: ReleaseTiming::Drained,
                            fpga_boards: Some(BOARDS),
                            batching: None,
                        },
                    });
                }
            }
        }
        jobs
    }

    fn charts(&self, _folder: &str, t: &Table) -> Vec<Chart> {
        let x = "compute units per board (16 boards)";
        vec![
            chart("energy efficiency by CUs", x, EE, lines(t, "cus", &[], EnergyEfficiency, 100.0), false),
            chart("deadline misses by CUs", x, "misses (%)", lines(t, "cus", &[], MissShare, 100.0), false),
            chart("share on CPUs by CUs", x, "on CPUs (%)", lines(t, "cus", &[], CpuShare, 100.0), false),
        ]
    }

    fn notes(&self, tables: &Tables) -> String {
        let Some(t) = tables.get("cus") else { return String::new() };
        let g = |s: &str, n: u32, m: Metric| t.get(s, &[("cus", f64::from(n))], m.key()).unwrap_or(f64::NAN);
        let pct = |s: &str, n: u32, m: Metric| 100.0 * g(s, n, m);
        format!(
            "Reading: with one CU per board the 16 boards hold a third of the mean load, so SporkE runs \
             {:.0}% of the work on CPUs (energy efficiency {:.1}%) and FPGA-static, which has no CPUs, \
             misses {:.1}% of deadlines (its efficiency stays near 100% because every request still \
             runs on a board, late). Each doubling of the CUs doubles what the same boards serve: at 4 \
             CUs SporkE's CPU share is {:.0}% and FPGA-static misses {:.1}%; at 16 CUs {:.1}% and \
             {:.2}%. Efficiency passes 100% (SporkE {:.1}%, FPGA-static {:.1}% at 16 CUs) because the \
             ideal it is measured against is the paper's one-CU board drawing busy power for the work \
             alone, while a board of N CUs shares one idle draw among N kernels. SporkE's FPGA \
             spin-ups per run ({:.1}, {:.1}, {:.1}, {:.1}, {:.1} from 1 to 16 CUs) peak where 16 boards \
             are about what the load needs: below, the cap holds them all; above, a few boards follow \
             the load. What the model leaves out: CUs share the board's memory bandwidth and host link, \
             so a real board's CUs serve at less than N times one's rate once those saturate; `spork \
             kernel synth` reports the resources one CU takes, which bound N.\n",
            pct("SporkE", 1, CpuShare),
            pct("SporkE", 1, EnergyEfficiency),
            pct("FPGA-static", 1, MissShare),
            pct("SporkE", 4, CpuShare),
            pct("FPGA-static", 4, MissShare),
            pct("SporkE", 16, CpuShare),
            pct("FPGA-static", 16, MissShare),
            pct("SporkE", 16, EnergyEfficiency),
            pct("FPGA-static", 16, EnergyEfficiency),
            g("SporkE", 1, FpgaSpinUps),
            g("SporkE", 2, FpgaSpinUps),
            g("SporkE", 4, FpgaSpinUps),
            g("SporkE", 8, FpgaSpinUps),
            g("SporkE", 16, FpgaSpinUps),
        )
    }

    fn claims(&self) -> Vec<Claim> {
        Vec::new()
    }

    fn checks(&self, t: &Table) -> Vec<Check> {
        let g = |s: &str, n: u32, m: Metric| t.get(s, &[("cus", f64::from(n))], m.key()).unwrap_or(f64::NAN);
        let series = |s: &str, m: Metric| CUS.map(|n| g(s, n, m));
        let mut checks = Vec::new();
        let ee = series("SporkE", EnergyEfficiency);
        checks.push(Check {
            finding: "SporkE's energy efficiency rises with the compute units of its 16 boards".into(),
            holds: ee.windows(2).all(|w| w[1] > w[0]),
            detail: format!("{ee:?}"),
        });
        let misses = series("FPGA-static", MissShare);
        checks.push(Check {
            finding: "FPGA-static's deadline misses fall with the compute units of its 16 boards".into(),
            holds: misses.windows(2).all(|w| w[1] <= w[0]) && misses[0] > misses[CUS.len() - 1],
            detail: format!("{misses:?}"),
        });
        let cpu = series("SporkE", CpuShare);
        checks.push(Check {
            finding: "SporkE moves work from CPUs to the boards as their compute units grow".into(),
            holds: cpu.windows(2).all(|w| w[1] <= w[0]),
            detail: format!("{cpu:?}"),
        });
        checks
    }
}

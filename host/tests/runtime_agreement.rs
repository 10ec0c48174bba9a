//! The evaluator and the live runtime agree on the same short trace and platform profile.
//!
//! Tolerances (the runtime runs on real threads, on a shared 2-core machine): the share of requests
//! on FPGAs within 10 percentage points, FPGA spin-ups within 1, and the deadline-miss share within
//! 2 percentage points.

use std::sync::Arc;
use std::time::Duration;

use spork::engine::Plan;
use spork::model::Platform;
use spork::model::time::from_secs;
use spork::policy::Scheduler;
use spork::runtime::work::KernelImage;
use spork::runtime::{Calibration, RunConfig, run};
use spork_golden::Kernel;

#[test]
fn runtime_matches_the_evaluator_on_fpga_share_spin_ups_and_misses() {
    let mut platform = Platform::default();
    platform.fpga.spin_up = from_secs(0.5);
    let image = Arc::new(KernelImage::new(Kernel::Sobel, 9));
    let items_per_sec = image.calibrate(100_000);
    let clock_hz = 250e6;
    platform.fpga.speedup = clock_hz / items_per_sec;
    let seconds = 8.0;
    let requests = spork::runtime::trace::bursty(from_secs(seconds), 120.0, 0.65, from_secs(0.001), 0.0, 11)
        .expect("trace");
    for name in ["spork-e", "cpu-dynamic"] {
        let plan = Plan { seed: 11, ..Plan::new(name.parse::<Scheduler>().expect("scheduler")) };
        let calibration = Calibration { items_per_sec, clock_hz, items_per_cycle: 1.0 };
        let cfg = RunConfig {
            kernel_timeout: Duration::from_secs(30),
            grace: Duration::from_secs(1),
            ..RunConfig::new(platform, plan, image.clone(), calibration, requests.clone(), from_secs(seconds))
        };
        let live = run(cfg).expect("runtime");
        let model = live.evaluator.clone().expect("the prediction beside the run");
        assert_eq!(live.answered, requests.len() as u64, "{name}: every request answered");
        assert_eq!(live.faults.mismatches, 0);
        assert!(
            (live.fpga_share - model.fpga_share).abs() <= 0.10,
            "{name}: FPGA share live {:.3} vs evaluator {:.3}",
            live.fpga_share,
            model.fpga_share
        );
        assert!(
            live.fpga_spin_ups.abs_diff(model.fpga_spin_ups) <= 1,
            "{name}: FPGA spin-ups live {} vs evaluator {}",
            live.fpga_spin_ups,
            model.fpga_spin_ups
        );
        assert!(
            (live.miss_share - model.miss_share).abs() <= 0.02,
            "{name}: miss share live {:.4} vs evaluator {:.4}",
            live.miss_share,
            model.miss_share
        );
        if name == "spork-e" {
            assert!(model.fpga_share > 0.3, "the scenario uses FPGAs: {model:?}");
        }
    }
}

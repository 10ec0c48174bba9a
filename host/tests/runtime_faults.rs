//! The live runtime under faults and a stop: no request is lost or answered twice, and every fault
//! is counted.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use spork::backend::Calibration;
use spork::datapath::work::KernelImage;
use spork::engine::Plan;
use spork::live::{Clock, Fault, FaultPlan};
use spork::model::time::from_secs;
use spork::model::{PerKind, Platform};
use spork::policy::{Caps, Scheduler};
use spork::run::{RunConfig, RunReport, run, run_on};

/// Spork's own sobel model with its RTL verilated (the runs' boards are the simulated board, the
/// default), loaded once for every run here.
fn sobel() -> Arc<KernelImage> {
    static IMAGE: OnceLock<Arc<KernelImage>> = OnceLock::new();
    IMAGE
        .get_or_init(|| {
            let kernel = spork::repository::own::load("sobel", true).expect("its C code and RTL build");
            Arc::new(KernelImage::repo(kernel.into()))
        })
        .clone()
}

fn config(seconds: f64, rate: f64, faults: FaultPlan) -> RunConfig {
    let mut platform = Platform::default();
    // Short reconfigurations keep these tests quick: 200 ms, also the scheduling interval.
    platform.fpga.spin_up = from_secs(0.2);
    platform.fpga.speedup = 1.0;
    let image = sobel();
    let items_per_sec = 1e8;
    let requests =
        spork::run::trace::bursty(from_secs(seconds), rate, 0.6, from_secs(0.001), 0.0, 3).expect("trace");
    let plan = Plan { seed: 3, ..Plan::new("spork-e".parse::<Scheduler>().expect("scheduler")) };
    let calibration =
        Calibration { items_per_sec, clock_hz: 1e8, items_per_cycle: 1.0, stated_items_per_cycle: None };
    let mut cfg = RunConfig::new(platform, plan, image, calibration, requests, from_secs(seconds));
    cfg.pool.faults = faults;
    cfg.pool.kernel_timeout = Duration::from_millis(400);
    cfg.pool.grace = Duration::from_millis(300);
    cfg
}

fn accounted(r: &RunReport) {
    assert!(r.offered <= r.trace_requests, "{r:?}");
    assert_eq!(
        r.answered + r.rejected + r.rejected_at_stop,
        r.offered,
        "every request answered or rejected once"
    );
    assert_eq!(r.answered, r.answered_cpu + r.answered_fpga);
    assert_eq!(r.faults.mismatches, 0, "{:?}", r.faults.log);
}

/// `cfg` under FPGA-dynamic, which places requests only on FPGAs (so a CPU answers nothing but a
/// re-run after a fault), with at most `max_fpga` boards, inputs small enough for the simulated board
/// to keep up, and 1 s deadlines (a request can wait for a board to configure).
fn fpga_only(mut cfg: RunConfig, max_fpga: Option<u32>) -> RunConfig {
    cfg.pool.calibration.items_per_sec = 2e7;
    cfg.pool.platform.deadline_factor = 1000.0;
    cfg.pool.plan = Plan {
        caps: Caps(PerKind::new(None, max_fpga)),
        max_headroom: 1,
        seed: cfg.pool.plan.seed,
        ..Plan::new("fpga-dynamic".parse::<Scheduler>().expect("scheduler"))
    };
    cfg
}

/// Boards' modelled energy is finite and sane: no booking on a board that cannot take it.
fn sane_energy(r: &RunReport) {
    assert!(r.energy_j.iter().all(|e| e.is_finite() && *e < 1e6), "sane bookings: {:?}", r.energy_j);
}

#[test]
fn a_board_that_fails_to_configure_hands_its_work_to_cpus_and_is_replaced() {
    // One board at a time. The first (pre-warmed) fails at once; the second fails at the end of its
    // 200 ms configuration, with the requests queued on it meanwhile (1 s deadlines let them wait for
    // it): those are re-run on CPUs, and a third board takes over.
    let faults = FaultPlan { faults: vec![Fault::Configure(1), Fault::Configure(2)], ..FaultPlan::default() };
    let r = run(fpga_only(config(3.0, 100.0, faults), Some(1))).expect("runtime");
    accounted(&r);
    assert_eq!(r.offered, r.trace_requests, "no stop: the whole trace was offered");
    assert_eq!(r.faults.configure_failures, 2, "both injected failures were met: {:?}", r.faults.log);
    let injected = r.faults.log.iter().filter(|f| f.contains("injected fault")).count();
    assert_eq!(injected, 2, "each failure is logged: {:?}", r.faults.log);
    // The hand-off: the failed board's queue ran on CPUs, and nothing else did.
    assert!(r.faults.redispatched >= 1, "the second board's queued requests were re-run: {r:?}");
    assert!(r.answered_cpu >= 1, "the re-runs were answered on CPUs: {r:?}");
    assert!(r.answered_cpu <= r.faults.redispatched, "FPGA-dynamic: every CPU answer is a re-run: {r:?}");
    // The replacement: a failed configuration measures nothing, so each measured one is a later board.
    assert!(!r.reconfig_loads_ms.is_empty(), "a board configured after the two failures: {r:?}");
    assert!(r.answered_fpga >= 1, "and served: {r:?}");
    // Only requests arriving while a failed board spins down (the cap counts it) may be refused.
    assert!(r.answered * 2 >= r.offered, "most requests served despite two failed boards: {r:?}");
    sane_energy(&r);
}

#[test]
fn a_stalled_kernel_times_out_and_its_requests_rerun_on_cpus() {
    let faults = FaultPlan { faults: vec![Fault::Stall(5)], stall: Duration::from_millis(1200) };
    let mut cfg = config(3.0, 200.0, faults);
    // A board that costs next to nothing, so SporkE holds one whatever this machine's speed: the
    // interval work it weighs is what the requests really took here, and on a fast machine 200
    // requests/s of this Sobel are worth less than an idle board of the paper's profile.
    cfg.pool.platform.fpga.idle_power_w = 0.01;
    cfg.pool.platform.fpga.busy_power_w = 1.0;
    let r = run(cfg).expect("runtime");
    accounted(&r);
    assert_eq!(r.offered, r.trace_requests, "no stop: the whole trace was offered");
    assert_eq!(r.faults.kernel_timeouts, 1, "the fifth board job stalled: {r:?}");
    // The stalled job and everything queued behind it moved to CPUs; whatever the abandoned board
    // hands back later is dropped (counted in `late_discarded`), never answered a second time
    // (`accounted` above).
    assert!(r.faults.redispatched >= 1, "the stalled job was re-run: {r:?}");
    assert!(r.answered_cpu >= r.faults.redispatched, "every re-run was answered on a CPU: {r:?}");
    // No cap but the thread limit: a request no worker can take in time gets a new CPU, a re-run past
    // its deadline too, so nothing is refused.
    assert_eq!(r.rejected, 0, "nothing refused: {:?}", r.faults.log);
    assert_eq!(r.answered, r.offered, "every request served, the stalled one included: {r:?}");
}

#[test]
fn a_stop_waits_out_its_grace_on_the_runs_clock_then_rejects_what_is_in_flight() {
    // A grace of an hour on the run's clock: the test moves that clock forward instead of waiting,
    // so the run can only end if it honours the grace on the clock it was given. Work must still be in
    // flight at the stop: one CPU worker, overloaded, with 1 s deadlines (bounded admission keeps a
    // queue within its requests' deadlines, so about a second of work is queued when the stop comes).
    let mut cfg = config(6.0, 5000.0, FaultPlan::default());
    cfg.pool.grace = Duration::from_secs(3600);
    cfg.pool.platform.deadline_factor = 1000.0;
    cfg.pool.plan = Plan {
        caps: spork::policy::Caps(spork::model::PerKind::new(Some(1), Some(0))),
        ..Plan::new("cpu-dynamic".parse::<Scheduler>().expect("scheduler"))
    };
    let stop = cfg.pool.stop.clone();
    let clock = Clock::start();
    let (done_tx, done) = std::sync::mpsc::channel();
    let run_clock = clock.clone();
    std::thread::spawn(move || {
        let _ = done_tx.send(Box::new(run_on(cfg, run_clock).expect("runtime")));
    });
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    // Bounded: each step moves the run's clock an hour on; a run that ignored it would never end.
    // The first step comes at once, while the queued work is still running.
    let r = (0..150)
        .find_map(|_| {
            clock.advance(Duration::from_secs(3600));
            std::thread::sleep(Duration::from_millis(200));
            done.try_recv().ok()
        })
        .expect("the run ended once its grace had passed on its clock");
    accounted(&r);
    assert!(r.stopped);
    assert!(r.offered < r.trace_requests, "the load generator stopped early");
    assert!(r.wall_s >= 3600.0, "the grace was waited out on the run's clock: {} s", r.wall_s);
}

#[test]
fn brownout_gates_real_optional_work_on_a_capped_pool() {
    use spork::engine::PoolBrownout;
    use spork::policy::brownout::ControllerKind;
    let mut cfg = config(3.0, 300.0, FaultPlan::default());
    cfg.requests =
        spork::run::trace::bursty(from_secs(3.0), 300.0, 0.7, from_secs(0.001), 1.0, 3).expect("trace");
    cfg.pool.calibration.items_per_sec = 2e7; // smaller inputs: the board keeps up
    let brownout =
        PoolBrownout { controller: ControllerKind::Cascaded, period: from_secs(0.2), setpoint: 0.5 };
    cfg.pool.plan =
        Plan { caps: Caps(PerKind::new(Some(1), Some(1))), brownout: Some(brownout), ..cfg.pool.plan };
    let r = run(cfg).expect("runtime");
    accounted(&r);
    assert_eq!(r.brownout.as_deref(), Some("cascaded"));
    assert_eq!(r.optional_offered, r.offered, "every request carried an optional part");
    assert!(r.optional_ratio < 1.0, "the gate skipped some optional work: {r:?}");
    assert!(r.optional_ratio > 0.0, "and ran some: {r:?}");
}

#[test]
fn an_fpga_only_scheduler_reruns_a_failed_boards_requests_on_cpus() {
    // FPGA-dynamic places only on FPGAs; after a board fails (a kernel hangs past the timeout), its
    // requests are re-run on CPU workers (never back onto an FPGA with an impossible booking).
    let faults = FaultPlan { faults: vec![Fault::Stall(5)], stall: Duration::from_millis(1200) };
    let r = run(fpga_only(config(3.0, 100.0, faults), None)).expect("runtime");
    accounted(&r);
    assert_eq!(r.offered, r.trace_requests, "no stop: the whole trace was offered");
    assert_eq!(r.faults.kernel_timeouts, 1, "the fifth board job stalled: {r:?}");
    assert!(r.faults.redispatched >= 1, "the stalled job was re-run: {r:?}");
    assert!(r.answered_cpu >= 1, "the re-runs were answered on CPUs: {r:?}");
    assert!(r.answered_cpu <= r.faults.redispatched, "FPGA-dynamic: every CPU answer is a re-run: {r:?}");
    assert!(r.answered_fpga >= 1, "the other requests ran on boards: {r:?}");
    // No cap but the thread limit, and 1 s deadlines: a request no board can take in time gets a new
    // board, a re-run a new CPU, so nothing is refused.
    assert_eq!(r.rejected, 0, "nothing refused: {r:?}");
    sane_energy(&r);
}

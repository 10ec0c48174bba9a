//! The live runtime agrees with its own prediction: the same engine, constructor, seed and trace in
//! virtual time.
//!
//! Schedulers are chosen where each check bites: SporkE and SporkE-ideal (the oracle) place work on
//! FPGAs and spin boards up (share and spin-ups), on the emulated board, which keeps its own timeline
//! in wall time; and one overloaded, slow emulated board under FPGA-dynamic, where bounded admission
//! rejects what would queue into a miss, live and predicted alike (board latency is on the board's own
//! timeline, so the live figures are the policy's, not this machine's noise). Tolerances, for real
//! threads on a shared 2-core machine: the share of requests on FPGAs within 10 percentage points,
//! FPGA spin-ups within 1, the miss share and the rejected share within 5 points (a CPU thread
//! descheduled for one 10 ms deadline misses it live; the prediction's CPUs are never descheduled).
//! The kernel is Spork's own sobel model (`models/sobel`), its C code the CPU reference, as `spork
//! serve` loads it.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use spork::backend::{Board, Calibration};
use spork::datapath::work::KernelImage;
use spork::engine::Plan;
use spork::model::time::{from_secs, to_secs};
use spork::model::{Link, PerKind, Platform, Request};
use spork::policy::batching::Batching;
use spork::policy::{Caps, Scheduler};
use spork::run::run;
use spork::run::{RunConfig, RunReport};

/// Spork's own sobel model, as `spork serve` loads it: its C code (the emulated board runs no
/// RTL). Loaded once; every run and calibration here shares it.
fn sobel() -> Arc<KernelImage> {
    static IMAGE: OnceLock<Arc<KernelImage>> = OnceLock::new();
    IMAGE
        .get_or_init(|| {
            let kernel = spork::repository::own::load("sobel", false).expect("its C code builds");
            Arc::new(KernelImage::repo(kernel.into()))
        })
        .clone()
}

/// One live run at a time: two at once on two cores would make each other's CPU threads miss.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn live(
    platform: Platform,
    plan: Plan,
    c: Calibration,
    board: Board,
    requests: &[Request],
    seconds: f64,
) -> RunReport {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let image = sobel();
    let mut cfg = RunConfig::new(platform, plan, image, c, requests.to_vec(), from_secs(seconds));
    cfg.pool.kernel_timeout = Duration::from_secs(30);
    cfg.pool.grace = Duration::from_secs(1);
    cfg.pool.board = board;
    run(cfg).expect("runtime")
}

fn agree(name: &str, r: &RunReport, offered: usize) {
    let model = r.evaluator.clone().expect("the prediction beside the run");
    assert_eq!(r.answered + r.rejected, offered as u64, "{name}: every request answered or rejected");
    let rejected = |n: u64| n as f64 / offered.max(1) as f64;
    let gap = (rejected(r.rejected) - rejected(model.rejected)).abs();
    eprintln!("{name}: rejected live {} vs predicted {} of {offered}", r.rejected, model.rejected);
    assert!(gap <= 0.05, "{name}: rejected live {} vs prediction {}", r.rejected, model.rejected);
    assert_eq!(r.faults.mismatches, 0);
    let share = (r.fpga_share - model.fpga_share).abs();
    assert!(
        share <= 0.10,
        "{name}: FPGA share live {:.3} vs prediction {:.3}",
        r.fpga_share,
        model.fpga_share
    );
    let spin = r.fpga_spin_ups.abs_diff(model.fpga_spin_ups);
    assert!(
        spin <= 1,
        "{name}: FPGA spin-ups live {} vs prediction {}",
        r.fpga_spin_ups,
        model.fpga_spin_ups
    );
    let miss = (r.miss_share - model.miss_share).abs();
    assert!(
        miss <= 0.05,
        "{name}: miss share live {:.4} vs prediction {:.4}",
        r.miss_share,
        model.miss_share
    );
}

#[test]
fn hybrid_schedulers_agree_on_fpga_share_and_spin_ups() {
    let mut platform = Platform::default();
    platform.fpga.spin_up = from_secs(0.5);
    // The emulated board below is slower than a CPU (see there): at half a CPU's speed (the Rust
    // reference this was first tuned on) the paper's power figures put this load right at Algorithm
    // 1's breakeven, so a run's measured CPU speed decided whether SporkE takes boards at all, live
    // or predicted (it flipped both ways). CPUs at 4x the paper's busy power make boards pay clearly
    // (breakeven about a third of the load then; sobel's C code is 3-4x the board's speed on a 2-core
    // VM, and the check below holds that the scenario still uses FPGAs).
    platform.cpu.busy_power_w = 600.0;
    let image = sobel();
    // The emulated board at 100 MHz: it keeps its own timeline in wall time (the reference it runs
    // is faster than the board), so the live decisions are the policy's alone.
    let c = Calibration {
        items_per_sec: image.calibrate(100_000),
        clock_hz: 100e6,
        items_per_cycle: 1.0,
        stated_items_per_cycle: None,
    };
    let platform = c.apply(platform, true);
    let seconds = 8.0;
    let requests =
        spork::run::trace::bursty(from_secs(seconds), 120.0, 0.65, from_secs(0.001), 0.0, 11).expect("trace");
    for name in ["spork-e", "spork-e-ideal"] {
        let plan = Plan { seed: 11, ..Plan::new(name.parse::<Scheduler>().expect("scheduler")) };
        let r = live(platform, plan, c, Board::Model(None), &requests, seconds);
        agree(name, &r, requests.len());
        let model = r.evaluator.expect("prediction");
        assert!(
            model.fpga_share > 0.3 && model.fpga_spin_ups >= 1,
            "{name}: the scenario uses FPGAs: {model:?}"
        );
    }
}

/// One emulated board of `cus` compute units under FPGA-dynamic (cap 1) at 1.5x one CU's capacity
/// (described below); the live run with its prediction, and the requests offered.
fn one_board_at_one_and_a_half_cus(cus: u32) -> (RunReport, usize) {
    let image = sobel();
    let items_per_sec = image.calibrate(100_000);
    // The board's clock follows this machine's speed, so the scenario (S = 1/35) is the same on a
    // fast core as on a slow one: at a fixed 9 MHz a core twice as fast halves S, doubles each board
    // job against its deadline and turns bursts into rejections the 4-CU board is meant to absorb.
    let clock_hz = items_per_sec / 35.0;
    let c = Calibration { items_per_sec, clock_hz, items_per_cycle: 1.0, stated_items_per_cycle: None };
    let mut platform = c.apply(Platform::default(), false);
    platform.deadline_factor = 100.0;
    platform.fpga.compute_units = cus;
    let (seconds, size) = (3.0, 0.0001);
    let rate = 1.5 / (size / c.speedup());
    let requests =
        spork::run::trace::bursty(from_secs(seconds), rate, 0.6, from_secs(size), 0.0, 5).expect("trace");
    let plan = Plan { seed: 5, caps: Caps(PerKind::new(None, Some(1))), ..Plan::new(Scheduler::FpgaDynamic) };
    (live(platform, plan, c, Board::Model(None), &requests, seconds), requests.len())
}

#[test]
fn an_overloaded_board_rejects_as_predicted() {
    // One emulated board 35x slower than the CPU reference (the emulation keeps the
    // board's timeline exactly; the Verilated board's own lag is the hardening tests' subject); deadlines of 100x the CPU size leave room for queueing. 0.1 ms
    // requests at the rate that loads the one board 1.5x on average (from this machine's measured
    // speed): the queue, and the misses, are the policy's.
    let (r, offered) = one_board_at_one_and_a_half_cus(1);
    agree("fpga-dynamic on one board", &r, offered);
    let model = r.evaluator.expect("prediction");
    // Bounded admission turns the queue's would-be misses into rejections, live and predicted alike.
    assert!(
        model.rejected as f64 > 0.05 * offered as f64,
        "the board is overloaded in the prediction: {model:?}"
    );
}

/// The emulated board at 250 MHz, whose link costs `INVOCATION` per job, and a 3 s trace of 0.1 ms
/// requests at 1.5 times what one board serves one job at a time.
fn board_behind_its_link() -> (Platform, Calibration, Vec<Request>) {
    let image = sobel();
    let items_per_sec = image.calibrate(100_000);
    let c =
        Calibration { items_per_sec, clock_hz: 250e6, items_per_cycle: 1.0, stated_items_per_cycle: None };
    let mut platform = c.apply(Platform::default(), false);
    platform.deadline_factor = 100.0;
    let bytes_per_cpu_s = image.bytes_per_item(4096) * items_per_sec;
    platform.fpga.link = Some(Link { invocation: INVOCATION, bytes_per_s: 1e9, bytes_per_cpu_s });
    let per_job = to_secs(platform.fpga.service(from_secs(LINK_SIZE_S)));
    assert!(per_job > 0.002, "the link is in the booked service: {per_job}");
    let requests = spork::run::trace::bursty(
        from_secs(LINK_SECONDS),
        1.5 / per_job,
        0.6,
        from_secs(LINK_SIZE_S),
        0.0,
        7,
    )
    .expect("trace");
    (platform, c, requests)
}

/// The link's cost per invocation, the trace's length and its requests' size.
const INVOCATION: u64 = 2_000_000;
const LINK_SECONDS: f64 = 3.0;
const LINK_SIZE_S: f64 = 0.0001;

#[test]
fn a_board_link_is_charged_live_as_booked() {
    // The emulated board serves a 0.1 ms request's pixels in microseconds, but each invocation
    // costs 2 ms on its link: the board is the link's, live and predicted alike.
    let (platform, c, requests) = board_behind_its_link();
    let (seconds, invocation) = (LINK_SECONDS, INVOCATION);
    let plan = Plan { seed: 7, caps: Caps(PerKind::new(None, Some(1))), ..Plan::new(Scheduler::FpgaDynamic) };
    let r = live(platform, plan, c, Board::Model(None), &requests, seconds);
    agree("a board paying 2 ms per invocation", &r, requests.len());
    let model = r.evaluator.clone().expect("prediction");
    assert!(model.rejected as f64 > 0.05 * requests.len() as f64, "the link overloads the board: {model:?}");
    // Every job on the board's timeline carried its invocation.
    let floor = r.answered_fpga as f64 * to_secs(invocation);
    assert!(
        r.device_s >= floor,
        "board time {:.3} s for {} jobs (at least {floor:.3} s)",
        r.device_s,
        r.answered_fpga
    );
    assert!(r.answered_fpga > 0);
}

#[test]
fn a_batching_board_pays_one_invocation_per_batch_and_answers_every_member_once() {
    // The board above, 1.5x past its capacity when each request pays its own 2 ms invocation; with
    // batches of up to 16 the invocation is shared and the board keeps up, live and predicted alike.
    let (platform, c, requests) = board_behind_its_link();
    let (seconds, invocation) = (LINK_SECONDS, INVOCATION);
    let batching = Batching::new(16, &[], from_secs(0.001)).expect("valid");
    let plan = Plan {
        seed: 7,
        caps: Caps(PerKind::new(None, Some(1))),
        batching: Some(batching),
        ..Plan::new(Scheduler::FpgaDynamic)
    };
    let r = live(platform, plan, c, Board::Model(None), &requests, seconds);
    agree("a batching board paying 2 ms per invocation", &r, requests.len());
    let model = r.evaluator.clone().expect("prediction");
    assert!((model.rejected as f64) < 0.01 * requests.len() as f64, "batches keep up: {model:?}");
    let (batches, carried) = r.pool.batches.expect("batching reported");
    assert!(carried > 2 * batches, "{carried} requests in {batches} batches");
    assert_eq!(
        r.answered_fpga, r.answered,
        "every answer came from the board, checked against the reference"
    );
    // Each batch carried one invocation on the board's timeline, not one per member.
    let (floor, ceiling) =
        (batches as f64 * to_secs(invocation), r.answered_fpga as f64 * to_secs(invocation));
    assert!(
        r.device_s >= floor && r.device_s < ceiling,
        "board time {:.3} s for {batches} batches",
        r.device_s
    );
}

#[test]
fn boards_of_four_compute_units_agree_with_their_prediction() {
    // The overloaded scenario above, its one board now holding four compute units: the load that
    // queued one CU 1.5x past its capacity spreads over four, live and predicted alike; and the
    // hybrid scenario with boards of four CUs (SporkE holds fewer of them).
    let (r, offered) = one_board_at_one_and_a_half_cus(4);
    agree("fpga-dynamic on one board of 4 CUs", &r, offered);
    let model = r.evaluator.clone().expect("prediction");
    assert!(
        (model.rejected as f64) < 0.01 * offered as f64 && r.fpga_share > 0.95,
        "four CUs take what overloaded one: {model:?}, live share {:.3}",
        r.fpga_share
    );

    let mut platform = Platform::default();
    platform.fpga.spin_up = from_secs(0.5);
    platform.cpu.busy_power_w = 600.0;
    platform.fpga.compute_units = 4;
    let items_per_sec = sobel().calibrate(100_000);
    let c =
        Calibration { items_per_sec, clock_hz: 100e6, items_per_cycle: 1.0, stated_items_per_cycle: None };
    let platform = c.apply(platform, true);
    let seconds = 8.0;
    let requests =
        spork::run::trace::bursty(from_secs(seconds), 240.0, 0.65, from_secs(0.001), 0.0, 11).expect("trace");
    let plan = Plan { seed: 11, ..Plan::new("spork-e".parse::<Scheduler>().expect("scheduler")) };
    let r = live(platform, plan, c, Board::Model(None), &requests, seconds);
    agree("spork-e on boards of 4 CUs", &r, requests.len());
    let model = r.evaluator.expect("prediction");
    assert!(model.fpga_share > 0.3 && model.fpga_spin_ups >= 1, "the scenario uses FPGAs: {model:?}");
}

//! A live pool's threads. The alarm thread that keeps a batch's close to the microsecond (tokio's
//! timer ticks in milliseconds) exists only in a pool that batches: set on every loop of the
//! dispatcher, it used to be woken about three times per request in every pool. And a server's pool
//! has no dispatcher thread: its dispatcher is a task on the server's runtime. The tests are in
//! their own binary and take turns, so that no other test's pool is among the threads counted.

use std::sync::{Arc, Mutex};

use rand::SeedableRng;
use spork::backend::{Board, Calibration};
use spork::datapath::work::{KernelImage, Payload, Work};
use spork::engine::{Oracle, Plan};
use spork::live::{Clock, LivePool, PoolConfig};
use spork::model::Platform;
use spork::policy::batching::Batching;
use spork::policy::{Objective, Scheduler};
use spork::repository::kernel::RepoKernel;

/// The names of this process's threads.
fn threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .collect()
}

/// One test at a time: each counts the process's threads.
static TURN: Mutex<()> = Mutex::new(());

fn named(names: &[String], prefix: &str) -> usize {
    names.iter().filter(|n| n.starts_with(prefix)).count()
}

fn alarms(names: &[String]) -> usize {
    named(names, "spork-alarm")
}

/// Alarm threads while a pool running `plan` serves (after one request answered: its dispatcher
/// is past its start), and whether every thread of the pool was gone after it ended.
fn alarms_while_serving(plan: Plan) -> (usize, bool) {
    let (threads, gone) = while_serving(plan, None);
    (alarms(&threads), gone)
}

/// The threads while a pool running `plan` serves one request, its dispatcher a task on `home` if
/// given; whether every thread of the pool was gone after it ended.
fn while_serving(plan: Plan, home: Option<&tokio::runtime::Handle>) -> (Vec<String>, bool) {
    // Spork's own sobel model (its C code: the emulated board runs no RTL).
    let sobel: Arc<RepoKernel> =
        spork::repository::own::load("sobel", false).expect("its C code builds").into();
    let image = Arc::new(KernelImage::repo(sobel.clone()));
    let c = Calibration {
        items_per_sec: image.calibrate(10_000),
        clock_hz: 250e6,
        items_per_cycle: 1.0,
        stated_items_per_cycle: None,
    };
    let platform = c.apply(Platform::default(), false);
    let cfg = PoolConfig { board: Board::Model(None), ..PoolConfig::new(platform, plan, image.clone(), c) };
    let pool = LivePool::start_in(cfg, Oracle::default(), Clock::start(), home).expect("a pool");
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(3);
    let work = Arc::new(Work { mandatory: Payload::Tensors(sobel.random(4096, &mut rng)), optional: None });
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(pool.submit(work, None, None)).expect("the request is answered");
    let serving = threads();
    pool.drain();
    pool.join().expect("the pool ends normally");
    let left = threads();
    (serving, alarms(&left) == 0 && named(&left, "spork-pool") == 0 && named(&left, "spork-cpu") == 0)
}

#[test]
fn only_a_pool_that_batches_keeps_an_alarm_thread() {
    let _turn = TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (alarms, gone) = alarms_while_serving(Plan::new(Scheduler::CpuDynamic));
    assert_eq!(alarms, 0, "a pool without batching starts no alarm thread");
    assert!(gone);
    let batching = Batching::new(8, &[], 100_000).expect("a valid rule");
    let plan = Plan { batching: Some(batching), ..Plan::new(Scheduler::Spork(Objective::ENERGY)) };
    let (alarms, gone) = alarms_while_serving(plan);
    assert_eq!(alarms, 1, "a batching pool keeps its batches' close times with one alarm thread");
    assert!(gone, "the alarm thread ends with its pool");
}

#[test]
fn a_pool_given_a_runtime_dispatches_on_it_and_ends_with_its_report() {
    let _turn = TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let plan = Plan::new(Scheduler::CpuDynamic);
    let (own, gone) = while_serving(plan, None);
    assert_eq!(named(&own, "spork-pool"), 1, "without a runtime the dispatcher has a thread: {own:?}");
    assert!(gone);
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("spork-io")
        .enable_all()
        .build()
        .expect("runtime");
    let (hosted, gone) = while_serving(plan, Some(server.handle()));
    assert_eq!(named(&hosted, "spork-pool"), 0, "the dispatcher is a task on the runtime: {hosted:?}");
    assert!(named(&hosted, "spork-cpu") >= 1, "its CPU workers still have threads: {hosted:?}");
    assert!(gone, "the pool's workers end with it; its report came back (joined above)");
}

//! A live pool's threads. The alarm thread that keeps a batch's close to the microsecond (tokio's
//! timer ticks in milliseconds) exists only in a pool that batches: set on every loop of the
//! dispatcher, it used to be woken about three times per request in every pool. One test in its own
//! binary, so that no other test's pool is among the threads counted.

use std::sync::Arc;

use rand::SeedableRng;
use spork::backend::{Board, Calibration};
use spork::datapath::work::KernelImage;
use spork::engine::{Oracle, Plan};
use spork::live::{Clock, LivePool, PoolConfig};
use spork::model::Platform;
use spork::policy::batching::Batching;
use spork::policy::{Objective, Scheduler};
use spork_golden::Kernel;

/// The names of this process's threads.
fn threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .collect()
}

fn alarms(names: &[String]) -> usize {
    names.iter().filter(|n| *n == "spork-alarm").count()
}

/// Alarm threads while a pool running `plan` serves (after one request answered: its dispatcher
/// is past its start), and whether every thread of the pool was gone after it ended.
fn alarms_while_serving(plan: Plan) -> (usize, bool) {
    let image = Arc::new(KernelImage::new(Kernel::Sobel, 1));
    let c = Calibration { items_per_sec: image.calibrate(10_000), clock_hz: 250e6, items_per_cycle: 1.0 };
    let platform = c.apply(Platform::default(), false);
    let cfg = PoolConfig { board: Board::Model(None), ..PoolConfig::new(platform, plan, image.clone(), c) };
    let pool = LivePool::start(cfg, Oracle::default(), Clock::start()).expect("a pool");
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(3);
    let work = Arc::new(image.work(4096, 0, &mut rng));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(pool.submit(work, None, None)).expect("the request is answered");
    let serving = alarms(&threads());
    pool.drain();
    pool.join().expect("the pool ends normally");
    (serving, alarms(&threads()) == 0)
}

#[test]
fn only_a_pool_that_batches_keeps_an_alarm_thread() {
    let (alarms, gone) = alarms_while_serving(Plan::new(Scheduler::CpuDynamic));
    assert_eq!(alarms, 0, "a pool without batching starts no alarm thread");
    assert!(gone);
    let batching = Batching::new(8, &[], 100_000).expect("a valid rule");
    let plan = Plan { batching: Some(batching), ..Plan::new(Scheduler::Spork(Objective::ENERGY)) };
    let (alarms, gone) = alarms_while_serving(plan);
    assert_eq!(alarms, 1, "a batching pool keeps its batches' close times with one alarm thread");
    assert!(gone, "the alarm thread ends with its pool");
}

//! Invariants of the evaluator, checked on random small traces, platforms and schedulers.

use proptest::prelude::*;
use spork::engine::Effects;
use spork::evaluate::{Plan, Report, evaluate, run_with};
use spork::model::platform::ideal_fpga_only;
use spork::model::time::{from_secs, to_secs};
use spork::model::{Kind, PerKind, Platform, Request, Time, WorkerId};
use spork::policy::arbitrate::Sharing;
use spork::policy::{Admission, Caps, DispatcherKind, Scheduler};
use spork::trace::RateTrace;
use std::collections::HashMap;

/// One worker's life as the effect log tells it.
#[derive(Clone, Copy, Debug)]
struct Life {
    kind: Kind,
    /// When the spin-up was decided (0 for a pool pre-warmed before the run).
    from: Time,
    /// When it could serve.
    ready: Time,
    /// Service booked on it.
    busy: Time,
    /// When its release was decided.
    released: Option<Time>,
}

/// Records every effect: served requests (checking per-worker queue discipline as it goes) and
/// each worker's life.
#[derive(Default)]
struct Recorder {
    served: Vec<(Request, Kind, Time, Time)>,
    last_finish: HashMap<WorkerId, Time>,
    violations: Vec<String>,
    live: HashMap<WorkerId, Life>,
    lives: Vec<Life>,
}

impl Recorder {
    /// Energy of every recorded life, computed from the log alone: busy power over booked service,
    /// spin-up and spin-down; idle power over the rest of the allocated time. A pool pre-warmed at 0
    /// had its spin-up before the run, charged as both allocated and spinning time.
    fn energy(&self, p: &Platform) -> f64 {
        let mut joules = 0.0;
        for l in &self.lives {
            let spec = p.spec(l.kind);
            let prewarm = if l.ready == l.from { spec.spin_up } else { 0 };
            let released = l.released.expect("every worker is released by the end");
            let allocated = released + spec.spin_down - l.from + prewarm;
            let spin = (l.ready - l.from) + prewarm + spec.spin_down;
            let idle = allocated - spin - l.busy;
            joules += spec.busy_power_w * to_secs(l.busy + spin) + spec.idle_power_w * to_secs(idle);
        }
        joules
    }
}

impl Effects for Recorder {
    fn spin_up(&mut self, w: WorkerId, kind: Kind, at: Time, ready_at: Time) {
        let life = Life { kind, from: at, ready: ready_at, busy: 0, released: None };
        if let Some(old) = self.live.insert(w, life) {
            self.violations.push(format!("{w:?} spun up while {old:?} still held it"));
        }
    }

    fn release(&mut self, w: WorkerId, _kind: Kind, at: Time) {
        match self.live.remove(&w) {
            Some(l) => self.lives.push(Life { released: Some(at), ..l }),
            None => self.violations.push(format!("{w:?} released without a spin-up")),
        }
    }

    fn served(&mut self, r: &Request, w: WorkerId, kind: Kind, start: Time, finish: Time) {
        if start < r.arrival {
            self.violations.push(format!("{r:?} started at {start} before arriving"));
        }
        if let Some(&prev) = self.last_finish.get(&w)
            && start < prev
        {
            self.violations.push(format!("{w:?} overlaps: starts {start} before {prev}"));
        }
        self.last_finish.insert(w, finish);
        self.served.push((*r, kind, start, finish));
        if let Some(l) = self.live.get_mut(&w) {
            l.busy += finish - start;
        }
    }
}

fn platform_strategy() -> impl Strategy<Value = Platform> {
    (0.5f64..4.0, prop::sample::select(vec![1.0, 2.0, 4.0]), 0.001f64..0.005, 10.0f64..50.0, 25.0f64..100.0)
        .prop_map(|(fpga_spin, speedup, cpu_spin, fpga_idle, fpga_busy)| {
            let mut p = Platform::default();
            p.fpga.spin_up = from_secs(fpga_spin);
            p.fpga.speedup = speedup;
            p.cpu.spin_up = from_secs(cpu_spin);
            p.cpu.spin_down = from_secs(cpu_spin);
            p.fpga.idle_power_w = fpga_idle.min(fpga_busy);
            p.fpga.busy_power_w = fpga_busy;
            p
        })
}

fn trace_strategy() -> impl Strategy<Value = Vec<Request>> {
    (prop::collection::vec(0.0f64..300.0, 1..3), 0.01f64..0.06, any::<u64>()).prop_map(
        |(rates, size, seed)| {
            let duration = from_secs(rates.len() as f64 * 60.0);
            let t = RateTrace {
                minute_rates: rates,
                size: from_secs((size * 1e4).round() / 1e4),
                optional: 0,
                size_cv: 0.0,
                duration,
                seed,
            };
            t.requests().collect()
        },
    )
}

fn scheduler_strategy() -> impl Strategy<Value = Scheduler> {
    prop::sample::select(Scheduler::PAPER.to_vec())
}

fn dispatcher_strategy() -> impl Strategy<Value = Option<DispatcherKind>> {
    prop::option::of(prop::sample::select(DispatcherKind::ALL.to_vec()))
}

fn run(platform: &Platform, reqs: &Vec<Request>, plan: &Plan) -> (Report, Recorder) {
    let mut rec = Recorder::default();
    let report = run_with(platform, reqs, plan, 1, &mut rec);
    (report, rec)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Every request is served exactly once, on one worker, with its service time, never before it
    /// arrives and never overlapping another request on the same worker.
    #[test]
    fn every_request_completes_exactly_once(
        platform in platform_strategy(), reqs in trace_strategy(),
        scheduler in scheduler_strategy(), dispatcher in dispatcher_strategy(),
    ) {
        let plan = Plan { dispatcher, max_headroom: 8, ..Plan::new(scheduler) };
        let (report, rec) = run(&platform, &reqs, &plan);
        prop_assert!(rec.violations.is_empty(), "{:?}", rec.violations);
        prop_assert_eq!(report.requests as usize, reqs.len());
        let mut seen: Vec<Request> = rec.served.iter().map(|s| s.0).collect();
        let mut want = reqs.clone();
        seen.sort_by_key(|r| (r.arrival, r.size));
        want.sort_by_key(|r| (r.arrival, r.size));
        prop_assert_eq!(seen, want);
        for (r, kind, start, finish) in &rec.served {
            prop_assert_eq!(finish - start, platform.spec(*kind).service(r.size));
            prop_assert!(scheduler.fleet().allows(*kind));
        }
        let on_cpu = rec.served.iter().filter(|s| s.1 == Kind::Cpu).count() as u64;
        prop_assert_eq!(report.cpu.served, on_cpu);
        prop_assert_eq!(report.fpga.served + report.cpu.served, report.requests);
    }

    /// With CPU spin-up shorter than the slack (deadline minus size), a hybrid or CPU fleet under
    /// efficient-first never misses a deadline: a fresh CPU can always make it.
    #[test]
    fn no_misses_when_cpu_spin_up_fits_the_slack(
        platform in platform_strategy(), reqs in trace_strategy(), scheduler in scheduler_strategy(),
    ) {
        prop_assume!(scheduler.fleet().cpu);
        let min_size = reqs.iter().map(|r| r.size).min().unwrap_or(u64::MAX);
        prop_assume!((platform.cpu.spin_up as f64) < (platform.deadline_factor - 1.0) * min_size as f64);
        let plan = Plan { dispatcher: Some(DispatcherKind::EfficientFirst), max_headroom: 8, ..Plan::new(scheduler) };
        let (report, rec) = run(&platform, &reqs, &plan);
        prop_assert_eq!(report.deadline_misses, 0);
        for (r, _, _, finish) in &rec.served {
            prop_assert!(*finish <= r.deadline(platform.deadline_factor));
        }
    }

    /// The total energy equals an independent computation from the effect log (each worker's life and
    /// the service booked on it, times the profile's power); energy parts add up to the total; busy
    /// energy is exactly the served work at busy power; the allocated time covers busy and spin time;
    /// the idealised FPGA-only figures are their closed form.
    #[test]
    fn energy_and_cost_add_up(
        platform in platform_strategy(), reqs in trace_strategy(), scheduler in scheduler_strategy(),
    ) {
        let (r, rec) = run(&platform, &reqs, &Plan::new(scheduler));
        prop_assert!(rec.violations.is_empty(), "{:?}", rec.violations);
        prop_assert!(rec.live.is_empty(), "workers never released: {:?}", rec.live);
        let from_log = rec.energy(&platform);
        prop_assert!((from_log - r.energy_j).abs() <= 1e-6 * r.energy_j.max(1.0), "log {from_log} vs report {}", r.energy_j);
        let parts = r.cpu.energy.busy_j + r.cpu.energy.idle_j + r.cpu.energy.spin_j
            + r.fpga.energy.busy_j + r.fpga.energy.idle_j + r.fpga.energy.spin_j;
        prop_assert!((parts - r.energy_j).abs() <= 1e-9 * r.energy_j.max(1.0));
        for kind in [Kind::Cpu, Kind::Fpga] {
            let k = if kind == Kind::Cpu { &r.cpu } else { &r.fpga };
            let work: Time = rec.served.iter().filter(|s| s.1 == kind).map(|s| s.3 - s.2).sum();
            let expect = to_secs(work) * platform.spec(kind).busy_power_w;
            prop_assert!((k.energy.busy_j - expect).abs() <= 1e-6 * expect.max(1.0), "{kind:?}");
            prop_assert!(k.allocated_s + 1e-9 >= k.busy_s);
            prop_assert!((k.cost - k.allocated_s * platform.spec(kind).price_per_sec()).abs() < 1e-9 * k.cost.max(1.0));
        }
        let total_size: f64 = reqs.iter().map(|q| to_secs(q.size)).sum();
        let d = Platform::default();
        let ideal_e = total_size / d.fpga.speedup * d.fpga.busy_power_w;
        let ideal_c = total_size / d.fpga.speedup * d.fpga.price_per_hour / 3600.0;
        prop_assert!((r.ideal_energy_j - ideal_e).abs() <= 1e-9 * ideal_e.max(1.0));
        prop_assert!((r.ideal_cost - ideal_c).abs() <= 1e-9 * ideal_c.max(1e-9));
        let (fe, fc) = ideal_fpga_only(total_size);
        prop_assert!((fe - ideal_e).abs() <= 1e-9 * ideal_e.max(1.0) && (fc - ideal_c).abs() <= 1e-9 * ideal_c.max(1e-9));
        if r.energy_j > 0.0 {
            prop_assert!((r.energy_efficiency - ideal_e / r.energy_j).abs() < 1e-9);
        }
    }

    /// Under any caps the pool never holds more workers than allowed and every request is served
    /// exactly once or rejected and counted.
    #[test]
    fn caps_are_never_exceeded(
        platform in platform_strategy(), reqs in trace_strategy(), scheduler in scheduler_strategy(),
        max_cpu in prop::option::of(0u32..8), max_fpga in prop::option::of(0u32..8),
    ) {
        let plan = Plan { caps: Caps(PerKind::new(max_cpu, max_fpga)), max_headroom: 4, ..Plan::new(scheduler) };
        let (report, rec) = run(&platform, &reqs, &plan);
        prop_assert!(rec.violations.is_empty(), "{:?}", rec.violations);
        prop_assert!(max_cpu.is_none_or(|m| report.cpu.peak <= m), "cpu peak {} > {max_cpu:?}", report.cpu.peak);
        prop_assert!(max_fpga.is_none_or(|m| report.fpga.peak <= m), "fpga peak {} > {max_fpga:?}", report.fpga.peak);
        prop_assert_eq!(report.requests + report.rejected, reqs.len() as u64);
        prop_assert_eq!(rec.served.len() as u64, report.requests);
    }

    /// Bounded admission: no request waits in a queue into a miss, so the only misses are requests
    /// a worker was spun up for (at most one each); every request is served or rejected, once.
    #[test]
    fn bounded_admission_misses_only_on_fresh_workers(
        platform in platform_strategy(), reqs in trace_strategy(), scheduler in scheduler_strategy(),
        max_cpu in prop::option::of(0u32..8), max_fpga in prop::option::of(0u32..8),
    ) {
        let caps = Caps(PerKind::new(max_cpu, max_fpga));
        let plan = Plan { caps, admission: Admission::RejectLate, max_headroom: 4, ..Plan::new(scheduler) };
        let (report, rec) = run(&platform, &reqs, &plan);
        prop_assert!(rec.violations.is_empty(), "{:?}", rec.violations);
        let spin_ups = report.cpu.spin_ups + report.fpga.spin_ups;
        prop_assert!(report.deadline_misses <= spin_ups, "{} misses > {spin_ups} spin-ups", report.deadline_misses);
        prop_assert_eq!(report.requests + report.rejected, reqs.len() as u64);
        prop_assert_eq!(rec.served.len() as u64, report.requests);
    }

    /// The same inputs give the same report.
    #[test]
    fn same_seed_same_result(platform in platform_strategy(), reqs in trace_strategy(), scheduler in scheduler_strategy()) {
        let a = run(&platform, &reqs, &Plan::new(scheduler)).0;
        let b = run(&platform, &reqs, &Plan::new(scheduler)).0;
        prop_assert_eq!(a, b);
    }
}

#[test]
fn seeded_synthetic_runs_are_reproducible() {
    let s = spork::trace::Synthetic {
        duration: from_secs(600.0),
        size: spork::trace::SizeSpec::Short,
        ..spork::trace::Synthetic::paper_default(11)
    };
    let t1 = s.generate().unwrap();
    let t2 = s.generate().unwrap();
    let p = Platform::default();
    let plan = Plan::new(Scheduler::Spork(spork::policy::Objective::ENERGY));
    assert_eq!(evaluate(&p, &t1, &plan), evaluate(&p, &t2, &plan));
    let other = spork::trace::Synthetic { seed: 12, ..s }.generate().unwrap();
    assert_ne!(evaluate(&p, &t1, &plan), evaluate(&p, &other, &plan));
}

/// Paper-level sanity on one default trace: efficient-first Spork beats the homogeneous platforms on
/// energy, SporkC is cheaper than SporkE, and CPU-dynamic's efficiency is the CPU/FPGA energy ratio.
#[test]
fn paper_trends_on_a_default_trace() {
    let t = spork::trace::Synthetic {
        duration: from_secs(1200.0),
        size: spork::trace::SizeSpec::Fixed(from_secs(0.01)),
        workers: 30.0,
        ..spork::trace::Synthetic::paper_default(3)
    }
    .generate()
    .unwrap();
    let p = Platform::default();
    let get = |s: Scheduler| evaluate(&p, &t, &Plan::new(s));
    let cpu = get(Scheduler::CpuDynamic);
    let e = get(Scheduler::Spork(spork::policy::Objective::ENERGY));
    let c = get(Scheduler::Spork(spork::policy::Objective::COST));
    let fs = get(Scheduler::FpgaStatic);
    // CPU-only: busy energy is 150 W x size vs 50 W x size/2 ideal: 1/6, minus idle and spin overhead.
    assert!(
        cpu.energy_efficiency < 1.0 / 6.0 + 1e-9 && cpu.energy_efficiency > 0.15,
        "{}",
        cpu.energy_efficiency
    );
    assert!(e.energy_efficiency > fs.energy_efficiency && e.energy_efficiency > cpu.energy_efficiency);
    assert!(e.energy_efficiency > c.energy_efficiency);
    assert!(c.relative_cost < e.relative_cost);
    assert!(e.relative_cost < fs.relative_cost);
    assert_eq!(e.deadline_misses, 0);
}

/// Caps hold, every request is answered or explicitly rejected, and brownout turns the misses of a
/// capped burst into skipped optional work.
#[test]
fn caps_hold_and_brownout_absorbs_capped_bursts() {
    use spork::evaluate::PoolBrownout;
    use spork::policy::brownout::ControllerKind;
    let t = spork::trace::Synthetic {
        duration: from_secs(3600.0),
        size: spork::trace::SizeSpec::Fixed(from_secs(0.01)),
        workers: 20.0,
        optional_factor: 1.0,
        ..spork::trace::Synthetic::paper_default(1)
    }
    .generate()
    .unwrap();
    let n = t.requests().count() as u64;
    let p = Platform::default();
    let capped = Plan {
        caps: Caps(PerKind::new(Some(60), Some(20))),
        ..Plan::new(Scheduler::Spork(spork::policy::Objective::ENERGY))
    };
    let plain = evaluate(&p, &t, &capped);
    assert!(plain.cpu.peak <= 60 && plain.fpga.peak <= 20, "{} {}", plain.cpu.peak, plain.fpga.peak);
    assert!(plain.capped_spin_ups > 0, "the cap must bind in this scenario");
    assert_eq!(plain.requests + plain.rejected, n);
    assert_eq!(plain.optional_ratio, 1.0);
    assert!(plain.miss_share > 0.01, "capped bursts miss deadlines: {}", plain.miss_share);
    for controller in [ControllerKind::Pi, ControllerKind::Dimmer] {
        let setup = PoolBrownout { controller, period: from_secs(0.5), setpoint: 1.0 };
        let b = evaluate(&p, &t, &Plan { brownout: Some(setup), ..capped });
        assert_eq!(b.requests + b.rejected, n);
        assert!(b.cpu.peak <= 60 && b.fpga.peak <= 20);
        assert!(
            b.miss_share < plain.miss_share / 10.0,
            "{controller:?}: {} vs {}",
            b.miss_share,
            plain.miss_share
        );
        assert!(b.optional_ratio > 0.2 && b.optional_ratio < 1.0, "{controller:?}: {}", b.optional_ratio);
    }
    // A CPU-only fleet capped at zero CPUs has nowhere to run anything: every request is rejected.
    let none = evaluate(
        &p,
        &t,
        &Plan { caps: Caps(PerKind::new(Some(0), None)), ..Plan::new(Scheduler::CpuDynamic) },
    );
    assert_eq!((none.requests, none.rejected), (0, n));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Pools sharing boards (one per application, replayed in one clock): under every sharing rule
    /// the FPGAs held across pools (spinning up, serving, draining or spinning down) never exceed the
    /// boards, and every request of every pool is served exactly once.
    #[test]
    fn shared_boards_are_never_overcommitted_and_no_request_is_lost(
        platform in platform_strategy(),
        traces in prop::collection::vec(trace_strategy(), 2..4),
        boards in 0u32..5,
        sharing in prop::sample::select(Sharing::ALL.to_vec()),
    ) {
        use spork::engine::boards::SharedBoards;
        use spork::engine::{Engine, Oracle, replay_shared};
        let plan = Plan::new(Scheduler::Spork(spork::policy::Objective::ENERGY));
        let shared = SharedBoards::new(boards, traces.len(), sharing);
        let engines = (0..traces.len())
            .map(|i| {
                let mut e = Engine::new(platform, &plan, &Oracle::default());
                e.share_boards(shared.handle(i));
                e
            })
            .collect();
        let horizon = traces.iter().filter_map(|t| t.last()).map(|r| r.arrival + 1).max().unwrap_or(0);
        let mut recs: Vec<Recorder> = traces.iter().map(|_| Recorder::default()).collect();
        let feeds = traces.iter().map(|t| t.iter().copied()).collect();
        let outcomes = replay_shared(engines, feeds, horizon, &mut recs);
        // Every FPGA's hold, from its spin-up to the end of its spin-down; a board freed at t may be
        // taken at t (ends sort first).
        let mut edges: Vec<(Time, i64)> = Vec::new();
        for rec in &recs {
            for l in rec.lives.iter().filter(|l| l.kind == Kind::Fpga) {
                let released = l.released.unwrap_or(Time::MAX - platform.fpga.spin_down);
                edges.extend([(l.from, 1), (released + platform.fpga.spin_down, -1)]);
            }
        }
        edges.sort();
        let mut held = 0i64;
        for &(at, d) in &edges {
            held += d;
            prop_assert!(held <= i64::from(boards), "{held} FPGAs held at {at} with {boards} boards ({sharing:?})");
        }
        for ((rec, t), o) in recs.iter().zip(&traces).zip(&outcomes) {
            prop_assert!(rec.violations.is_empty(), "{:?}", rec.violations);
            prop_assert_eq!(rec.served.len(), t.len(), "each request served once");
            prop_assert_eq!(o.tally.rejected, 0);
        }
    }
}

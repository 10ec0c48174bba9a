//! The dispatcher loop.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use rand::SeedableRng;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::backend::{Backend, CpuWorker, SimBoardSlot};
use super::report::{RunReport, RunStats};
use super::work::{KernelImage, Work};
use super::worker::{Clock, Done, Event, JobMsg, Worker};
use crate::evaluate::engine::{Action, Arrival};
use crate::evaluate::{Engine, Plan};
use crate::model::{Kind, Platform, Request, Time, WorkerId};

/// Faults to inject, for testing recovery.
#[derive(Clone, Debug, Default)]
pub struct FaultPlan {
    /// These FPGA configurations (1-based, in order) fail.
    pub fail_configure: Vec<u32>,
    /// These FPGA jobs (1-based, in dispatch order) stall this long before running.
    pub stall_jobs: Vec<u64>,
    /// How long a stalled job stalls.
    pub stall: Duration,
}

/// What the FPGA workers are.
#[derive(Clone, Debug)]
pub enum Board {
    /// Slots of the simulated board (Verilated RTL).
    Sim,
    /// An Alveo board over XRT.
    #[cfg(feature = "xrt")]
    Alveo(super::backend::AlveoConfig),
    /// An AWS F1 slot.
    #[cfg(feature = "f1")]
    F1(super::backend::F1Config),
}

/// One live run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Worker specs: modelled power and cost, configured spin-up delays, deadline factor. The FPGA
    /// speedup should be the measured one (board clock x items per cycle over the CPU's rate).
    pub platform: Platform,
    /// Scheduler, dispatcher, caps, brownout.
    pub plan: Plan,
    /// The kernel and its on-chip state.
    pub image: Arc<KernelImage>,
    /// The board's clock.
    pub clock_hz: f64,
    /// The trace: arrivals and sizes in CPU time.
    pub requests: Vec<Request>,
    /// Trace length.
    pub horizon: Time,
    /// The CPU reference's speed (items/s): converts sizes to items.
    pub items_per_sec: f64,
    /// Seed of the request data.
    pub seed: u64,
    /// Injected faults.
    pub faults: FaultPlan,
    /// A kernel that runs longer than this (wall time) on a board is abandoned and re-run on a CPU.
    pub kernel_timeout: Duration,
    /// Stop early (Ctrl-C): in-flight requests get this long, then are rejected explicitly.
    pub stop: Arc<AtomicBool>,
    /// Grace period after a stop.
    pub grace: Duration,
    /// Print a progress line.
    pub progress: bool,
    /// Where to look for power sensors (normally `/sys`).
    pub sysfs: std::path::PathBuf,
    /// The FPGA workers' backend.
    pub board: Board,
    /// The trace's per-interval demand, for schedulers that are given the oracle (FPGA-static,
    /// FPGA-dynamic, MArk-ideal, the ideal Spork variants).
    pub demand: Option<std::sync::Arc<crate::policy::Demand>>,
    /// Headroom for FPGA-static and FPGA-dynamic (the evaluator's search finds it).
    pub headroom: u32,
}

/// A request in flight.
struct Outstanding {
    request: Request,
    deadline: Time,
    work: Arc<Work>,
    optional: bool,
    slot: WorkerId,
    generation: u64,
    kind: Kind,
    started: Option<Time>,
}

struct Live {
    worker: Worker,
    kind: Kind,
    generation: u64,
}

enum Arrive {
    Request(Request, Arc<Work>),
    End,
}

/// Runs the trace live and reports. Blocks until every request is answered or rejected.
pub fn run(cfg: RunConfig) -> std::io::Result<RunReport> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().enable_io().build()?;
    Ok(rt.block_on(drive(cfg)))
}

fn load_generator(cfg: &RunConfig, clock: Clock) -> UnboundedReceiver<Arrive> {
    let (tx, rx) = unbounded_channel();
    let requests = cfg.requests.clone();
    let image = cfg.image.clone();
    let (rate, seed, stop) = (cfg.items_per_sec, cfg.seed, cfg.stop.clone());
    std::thread::Builder::new()
        .name("spork-loadgen".into())
        .spawn(move || {
            let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed);
            for r in requests {
                let items = |t: Time| (crate::model::time::to_secs(t) * rate).round() as u64;
                let payload = Arc::new(image.work(items(r.size), items(r.optional), &mut rng));
                let due = clock.instant(r.arrival);
                let now = std::time::Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                if stop.load(Ordering::Relaxed) || tx.send(Arrive::Request(r, payload)).is_err() {
                    break;
                }
            }
            let _ = tx.send(Arrive::End);
        })
        .expect("spawning the load generator");
    rx
}

/// Everything the loop keeps besides the engine.
struct Ctx<'c> {
    cfg: &'c RunConfig,
    platform: Platform,
    clock: Clock,
    events_tx: UnboundedSender<Event>,
    live: HashMap<WorkerId, Live>,
    retired: Vec<Worker>,
    /// Workers failed while possibly stuck in a kernel: not waited for at the end.
    abandoned: Vec<Worker>,
    outstanding: HashMap<u64, Outstanding>,
    st: RunStats,
    actions: Vec<Action>,
    generation: u64,
    fpga_configs: u32,
    fpga_jobs: u64,
}

impl Ctx<'_> {
    /// Carries out what the policy decided: start and stop real workers.
    fn apply(&mut self, engine: &mut Engine<'_, ()>) {
        engine.take_actions(&mut self.actions);
        let platform = self.platform;
        for a in std::mem::take(&mut self.actions) {
            match a {
                Action::SpinUp { worker, kind, .. } => {
                    self.generation += 1;
                    let backend: Box<dyn Backend> = match kind {
                        Kind::Cpu => Box::new(CpuWorker::new(
                            platform.cpu,
                            dur(platform.cpu.spin_up),
                            std::time::Instant::now(),
                        )),
                        Kind::Fpga => {
                            self.fpga_configs += 1;
                            let fail = self.cfg.faults.fail_configure.contains(&self.fpga_configs);
                            match &self.cfg.board {
                                Board::Sim => Box::new(SimBoardSlot::new(
                                    self.cfg.clock_hz,
                                    dur(platform.fpga.spin_up),
                                    platform.fpga,
                                    fail,
                                )),
                                #[cfg(feature = "xrt")]
                                Board::Alveo(c) => {
                                    Box::new(super::backend::AlveoBoard::new(c.clone(), platform.fpga))
                                }
                                #[cfg(feature = "f1")]
                                Board::F1(c) => {
                                    Box::new(super::backend::F1Slot::new(c.clone(), platform.fpga))
                                }
                            }
                        }
                    };
                    let w = Worker::spawn(
                        worker,
                        self.generation,
                        backend,
                        self.cfg.image.clone(),
                        self.events_tx.clone(),
                        self.clock,
                    );
                    let l = Live { worker: w, kind, generation: self.generation };
                    if let Some(old) = self.live.insert(worker, l) {
                        self.retired.push(old.worker);
                    }
                }
                Action::Release { worker, .. } => {
                    if let Some(mut l) = self.live.remove(&worker) {
                        l.worker.stop();
                        self.retired.push(l.worker);
                    }
                }
            }
        }
    }

    /// Sends a placed request to its worker.
    fn place(
        &mut self,
        engine: &mut Engine<'_, ()>,
        arrival: Arrival,
        id: u64,
        mut o: Outstanding,
        now: Time,
    ) {
        self.apply(engine);
        match arrival {
            Arrival::Assigned { worker, kind, deadline, optional, .. } => {
                o.slot = worker;
                o.generation = self.live.get(&worker).map_or(0, |l| l.generation);
                o.kind = kind;
                o.deadline = deadline;
                o.optional = optional;
                let mut stall = None;
                if kind == Kind::Fpga {
                    self.fpga_jobs += 1;
                    if self.cfg.faults.stall_jobs.contains(&self.fpga_jobs) {
                        stall = Some(self.cfg.faults.stall);
                    }
                }
                let job = JobMsg { id, work: o.work.clone(), optional: o.optional, dispatched: now, stall };
                match self.live.get(&worker).map(|l| l.worker.send(job)) {
                    Some(Ok(())) => {
                        self.outstanding.insert(id, o);
                    }
                    _ => {
                        // The pool only assigns slots with a live worker; should one be gone, the
                        // request is rejected and counted rather than lost.
                        self.st.rejected += 1;
                        self.st
                            .faults
                            .log
                            .push(format!("request {id}: worker slot {} had no thread", worker.0));
                    }
                }
            }
            Arrival::Rejected => self.st.rejected += 1,
        }
    }

    fn redispatch(&mut self, engine: &mut Engine<'_, ()>, id: u64, o: Outstanding, now: Time) {
        self.st.faults.redispatched += 1;
        let request = if o.optional { o.request } else { Request { optional: 0, ..o.request } };
        let arrival = engine.redispatch_on_cpu(request, now, o.deadline);
        self.place(engine, arrival, id, Outstanding { started: None, ..o }, now);
    }

    /// Takes a failed board out of service: the pool releases it, its thread is abandoned (it may be
    /// stuck in a kernel), and every request still queued on it is re-run on a CPU.
    fn fail_board(&mut self, engine: &mut Engine<'_, ()>, slot: WorkerId, generation: u64, now: Time) {
        if self.live.get(&slot).is_none_or(|l| l.generation != generation) {
            return; // already replaced
        }
        if let Some(l) = self.live.remove(&slot) {
            l.worker.cancel();
            self.abandoned.push(l.worker);
        }
        engine.fail_worker(slot, now);
        self.apply(engine);
        let stranded: Vec<u64> = self
            .outstanding
            .iter()
            .filter(|(_, o)| o.slot == slot && o.generation == generation)
            .map(|(&id, _)| id)
            .collect();
        for id in stranded {
            if let Some(o) = self.outstanding.remove(&id) {
                self.redispatch(engine, id, o, now);
            }
        }
    }

    fn on_event(&mut self, engine: &mut Engine<'_, ()>, e: Event, now: Time) {
        match e {
            Event::Ready { slot, generation, configured } => {
                let kind = self.live.get(&slot).filter(|l| l.generation == generation).map(|l| l.kind);
                if let Some(kind) = kind {
                    self.st.record_configured(kind, configured);
                }
            }
            Event::ConfigureFailed { slot, generation, error } => {
                self.st.faults.configure_failures += 1;
                self.st.faults.log.push(format!("worker slot {}: {error}", slot.0));
                self.fail_board(engine, slot, generation, now);
            }
            Event::Started { id, slot, generation, at } => {
                if let Some(o) =
                    self.outstanding.get_mut(&id).filter(|o| o.slot == slot && o.generation == generation)
                {
                    o.started = Some(at);
                }
            }
            Event::Done(d) => self.on_done(engine, d, now),
        }
    }

    fn on_done(&mut self, engine: &mut Engine<'_, ()>, d: Done, now: Time) {
        // A result for a request already answered or moved elsewhere is dropped: never answer twice.
        let current = self
            .outstanding
            .get(&d.id)
            .is_some_and(|o| o.slot == d.slot && o.generation == d.generation && o.kind == d.kind);
        if !current {
            self.st.faults.late_discarded += 1;
            return;
        }
        let Some(o) = self.outstanding.remove(&d.id) else { return };
        match d.result {
            Ok(Some(_)) => {
                if d.mismatch {
                    self.st.faults.mismatches += 1;
                    self.st
                        .faults
                        .log
                        .push(format!("request {}: the board's result differs from the reference", d.id));
                    self.redispatch(engine, d.id, o, now);
                    return;
                }
                let (finish, took) = match d.device {
                    Some((s, f, cycles)) => {
                        self.st.device_cycles += cycles;
                        self.st.record_lag(d.wall.1.saturating_sub(f), d.wall.1 - d.wall.0, f - s);
                        (f, f - s)
                    }
                    None => (d.wall.1, d.wall.1 - d.wall.0),
                };
                // Live telemetry: the allocator's interval work counts what the job really took.
                let work = o.request.size + if o.optional { o.request.optional } else { 0 };
                engine.observe_service(d.kind, self.platform.spec(d.kind).service(work), took);
                if d.power.measured {
                    self.st.record_power(d.kind, d.power.watts);
                }
                self.st.record_answer(d.kind, finish.saturating_sub(o.request.arrival), finish > o.deadline);
            }
            Ok(None) => {
                // Handed back unrun by a failed or cancelled board: run it on a CPU.
                self.redispatch(engine, d.id, o, now);
            }
            Err(e) => {
                self.st.faults.kernel_errors += 1;
                self.st.faults.log.push(format!("request {} on {}: {e}", d.id, d.kind.name()));
                if d.kind == Kind::Fpga {
                    self.fail_board(engine, d.slot, d.generation, now);
                    self.redispatch(engine, d.id, o, now);
                } else {
                    // The reference itself failed on this input: no worker can answer it.
                    self.st.rejected += 1;
                }
            }
        }
    }
}

async fn drive(cfg: RunConfig) -> RunReport {
    let platform = cfg.platform;
    let plan = cfg.plan;
    let dispatcher = plan.dispatcher.unwrap_or(plan.scheduler.default_dispatcher());
    let mut allocator = plan.scheduler.allocator(&platform, cfg.demand.as_ref(), cfg.headroom);
    let mut engine = Engine::new(
        &platform,
        allocator.as_mut(),
        dispatcher.build(plan.scheduler.fleet(), platform.fpga.spin_up),
        (),
    )
    .drain_surplus(plan.scheduler.drains_surplus())
    .max_workers(plan.max_workers)
    .brownout(plan.brownout, cfg.seed)
    .record_actions();

    // Power sensors, if this machine has any: read over the whole run.
    let mut meters = crate::power::detect(&cfg.sysfs);
    for m in &mut meters {
        let _ = m.energy_j();
    }
    let clock = Clock(std::time::Instant::now());
    let (events_tx, mut events) = unbounded_channel::<Event>();
    let mut arrivals = load_generator(&cfg, clock);
    let mut cx = Ctx {
        cfg: &cfg,
        platform,
        clock,
        events_tx,
        live: HashMap::new(),
        retired: Vec::new(),
        abandoned: Vec::new(),
        outstanding: HashMap::new(),
        st: RunStats::new(cfg.requests.len() as u64),
        actions: Vec::new(),
        generation: 0,
        fpga_configs: 0,
        fpga_jobs: 0,
    };
    let mut next_id = 0u64;
    let mut trace_over = false;
    let mut stopped_at: Option<Time> = None;
    let progress = super::report::Progress::new(cfg.progress, cfg.requests.len() as u64);

    // One SIGINT stream for the whole run (a signal between polls is not lost): the first stops the
    // run, a second ends the grace period at once.
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
    let mut interrupts = 0u32;
    let mut next_meter_read = clock.now() + 1_000_000_000;
    engine.begin(cfg.horizon);
    loop {
        cx.apply(&mut engine);
        if trace_over && cx.outstanding.is_empty() {
            break;
        }
        if clock.now() >= next_meter_read {
            // Sampled every second: RAPL wraps and Alveo power integrate over short spans.
            for m in &mut meters {
                let _ = m.energy_j();
            }
            next_meter_read = clock.now() + 1_000_000_000;
        }
        if let Some(t) = stopped_at
            && (clock.now() >= t + cfg.grace.as_nanos() as Time || interrupts > 1)
        {
            // Out of grace: everything still in flight is rejected, explicitly and counted.
            cx.st.rejected_at_stop += cx.outstanding.len() as u64;
            for (_, o) in std::mem::take(&mut cx.outstanding) {
                if let Some(l) = cx.live.get(&o.slot) {
                    l.worker.cancel();
                }
            }
            break;
        }

        // Sleep until the next tick, timer or housekeeping, or until a message comes.
        let housekeeping = clock.now() + 20_000_000;
        let wake = engine.next_event(!trace_over).map_or(housekeeping, |t| t.min(housekeeping));
        let mut message: Option<Result<Arrive, Event>> = None;
        tokio::select! {
            _ = tokio::time::sleep_until(clock.instant(wake).into()) => {}
            m = arrivals.recv(), if !trace_over && stopped_at.is_none() => {
                message = Some(Ok(m.unwrap_or(Arrive::End)));
            }
            Some(e) = events.recv() => { message = Some(Err(e)); }
            Some(()) = async {
                match sigint.as_mut() {
                    Some(s) => s.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                interrupts += 1;
                cfg.stop.store(true, Ordering::Relaxed);
            }
        }
        if cfg.stop.load(Ordering::Relaxed) && stopped_at.is_none() {
            stopped_at = Some(clock.now());
            cx.st.stopped = true;
            trace_over = true;
            engine.end_of_trace(clock.now());
            // Requests the load generator already handed over are rejected explicitly, not dropped.
            while let Ok(m) = arrivals.try_recv() {
                if let Arrive::Request(..) = m {
                    cx.st.offered += 1;
                    cx.st.rejected_at_stop += 1;
                }
            }
        }
        let now = clock.now();
        // Ticks, worker timers and brownout periods due by now, in time order (the engine's own
        // schedule, as in the evaluator).
        engine.advance(now, !trace_over);
        cx.apply(&mut engine);
        match message {
            Some(Ok(Arrive::Request(r, payload))) => {
                let r = Request { arrival: now, ..r };
                next_id += 1;
                cx.st.offered += 1;
                let arrival = engine.arrive(r);
                if r.optional > 0 {
                    cx.st.optional_offered += 1;
                    cx.st.optional_served +=
                        u64::from(matches!(arrival, Arrival::Assigned { optional: true, .. }));
                }
                let o = Outstanding {
                    request: r,
                    deadline: 0,
                    work: payload,
                    optional: false,
                    slot: WorkerId(0),
                    generation: 0,
                    kind: Kind::Cpu,
                    started: None,
                };
                cx.place(&mut engine, arrival, next_id, o, now);
            }
            Some(Ok(Arrive::End)) => {
                trace_over = true;
                engine.end_of_trace(now);
            }
            Some(Err(e)) => cx.on_event(&mut engine, e, now),
            None => {}
        }
        // Abandon board jobs that overran the kernel timeout; re-run them on CPUs.
        let limit = cfg.kernel_timeout.as_nanos() as Time;
        let overdue: Vec<u64> = cx
            .outstanding
            .iter()
            .filter(|(_, o)| o.kind == Kind::Fpga && o.started.is_some_and(|s| now.saturating_sub(s) > limit))
            .map(|(&id, _)| id)
            .collect();
        for id in overdue {
            let Some(o) = cx.outstanding.remove(&id) else { continue };
            cx.st.faults.kernel_timeouts += 1;
            cx.st.faults.log.push(format!(
                "request {id}: the board kernel ran past the {:?} timeout",
                cfg.kernel_timeout
            ));
            cx.fail_board(&mut engine, o.slot, o.generation, now);
            cx.redispatch(&mut engine, id, o, now);
        }
        progress.update(&cx.st, now, cx.outstanding.len());
    }
    progress.finish();

    // The trace is over and every request answered: let the pool drain on its own timers (virtual
    // time from here on: nothing more can arrive), then stop every worker.
    engine.end_of_trace(clock.now());
    engine.advance(Time::MAX, false);
    cx.apply(&mut engine);
    let end = clock.now();
    let Ctx { mut live, mut retired, abandoned, st, events_tx, .. } = cx;
    retired.extend(live.drain().map(|(_, l)| l.worker));
    for w in retired {
        w.join();
    }
    // Failed boards may be stuck in a kernel: not waited for.
    for w in abandoned {
        w.detach();
    }
    drop(events_tx);
    let (outcome, ()) = engine.finish(false);
    let mut report = RunReport::new(
        &plan,
        dispatcher.name(),
        &platform,
        &outcome,
        st,
        end,
        cfg.clock_hz,
        cfg.image.kernel,
    );
    report.board = match &cfg.board {
        Board::Sim => "sim".into(),
        #[cfg(feature = "xrt")]
        Board::Alveo(c) => format!("alveo {}", c.device),
        #[cfg(feature = "f1")]
        Board::F1(c) => format!("f1 slot {} ({})", c.slot, c.agfi),
    };
    report.meters = meters
        .iter_mut()
        .map(|m| super::report::MeterReading {
            name: m.name(),
            measured: m.measured(),
            energy_j: m.energy_j().map_err(|e| e.to_string()),
        })
        .collect();
    report
}

fn dur(t: Time) -> Duration {
    Duration::from_nanos(t)
}

/// Latency histogram in microseconds.
pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600 * 1_000_000, 3).expect("static histogram bounds")
}

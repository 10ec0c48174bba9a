//! The dispatcher loop: the engine driven in wall time.
//!
//! One tokio task on the calling thread. It sleeps until the next interval tick, worker timer, board
//! timeout or housekeeping moment, or wakes on an arrival (from the load generator), a worker event
//! or SIGINT. Everything it does goes through the engine; what the engine decides about workers
//! happens in the [`LiveFleet`] sink during the call. Failures go back through the engine too:
//! `fail_worker` releases a failed board, `redispatch_on_cpu` re-places its requests by the rescue
//! rule. Every event carries its worker's generation, so a late result from a replaced worker is
//! dropped, never answered twice.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::backend::BackendError;
use super::clock::Clock;
use super::config::RunConfig;
use super::fleet::LiveFleet;
use super::incoming::{Incoming, Inputs, Refused, Reply, Served};
use super::inflight::{InFlight, Outstanding};
use super::loadgen::Arrive;
use super::meters::Meters;
use super::progress::Progress;
use super::stats::RunStats;
use super::work::{Answer, Input, Work};
use super::worker::{Done, Event};
use crate::engine::{Arrival, Engine, Outcome};
use crate::model::time::from_duration;
use crate::model::{Kind, Request, Time, WorkerId};
use crate::policy::estimate::SizeEstimator;

/// Jobs a board's queue holds with their inputs built; beyond, a job holds only its spec and the board
/// builds its inputs when it starts it. Building twice costs a simulated board's thread time, so only
/// a board that has fallen this far behind pays it, and its queue stays within this many inputs.
const BUILT_WINDOW: usize = 64;

/// How often the loop wakes with nothing due: meters, progress, the stop flag.
const HOUSEKEEPING: Time = 20_000_000;

/// What woke the loop.
enum Wake {
    Arrive(Arrive),
    Event(Event),
    Interrupt,
    Timer,
}

/// Everything the loop holds.
struct Run<'c> {
    cfg: &'c RunConfig,
    clock: Clock,
    engine: Engine,
    fleet: LiveFleet<'c>,
    inflight: InFlight,
    st: RunStats,
    next_id: u64,
    trace_over: bool,
    stopped_at: Option<Time>,
    interrupts: u32,
    /// Clients' requests: their CPU time, estimated from their items.
    estimator: SizeEstimator,
}

/// Runs `cfg` live on `engine` with `clock`, taking requests from `arrivals` until it ends; returns
/// the engine's outcome, what the run measured, the meters' readings and when it ended.
pub async fn drive(
    cfg: &RunConfig,
    engine: Engine,
    clock: Clock,
    mut arrivals: UnboundedReceiver<Arrive>,
) -> (Outcome, RunStats, Vec<super::report::MeterReading>, Time) {
    let mut meters = Meters::start(&cfg.sysfs, clock.now());
    let (events_tx, mut events) = unbounded_channel::<Event>();
    // One SIGINT stream for the whole run (a signal between polls is not lost): the first stops the
    // run, a second ends the grace period at once.
    let mut sigint = signal(SignalKind::interrupt()).ok();
    let progress = Progress::new(cfg.progress, cfg.requests.len() as u64);
    let mut run = Run {
        cfg,
        fleet: LiveFleet::new(cfg, clock.clone(), events_tx),
        clock,
        engine,
        inflight: InFlight::new(from_duration(cfg.kernel_timeout)),
        st: RunStats::new(cfg.requests.len() as u64),
        next_id: 0,
        trace_over: false,
        stopped_at: None,
        interrupts: 0,
        estimator: SizeEstimator::with(cfg.size_estimate, cfg.calibration.items_per_sec),
    };
    run.engine.begin(cfg.horizon, &mut run.fleet);
    let mut published = 0;
    while !(run.trace_over && run.inflight.is_empty()) {
        meters.sample(run.clock.now());
        if run.clock.now() >= published + HOUSEKEEPING {
            published = run.clock.now();
            run.publish();
        }
        if run.out_of_grace() {
            run.reject_in_flight();
            break;
        }
        let wake = run.wait(&mut arrivals, &mut events, sigint.as_mut()).await;
        run.step(wake, &mut arrivals);
        progress.update(&run.st, run.clock.now(), run.inflight.len());
    }
    progress.finish();
    run.finish(meters)
}

impl Run<'_> {
    /// Sleeps until something is due or a message comes.
    async fn wait(
        &self,
        arrivals: &mut UnboundedReceiver<Arrive>,
        events: &mut UnboundedReceiver<Event>,
        sigint: Option<&mut Signal>,
    ) -> Wake {
        let now = self.clock.now();
        let wake = [
            self.engine.next_event(!self.trace_over),
            self.inflight.next_timeout().map(|t| t.saturating_add(1)),
        ]
        .into_iter()
        .flatten()
        .fold(now + HOUSEKEEPING, Time::min);
        let accepting = !self.trace_over && self.stopped_at.is_none();
        tokio::select! {
            _ = tokio::time::sleep_until(self.clock.instant(wake).into()) => Wake::Timer,
            m = arrivals.recv(), if accepting => Wake::Arrive(m.unwrap_or(Arrive::End)),
            Some(e) = events.recv() => Wake::Event(e),
            Some(()) = async {
                match sigint {
                    Some(s) => s.recv().await,
                    None => std::future::pending().await,
                }
            } => Wake::Interrupt,
        }
    }

    /// Publishes the pool's state for readers (the server's metrics), if anyone reads it.
    fn publish(&self) {
        let Some(status) = &self.cfg.status else { return };
        let fpga = &self.st.configured[Kind::Fpga].measured_ms;
        let reconfig = (fpga.len() as u64, (fpga.iter().sum::<f64>() * 1e3) as u64);
        let h = &self.st.estimate_error_permille;
        let estimate = [0.5, 0.95].map(|q| if h.is_empty() { 0 } else { h.value_at_quantile(q) });
        status.publish(&self.engine, self.inflight.len(), reconfig, estimate);
        status.reruns.store(self.st.faults.redispatched, Ordering::Relaxed);
        status.workers_lost.store(self.st.faults.workers_lost, Ordering::Relaxed);
    }

    /// Handles what woke the loop, after everything due by now.
    fn step(&mut self, wake: Wake, arrivals: &mut UnboundedReceiver<Arrive>) {
        if let Wake::Interrupt = wake {
            self.interrupts += 1;
            self.cfg.stop.store(true, Ordering::Relaxed);
        }
        if self.cfg.stop.load(Ordering::Relaxed) && self.stopped_at.is_none() {
            self.stop(arrivals);
        }
        let now = self.clock.now();
        // Ticks, worker timers and brownout periods due by now, in time order (the engine's own
        // schedule, as in the evaluator).
        self.engine.advance(now, !self.trace_over, &mut self.fleet);
        match wake {
            Wake::Arrive(Arrive::Request(incoming)) => self.on_request(incoming, now),
            Wake::Arrive(Arrive::End) => {
                self.trace_over = true;
                self.engine.end_of_trace(now, &mut self.fleet);
            }
            Wake::Event(e) => self.on_event(e, now),
            Wake::Interrupt | Wake::Timer => {}
        }
        self.expire_timeouts(now);
    }

    /// A request arrives: the engine books it (a client's sized by the estimator, by its own
    /// deadline if it gave one) and its worker gets it.
    fn on_request(&mut self, incoming: Incoming, now: Time) {
        let Incoming { request, deadline, inputs, reply } = incoming;
        self.next_id += 1;
        self.st.offered += 1;
        let mut r = Request { arrival: now, ..request };
        if let Inputs::Given(work) = &inputs {
            r.size = self.estimator.estimate(work.mandatory.items());
            r.optional = work.optional.as_ref().map_or(0, |p| self.estimator.estimate(p.items()));
            // A client states no size: without a deadline of its own, it gets the profile's factor
            // times the estimate.
            r.nominal = r.size;
        }
        let deadline = deadline.map(|d| now.saturating_add(d));
        let span = deadline.unwrap_or_else(|| r.deadline(self.cfg.platform.deadline_factor)) - now;
        let arrival = self.engine.arrive_by(r, deadline, &mut self.fleet);
        let held = Held { arrived: now, inputs, reply, span };
        self.send(arrival, self.next_id, held, now);
    }

    /// Sends a booked request to its worker: a CPU gets its inputs; so does a board while its queue
    /// is short, and beyond [`BUILT_WINDOW`] jobs a trace's request goes as its spec alone (the board
    /// builds it when it starts the job). A rejection is counted and told to the client.
    fn send(&mut self, arrival: Arrival, id: u64, held: Held, now: Time) {
        let Held { arrived, inputs, reply, span } = held;
        let Arrival::Assigned(booked) = arrival else {
            self.st.answers.rejected += 1;
            refuse(reply, Refused::Admission { retry_after: std::time::Duration::from_nanos(span) });
            return;
        };
        let slot = booked.worker;
        let generation = self.fleet.generation(slot).unwrap_or(0);
        let (input, inputs) = match (booked.kind, inputs) {
            (Kind::Fpga, Inputs::Generated(spec, _)) if self.inflight.on_slot(slot) >= BUILT_WINDOW => {
                (Input::Deferred(spec), Inputs::Generated(spec, None))
            }
            (_, Inputs::Generated(spec, work)) => {
                let work = work.unwrap_or_else(|| Arc::new(self.cfg.image.build(&spec)));
                (Input::Built(work.clone()), Inputs::Generated(spec, Some(work)))
            }
            (_, Inputs::Given(work)) => (Input::Built(work.clone()), Inputs::Given(work)),
        };
        if self.fleet.send(slot, id, input, booked.optional(), now) {
            let o = Outstanding { booked, arrived, inputs, reply, generation, started: None };
            self.inflight.insert(id, o);
        } else {
            // The pool only books slots with a live worker; should one be gone, the request is
            // rejected and counted rather than lost.
            self.st.answers.rejected += 1;
            self.st.faults.log.push(format!("request {id}: worker slot {} had no thread", slot.0));
            refuse(reply, Refused::Failed(format!("worker slot {} had no thread", slot.0)));
        }
    }

    /// Re-runs a request whose worker failed on a CPU, by the engine's rescue rule.
    fn redispatch(&mut self, id: u64, o: Outstanding, now: Time) {
        self.st.faults.redispatched += 1;
        let b = o.booked;
        let arrival = self.engine.redispatch_on_cpu(b.request, now, b.deadline, &mut self.fleet);
        let span = b.deadline.saturating_sub(o.arrived);
        self.send(arrival, id, Held { arrived: o.arrived, inputs: o.inputs, reply: o.reply, span }, now);
    }

    /// Takes a failed board out of service: the engine releases it, its thread is abandoned (it may
    /// be stuck in a kernel), and every request still queued on it is re-run on a CPU.
    fn fail_board(&mut self, slot: WorkerId, generation: u64, now: Time) {
        if !self.fleet.abandon(slot, generation) {
            return; // already replaced
        }
        self.engine.fail_worker(slot, now, &mut self.fleet);
        for (id, o) in self.inflight.take_on(slot, generation) {
            self.redispatch(id, o, now);
        }
    }

    fn on_event(&mut self, e: Event, now: Time) {
        match e {
            Event::Ready { slot, generation, configured } => {
                self.fleet.set_ready(slot, generation);
                if let Some(kind) = self.fleet.kind_of(slot, generation) {
                    self.st.record_configured(kind, configured);
                }
            }
            Event::ConfigureFailed { slot, generation, error } => {
                self.st.faults.configure_failures += 1;
                self.st.faults.log.push(format!("worker slot {}: {error}", slot.0));
                self.fail_board(slot, generation, now);
            }
            Event::Started { id, slot, generation, at } => {
                self.inflight.started(id, slot, generation, at);
                // The worker's real queue drains once what it holds has run from here: the engine
                // takes that if it is later than its booking (a board behind its model).
                if self.fleet.kind_of(slot, generation).is_some() {
                    let drains_at = at.saturating_add(self.inflight.queued_service(slot));
                    self.engine.observe_backlog(slot, drains_at);
                }
            }
            Event::Done(d) => self.on_done(d, now),
            Event::Lost { slot, generation, why } => {
                if self.fleet.kind_of(slot, generation).is_some() {
                    self.st.faults.workers_lost += 1;
                    self.st.faults.log.push(format!("worker slot {}: {why}", slot.0));
                }
                self.fail_board(slot, generation, now);
            }
        }
    }

    fn on_done(&mut self, mut d: Done, now: Time) {
        // A result for a request already answered or moved elsewhere is dropped: never answer twice.
        let current =
            self.inflight.get(d.id).is_some_and(|o| o.on(d.slot, d.generation) && o.booked.kind == d.kind);
        let Some(o) = current.then(|| self.inflight.remove(d.id)).flatten() else {
            self.st.faults.late_discarded += 1;
            return;
        };
        let result = std::mem::replace(&mut d.result, Ok(None));
        match result {
            Ok(Some(_)) if d.mismatch => {
                self.st.faults.mismatches += 1;
                self.st
                    .faults
                    .log
                    .push(format!("request {}: the board's result differs from the reference", d.id));
                self.redispatch(d.id, o, now);
            }
            Ok(Some(answer)) => self.answered(&d, o, answer),
            // Handed back unrun by a failed or cancelled board: run it on a CPU.
            Ok(None) => self.redispatch(d.id, o, now),
            // Its worker is gone (a host went down): fail it, re-run the request elsewhere.
            Err(BackendError::Lost(why)) => {
                if self.fleet.kind_of(d.slot, d.generation).is_some() {
                    self.st.faults.workers_lost += 1;
                    self.st.faults.log.push(format!("worker slot {}: {why}", d.slot.0));
                }
                self.fail_board(d.slot, d.generation, now);
                self.redispatch(d.id, o, now);
            }
            // An answer its job cannot have (a worker host's wrong shape, board time or values):
            // never given to the client; the worker is failed, whatever its kind, and the request
            // re-run elsewhere.
            Err(BackendError::BadAnswer(why)) => {
                self.st.faults.mismatches += 1;
                self.st.faults.log.push(format!("request {} on {}: {why}", d.id, d.kind.name()));
                self.fail_board(d.slot, d.generation, now);
                self.redispatch(d.id, o, now);
            }
            Err(e) => {
                self.st.faults.kernel_errors += 1;
                self.st.faults.log.push(format!("request {} on {}: {e}", d.id, d.kind.name()));
                if d.kind == Kind::Fpga {
                    self.fail_board(d.slot, d.generation, now);
                    self.redispatch(d.id, o, now);
                } else {
                    // The reference itself failed on this input: no worker can answer it.
                    self.st.answers.rejected += 1;
                    refuse(o.reply, Refused::Failed(e.to_string()));
                }
            }
        }
    }

    /// A worker answered: its latency (board jobs on the board's own timeline), the measured service
    /// time for the allocator's telemetry and a client's size estimate, and the client's answer.
    fn answered(&mut self, d: &Done, o: Outstanding, answer: Answer) {
        let (start, finish, took) = match d.device {
            Some((s, f, cycles)) => {
                self.st.record_board(d.wall.1.saturating_sub(f), d.wall.1 - d.wall.0, f - s, cycles);
                (s, f, f - s)
            }
            None => (d.wall.0, d.wall.1, d.wall.1 - d.wall.0),
        };
        self.engine.observe_service(d.kind, o.booked.service(), took);
        if let (Kind::Cpu, Inputs::Given(work)) = (d.kind, &o.inputs) {
            let items = work.mandatory.items() + answer.optional.as_ref().map_or(0, |_| optional_items(work));
            if let Some(error) = self.estimator.observe(items, took) {
                self.st.record_estimate(error);
            }
        }
        if d.power.measured {
            self.st.record_power(d.kind, d.power.watts);
        }
        let missed = finish > o.booked.deadline;
        self.st.answers.record(d.kind, finish.saturating_sub(o.arrived), missed);
        if let Some(reply) = o.reply {
            let optional = answer.optional.is_some();
            let queue = start.saturating_sub(o.arrived);
            let served =
                Served { answer, kind: d.kind, worker: d.slot.0, queue, service: took, missed, optional };
            // A client that went away no longer waits: its answer is counted all the same.
            let _ = reply.send(Ok(served));
        }
    }

    /// Abandons board jobs that overran the kernel timeout; re-runs them on CPUs.
    fn expire_timeouts(&mut self, now: Time) {
        for (id, o) in self.inflight.take_overdue(now) {
            self.st.faults.kernel_timeouts += 1;
            let timeout = self.cfg.kernel_timeout;
            self.st
                .faults
                .log
                .push(format!("request {id}: the board kernel ran past the {timeout:?} timeout"));
            self.fail_board(o.slot(), o.generation, now);
            self.redispatch(id, o, now);
        }
    }

    /// The run was stopped: no more arrivals; what the load generator already handed over is
    /// rejected explicitly, not dropped.
    fn stop(&mut self, arrivals: &mut UnboundedReceiver<Arrive>) {
        let now = self.clock.now();
        self.stopped_at = Some(now);
        self.st.stopped = true;
        self.trace_over = true;
        self.engine.end_of_trace(now, &mut self.fleet);
        arrivals.close();
        while let Ok(m) = arrivals.try_recv() {
            if let Arrive::Request(incoming) = m {
                self.st.offered += 1;
                self.st.rejected_at_stop += 1;
                refuse(incoming.reply, Refused::Draining);
            }
        }
    }

    /// Whether a stop's grace period is over (or a second Ctrl-C cut it short).
    fn out_of_grace(&self) -> bool {
        let grace = from_duration(self.cfg.grace);
        self.stopped_at.is_some_and(|t| self.clock.now() >= t.saturating_add(grace) || self.interrupts > 1)
    }

    /// Out of grace: everything still in flight is rejected, explicitly and counted.
    fn reject_in_flight(&mut self) {
        for (_, o) in self.inflight.take_all() {
            self.st.rejected_at_stop += 1;
            refuse(o.reply, Refused::Stopped);
        }
        self.fleet.cancel_all();
    }

    /// The trace is over and every request settled: the pool drains on its own timers (virtual time
    /// from here on: nothing more can arrive), then every worker stops.
    fn finish(mut self, meters: Meters) -> (Outcome, RunStats, Vec<super::report::MeterReading>, Time) {
        let end = self.clock.now();
        self.engine.end_of_trace(end, &mut self.fleet);
        self.engine.advance(Time::MAX, false, &mut self.fleet);
        self.fleet.shut_down();
        (self.engine.finish(), self.st, meters.readings(), end)
    }
}

/// A request's inputs, client and deadline span while it is being placed.
struct Held {
    arrived: Time,
    inputs: Inputs,
    reply: Option<Reply>,
    /// Its deadline after arrival: a rejected client is told to retry after about this long.
    span: Time,
}

/// Tells a waiting client why its request was not served (a trace's request has no one to tell).
fn refuse(reply: Option<Reply>, why: Refused) {
    if let Some(reply) = reply {
        let _ = reply.send(Err(why));
    }
}

/// The items of a client's optional part.
fn optional_items(work: &Work) -> u64 {
    work.optional.as_ref().map_or(0, |p| p.items())
}

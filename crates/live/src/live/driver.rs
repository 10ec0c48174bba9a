//! The dispatcher loop: the engine driven in wall time.
//!
//! One tokio task on the pool's thread. It sleeps until the next interval tick, worker timer, board
//! timeout or housekeeping moment, or wakes on an arrival (a trace's or a client's), a worker event
//! or SIGINT. Everything it does goes through the engine; what the engine decides about workers
//! happens in the [`LiveFleet`] sink during the call. Failures go back through the engine too:
//! `fail_worker` releases a failed board, `redispatch_on_cpu` re-places its requests by the rescue
//! rule, as `policy::recovery` says for each kind of failure. Every event carries its worker's generation, so a late result from a replaced worker is
//! dropped, never answered twice.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::PoolRun;
use super::alarm::Alarm;
use super::clock::Clock;
use super::config::PoolConfig;
use super::fleet::LiveFleet;
use super::incoming::{Arrive, Inputs, Refused, Reply, Served};
use super::inflight::{InFlight, Outstanding};
use super::stats::RunStats;
use super::status::Status;
use super::worker::{Done, Event};
use crate::backend::BackendError;
use crate::backend::dispatch_engine::EngineKind;
use crate::datapath::work::{Answer, Input, Work};
use spork_core::engine::{Arrival, Engine};
use spork_core::model::time::from_duration;
use spork_core::model::{Kind, Request, Time, WorkerId};
use spork_core::policy::recovery::{Failure, Fate, recover};

/// Jobs a board's queue holds with their inputs built; beyond, a job holds only its spec and the board
/// builds its inputs when it starts it. Building twice costs a simulated board's thread time, so only
/// a board that has fallen this far behind pays it, and its queue stays within this many inputs.
const BUILT_WINDOW: usize = 64;

/// How often the loop wakes with nothing due: the published status, the stop flag.
const HOUSEKEEPING: Time = 20_000_000;

/// Wakes sooner than this are kept by the [`Alarm`], finer than tokio's millisecond timer.
const PRECISE: Time = 2_000_000;

/// What woke the loop.
enum Wake {
    Arrive(Arrive),
    Event(Event),
    Interrupt,
    Timer,
}

/// Everything the loop holds.
struct Run<'c> {
    cfg: &'c PoolConfig,
    status: &'c Status,
    clock: Clock,
    engine: Engine,
    fleet: LiveFleet<'c>,
    inflight: InFlight,
    st: RunStats,
    next_id: u64,
    trace_over: bool,
    stopped_at: Option<Time>,
    interrupts: u32,
    /// Workers (by generation) whose configuration failure was counted: a board of several compute
    /// units fails once, whichever of its CUs reports first.
    configure_failed: std::collections::HashSet<u64>,
    /// Requests the engine holds for a batch, by id, until it settles them.
    held: std::collections::HashMap<u64, Held>,
    /// Keeps wakes due within [`PRECISE`] (a batch closing); `None` without batching or if its
    /// thread did not start (tokio's timer then keeps them, to the millisecond).
    alarm: Option<Alarm>,
}

/// Runs the pool `cfg` on `engine` with `clock`, taking requests from `arrivals` until they end (or
/// the pool is stopped) and every request is settled, publishing its state to `status`.
pub(super) async fn drive(
    cfg: &PoolConfig,
    engine: Engine,
    clock: Clock,
    mut arrivals: UnboundedReceiver<Arrive>,
    status: &Status,
) -> PoolRun {
    let (events_tx, mut events) = unbounded_channel::<Event>();
    // One SIGINT stream for the whole run (a signal between polls is not lost): the first stops the
    // run, a second ends the grace period at once.
    let mut sigint = signal(SignalKind::interrupt()).ok();
    let mut run = Run {
        cfg,
        status,
        fleet: LiveFleet::new(cfg, clock.clone(), events_tx),
        clock,
        engine,
        inflight: InFlight::new(from_duration(cfg.kernel_timeout)),
        st: RunStats::default(),
        next_id: 0,
        trace_over: false,
        stopped_at: None,
        interrupts: 0,
        configure_failed: std::collections::HashSet::new(),
        held: std::collections::HashMap::new(),
        alarm: None,
    };
    // Only a batch's close needs a wake finer than tokio's: without batching, no alarm thread.
    let mut rings = match cfg.plan.batching.as_ref().map(|_| Alarm::start()) {
        Some(Ok((alarm, rings))) => {
            run.alarm = Some(alarm);
            Some(rings)
        }
        _ => None,
    };
    run.engine.begin(cfg.horizon, &mut run.fleet);
    let mut published = 0;
    while !(run.trace_over && run.inflight.is_empty() && run.held.is_empty()) {
        if run.clock.now() >= published + HOUSEKEEPING {
            published = run.clock.now();
            run.publish();
        }
        if run.out_of_grace() {
            run.reject_in_flight();
            break;
        }
        let wake = run.wait(&mut arrivals, &mut events, rings.as_mut(), sigint.as_mut()).await;
        run.step(wake, &mut arrivals);
    }
    run.publish();
    run.finish()
}

impl Run<'_> {
    /// Sleeps until something is due or a message comes.
    async fn wait(
        &mut self,
        arrivals: &mut UnboundedReceiver<Arrive>,
        events: &mut UnboundedReceiver<Event>,
        rings: Option<&mut UnboundedReceiver<()>>,
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
        let precise = wake.saturating_sub(now) < PRECISE;
        if let Some(alarm) = self.alarm.as_ref().filter(|_| precise) {
            alarm.ring_at(self.clock.instant(wake));
        }
        tokio::select! {
            _ = tokio::time::sleep_until(self.clock.instant(wake).into()) => Wake::Timer,
            Some(()) = async {
                match rings {
                    Some(r) => r.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                if let Some(alarm) = &self.alarm {
                    alarm.rang();
                }
                Wake::Timer
            }
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

    /// Publishes the pool's state for readers (the server's metrics, a run's progress line).
    fn publish(&self) {
        let status = self.status;
        let fpga = &self.st.configured[Kind::Fpga].measured_ms;
        let reconfig = (fpga.len() as u64, (fpga.iter().sum::<f64>() * 1e3) as u64);
        let h = &self.st.estimate_error_permille;
        let estimate = [0.5, 0.95].map(|q| if h.is_empty() { 0 } else { h.value_at_quantile(q) });
        status.publish(&self.engine, self.inflight.len(), reconfig, estimate);
        status.reruns.store(self.st.faults.redispatched, Ordering::Relaxed);
        status.workers_lost.store(self.st.faults.workers_lost, Ordering::Relaxed);
        status.publish_answers(&self.st.answers, self.st.settled());
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
        self.send_settled(now);
        match wake {
            Wake::Arrive(Arrive::Trace(t)) => {
                let request = Request { arrival: now, ..t.request };
                self.on_request(request, None, Inputs::Generated(t.spec, t.work), None, now);
            }
            Wake::Arrive(Arrive::Client(c)) => {
                let request = self.client_request(&c.work, now);
                self.on_request(request, c.deadline, Inputs::Given(c.work), Some(c.reply), now);
            }
            Wake::Arrive(Arrive::End) => {
                self.trace_over = true;
                self.engine.end_of_trace(now, &mut self.fleet);
            }
            Wake::Event(e) => self.on_event(e, now),
            Wake::Interrupt | Wake::Timer => {}
        }
        self.expire_timeouts(now);
    }

    /// A client's request as the engine books it: arriving now, sized by the engine's client
    /// estimate from its items. A client states no size: without a deadline of its own, it gets the
    /// profile's factor times the estimate.
    fn client_request(&mut self, work: &Work, now: Time) -> Request {
        // The pool sizes its clients from its start (`LivePool::start`): the 1 ns floor is never used.
        let size_of = |items: u64| self.engine.client_size(items).unwrap_or(1);
        let size = size_of(work.mandatory.items());
        let optional = work.optional.as_ref().map_or(0, |p| size_of(p.items()));
        Request { arrival: now, size, optional, nominal: size }
    }

    /// A request arrives: the engine books it (by its own deadline if it gave one) and its worker
    /// gets it.
    fn on_request(
        &mut self,
        r: Request,
        deadline: Option<Time>,
        inputs: Inputs,
        reply: Option<Reply>,
        now: Time,
    ) {
        self.next_id += 1;
        self.st.offered += 1;
        let deadline = deadline.map(|d| now.saturating_add(d));
        let span = deadline.unwrap_or_else(|| r.deadline(self.cfg.platform.deadline_factor)) - now;
        let id = self.next_id;
        // Registered first: a batch it fills is settled within the call.
        self.held.insert(id, Held { arrived: now, inputs, reply, span });
        let arrival = self.engine.arrive_by(r, deadline, id, &mut self.fleet);
        // A batch the arrival closed was booked before it: it goes to its board first.
        self.send_settled(now);
        if !matches!(arrival, Arrival::Held(_))
            && let Some(held) = self.held.remove(&id)
        {
            self.send(arrival, id, held, now);
        }
    }

    /// Sends the requests the engine settled out of batches: a batch as one job on its board, a
    /// request it placed alone as any other.
    fn send_settled(&mut self, now: Time) {
        for group in self.fleet.take_settled() {
            let mut members = Vec::with_capacity(group.len());
            for (id, arrival) in group {
                match self.held.remove(&id) {
                    Some(held) => members.push((id, arrival, held)),
                    None => self.st.faults.log.push(format!("request {id}: settled twice by its batch")),
                }
            }
            match members.first() {
                Some((_, Arrival::Assigned(a), _)) if a.batch > 1 => self.send_batch(members, now),
                _ => {
                    for (id, arrival, held) in members {
                        self.send(arrival, id, held, now);
                    }
                }
            }
        }
    }

    /// Sends a batch's members to their board as one job (their inputs always built: the board
    /// stacks them); each is in flight on its own, answered on its own.
    fn send_batch(&mut self, members: Vec<(u64, Arrival, Held)>, now: Time) {
        let mut jobs = Vec::with_capacity(members.len());
        let mut booked_all = Vec::with_capacity(members.len());
        for (id, arrival, held) in members {
            let Arrival::Assigned(booked) = arrival else {
                self.send(arrival, id, held, now);
                continue;
            };
            let work = match held.inputs {
                Inputs::Generated(spec, work) => {
                    work.unwrap_or_else(|| Arc::new(self.cfg.image.build(&spec)))
                }
                Inputs::Given(work) => work,
            };
            let inputs = Inputs::Given(work.clone());
            jobs.push((id, Input::Built(work)));
            booked_all.push((id, booked, Held { inputs, ..held }));
        }
        let Some(&(_, first, _)) = booked_all.first() else { return };
        let generation = self.fleet.generation(first.worker).unwrap_or(0);
        let mut jobs = jobs.into_iter();
        let Some(lead) = jobs.next() else { return };
        if self.fleet.send_batch(first.unit(), lead, jobs.collect(), first.optional(), now) {
            for (id, booked, Held { arrived, inputs, reply, .. }) in booked_all {
                let o = Outstanding { booked, arrived, inputs, reply, generation, started: None };
                self.inflight.insert(id, o);
            }
        } else {
            for (id, _, held) in booked_all {
                self.st.answers.rejected += 1;
                self.st
                    .faults
                    .log
                    .push(format!("request {id}: worker slot {} had no thread", first.worker.0));
                refuse(held.reply, Refused::Failed(format!("worker slot {} had no thread", first.worker.0)));
            }
        }
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
        let (slot, unit) = (booked.worker, booked.unit());
        let generation = self.fleet.generation(slot).unwrap_or(0);
        let (input, inputs) = match (booked.kind, inputs) {
            (Kind::Fpga, Inputs::Generated(spec, _)) if self.inflight.on_unit(unit) >= BUILT_WINDOW => {
                (Input::Deferred(spec), Inputs::Generated(spec, None))
            }
            (_, Inputs::Generated(spec, work)) => {
                let work = work.unwrap_or_else(|| Arc::new(self.cfg.image.build(&spec)));
                (Input::Built(work.clone()), Inputs::Generated(spec, Some(work)))
            }
            (_, Inputs::Given(work)) => (Input::Built(work.clone()), Inputs::Given(work)),
        };
        if self.fleet.send(unit, id, input, booked.optional(), now) {
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
            Event::Ready { slot, cu, generation, configured } => {
                self.fleet.set_ready(slot, generation);
                // A board of several compute units configured once: its first CU's report counts.
                if let Some(kind) = self.fleet.kind_of(slot, generation).filter(|_| cu == 0) {
                    self.st.record_configured(kind, configured);
                }
            }
            Event::ConfigureFailed { slot, generation, error } => {
                if self.configure_failed.insert(generation) {
                    self.st.faults.configure_failures += 1;
                    self.st.faults.log.push(format!("worker slot {}: {error}", slot.0));
                }
                self.fail_worker(slot, generation, Failure::ConfigureFailed, now);
            }
            Event::Started { id, unit, generation, at } => {
                self.inflight.started(id, unit.worker, generation, at);
                // The compute unit's real queue drains once what it holds has run from here: the
                // engine takes that if it is later than its booking (a board behind its model).
                if self.fleet.kind_of(unit.worker, generation).is_some() {
                    let drains_at = at.saturating_add(self.inflight.queued_service(unit));
                    self.engine.observe_backlog(unit, drains_at);
                }
            }
            Event::Done(d) => self.on_done(d, now),
            Event::Lost { slot, generation, why } => {
                self.count_lost(slot, generation, &why);
                self.fail_worker(slot, generation, Failure::Lost, now);
            }
        }
    }

    /// Counts a lost worker, if it is still the live one of its slot.
    fn count_lost(&mut self, slot: WorkerId, generation: u64, why: &str) {
        if self.fleet.kind_of(slot, generation).is_some() {
            self.st.faults.workers_lost += 1;
            self.st.faults.log.push(format!("worker slot {}: {why}", slot.0));
        }
    }

    /// Fails the worker of `generation` in `slot` if `failure`'s rule says so.
    fn fail_worker(&mut self, slot: WorkerId, generation: u64, failure: Failure, now: Time) {
        // A stale event (its worker already replaced) changes nothing.
        let Some(kind) = self.fleet.kind_of(slot, generation) else { return };
        if recover(kind, failure).fail_worker {
            self.fail_board(slot, generation, now);
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
        // A CPU's queue drains when what is left on it has run from here, however long this one
        // was booked at (a board's booking is its own timeline: see `Engine::observe_backlog`).
        if d.kind == Kind::Cpu {
            let unit = o.booked.unit();
            self.engine.observe_backlog(unit, d.wall.1.saturating_add(self.inflight.queued_service(unit)));
        }
        let (failure, why) = match std::mem::replace(&mut d.result, Ok(None)) {
            Ok(Some(answer)) if !d.mismatch => return self.answered(&d, o, answer),
            Ok(Some(_)) => {
                self.st.faults.mismatches += 1;
                let why = "the board's result differs from the reference".to_string();
                self.st.faults.log.push(format!("request {}: {why}", d.id));
                (Failure::Mismatch, why)
            }
            Ok(None) => (Failure::HandedBack, "handed back unrun".to_string()),
            Err(e) => (self.count_error(&d, &e), e.to_string()),
        };
        self.recover(d.id, o, failure, why, now);
    }

    /// Counts a job's error; which failure it is.
    fn count_error(&mut self, d: &Done, e: &BackendError) -> Failure {
        match e {
            BackendError::Lost(why) => {
                self.count_lost(d.slot, d.generation, why);
                return Failure::Lost;
            }
            BackendError::BadAnswer(_) => self.st.faults.mismatches += 1,
            _ => self.st.faults.kernel_errors += 1,
        }
        self.st.faults.log.push(format!("request {} on {}: {e}", d.id, d.kind.name()));
        match e {
            BackendError::BadAnswer(_) => Failure::BadAnswer,
            _ => Failure::KernelError,
        }
    }

    /// Applies `failure`'s rule to request `id` on the worker it was booked on: the worker failed if
    /// the rule says so, the request re-run or rejected (told `why`).
    fn recover(&mut self, id: u64, o: Outstanding, failure: Failure, why: String, now: Time) {
        let rule = recover(o.booked.kind, failure);
        if rule.fail_worker {
            self.fail_board(o.slot(), o.generation, now);
        }
        match rule.request {
            Fate::Rerun => self.redispatch(id, o, now),
            Fate::Reject => {
                self.st.answers.rejected += 1;
                refuse(o.reply, Refused::Failed(why));
            }
        }
    }

    /// A worker answered: its latency (board jobs on the board's own timeline), the measured service
    /// time for the allocator's telemetry and a client's size estimate, and the client's answer.
    fn answered(&mut self, d: &Done, o: Outstanding, answer: Answer) {
        let (start, finish, took) = match d.device {
            Some((s, f, cycles)) => {
                let n = u64::from(o.booked.batch.max(1));
                self.st.record_board(
                    d.wall.1.saturating_sub(f),
                    (d.wall.1 - d.wall.0) / n,
                    (f - s) / n,
                    cycles / n,
                );
                (s, f, f - s)
            }
            None => (d.wall.0, d.wall.1, d.wall.1 - d.wall.0),
        };
        // A batch's members share its one invocation: each counts its share.
        let members = Time::from(o.booked.batch.max(1));
        self.engine.observe_service(d.kind, o.booked.share(), o.booked.request.arrival, took / members);
        if let (Kind::Cpu, Inputs::Given(work)) = (d.kind, &o.inputs) {
            let items = work.mandatory.items() + answer.optional.as_ref().map_or(0, |_| optional_items(work));
            if let Some(error) = self.engine.observe_client(items, took) {
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
            let batch = o.booked.batch.max(1);
            let served = Served {
                answer,
                kind: d.kind,
                worker: d.slot.0,
                queue,
                service: took,
                missed,
                optional,
                batch,
            };
            // A client that went away no longer waits: its answer is counted all the same.
            let _ = reply.send(Ok(served));
        }
    }

    /// Abandons board jobs that overran the kernel timeout; re-runs them on CPUs.
    fn expire_timeouts(&mut self, now: Time) {
        for (id, o) in self.inflight.take_overdue(now) {
            self.st.faults.kernel_timeouts += 1;
            let why = format!("the board kernel ran past the {:?} timeout", self.cfg.kernel_timeout);
            self.st.faults.log.push(format!("request {id}: {why}"));
            self.recover(id, o, Failure::Timeout, why, now);
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
            let reply = match m {
                Arrive::Client(c) => Some(c.reply),
                Arrive::Trace(_) => None,
                Arrive::End => continue,
            };
            self.st.offered += 1;
            self.st.rejected_at_stop += 1;
            refuse(reply, Refused::Draining);
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
        for (_, h) in self.held.drain() {
            self.st.rejected_at_stop += 1;
            refuse(h.reply, Refused::Stopped);
        }
        self.fleet.cancel_all();
    }

    /// The trace is over and every request settled: the pool drains on its own timers (virtual time
    /// from here on: nothing more can arrive), then every worker stops.
    fn finish(mut self) -> PoolRun {
        let ended = self.clock.now();
        self.engine.end_of_trace(ended, &mut self.fleet);
        self.engine.advance(Time::MAX, false, &mut self.fleet);
        self.fleet.shut_down();
        let kind = self.cfg.plan.dispatch_engine;
        let dispatch = (kind != EngineKind::Software).then(|| (kind, self.status.dispatch.snapshot()));
        PoolRun { outcome: self.engine.finish(), stats: self.st, ended, dispatch }
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

//! The discrete-event evaluator: the policy driven in virtual time.
//!
//! Event sources, in the order they are served at equal times: worker timers (spin-up done, idle
//! timeout, spin-down done; one pending timer per worker, re-armed when it fires early), interval
//! ticks, then arrivals (streamed from the trace, never stored). A worker's queue is FIFO with known
//! service times, so a request's completion time is fixed when it is dispatched: latency is recorded
//! then, and the worker's only completion event is its queue draining, which is when its idle timer
//! starts. Energy and cost are settled per worker when it is released (see [`crate::model::ledger`]).
//! At the end of the trace the FPGA target drops to zero and the pool drains through the normal idle
//! rule, so every worker's full life is accounted.

use super::pool_brownout::{Driver, PoolBrownout};
use crate::model::{Kind, Platform, Pool, Request, Time, WorkerId, WorkerState, pool::Phase};
use crate::policy::release::may_release;
use crate::policy::{Allocator, Dispatcher, Fleet, IntervalStats, Job, Placement};
use hdrhistogram::Histogram;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Observes every served request (tests use it to check invariants; the default does nothing).
pub trait Probe {
    /// `request` ran on `worker` (of `kind`) from `start` to `finish`.
    fn served(&mut self, _request: &Request, _worker: WorkerId, _kind: Kind, _start: Time, _finish: Time) {}
}

impl Probe for () {}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    SpinUpDone,
    IdleCheck,
    SpinDownDone,
}

/// A change to the worker pool that a live driver must carry out on real workers (the evaluator
/// records none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Start a worker of `kind` in pool slot `worker`; the policy expects it ready at `ready_at`.
    SpinUp {
        /// Pool slot.
        worker: WorkerId,
        /// Worker type.
        kind: Kind,
        /// When the policy counts it ready.
        ready_at: Time,
    },
    /// Stop the worker in `worker` once its queue is done.
    Release {
        /// Pool slot.
        worker: WorkerId,
        /// Worker type.
        kind: Kind,
    },
}

/// Where an arriving request went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Queued on `worker`, expected to run from `start` to `finish`.
    Assigned {
        /// Pool slot.
        worker: WorkerId,
        /// Worker type.
        kind: Kind,
        /// Expected start.
        start: Time,
        /// Expected finish.
        finish: Time,
        /// Absolute deadline.
        deadline: Time,
        /// Whether its optional part is to run (brownout).
        optional: bool,
    },
    /// No worker of an allowed type exists and none may be added (a capped pool): rejected.
    Rejected,
}

/// A pending worker timer: (due, sequence for FIFO ties, kind, worker, worker generation).
type PendingTimer = Reverse<(Time, u64, Timer, WorkerId, u32)>;

/// Raw results of one run, before metrics are derived.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The pool after draining: its ledgers hold all energy and cost.
    pub pool: Pool,
    /// Requests served, per worker type.
    pub served: [u64; 2],
    /// Requests that finished after their deadline.
    pub misses: u64,
    /// Sum of request sizes (CPU service time), for the idealised FPGA-only reference.
    pub total_size: Time,
    /// Response times in microseconds.
    pub latency_us: Histogram<u64>,
    /// Scheduling intervals ticked.
    pub intervals: u64,
    /// Events processed (timers, ticks, arrivals).
    pub events: u64,
    /// When the last worker was released.
    pub end: Time,
    /// Requests rejected because the pool was capped and had no worker of an allowed type at all.
    pub rejected: u64,
    /// Spin-ups refused by a cap (the request queued on the worker that frees up first instead).
    pub capped: u64,
    /// Requests offered an optional part, and those whose optional part ran (brownout).
    pub optional: (u64, u64),
    /// The run stopped at its first deadline miss (see [`Engine::stop_at_first_miss`]): its figures
    /// cover only what ran until then.
    pub aborted: bool,
}

/// One evaluator run.
pub struct Engine<'a, P: Probe> {
    platform: &'a Platform,
    allocator: &'a mut dyn Allocator,
    dispatcher: Dispatcher,
    probe: P,
    pool: Pool,
    timers: BinaryHeap<PendingTimer>,
    seq: u64,
    target: u32,
    work: [Time; 2],
    out_served: [u64; 2],
    misses: u64,
    total_size: Time,
    latency: Histogram<u64>,
    events: u64,
    drain_surplus: bool,
    fleet: Fleet,
    max_workers: [Option<u32>; 2],
    rejected: u64,
    capped: u64,
    brownout: Option<Driver>,
    stop_at_miss: bool,
    actions: Option<Vec<Action>>,
    /// Efficient-first over CPUs only: where requests go after their FPGA failed.
    rescue: Dispatcher,
    /// The trace length: interval ticks run until it, then the pool drains.
    horizon: Time,
    /// The next interval tick (`None` once the pool drains).
    next_tick: Option<Time>,
    /// Interval ticks so far.
    intervals: u64,
}

impl<'a, P: Probe> Engine<'a, P> {
    /// A run of `allocator` and `dispatcher` on `platform`, reporting served requests to `probe`.
    pub fn new(
        platform: &'a Platform,
        allocator: &'a mut dyn Allocator,
        dispatcher: Dispatcher,
        probe: P,
    ) -> Self {
        let dispatcher_fleet = dispatcher.fleet();
        Engine {
            platform,
            allocator,
            dispatcher,
            probe,
            pool: Pool::new(),
            timers: BinaryHeap::new(),
            seq: 0,
            target: 0,
            work: [0; 2],
            out_served: [0; 2],
            misses: 0,
            total_size: 0,
            // 1 us to 30 days at 3 significant digits; values above are clamped.
            latency: Histogram::new_with_bounds(1, 30 * 86_400 * 1_000_000, 3)
                .expect("static histogram bounds"),
            events: 0,
            drain_surplus: false,
            fleet: dispatcher_fleet,
            max_workers: [None, None],
            rejected: 0,
            capped: 0,
            brownout: None,
            stop_at_miss: false,
            actions: None,
            rescue: crate::policy::DispatcherKind::EfficientFirst
                .build(Fleet::CPU_ONLY, platform.fpga.spin_up),
            horizon: 0,
            next_tick: None,
            intervals: 0,
        }
    }

    /// Records every spin-up and release as an [`Action`] for a live driver to carry out.
    pub fn record_actions(mut self) -> Self {
        self.actions = Some(Vec::new());
        self
    }

    /// Moves the recorded actions into `out`.
    pub fn take_actions(&mut self, out: &mut Vec<Action>) {
        if let Some(a) = self.actions.as_mut() {
            out.append(a);
        }
    }

    /// The pool as the policy sees it.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The current FPGA target.
    pub fn target(&self) -> u32 {
        self.target
    }

    /// Stops the run at its first deadline miss: a cheap yes/no for searches that only need to know
    /// whether a configuration misses at all.
    pub fn stop_at_first_miss(mut self, on: bool) -> Self {
        self.stop_at_miss = on;
        self
    }

    /// Caps the pool at `max[kind]` workers of each type (spinning up and down included).
    pub fn max_workers(mut self, max: [Option<u32>; 2]) -> Self {
        self.max_workers = max;
        self
    }

    /// Runs brownout on requests' optional parts; the dimmer's draws are seeded with `seed`.
    pub fn brownout(mut self, setup: Option<PoolBrownout>, seed: u64) -> Self {
        self.brownout = setup.map(|s| Driver::new(s, seed));
        self
    }

    fn at_cap(&self, kind: Kind) -> bool {
        self.max_workers[kind.index()]
            .is_some_and(|m| self.pool.allocated(kind) + self.pool.spinning_down(kind) >= m)
    }

    /// Takes FPGAs above the target out of dispatch at each tick (MArk-ideal), instead of letting
    /// them idle out under the dispatcher.
    pub fn drain_surplus(mut self, on: bool) -> Self {
        self.drain_surplus = on;
        self
    }

    /// Runs `requests` (in arrival order) over a trace of length `horizon`; returns the outcome and
    /// the probe.
    pub fn run(mut self, requests: impl Iterator<Item = Request>, horizon: Time) -> (Outcome, P) {
        self.begin(horizon);
        for r in requests {
            // Everything due by the arrival goes first (ticks, worker timers, brownout periods).
            self.advance(r.arrival, true);
            self.arrive(r);
            if self.stop_at_miss && self.misses > 0 {
                return self.finish(true);
            }
        }
        // No more arrivals: the ticks run out to the horizon and the pool drains on its timers.
        self.advance(Time::MAX, false);
        debug_assert!(self.pool.is_empty(), "pool not drained");
        self.finish(false)
    }

    /// Starts a run over a trace of length `horizon`: the allocator's initial FPGAs, warm at time 0,
    /// and the first interval tick due at 0.
    pub fn begin(&mut self, horizon: Time) {
        let initial = self.allocator.initial();
        let initial = self.cap_fpgas(initial);
        for _ in 0..initial {
            let id = self.pool.prewarm(Kind::Fpga, 0, self.platform.fpga.spin_up);
            self.record(Action::SpinUp { worker: id, kind: Kind::Fpga, ready_at: 0 });
            self.arm(id, self.platform.idle_timeout(Kind::Fpga), 0);
        }
        self.target = initial;
        self.horizon = horizon;
        self.next_tick = Some(0);
    }

    /// When the next interval tick, worker timer or (with `brownout`) brownout control period is due.
    pub fn next_event(&self, brownout: bool) -> Option<Time> {
        let period = self.brownout.as_ref().filter(|_| brownout).map(Driver::next_tick);
        [self.next_tick, self.timers.peek().map(|Reverse(t)| t.0), period].into_iter().flatten().min()
    }

    /// Runs everything due at or before `now`, in time order: interval ticks (at the horizon, the
    /// pool starts draining), worker timers, and with `brownout` the brownout control periods. At
    /// equal times ticks go first, so that idle checks falling on a tick are judged against the new
    /// plan. Both drivers call this: the evaluator before each arrival, the runtime as wall time
    /// passes.
    pub fn advance(&mut self, now: Time, brownout: bool) {
        loop {
            let tick = self.next_tick.filter(|&t| t <= now);
            let timer = self.timers.peek().map(|Reverse(t)| t.0).filter(|&t| t <= now);
            let period =
                self.brownout.as_ref().filter(|_| brownout).map(Driver::next_tick).filter(|&t| t <= now);
            self.events += 1;
            match (tick, timer, period) {
                (Some(t), tm, p) if tm.is_none_or(|tm| t <= tm) && p.is_none_or(|p| t <= p) => {
                    if t < self.horizon {
                        self.on_tick(t, self.intervals as usize);
                        self.intervals += 1;
                        self.next_tick = Some(t + self.platform.interval());
                    } else {
                        self.end_of_trace(t);
                    }
                }
                (_, Some(tm), p) if p.is_none_or(|p| tm <= p) => {
                    let Some(Reverse((due, _, timer, id, generation))) = self.timers.pop() else { break };
                    self.on_timer(due, timer, id, generation);
                }
                (_, _, Some(_)) => {
                    if let Some(b) = self.brownout.as_mut() {
                        b.tick();
                    }
                }
                _ => {
                    self.events -= 1;
                    break;
                }
            }
        }
    }

    /// The trace is over at `now` (its horizon, or a live run's load generator finished or stopped):
    /// no more interval ticks; FPGAs drain through the normal idle rule.
    pub fn end_of_trace(&mut self, now: Time) {
        if self.next_tick.take().is_some() {
            self.drain(now);
        }
    }

    /// A request arrives: the dispatcher places it and the pool books it.
    pub fn arrive(&mut self, r: Request) -> Arrival {
        self.events += 1;
        self.on_arrival(r)
    }

    /// Places `r` again at `now` after its worker failed, on CPUs only (whatever the scheduler's
    /// fleet: CPUs are the fallback), keeping its original `deadline`. Its optional part runs if
    /// `r.optional > 0`. A CPU cap with no CPU at all rejects it.
    pub fn redispatch_on_cpu(&mut self, r: Request, now: Time, deadline: Time) -> Arrival {
        let r = Request { arrival: now.max(r.arrival), ..r };
        self.place(r, deadline, false)
    }

    /// Live telemetry: a request booked with `estimated` service on `kind` actually took `actual`;
    /// the interval's work that the allocator reads is corrected by the difference.
    pub fn observe_service(&mut self, kind: Kind, estimated: Time, actual: Time) {
        let w = &mut self.work[kind.index()];
        *w = (*w + actual).saturating_sub(estimated);
    }

    /// Takes a worker that failed (a board that did not configure) out of service now.
    pub fn fail_worker(&mut self, id: WorkerId, now: Time) {
        let w = *self.pool.worker(id);
        if matches!(w.state, WorkerState::Active | WorkerState::SpinningUp) {
            self.pool.abort_queue(id, now);
            if w.state == WorkerState::SpinningUp {
                self.pool.finish_spin_up(id);
            }
            self.release(id, now);
        }
    }

    /// The run's outcome once every worker is released (`aborted`: stopped at its first miss).
    pub fn finish(self, aborted: bool) -> (Outcome, P) {
        let end = self.horizon.max(self.last_release());
        let outcome = Outcome {
            pool: self.pool,
            served: self.out_served,
            misses: self.misses,
            total_size: self.total_size,
            latency_us: self.latency,
            intervals: self.intervals,
            events: self.events,
            end,
            rejected: self.rejected,
            capped: self.capped,
            optional: self.brownout.as_ref().map_or((0, 0), |b| (b.offered, b.served)),
            aborted,
        };
        (outcome, self.probe)
    }

    fn last_release(&self) -> Time {
        self.pool.slots().iter().map(|w| w.off_at).max().unwrap_or(0)
    }

    fn push(&mut self, at: Time, timer: Timer, id: WorkerId) {
        let generation = self.pool.worker(id).generation;
        self.seq += 1;
        self.timers.push(Reverse((at, self.seq, timer, id, generation)));
    }

    /// Arms the idle timer of an active worker for when its queue drains plus the idle timeout (never
    /// before `now`).
    fn arm(&mut self, id: WorkerId, timeout: Time, now: Time) {
        let due = self.pool.worker(id).busy_until.saturating_add(timeout).max(now);
        self.pool.set_timer_armed(id, true);
        self.push(due, Timer::IdleCheck, id);
    }

    fn spin_up(&mut self, kind: Kind, now: Time) -> WorkerId {
        let id = self.pool.spin_up(kind, now, self.platform.spec(kind).spin_up);
        let ready = self.pool.worker(id).ready_at;
        self.push(ready, Timer::SpinUpDone, id);
        self.record(Action::SpinUp { worker: id, kind, ready_at: ready });
        id
    }

    #[inline]
    fn record(&mut self, action: Action) {
        if let Some(a) = self.actions.as_mut() {
            a.push(action);
        }
    }

    fn release(&mut self, id: WorkerId, now: Time) {
        let kind = self.pool.worker(id).kind;
        self.record(Action::Release { worker: id, kind });
        self.pool.set_timer_armed(id, false);
        self.pool.begin_spin_down(id, now, self.platform.spec(kind).spin_down);
        let off = self.pool.worker(id).off_at;
        self.push(off, Timer::SpinDownDone, id);
    }

    fn on_timer(&mut self, now: Time, timer: Timer, id: WorkerId, generation: u32) {
        let w = *self.pool.worker(id);
        if w.generation != generation {
            return; // the slot was reused: a stale timer
        }
        match (timer, w.state) {
            (Timer::SpinUpDone, WorkerState::SpinningUp) => {
                self.pool.finish_spin_up(id);
                self.arm(id, self.platform.idle_timeout(w.kind), now);
            }
            (Timer::IdleCheck, WorkerState::Active) => {
                self.pool.set_timer_armed(id, false);
                let timeout = self.platform.idle_timeout(w.kind);
                let due = w.busy_until.saturating_add(timeout);
                if now < due {
                    self.arm(id, timeout, now);
                } else if may_release(
                    w.kind,
                    w.busy_until,
                    now,
                    timeout,
                    self.pool.allocated(Kind::Fpga),
                    self.target,
                ) {
                    self.release(id, now);
                }
                // Otherwise an FPGA within the target is held, timer unarmed, until it gets work or
                // the target drops (see `on_tick`).
            }
            (Timer::SpinDownDone, WorkerState::SpinningDown) => {
                let released = self.pool.finish_spin_down(id);
                self.allocator.on_release(&released);
            }
            _ => {} // a timer overtaken by a state change
        }
    }

    fn on_tick(&mut self, now: Time, index: usize) {
        let stats = IntervalStats {
            index,
            fpga_work: self.work[Kind::Fpga.index()],
            cpu_work: self.work[Kind::Cpu.index()],
            fpgas_allocated: self.pool.allocated(Kind::Fpga),
        };
        self.work = [0; 2];
        let planned = self.allocator.plan(&stats);
        self.target = self.cap_fpgas(planned);
        let serving = self.pool.allocated(Kind::Fpga) - self.pool.draining(Kind::Fpga);
        if self.target > serving {
            let mut missing = self.target - serving;
            while missing > 0 {
                let Some(id) = self.pool.first_draining(Kind::Fpga) else { break };
                self.pool.undrain(id);
                missing -= 1;
            }
            for _ in 0..missing {
                if self.at_cap(Kind::Fpga) {
                    break; // FPGAs still spinning down count against the cap
                }
                self.spin_up(Kind::Fpga, now);
            }
        } else {
            // Idle FPGAs past their timeout go first; MArk-ideal then takes the rest of its surplus out
            // of dispatch.
            self.release_idle_fpgas(now);
            let serving = self.pool.allocated(Kind::Fpga) - self.pool.draining(Kind::Fpga);
            if self.drain_surplus && serving > self.target {
                self.drain_least_loaded(serving - self.target, now);
            }
        }
    }

    /// Takes the `count` least-loaded active FPGAs out of dispatch.
    fn drain_least_loaded(&mut self, count: u32, now: Time) {
        let timeout = self.platform.idle_timeout(Kind::Fpga);
        for _ in 0..count {
            let Some(&(busy_until, id)) = self.pool.index(Phase::Active, Kind::Fpga).first() else { break };
            if busy_until.saturating_add(timeout) <= now {
                self.release(id, now); // already idle past its timeout
                continue;
            }
            self.pool.drain(id);
            if !self.pool.worker(id).timer_armed {
                self.arm(id, timeout, now);
            }
        }
    }

    /// The FPGA target within the FPGA cap.
    fn cap_fpgas(&self, target: u32) -> u32 {
        self.max_workers[Kind::Fpga.index()].map_or(target, |m| target.min(m))
    }

    /// Releases FPGAs idle past their timeout, longest idle first, while above the target.
    fn release_idle_fpgas(&mut self, now: Time) {
        let timeout = self.platform.idle_timeout(Kind::Fpga);
        while self.pool.allocated(Kind::Fpga) > self.target {
            let Some(&(busy_until, id)) = self.pool.index(Phase::Active, Kind::Fpga).first() else { break };
            if busy_until.saturating_add(timeout) > now {
                break;
            }
            self.release(id, now);
        }
    }

    /// End of trace: no FPGA is needed any more; idle workers go through the normal idle rule.
    fn drain(&mut self, now: Time) {
        self.target = 0;
        self.release_idle_fpgas(now);
        let held: Vec<WorkerId> = (0..self.pool.slots().len() as u32)
            .map(WorkerId)
            .filter(|&id| {
                let w = self.pool.worker(id);
                w.kind == Kind::Fpga && w.state == WorkerState::Active && !w.timer_armed
            })
            .collect();
        for id in held {
            self.arm(id, self.platform.idle_timeout(Kind::Fpga), now);
        }
    }

    #[inline]
    fn on_arrival(&mut self, r: Request) -> Arrival {
        let now = r.arrival;
        let deadline = r.deadline(self.platform.deadline_factor);
        let workers = self.pool.allocated(Kind::Cpu) + self.pool.allocated(Kind::Fpga);
        // Without brownout every optional part runs.
        let optional = r.optional > 0 && self.brownout.as_mut().is_none_or(|b| b.gate(now, workers));
        let r = if optional { r } else { Request { optional: 0, ..r } };
        self.place(r, deadline, true)
    }

    /// Dispatches `r` (its optional part already decided) and books it.
    #[inline]
    fn place(&mut self, r: Request, deadline: Time, fpga: bool) -> Arrival {
        let now = r.arrival;
        let optional = r.optional > 0;
        let work = r.size + r.optional;
        let job =
            Job { deadline, service: [self.platform.cpu.service(work), self.platform.fpga.service(work)] };
        let (placement, fleet) = if fpga {
            (self.dispatcher.place(&self.pool, &job, now), self.fleet)
        } else {
            (self.rescue.place(&self.pool, &job, now), Fleet::CPU_ONLY)
        };
        let id = match placement {
            Placement::Assign(id) => id,
            Placement::SpinUp(kind) if !self.at_cap(kind) => self.spin_up(kind, now),
            Placement::SpinUp(_) => {
                self.capped += 1;
                match crate::policy::dispatch::when_capped(&self.pool, fleet, now) {
                    Some(w) => w,
                    None => {
                        self.rejected += 1;
                        return Arrival::Rejected;
                    }
                }
            }
        };
        let kind = self.pool.worker(id).kind;
        let service = job.service[kind.index()];
        let (start, finish) = self.pool.assign(id, now, service);
        let w = self.pool.worker(id);
        if w.state == WorkerState::Active && !w.timer_armed {
            self.arm(id, self.platform.idle_timeout(kind), now);
        }
        if let Some(b) = self.brownout.as_mut() {
            let span = deadline.saturating_sub(now).max(1);
            b.dispatched(finish, (finish - now) as f64 / span as f64, optional);
        }
        self.work[kind.index()] += service;
        self.out_served[kind.index()] += 1;
        self.total_size += work;
        self.misses += u64::from(finish > job.deadline);
        self.latency.saturating_record(((finish - now) / 1_000).max(1));
        self.probe.served(&r, id, kind, start, finish);
        Arrival::Assigned { worker: id, kind, start, finish, deadline, optional }
    }
}

//! The engine: the pool, the policy objects, the worker timers and the interval-tick schedule.

mod batched;

use super::brownout::BrownoutLoop;
use super::effects::{Arrival, Assignment, Effects};
use super::hardware::{Board, HardwareDispatch, HwDecision, verdict};
use super::outcome::{Outcome, Tally};
use super::plan::{Oracle, Plan};
use super::sizes::Sizes;
use super::timers::{Due, Timer, Timers};
use crate::model::{Kind, PerKind, Platform, Pool, Request, Time, Unit, WorkerId, WorkerState};
use crate::policy::arbitrate::{Bid, BoardShare, Value};
use crate::policy::brownout::admit;
use crate::policy::estimate::Statistic;
use crate::policy::fleet::{Change, Reconcile};
use crate::policy::release::{ReleaseTiming, idle_since, may_release};
use crate::policy::speed::SpeedEstimate;
use crate::policy::{
    Admission, Allocator, Caps, Dispatcher, Fleet, IntervalStats, Job, Objective, Placement, dispatch,
};

/// One run of a scheduler, in whatever clock its driver keeps.
pub struct Engine {
    platform: Platform,
    allocator: Box<dyn Allocator>,
    dispatcher: Dispatcher,
    /// Efficient-first over CPUs only: where requests go after their worker failed.
    rescue: Dispatcher,
    fleet: Fleet,
    reconcile: Reconcile,
    caps: Caps,
    admission: Admission,
    /// Boards shared with other pools: where the FPGA cap comes from at each tick (`caps` is then
    /// the latest grant; `plan_caps` stays the plan's own).
    share: Option<Box<dyn BoardShare>>,
    /// A hardware dispatch engine taking efficient-first's first step (`None`: the software rule).
    hardware: Option<Box<dyn HardwareDispatch>>,
    plan_caps: Caps,
    /// What a board saves this pool is judged by.
    objective: Objective,
    brownout: Option<BrownoutLoop>,
    /// Unknown sizes: a trace's, booked at the plan's statistic, and a live pool's clients'.
    sizes: Sizes,
    /// Dynamic batching: the rule and the batch forming (`None`: every request is its own job).
    batch: Option<Box<batched::Batcher>>,
    /// When the batch forming closes (`Time::MAX`: none is): one compare on the evaluator's hot
    /// path, which never batches.
    batch_close: Time,
    /// Set while `arrive_by` places a request: its booking is its first scheduling, where the brownout
    /// gate decides (a re-dispatch after a failure keeps the decision).
    first_scheduling: bool,
    pool: Pool,
    timers: Timers,
    target: u32,
    /// When surplus FPGAs may go, and the allocator's previous plan (n_t, what `Planned` holds
    /// through interval t).
    release_timing: ReleaseTiming,
    planned: u32,
    /// CPU workers held from the start and never released below (0 once the trace ends).
    cpu_floor: u32,
    /// Dispatch plans each request with a client's deadline to finish this long before it.
    margin: Time,
    /// Service booked per type in the current interval (Algorithm 1's F and C).
    work: PerKind<Time>,
    /// The board's speedup as a live pool's answers show it: applied once believed.
    speed: SpeedEstimate,
    /// The latest arrival seen: requests up to it were booked at the S in force.
    latest_arrival: Time,
    tally: Tally,
    /// What the run counts beside the tally.
    counts: Counts,
    /// The trace length: interval ticks run until it, then the pool drains.
    horizon: Time,
    /// The next interval tick (`None` once the pool drains).
    next_tick: Option<Time>,
}

/// What a run counts beside its tally, for its outcome.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    /// Sum of request sizes, mandatory and optional.
    total_size: Time,
    /// Events handled: arrivals, interval ticks, worker timers, control periods.
    events: u64,
    /// Spin-ups a cap refused.
    capped: u64,
    /// Requests that arrived with an optional part, and those whose part the gate let run.
    optional: (u64, u64),
    /// Interval ticks run.
    intervals: u64,
    /// Batches booked, and the requests they carried.
    batches: (u64, u64),
}

impl Engine {
    /// A run of `plan` on `platform`, its oracle schedulers told `oracle`. Every driver builds its
    /// engine here, so a live run and its prediction hold the same policy objects and seeds.
    pub fn new(platform: Platform, plan: &Plan, oracle: &Oracle) -> Self {
        let allocator = plan.scheduler.allocator(&platform, oracle.demand.as_ref(), oracle.headroom);
        Self::with_allocator(platform, plan, allocator)
    }

    /// [`Engine::new`] with another allocator in place of the scheduler's own (a research allocator,
    /// a bench's fixed pool); everything else is `plan`'s.
    pub fn with_allocator(platform: Platform, plan: &Plan, allocator: Box<dyn Allocator>) -> Self {
        let objective = plan.scheduler.objective();
        let dispatcher = plan.dispatcher().build(plan.scheduler.fleet(), &platform, &objective);
        let cpu_floor = if dispatcher.fleet().cpu { plan.caps.clip(Kind::Cpu, plan.min_cpu) } else { 0 };
        let reconcile = Reconcile {
            idle_timeout: platform.idle_timeout(Kind::Fpga),
            surplus: plan.scheduler.surplus(),
            caps: plan.caps,
            surplus_since: None,
        };
        Engine {
            allocator,
            fleet: dispatcher.fleet(),
            dispatcher,
            rescue: dispatch::rescue(platform.fpga.spin_up),
            reconcile,
            caps: plan.caps,
            admission: plan.admission,
            share: None,
            hardware: None,
            plan_caps: plan.caps,
            objective,
            brownout: plan.brownout.map(|b| BrownoutLoop::new(b, plan.seed)),
            sizes: Sizes::new(plan.sizes),
            batch: plan.batching.map(|rule| Box::new(batched::Batcher::new(rule))),
            batch_close: Time::MAX,
            first_scheduling: false,
            platform,
            pool: Pool::numbered(plan.dispatcher().numbering())
                .with_compute_units(Kind::Fpga, platform.fpga_compute_units()),
            timers: Timers::default(),
            target: 0,
            release_timing: plan.release,
            planned: 0,
            cpu_floor,
            margin: plan.margin,
            work: PerKind::default(),
            speed: SpeedEstimate::new(),
            latest_arrival: 0,
            tally: Tally::default(),
            counts: Counts::default(),
            horizon: 0,
            next_tick: None,
        }
    }

    /// Hands efficient-first's first step (which active FPGA takes a request) to `hardware`, a
    /// dispatch engine in RTL or its golden model; every decision is checked against the software
    /// rule (see [`super::hardware`]). Other dispatchers keep deciding in software.
    pub fn dispatch_in_hardware(&mut self, hardware: Box<dyn HardwareDispatch>) {
        self.hardware = Some(hardware);
    }

    /// Shares the machine's boards with other pools: at each interval tick the engine bids for
    /// boards through `share` and takes the FPGA cap it answers (within the plan's own cap).
    pub fn share_boards(&mut self, share: Box<dyn BoardShare>) {
        self.share = Some(share);
    }

    /// The pool as the policy sees it.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The current FPGA target.
    pub fn target(&self) -> u32 {
        self.target
    }

    /// The FPGA cap in force: the plan's, or with shared boards the latest grant.
    pub fn fpga_cap(&self) -> Option<u32> {
        self.caps.0[Kind::Fpga]
    }

    /// The brownout gate's current setting, if the plan has one.
    pub fn brownout_setting(&self) -> Option<f64> {
        self.brownout.as_ref().map(BrownoutLoop::setting)
    }

    /// The platform it runs on.
    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    /// What has been booked so far.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Starts a run over a trace of length `horizon`: the allocator's initial FPGAs and the plan's
    /// CPU floor, warm at time 0, and the first interval tick due at 0.
    pub fn begin(&mut self, horizon: Time, fx: &mut impl Effects) {
        // Boards shared with other pools: the warm ones are claimed like any others.
        let want = self.plan_caps.clip(Kind::Fpga, self.allocator.initial());
        self.claim_boards(want, &IntervalStats::default());
        let initial = self.caps.clip(Kind::Fpga, want);
        for (kind, count) in [(Kind::Fpga, initial), (Kind::Cpu, self.cpu_floor)] {
            for _ in 0..count {
                let id = self.pool.prewarm(kind, 0, self.platform.spec(kind).spin_up);
                fx.spin_up(id, kind, 0, 0);
                self.arm(id, 0);
            }
        }
        self.target = initial;
        self.horizon = horizon;
        self.next_tick = Some(0);
    }

    /// When the next interval tick, worker timer or (with `brownout`) brownout control period is due.
    pub fn next_event(&self, brownout: bool) -> Option<Time> {
        let period = self.brownout_due(brownout);
        [self.next_tick, self.timers.next(), period, self.batch_due()].into_iter().flatten().min()
    }

    fn brownout_due(&self, brownout: bool) -> Option<Time> {
        self.brownout.as_ref().filter(|_| brownout).map(BrownoutLoop::next_tick)
    }

    /// Runs everything due at or before `now`, in time order: interval ticks (at the horizon, the
    /// pool starts draining), worker timers, and with `brownout` the brownout control periods. At
    /// equal times ticks go first, so that an idle check falling on a tick is judged against the new
    /// plan, then timers, then control periods.
    pub fn advance(&mut self, now: Time, brownout: bool, fx: &mut impl Effects) {
        loop {
            let tick = self.next_tick.filter(|&t| t <= now);
            let timer = self.timers.next().filter(|&t| t <= now);
            let period = self.brownout_due(brownout).filter(|&t| t <= now);
            self.counts.events += 1;
            // A batch closing goes first at equal times: its requests arrived before.
            // `Time::MAX`: no batch (a drain advances to `Time::MAX` itself).
            let at = self.batch_close;
            if at <= now && at != Time::MAX && [tick, timer, period].iter().flatten().all(|&t| at <= t) {
                self.close_batch(at, fx);
                continue;
            }
            match (tick, timer, period) {
                (Some(t), tm, p) if tm.is_none_or(|tm| t <= tm) && p.is_none_or(|p| t <= p) => {
                    self.on_tick(t, fx)
                }
                (_, Some(tm), p) if p.is_none_or(|p| tm <= p) => {
                    let Some(due) = self.timers.pop() else { break };
                    self.on_timer(due, fx);
                }
                (_, _, Some(_)) => {
                    if let Some(b) = self.brownout.as_mut() {
                        b.tick();
                    }
                }
                _ => {
                    self.counts.events -= 1;
                    break;
                }
            }
        }
    }

    /// The trace is over at `now` (its horizon, or a live run's load ended or stopped): no more
    /// interval ticks; the FPGA target drops to zero and the pool drains through the idle rule.
    pub fn end_of_trace(&mut self, now: Time, fx: &mut impl Effects) {
        if self.next_tick.take().is_none() {
            return;
        }
        (self.target, self.cpu_floor) = (0, 0);
        // The pool drains as it always did: no surplus countdown holds a worker past the trace.
        self.release_timing = ReleaseTiming::Drained;
        self.reconcile.surplus_since = None;
        let changes = self.reconcile.at_end(&self.pool, now);
        self.apply(changes, now, fx);
        // FPGAs held within the old target and CPUs at the floor have no idle timer: give them one.
        let held: Vec<WorkerId> = (0..self.pool.slots().len() as u32)
            .map(WorkerId)
            .filter(|&id| {
                let w = self.pool.worker(id);
                matches!(w.state, WorkerState::Active | WorkerState::Draining) && !self.timers.armed(id)
            })
            .collect();
        for id in held {
            self.arm(id, now);
        }
    }

    /// A request arrives at `r.arrival`: the dispatcher places it, and the pool books it, where the
    /// brownout gate decides its optional part (when it starts; see [`BrownoutLoop::gate`]).
    pub fn arrive(&mut self, r: Request, fx: &mut impl Effects) -> Arrival {
        self.arrive_by(r, None, 0, fx)
    }

    /// [`Engine::arrive`] with the request's own absolute `deadline` (a client's), or the profile's
    /// deadline factor times its size if `None`; held for a batch, it is settled under `ticket`
    /// (see [`Effects::resolved`]).
    pub fn arrive_by(
        &mut self,
        r: Request,
        deadline: Option<Time>,
        ticket: u64,
        fx: &mut impl Effects,
    ) -> Arrival {
        self.counts.events += 1;
        self.counts.optional.0 += u64::from(r.optional > 0);
        self.latest_arrival = self.latest_arrival.max(r.arrival);
        let margin = deadline.map_or(0, |_| self.margin);
        let deadline = deadline.unwrap_or_else(|| r.deadline(self.platform.deadline_factor));
        let estimate = self.estimate_size(&r);
        let jobs = self.jobs(&r, deadline, estimate, margin);
        // The allocator sees the job as dispatch does (at the estimate, with unknown sizes; within the
        // margin).
        self.allocator.on_arrival(r.arrival, jobs.1.service[Kind::Fpga.index()], jobs.1.deadline);
        if self.batch.is_some() {
            let member = batched::Member { ticket, request: r, deadline, margin, estimate };
            return self.arrive_batched(member, jobs, fx);
        }
        self.first_scheduling = true;
        let arrival = self.place(r, r.arrival, jobs, false, estimate, fx);
        self.first_scheduling = false;
        // Counted once booked: the optional part of a rejected request did not run.
        self.counts.optional.1 += u64::from(matches!(arrival, Arrival::Assigned(a) if a.optional()));
        arrival
    }

    /// Places `r` again at `now` after its worker failed, by the rescue rule (CPUs only, whatever the
    /// scheduler's fleet), keeping its original `deadline` (planned to the deadline itself: a rescue
    /// takes what time is left); its optional part runs if it still has one. A CPU cap with no CPU at
    /// all rejects it.
    pub fn redispatch_on_cpu(
        &mut self,
        r: Request,
        now: Time,
        deadline: Time,
        fx: &mut impl Effects,
    ) -> Arrival {
        let r = Request { arrival: now.max(r.arrival), ..r };
        let estimate = self.estimate_size(&r);
        let jobs = self.jobs(&r, deadline, estimate, 0);
        self.place(r, now, jobs, true, estimate, fx)
    }

    /// Live telemetry: a request booked with `estimated` service on `kind` actually took `actual`;
    /// the interval's work that the allocator reads is corrected by the difference.
    /// On a board, with `arrival`, when the request arrived, the same is evidence of the board's
    /// speedup, applied once believed ([`crate::policy::speed`]).
    pub fn observe_service(&mut self, kind: Kind, estimated: Time, arrival: Time, actual: Time) {
        let w = &mut self.work[kind];
        // Saturating: `actual` may be a worker host's report.
        *w = w.saturating_add(actual).saturating_sub(estimated);
        if kind != Kind::Fpga {
            return;
        }
        self.speed.observe(arrival, estimated, actual);
        if let Some(s) = self.speed.revised(self.platform.fpga.speedup) {
            self.respeed(s);
        }
    }

    /// The board's speedup is `s` from now: the allocator's thresholds, dispatch's booked service
    /// times and the dispatcher's wait rule (what a burst FPGA must take over to pay) follow.
    fn respeed(&mut self, s: f64) {
        self.platform.fpga.speedup = s;
        self.allocator.respeed(&self.platform);
        self.dispatcher.respeed(&self.platform, &self.objective);
        self.speed.changed(self.latest_arrival);
    }

    /// Live telemetry: worker `id`'s real queue drains at `drains_at`. Later than the pool's booking
    /// (a board slower than its model, a starved CPU thread), the pool takes the later time, so
    /// dispatch sees the real backlog: a worker behind by more than a request's deadline horizon
    /// takes no more of it, and with [`Admission::RejectLate`] its queue stays within deadlines.
    /// Earlier, on a CPU, it takes that too: a live client's request is booked at an estimate, and
    /// one that ran shorter leaves its worker free sooner; kept, the difference would pile up into
    /// a backlog that is not there (a client sending one request at a time, each booked at twice
    /// what it takes, found its worker booked past every deadline and was refused). A board's
    /// booking is its model's own timeline and may hold a batch not yet sent: only ever later
    /// ([`Pool::settle`]).
    pub fn observe_backlog(&mut self, unit: Unit, drains_at: Time) {
        self.pool.settle(unit, drains_at);
    }

    /// Takes a worker that failed (a board that did not configure, a hung kernel) out of service now:
    /// its queue is dropped (the driver re-runs it) and it is released.
    pub fn fail_worker(&mut self, id: WorkerId, now: Time, fx: &mut impl Effects) {
        let state = self.pool.worker(id).state;
        if matches!(state, WorkerState::Active | WorkerState::Draining | WorkerState::SpinningUp) {
            self.pool.abort_queue(id, now);
            if state == WorkerState::SpinningUp {
                self.pool.finish_spin_up(id);
            }
            self.release(id, now, fx);
        }
    }

    /// The run's outcome (call once every worker is released).
    pub fn finish(self) -> Outcome {
        let last_release = self.pool.slots().iter().map(|w| w.off_at).max().unwrap_or(0);
        Outcome {
            end: self.horizon.max(last_release),
            optional: self.counts.optional,
            pool: self.pool,
            tally: self.tally,
            total_size: self.counts.total_size,
            intervals: self.counts.intervals,
            events: self.counts.events,
            capped: self.counts.capped,
            size_error: self.sizes.mean_error(),
            batches: self.batch.is_some().then_some(self.counts.batches),
            speedup: self.platform.fpga.speedup,
        }
    }

    /// With unknown sizes, what `r` is booked at: the estimate at its arrival.
    fn estimate_size(&mut self, r: &Request) -> Option<Time> {
        self.sizes.estimate(r)
    }

    /// A live pool's clients state no size: they are sized from their input items at `statistic` of
    /// the CPU time per item measured, starting from `items_per_sec` (the calibration).
    pub fn size_clients(&mut self, statistic: Statistic, items_per_sec: f64) {
        self.sizes.size_clients(statistic, items_per_sec);
    }

    /// A client's request of `items`: the CPU time it is booked at (`None` before
    /// [`Engine::size_clients`]).
    pub fn client_size(&self, items: u64) -> Option<Time> {
        self.sizes.client_size(items)
    }

    /// Live telemetry: a client's request of `items` took `took` on a CPU; the size estimate's
    /// relative error.
    pub fn observe_client(&mut self, items: u64, took: Time) -> Option<f64> {
        self.sizes.observe_client(items, took)
    }

    /// How many workers of `kind` the pool keeps however idle: the FPGA target, the CPU floor.
    fn keep(&self, kind: Kind) -> u32 {
        match kind {
            Kind::Fpga => self.target,
            Kind::Cpu => self.cpu_floor,
        }
    }

    fn arm(&mut self, id: WorkerId, now: Time) {
        let w = *self.pool.worker(id);
        let due = self.idle_since(&w).saturating_add(self.platform.idle_timeout(w.kind)).max(now);
        self.timers.set_armed(id, true);
        self.timers.push(due, Timer::IdleCheck, id, w.generation);
    }

    fn spin_up(&mut self, kind: Kind, now: Time, fx: &mut impl Effects) -> WorkerId {
        let id = self.pool.spin_up(kind, now, self.platform.spec(kind).spin_up);
        let w = self.pool.worker(id);
        self.timers.push(w.ready_at, Timer::SpinUpDone, id, w.generation);
        fx.spin_up(id, kind, now, w.ready_at);
        id
    }

    fn release(&mut self, id: WorkerId, now: Time, fx: &mut impl Effects) {
        let kind = self.pool.worker(id).kind;
        fx.release(id, kind, now);
        self.timers.set_armed(id, false);
        self.pool.begin_spin_down(id, now, self.platform.spec(kind).spin_down);
        let w = self.pool.worker(id);
        self.timers.push(w.off_at, Timer::SpinDownDone, id, w.generation);
    }

    fn on_timer(&mut self, due: Due, fx: &mut impl Effects) {
        let (id, now) = (due.worker, due.at);
        let w = *self.pool.worker(id);
        if w.generation != due.generation {
            return; // the slot was reused: a stale timer
        }
        match (due.timer, w.state) {
            (Timer::SpinUpDone, WorkerState::SpinningUp) => {
                self.pool.finish_spin_up(id);
                self.arm(id, now);
            }
            (Timer::IdleCheck, WorkerState::Active | WorkerState::Draining) => {
                self.timers.set_armed(id, false);
                let timeout = self.platform.idle_timeout(w.kind);
                if now < self.idle_since(&w).saturating_add(timeout) {
                    self.arm(id, now); // it got more work (or became surplus) since: look again
                } else if may_release(
                    self.idle_since(&w),
                    now,
                    timeout,
                    self.pool.allocated(w.kind),
                    self.keep(w.kind),
                ) {
                    self.release(id, now, fx);
                    self.note_surplus(now);
                }
                // Otherwise an FPGA within the target or a CPU at the floor is held, timer unarmed,
                // until it gets work, the target drops (see `on_tick`) or the trace ends.
            }
            (Timer::SpinDownDone, WorkerState::SpinningDown) => {
                let released = self.pool.finish_spin_down(id);
                self.allocator.on_release(&released);
            }
            _ => {} // a timer overtaken by a state change
        }
    }

    fn on_tick(&mut self, now: Time, fx: &mut impl Effects) {
        if now >= self.horizon {
            return self.end_of_trace(now, fx);
        }
        let stats = IntervalStats {
            index: self.counts.intervals as usize,
            fpga_work: self.work[Kind::Fpga],
            cpu_work: self.work[Kind::Cpu],
            fpgas_allocated: self.pool.allocated(Kind::Fpga),
        };
        self.work = PerKind::default();
        self.speed.decay();
        let want = self.plan_caps.clip(Kind::Fpga, self.allocator.plan(&stats));
        self.claim_boards(want, &stats);
        let held = self.release_timing.held(want, self.planned);
        self.planned = want;
        self.target = self.caps.clip(Kind::Fpga, held);
        self.note_surplus(now);
        let changes = self.reconcile.on_tick(&self.pool, self.target, now);
        self.apply(changes, now, fx);
        self.note_surplus(now);
        self.counts.intervals += 1;
        self.next_tick = Some(now + self.platform.interval());
    }

    /// When the pool's surplus began (the release timing's rule), after a change at `now`.
    fn note_surplus(&mut self, now: Time) {
        let allocated = self.pool.allocated(Kind::Fpga);
        let since = self.reconcile.surplus_since;
        self.reconcile.surplus_since = self.release_timing.surplus_since(since, allocated, self.target, now);
    }

    /// Since when worker `w` counts as idle for the release rule.
    fn idle_since(&self, w: &crate::model::pool::Worker) -> Time {
        idle_since(w.kind, w.busy_until, self.reconcile.surplus_since)
    }

    /// With shared boards, bids for them and takes the cap granted (never above the plan's own);
    /// otherwise nothing.
    fn claim_boards(&mut self, want: u32, stats: &IntervalStats) {
        let Some(share) = self.share.as_mut() else { return };
        let work_s = stats.fpga_seconds(self.platform.fpga.speedup);
        let held = self.pool.allocated(Kind::Fpga) + self.pool.spinning_down(Kind::Fpga);
        let bid = Bid { want, held, value: Value::of(&self.objective, &self.platform, work_s) };
        let granted = share.claim(bid);
        self.caps.0[Kind::Fpga] = Some(granted);
        self.reconcile.caps = self.caps;
    }

    /// Carries out the fleet rule's changes on the pool.
    fn apply(&mut self, changes: Vec<Change>, now: Time, fx: &mut impl Effects) {
        for change in changes {
            match change {
                Change::SpinUp(kind) => {
                    self.spin_up(kind, now, fx);
                }
                Change::Undrain(id) => self.pool.undrain(id),
                Change::Drain(id) => {
                    self.pool.drain(id);
                    if !self.timers.armed(id) {
                        self.arm(id, now);
                    }
                }
                Change::Release(id) => self.release(id, now, fx),
            }
        }
    }

    /// `r` as a job by `deadline`: as it really is, and as dispatch sees it (at `estimate`, with
    /// unknown sizes; to finish `margin` early). Computed once per placement: a service time is a
    /// float division and a rounding.
    #[inline]
    fn jobs(&self, r: &Request, deadline: Time, estimate: Option<Time>, margin: Time) -> (Job, Job) {
        let job_of = |size: Time| {
            let work = size + r.optional;
            Job { deadline, service: [self.platform.cpu.service(work), self.platform.fpga.service(work)] }
        };
        let actual = job_of(r.size);
        (actual, estimate.map_or(actual, job_of).planned_within(margin))
    }

    /// Dispatches `r` at `now` (its arrival, or later for a request held for a batch; its optional
    /// part already decided) and books it. With unknown sizes the dispatcher and the admission rule
    /// see the job at `estimate`; the pool books what it really takes.
    #[inline(always)]
    fn place(
        &mut self,
        r: Request,
        now: Time,
        (actual, job): (Job, Job),
        rescue: bool,
        estimate: Option<Time>,
        fx: &mut impl Effects,
    ) -> Arrival {
        let (placement, fleet) = self.decide(&job, now, rescue);
        let (unit, fresh) = match placement {
            Placement::Assign(unit) => (unit, false),
            Placement::SpinUp(kind) if !self.caps.at_cap(&self.pool, kind) => {
                (Unit::of(self.spin_up(kind, now, fx)), true)
            }
            Placement::SpinUp(_) => {
                self.counts.capped += 1;
                let Some(w) = Caps::overflow(&self.pool, fleet, now) else {
                    self.tally.rejected += 1;
                    return Arrival::Rejected;
                };
                (w, false)
            }
        };
        if !fresh && !self.admits(unit, &job, now) {
            self.tally.rejected += 1;
            return Arrival::Rejected;
        }
        let booked = self.book(r, now, unit, actual, fx);
        self.sizes.booked(estimate, r.size, booked.finish);
        Arrival::Assigned(booked)
    }

    /// Where the dispatcher (the rescue rule's if `rescue`, the hardware engine's first step if one
    /// is fitted) places `job` at `now`, and the fleet it chose from.
    #[inline(always)]
    fn decide(&mut self, job: &Job, now: Time, rescue: bool) -> (Placement, Fleet) {
        if rescue {
            (self.rescue.place(&self.pool, job, now), Fleet::CPU_ONLY)
        } else if self.hardware.is_some() {
            (self.place_in_hardware(job, now), self.fleet)
        } else {
            (self.dispatcher.place(&self.pool, job, now), self.fleet)
        }
    }

    /// Efficient-first with its first step taken by the hardware dispatch engine: a grant books that
    /// board, a reject goes on to the rule's later steps; the software's own choice is the check.
    fn place_in_hardware(&mut self, job: &Job, now: Time) -> Placement {
        let software = self.dispatcher.place(&self.pool, job, now);
        let (Some(hw), Some(ef)) = (self.hardware.as_mut(), self.dispatcher.efficient_first()) else {
            return software;
        };
        if !ef.first_step_is_active_fpga() {
            return software;
        }
        let units = self.pool.active_units(Kind::Fpga);
        let boards: Vec<Board> = units.into_iter().map(|(busy_until, id)| Board { id, busy_until }).collect();
        let first = match software {
            Placement::Assign(w) if boards.iter().any(|b| b.id == w) => Some(w),
            _ => None,
        };
        let decision = hw.decide(now, &boards, job);
        if let Some(v) = verdict(hw.as_ref(), decision, first) {
            hw.stats().record(v);
        }
        match decision {
            HwDecision::Grant { id, .. } => Placement::Assign(id),
            HwDecision::Reject if first.is_some() => ef.place_after_active_fpga(&self.pool, job, now),
            HwDecision::Reject | HwDecision::Beyond => software,
        }
    }

    /// Whether the admission rule lets `job` join worker `id`'s queue at `now`.
    #[inline]
    fn admits(&self, unit: Unit, job: &Job, now: Time) -> bool {
        // The paper's rule admits everything: the evaluator's hot path reads no worker for it.
        if self.admission == Admission::QueueLate {
            return true;
        }
        let kind = self.pool.worker(unit.worker).kind;
        let finish = self.pool.start_at(unit, now).saturating_add(job.service[kind.index()]);
        self.admission.admits_queued(finish, job.deadline)
    }

    /// At a request's first scheduling on compute unit `unit`, the brownout gate decides its optional part on
    /// the queue it will face when it starts there; without the part it needs only its mandatory
    /// size of service. The dispatcher placed it with the part: the decision is not taken yet.
    fn first_schedule(&mut self, r: Request, unit: Unit, service: Time) -> (Request, Time) {
        let Some(b) = self.brownout.as_mut().filter(|_| self.first_scheduling) else { return (r, service) };
        let kind = self.pool.worker(unit.worker).kind;
        let (now, start) = (r.arrival, self.pool.start_at(unit, r.arrival));
        let workers = self.pool.allocated(Kind::Cpu) + self.pool.allocated(Kind::Fpga);
        let decided = admit(r, Some(|| b.gate(now, start, workers)));
        if decided == r { (r, service) } else { (decided, self.platform.spec(kind).service(decided.size)) }
    }

    /// Queues one job of `service` on compute unit `unit` (of a `kind` worker) at `now`: the pool's
    /// queue, the worker's idle timer and the interval's work. A request alone and a batch alike.
    #[inline(always)]
    fn occupy(&mut self, unit: Unit, kind: Kind, now: Time, service: Time) -> (Time, Time) {
        let id = unit.worker;
        let (start, finish) = self.pool.assign(unit, now, service);
        if self.pool.worker(id).state == WorkerState::Active && !self.timers.armed(id) {
            self.arm(id, now);
        }
        self.work[kind] += service;
        (start, finish)
    }

    /// Books `r` on compute unit `unit` at `now`: its queue, idle timer, the interval's work, the
    /// brownout loop and the tally (its latency counted from its arrival).
    #[inline(always)]
    fn book(&mut self, r: Request, now: Time, unit: Unit, job: Job, fx: &mut impl Effects) -> Assignment {
        let id = unit.worker;
        let kind = self.pool.worker(id).kind;
        let (r, service) = self.first_schedule(r, unit, job.service[kind.index()]);
        let (start, finish) = self.occupy(unit, kind, now, service);
        if let Some(b) = self.brownout.as_mut() {
            let span = job.deadline.saturating_sub(now).max(1);
            b.dispatched(finish, (finish - now) as f64 / span as f64, r.optional > 0);
        }
        self.counts.total_size += r.size + r.optional;
        self.tally.record(kind, finish - r.arrival, finish > job.deadline);
        fx.served(&r, id, kind, start, finish);
        Assignment {
            request: r,
            worker: id,
            cu: unit.cu,
            kind,
            start,
            finish,
            deadline: job.deadline,
            batch: 1,
        }
    }
}

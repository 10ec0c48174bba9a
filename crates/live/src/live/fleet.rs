//! The live workers: the runtime's [`Effects`] sink. The engine's spin-ups start real workers (a CPU
//! thread or a board slot, through [`backend::spawn`]) and its releases stop them, inside the engine
//! call that decided them.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::clock::Clock;
use super::config::PoolConfig;
use super::faults::Injector;
use super::worker::{Event, JobMsg, UnitSetup, Worker};
use crate::backend;
use crate::datapath::work::Input;
use spork_core::engine::{Arrival, Effects};
use spork_core::model::{Kind, Time, Unit, WorkerId};

/// A worker thread behind a pool slot.
struct Live {
    worker: Worker,
    kind: Kind,
    /// Unique per worker started in the run: a reused slot is a new worker, and events from the old
    /// one are recognised by it.
    generation: u64,
    /// It reported itself configured.
    ready: bool,
}

/// The run's worker threads, by pool slot.
pub(super) struct LiveFleet<'c> {
    cfg: &'c PoolConfig,
    clock: Clock,
    events: UnboundedSender<Event>,
    injector: Injector,
    live: HashMap<WorkerId, Live>,
    /// Stopped workers, joined at the end.
    retired: Vec<Worker>,
    /// Failed workers that may be stuck in a kernel: never waited for.
    abandoned: Vec<Worker>,
    generation: u64,
    /// Requests held for a batch that the engine settled during a call, group by group, for the
    /// driver to send once the call returns.
    settled: Vec<Vec<(u64, Arrival)>>,
}

impl Effects for LiveFleet<'_> {
    fn spin_up(&mut self, slot: WorkerId, kind: Kind, at: Time, ready_at: Time) {
        self.generation += 1;
        let fail = kind == Kind::Fpga && self.injector.configure_fails();
        // A pool pre-warmed before the run is ready at its start: its configured delay was spent
        // before (the policy charges it so); only the measured configuration remains.
        let delay = if at == ready_at { Duration::ZERO } else { Duration::from_nanos(ready_at - at) };
        let cfg = self.cfg;
        // A board of several compute units is a backend per CU; an injected failure fails its first.
        let units = if kind == Kind::Fpga { cfg.platform.fpga_compute_units() } else { 1 };
        let backends = (0..units)
            .map(|cu| {
                let p = &cfg.platform;
                let fail = fail && cu == 0;
                let mut backend =
                    backend::spawn(kind, &cfg.board, p, &cfg.calibration, &cfg.image, delay, fail);
                let (events, generation) = (self.events.clone(), self.generation);
                backend.on_lost(Box::new(move |why| {
                    let _ = events.send(Event::Lost { slot, generation, why });
                }));
                backend
            })
            .collect();
        let worker = Worker::spawn(
            slot,
            self.generation,
            backends,
            cfg.image.clone(),
            UnitSetup { link: cfg.platform.fpga.link(), cpu_priority: cfg.cpu_priority },
            self.events.clone(),
            self.clock.clone(),
        );
        let live = Live { worker, kind, generation: self.generation, ready: false };
        if let Some(old) = self.live.insert(slot, live) {
            self.retired.push(old.worker);
        }
    }

    fn resolved(&mut self, held: &[(u64, Arrival)]) {
        self.settled.push(held.to_vec());
    }

    fn release(&mut self, slot: WorkerId, _kind: Kind, _at: Time) {
        if let Some(mut l) = self.live.remove(&slot) {
            l.worker.stop();
            self.retired.push(l.worker);
        }
    }
}

impl<'c> LiveFleet<'c> {
    pub fn new(cfg: &'c PoolConfig, clock: Clock, events: UnboundedSender<Event>) -> Self {
        LiveFleet {
            cfg,
            clock,
            events,
            injector: Injector::new(cfg.faults.clone()),
            live: HashMap::new(),
            retired: Vec::new(),
            abandoned: Vec::new(),
            generation: 0,
            settled: Vec::new(),
        }
    }

    /// The held requests settled since the last call, in the engine's booking order.
    pub fn take_settled(&mut self) -> Vec<Vec<(u64, Arrival)>> {
        std::mem::take(&mut self.settled)
    }

    /// The generation of the worker in `slot`, if it is live.
    pub fn generation(&self, slot: WorkerId) -> Option<u64> {
        self.live.get(&slot).map(|l| l.generation)
    }

    /// The kind of the worker in `slot` if it is the live one of `generation`.
    pub fn kind_of(&self, slot: WorkerId, generation: u64) -> Option<Kind> {
        self.live.get(&slot).filter(|l| l.generation == generation).map(|l| l.kind)
    }

    /// The worker of `generation` in `slot` reported itself configured.
    pub fn set_ready(&mut self, slot: WorkerId, generation: u64) {
        if let Some(l) = self.live.get_mut(&slot).filter(|l| l.generation == generation) {
            l.ready = true;
        }
    }

    /// Queues request `id` on compute unit `unit` of its live worker (an FPGA job on a configured
    /// board may be sabotaged by the injector: counting jobs queued on a board still configuring,
    /// which may yet fail, would make which job stalls depend on timing); false if no live worker
    /// holds the slot.
    pub fn send(&mut self, unit: Unit, id: u64, input: Input, optional: bool, now: Time) -> bool {
        self.send_job(unit, (id, input), Vec::new(), optional, now)
    }

    /// [`LiveFleet::send`] for a batch: `first` and the `rest` of its members, run as one job.
    pub fn send_batch(
        &mut self,
        unit: Unit,
        first: (u64, Input),
        rest: Vec<(u64, Input)>,
        optional: bool,
        now: Time,
    ) -> bool {
        self.send_job(unit, first, rest, optional, now)
    }

    fn send_job(
        &mut self,
        unit: Unit,
        (id, input): (u64, Input),
        rest: Vec<(u64, Input)>,
        optional: bool,
        now: Time,
    ) -> bool {
        let Some(l) = self.live.get(&unit.worker) else { return false };
        let stall = if l.kind == Kind::Fpga && l.ready { self.injector.stall() } else { None };
        let job = JobMsg { id, input, optional, dispatched: now, stall, batch: rest };
        l.worker.send(unit.cu, job).is_ok()
    }

    /// Takes the worker of `generation` in `slot` out of service: it hands back its queue unrun and
    /// its thread is abandoned (it may be stuck in a kernel). False if it was already replaced.
    pub fn abandon(&mut self, slot: WorkerId, generation: u64) -> bool {
        if self.live.get(&slot).is_none_or(|l| l.generation != generation) {
            return false;
        }
        if let Some(l) = self.live.remove(&slot) {
            l.worker.cancel();
            self.abandoned.push(l.worker);
        }
        true
    }

    /// Hands back, unrun, every job still queued on any worker, live or released (at a stop: a
    /// released board may still be working through a backlog the simulation has not caught up with).
    pub fn cancel_all(&self) {
        for w in self.live.values().map(|l| &l.worker).chain(&self.retired) {
            w.cancel();
        }
    }

    /// Stops every worker: each finishes at most the job it is running (nothing is left to answer
    /// when this is called), the healthy ones are waited for, the abandoned ones left.
    pub fn shut_down(self) {
        self.cancel_all();
        let LiveFleet { live, retired, abandoned, .. } = self;
        for w in retired.into_iter().chain(live.into_values().map(|l| l.worker)) {
            w.join();
        }
        for w in abandoned {
            w.detach();
        }
    }
}

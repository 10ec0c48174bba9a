//! What the engine's calls do to the world: the narrow sink every engine call reports into.
//!
//! The engine decides; a driver carries out. Every call that can change the fleet takes a
//! `&mut impl Effects` and reports each change into it as it happens, so a driver cannot miss one: the
//! evaluator passes `()` (virtual workers need nothing carried out), the runtime starts and stops real
//! workers in its sink, tests record.

use crate::model::{Kind, Request, Time, WorkerId};

/// Receives the engine's effects as they happen. Every method defaults to doing nothing.
pub trait Effects {
    /// Start a worker of `kind` in pool slot `worker`, decided at `at`; the policy counts it ready at
    /// `ready_at` (equal to `at` for a pool pre-warmed before the run).
    fn spin_up(&mut self, _worker: WorkerId, _kind: Kind, _at: Time, _ready_at: Time) {}
    /// Stop the worker in pool slot `worker`: idle since its queue drained, or failed (its queue is
    /// re-run elsewhere); the policy counts it released at `at`.
    fn release(&mut self, _worker: WorkerId, _kind: Kind, _at: Time) {}
    /// `request` was booked on `worker` (of `kind`), expected to run from `start` to `finish`.
    fn served(&mut self, _request: &Request, _worker: WorkerId, _kind: Kind, _start: Time, _finish: Time) {}
    /// Requests held for a batch ([`Arrival::Held`], by their tickets) are settled: booked together
    /// (one invocation: their assignments share a compute unit, start and finish, and count the
    /// batch's members), or one at a time, a member the batch could not carry to its deadline placed
    /// alone. Each held request is settled exactly once, in one call or another.
    fn resolved(&mut self, _held: &[(u64, Arrival)]) {}
}

/// Nothing to carry out (the evaluator).
impl Effects for () {}

/// A change to the fleet, as recorded by `Vec<Action>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// See [`Effects::spin_up`].
    SpinUp {
        /// Pool slot.
        worker: WorkerId,
        /// Worker type.
        kind: Kind,
        /// When the policy counts it ready.
        ready_at: Time,
    },
    /// See [`Effects::release`].
    Release {
        /// Pool slot.
        worker: WorkerId,
        /// Worker type.
        kind: Kind,
    },
}

/// Records fleet changes in order (tests, benches).
impl Effects for Vec<Action> {
    fn spin_up(&mut self, worker: WorkerId, kind: Kind, _at: Time, ready_at: Time) {
        self.push(Action::SpinUp { worker, kind, ready_at });
    }
    fn release(&mut self, worker: WorkerId, kind: Kind, _at: Time) {
        self.push(Action::Release { worker, kind });
    }
}

/// Where a request went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Booked on a worker.
    Assigned(Assignment),
    /// No worker of an allowed type exists and none may be added (a capped pool): rejected.
    Rejected,
    /// Held, under this ticket, for a batch bound for a board: settled later through
    /// [`Effects::resolved`] (see [`crate::policy::batching`]).
    Held(u64),
}

/// A request booked on a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// The request as booked (its optional part removed if the gate said no).
    pub request: Request,
    /// Pool slot.
    pub worker: WorkerId,
    /// The compute unit of the worker it runs on (0 with one CU).
    pub cu: u16,
    /// Worker type.
    pub kind: Kind,
    /// Expected start.
    pub start: Time,
    /// Expected finish.
    pub finish: Time,
    /// Absolute deadline.
    pub deadline: Time,
    /// The requests in its invocation: 1 alone, more in a batch.
    pub batch: u32,
}

impl Assignment {
    /// The compute unit it runs on.
    pub fn unit(&self) -> crate::model::Unit {
        crate::model::Unit { worker: self.worker, cu: self.cu }
    }

    /// Whether its optional part is to run.
    pub fn optional(&self) -> bool {
        self.request.optional > 0
    }

    /// The booked service time (mandatory plus any optional part) on its worker type; a batch's
    /// whole invocation for each of its members.
    pub fn service(&self) -> Time {
        self.finish - self.start
    }

    /// Its share of its invocation's service: all of it alone, an even split in a batch (what a
    /// queue's backlog and the allocator's telemetry count per request, so a batch counts once).
    pub fn share(&self) -> Time {
        self.service() / Time::from(self.batch.max(1))
    }
}

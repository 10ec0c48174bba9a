//! The worker pool: worker states plus the ordered indexes that make dispatch O(log n).
//!
//! The engine owns the `Pool` and changes it only through its methods; policies read it through
//! `&Pool`. Per worker type there are two ordered sets keyed by
//! `busy_until` (when the worker's queue drains): one for active workers, one for workers still
//! spinning up. Because a worker's queue is FIFO with known service times, "the busiest worker that
//! can still meet a deadline" is the largest key at or below `deadline - service`, one range query.

use super::ledger::Ledger;
use super::per_kind::PerKind;
use super::platform::Kind;
use super::time::Time;
use super::units::{Lanes, Unit};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use super::ordered::OrderedSet;

/// A worker's slot in the pool. Slots are reused (lowest first), so ids stay small and dense.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkerId(pub u32);

impl WorkerId {
    /// Slot index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Where a worker is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerState {
    /// Configuring; ready at `ready_at`.
    SpinningUp,
    /// Serving or idle.
    Active,
    /// Taken out of dispatch by a surplus rule that enforces the target (MArk-ideal): it finishes its
    /// queue and idles out unless it is taken back.
    Draining,
    /// Releasing; gone at `off_at`.
    SpinningDown,
    /// Slot free.
    Off,
}

impl WorkerState {
    /// The dispatch index it is in: active, spinning up, or none (out of dispatch).
    pub fn phase(self) -> Option<Phase> {
        match self {
            WorkerState::Active => Some(Phase::Active),
            WorkerState::SpinningUp => Some(Phase::Allocating),
            _ => None,
        }
    }

    /// Snake-case name (metrics labels).
    pub fn name(self) -> &'static str {
        match self {
            WorkerState::SpinningUp => "spinning_up",
            WorkerState::Active => "active",
            WorkerState::Draining => "draining",
            WorkerState::SpinningDown => "spinning_down",
            WorkerState::Off => "off",
        }
    }
}

/// One worker.
#[derive(Clone, Copy, Debug)]
pub struct Worker {
    /// Its type.
    pub kind: Kind,
    /// Its state.
    pub state: WorkerState,
    /// Bumped each time the slot is reused, so stale timers can be recognised.
    pub generation: u32,
    /// When it was allocated.
    pub allocated_at: Time,
    /// When it can (or could) start serving.
    pub ready_at: Time,
    /// When its queue drains (at least `ready_at`).
    pub busy_until: Time,
    /// When the release decision was taken (valid while spinning down).
    pub released_at: Time,
    /// When spin-down ends (valid while spinning down).
    pub off_at: Time,
    /// Spin-up time charged before `allocated_at` (a pool pre-warmed before the run starts).
    pub prewarm: Time,
    /// Total service time assigned (summed over its compute units).
    pub busy: Time,
    /// Time at least one of its compute units was serving (equal to `busy` with one CU).
    pub occupied: Time,
    /// Requests assigned.
    pub served: u64,
    /// Workers of its type already allocated when it was allocated (the key of Algorithm 1's L).
    pub rank: u32,
    /// Index packing's server number (see [`Numbering`]).
    pub seq: u64,
}

impl Worker {
    /// When a request assigned now would start.
    pub fn start_at(&self, now: Time) -> Time {
        self.busy_until.max(now)
    }

    /// Whether it has queued or running work at `now`.
    pub fn is_busy(&self, now: Time) -> bool {
        self.busy_until > now
    }
}

/// A worker that finished spinning down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Released {
    /// Its type.
    pub kind: Kind,
    /// Its rank at allocation.
    pub rank: u32,
    /// From allocation to the release decision.
    pub lifetime: Time,
}

/// Which ordered index to query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Active workers (busy or idle).
    Active,
    /// Workers spinning up.
    Allocating,
}

/// How workers are numbered for index packing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Numbering {
    /// A new worker takes the lowest number free (its slot), as AutoScale's fixed server indices: a
    /// number comes back when its worker is off.
    #[default]
    LowestFree,
    /// Allocation order across both types, never reused: the first workers keep the lowest numbers.
    Allocation,
    /// The lowest free number as [`Self::LowestFree`], but every FPGA numbered before every CPU (a
    /// reading of AutoScale's indices on a hybrid pool in which the efficient servers come first).
    FpgasFirst,
}

/// The worker pool.
#[derive(Clone, Debug, Default)]
pub struct Pool {
    slots: Vec<Worker>,
    free: BinaryHeap<Reverse<u32>>,
    active: PerKind<OrderedSet<(Time, WorkerId)>>,
    allocating: PerKind<OrderedSet<(Time, WorkerId)>>,
    /// Draining workers, lowest slot first (the order they are taken back in).
    draining: PerKind<BTreeSet<WorkerId>>,
    /// Dispatchable workers (spinning up or active) by number.
    order: BTreeSet<(u64, WorkerId)>,
    numbering: Numbering,
    next_seq: u64,
    allocated: PerKind<u32>,
    spinning_down: PerKind<u32>,
    peak: PerKind<u32>,
    ledger: PerKind<Ledger>,
    /// Compute units per worker of each type (1 unless a board holds several).
    units: PerKind<u16>,
    /// The CU queues of types with more than one CU per worker.
    lanes: PerKind<Lanes>,
}

impl Pool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::numbered(Numbering::default())
    }

    /// An empty pool whose workers are numbered by `numbering` (index packing's order).
    pub fn numbered(numbering: Numbering) -> Self {
        Pool { numbering, units: PerKind::new(1, 1), ..Self::default() }
    }

    /// This pool with `n` compute units on each worker of `kind` (at least 1).
    pub fn with_compute_units(mut self, kind: Kind, n: u16) -> Self {
        self.units[kind] = n.max(1);
        self
    }

    /// Whether workers of `kind` hold several CUs (dispatch then reads the CU index).
    fn multi(&self, kind: Kind) -> bool {
        self.units[kind] > 1
    }

    /// A worker by id. Panics on an id the pool never handed out (a driver bug, not an input error).
    pub fn worker(&self, id: WorkerId) -> &Worker {
        &self.slots[id.index()]
    }

    /// Every slot, live or not, in index order.
    pub fn slots(&self) -> &[Worker] {
        &self.slots
    }

    /// Workers of `kind` allocated and not being released (spinning up, active or draining).
    pub fn allocated(&self, kind: Kind) -> u32 {
        self.allocated[kind]
    }

    /// Workers of `kind` allocated but draining (out of dispatch).
    pub fn draining(&self, kind: Kind) -> u32 {
        self.draining[kind].len() as u32
    }

    /// Workers of `kind` spinning down.
    pub fn spinning_down(&self, kind: Kind) -> u32 {
        self.spinning_down[kind]
    }

    /// Workers of `kind` spinning up.
    pub fn spinning_up(&self, kind: Kind) -> u32 {
        self.allocating[kind].len() as u32
    }

    /// The most workers of `kind` held at once (spinning up, active or spinning down).
    pub fn peak(&self, kind: Kind) -> u32 {
        self.peak[kind]
    }

    /// Accounting of the released workers of `kind`.
    pub fn ledger(&self, kind: Kind) -> &Ledger {
        &self.ledger[kind]
    }

    fn index_mut(&mut self, phase: Phase, kind: Kind) -> &mut OrderedSet<(Time, WorkerId)> {
        match phase {
            Phase::Active => &mut self.active[kind],
            Phase::Allocating => &mut self.allocating[kind],
        }
    }

    /// The ordered index of `phase` workers of `kind`, keyed by `(busy_until, id)`.
    pub fn index(&self, phase: Phase, kind: Kind) -> &OrderedSet<(Time, WorkerId)> {
        match phase {
            Phase::Active => &self.active[kind],
            Phase::Allocating => &self.allocating[kind],
        }
    }

    /// The `phase` compute unit of `kind` whose queue drains latest at or before `limit`: for active
    /// workers, the busiest one that is free by `limit`, or if none is busy, the one idle the
    /// shortest time (if `limit >= now`). With one CU per worker, a worker's unit 0.
    #[inline]
    pub fn latest_free_by(&self, phase: Phase, kind: Kind, now: Time, limit: Time) -> Option<Unit> {
        if limit < now {
            return None;
        }
        if self.multi(kind) {
            return self.latest_cu_free_by(phase, kind, limit);
        }
        self.index(phase, kind).last_at_most(&(limit, WorkerId(u32::MAX))).map(|&(_, id)| Unit::of(id))
    }

    /// [`Self::latest_free_by`] on the CU index (kept out of line: the one-CU path is the hot one).
    #[inline(never)]
    fn latest_cu_free_by(&self, phase: Phase, kind: Kind, limit: Time) -> Option<Unit> {
        let top = (limit, Unit { worker: WorkerId(u32::MAX), cu: u16::MAX });
        self.lanes[kind].index(phase).last_at_most(&top).map(|&(_, u)| u)
    }

    /// The compute unit of `kind` (active or spinning up) whose queue drains first.
    pub fn earliest_free(&self, kind: Kind) -> Option<Unit> {
        if self.multi(kind) {
            let l = &self.lanes[kind];
            let (a, b) = (l.index(Phase::Active).first(), l.index(Phase::Allocating).first());
            return [a, b].into_iter().flatten().min().map(|&(_, u)| u);
        }
        let a = self.active[kind].first();
        let b = self.allocating[kind].first();
        match (a, b) {
            (Some(x), Some(y)) => Some(Unit::of(if x <= y { x.1 } else { y.1 })),
            (Some(x), None) | (None, Some(x)) => Some(Unit::of(x.1)),
            (None, None) => None,
        }
    }

    /// The active compute units of `kind`, each with when its queue drains, earliest first.
    pub fn active_units(&self, kind: Kind) -> Vec<(Time, Unit)> {
        if self.multi(kind) {
            return self.lanes[kind].index(Phase::Active).iter().copied().collect();
        }
        self.active[kind].iter().map(|&(t, id)| (t, Unit::of(id))).collect()
    }

    /// When `unit`'s queue drains.
    pub fn drains_at(&self, unit: Unit) -> Time {
        let w = self.worker(unit.worker);
        if self.multi(w.kind) { self.lanes[w.kind].drains_at(unit) } else { w.busy_until }
    }

    /// When a request assigned to `unit` now would start.
    pub fn start_at(&self, unit: Unit, now: Time) -> Time {
        self.drains_at(unit).max(now)
    }

    /// The compute unit of worker `id` whose queue drains first (its only one with one CU).
    pub fn earliest_unit(&self, id: WorkerId) -> Unit {
        let kind = self.worker(id).kind;
        if self.multi(kind) { self.lanes[kind].earliest_of(id) } else { Unit::of(id) }
    }

    /// Starts spinning up a worker of `kind` at `now`, ready at `now + spin_up`.
    pub fn spin_up(&mut self, kind: Kind, now: Time, spin_up: Time) -> WorkerId {
        self.add(kind, now, now + spin_up, spin_up, 0, WorkerState::SpinningUp)
    }

    /// Adds a worker of `kind` that is ready at `now`, its spin-up (`spin_up`) charged as having
    /// happened just before: a pool pre-warmed before the run starts.
    pub fn prewarm(&mut self, kind: Kind, now: Time, spin_up: Time) -> WorkerId {
        self.add(kind, now, now, spin_up, spin_up, WorkerState::Active)
    }

    fn add(
        &mut self,
        kind: Kind,
        now: Time,
        ready_at: Time,
        spin: Time,
        prewarm: Time,
        state: WorkerState,
    ) -> WorkerId {
        let rank = self.allocated[kind];
        let fresh = Worker {
            kind,
            state,
            generation: 0,
            allocated_at: now,
            ready_at,
            busy_until: ready_at,
            released_at: 0,
            off_at: 0,
            prewarm,
            busy: 0,
            occupied: 0,
            served: 0,
            rank,
            seq: self.next_seq,
        };
        self.next_seq += 1;
        let id = match self.free.pop() {
            Some(Reverse(slot)) => {
                let generation = self.slots[slot as usize].generation.wrapping_add(1);
                self.slots[slot as usize] = Worker { generation, ..fresh };
                WorkerId(slot)
            }
            None => {
                self.slots.push(fresh);
                WorkerId(self.slots.len() as u32 - 1)
            }
        };
        match self.numbering {
            // Slots are reused lowest first and freed when their worker is off.
            Numbering::LowestFree => self.slots[id.index()].seq = u64::from(id.0),
            Numbering::FpgasFirst => {
                self.slots[id.index()].seq = (u64::from(kind == Kind::Cpu) << 32) | u64::from(id.0)
            }
            Numbering::Allocation => {}
        }
        self.order.insert((self.pool_seq(id), id));
        self.allocated[kind] += 1;
        let held = self.allocated[kind] + self.spinning_down[kind];
        self.peak[kind] = self.peak[kind].max(held);
        let l = &mut self.ledger[kind];
        l.spin_ups += 1;
        l.spinning += spin;
        let phase = if state == WorkerState::Active { Phase::Active } else { Phase::Allocating };
        self.index_mut(phase, kind).insert((ready_at, id));
        if self.multi(kind) {
            let n = self.units[kind];
            self.lanes[kind].add(id, n, ready_at, phase);
        }
        id
    }

    fn pool_seq(&self, id: WorkerId) -> u64 {
        self.slots[id.index()].seq
    }

    /// Dispatchable workers (spinning up or active), lowest number first.
    pub fn in_number_order(&self) -> impl Iterator<Item = WorkerId> + '_ {
        self.order.iter().map(|&(_, id)| id)
    }

    /// Dispatchable workers (spinning up or active) in slot order, from slot `from` round to the one
    /// before it: the slots a rotation over the pool visits, less those of workers that are off
    /// (their slots outnumber the live ones once a burst has passed).
    pub fn rotation_from(&self, from: usize) -> Box<dyn Iterator<Item = WorkerId> + '_> {
        if self.numbering == Numbering::LowestFree {
            // Numbers are slots: the ordered index of dispatchable workers is the rotation.
            let at = (from as u64, WorkerId(0));
            let id = |&(_, id): &(u64, WorkerId)| id;
            return Box::new(self.order.range(at..).map(id).chain(self.order.range(..at).map(id)));
        }
        let n = self.slots.len();
        let live = move |i: usize| self.slots[i].state.phase().is_some().then_some(WorkerId(i as u32));
        Box::new((0..n).filter_map(move |k| live((from + k) % n)))
    }

    /// Marks a spinning-up worker active (its ready time has come).
    pub fn finish_spin_up(&mut self, id: WorkerId) {
        let w = &mut self.slots[id.index()];
        debug_assert_eq!(w.state, WorkerState::SpinningUp);
        w.state = WorkerState::Active;
        let (key, kind) = ((w.busy_until, id), w.kind);
        self.allocating[kind].remove(&key);
        self.active[kind].insert(key);
        if self.multi(kind) {
            self.lanes[kind].move_board(id, Some(Phase::Allocating), Some(Phase::Active));
        }
    }

    /// Queues `service` of work on a compute unit; returns when it starts and finishes.
    #[inline]
    pub fn assign(&mut self, unit: impl Into<Unit>, now: Time, service: Time) -> (Time, Time) {
        let unit = unit.into();
        let id = unit.worker;
        let w = &mut self.slots[id.index()];
        debug_assert!(matches!(w.state, WorkerState::Active | WorkerState::SpinningUp));
        let kind = w.kind;
        if self.units[kind] > 1 {
            return self.assign_cu(unit, now, service);
        }
        // One CU: the worker's queue is the CU's (the evaluator's hot path).
        let start = w.start_at(now);
        let finish = start + service;
        let old = (w.busy_until, id);
        w.busy_until = finish;
        w.busy += service;
        w.occupied += service;
        w.served += 1;
        let phase = if w.state == WorkerState::Active { Phase::Active } else { Phase::Allocating };
        self.index_mut(phase, kind).rekey(&old, (finish, id));
        (start, finish)
    }

    /// [`Self::assign`] on a board of several CUs: the CU's own queue, and the board's drain.
    #[inline(never)]
    fn assign_cu(&mut self, unit: Unit, now: Time, service: Time) -> (Time, Time) {
        let id = unit.worker;
        let (kind, phase) = (self.slots[id.index()].kind, self.slots[id.index()].state.phase());
        let start = self.lanes[kind].drains_at(unit).max(now);
        let finish = start + service;
        self.lanes[kind].set(unit, finish, phase);
        let w = &mut self.slots[id.index()];
        // The board is occupied from here where no other CU already had it busy: a CU's queue
        // starts at `now` or where it drained, so the board's busy future is one span to `busy_until`.
        w.occupied += finish.saturating_sub(start.max(w.busy_until));
        w.busy += service;
        w.served += 1;
        if finish > w.busy_until {
            self.rekey(id, finish);
        }
        (start, finish)
    }

    /// Sets worker `id`'s `busy_until` to `until`, re-keying it in its index if it is dispatchable.
    fn rekey(&mut self, id: WorkerId, until: Time) {
        let w = &mut self.slots[id.index()];
        let old = std::mem::replace(&mut w.busy_until, until);
        if let Some(phase) = w.state.phase() {
            let kind = w.kind;
            self.index_mut(phase, kind).rekey(&(old, id), (until, id));
        }
    }

    /// Pushes a compute unit's drain out to `until` if that is later (its real queue is behind the
    /// booking); busy time, which energy is charged on, is unchanged: waiting is not work.
    pub fn delay(&mut self, unit: Unit, until: Time) {
        let w = &self.slots[unit.worker.index()];
        let (kind, state) = (w.kind, w.state);
        if !matches!(state, WorkerState::Active | WorkerState::SpinningUp | WorkerState::Draining) {
            return;
        }
        if self.multi(kind) && until > self.lanes[kind].drains_at(unit) {
            self.lanes[kind].set(unit, until, state.phase());
        }
        if until > self.slots[unit.worker.index()].busy_until {
            self.rekey(unit.worker, until);
        }
    }

    /// Sets an active CPU's drain to `until`, earlier or later than its booking (its real queue ran
    /// shorter or longer than booked: a live client's request is booked at an estimate), never
    /// before it was ready; busy time is unchanged, as in [`Pool::delay`]. A board, whose booking is
    /// its own timeline and may hold a batch not yet sent, is only ever [`Pool::delay`]ed.
    pub fn settle(&mut self, unit: Unit, until: Time) {
        let w = &self.slots[unit.worker.index()];
        if w.kind != Kind::Cpu || w.state != WorkerState::Active || self.multi(w.kind) {
            return self.delay(unit, until);
        }
        let until = until.max(w.ready_at);
        if until != w.busy_until {
            self.rekey(unit.worker, until);
        }
    }

    /// Drops a failed worker's queue at `now`: the work it had not done leaves its busy time (it is
    /// re-run elsewhere), so it can be released at once.
    pub fn abort_queue(&mut self, id: WorkerId, now: Time) {
        let w = &self.slots[id.index()];
        if w.busy_until <= now {
            return;
        }
        let (kind, phase, ready_at) = (w.kind, w.state.phase(), w.ready_at);
        // What a queue draining at `until` had not done by `now` (nothing before the worker was ready).
        let undone = |until: Time| until.saturating_sub(now.max(ready_at.min(until)));
        let cu_undone: Time = if self.multi(kind) {
            let lanes: Vec<_> = self.lanes[kind].of(id).collect();
            let mut sum = 0;
            for (unit, until) in lanes.into_iter().filter(|&(_, t)| t > now) {
                sum += undone(until);
                self.lanes[kind].set(unit, now, phase);
            }
            sum
        } else {
            undone(w.busy_until)
        };
        let w = &mut self.slots[id.index()];
        let board_undone = undone(w.busy_until);
        w.busy = w.busy.saturating_sub(cu_undone);
        w.occupied = w.occupied.saturating_sub(board_undone);
        self.rekey(id, now);
    }

    /// Takes an active worker out of dispatch: it keeps its queue and can be released once idle.
    pub fn drain(&mut self, id: WorkerId) {
        let w = &mut self.slots[id.index()];
        debug_assert_eq!(w.state, WorkerState::Active);
        w.state = WorkerState::Draining;
        let (key, kind, seq) = ((w.busy_until, id), w.kind, w.seq);
        self.active[kind].remove(&key);
        self.order.remove(&(seq, id));
        self.draining[kind].insert(id);
        if self.multi(kind) {
            self.lanes[kind].move_board(id, Some(Phase::Active), None);
        }
    }

    /// Returns a draining worker to dispatch.
    pub fn undrain(&mut self, id: WorkerId) {
        let w = &mut self.slots[id.index()];
        debug_assert_eq!(w.state, WorkerState::Draining);
        w.state = WorkerState::Active;
        let (key, kind, seq) = ((w.busy_until, id), w.kind, w.seq);
        self.active[kind].insert(key);
        self.order.insert((seq, id));
        self.draining[kind].remove(&id);
        if self.multi(kind) {
            self.lanes[kind].move_board(id, None, Some(Phase::Active));
        }
    }

    /// Draining workers of `kind`, lowest slot first.
    pub fn draining_workers(&self, kind: Kind) -> impl Iterator<Item = WorkerId> + '_ {
        self.draining[kind].iter().copied()
    }

    /// Starts releasing an idle worker (active or draining) at `now`; it is gone at `now + spin_down`.
    pub fn begin_spin_down(&mut self, id: WorkerId, now: Time, spin_down: Time) {
        let w = &mut self.slots[id.index()];
        debug_assert!(matches!(w.state, WorkerState::Active | WorkerState::Draining));
        debug_assert!(w.busy_until <= now, "releasing a busy worker");
        let was = w.state;
        w.state = WorkerState::SpinningDown;
        w.released_at = now;
        w.off_at = now + spin_down;
        let (key, kind, seq) = ((w.busy_until, id), w.kind, w.seq);
        if was == WorkerState::Draining {
            self.draining[kind].remove(&id);
        } else {
            self.active[kind].remove(&key);
            self.order.remove(&(seq, id));
            if self.multi(kind) {
                self.lanes[kind].move_board(id, Some(Phase::Active), None);
            }
        }
        self.allocated[kind] -= 1;
        self.spinning_down[kind] += 1;
    }

    /// Completes a spin-down: the worker's totals go to the ledger and its slot is freed.
    pub fn finish_spin_down(&mut self, id: WorkerId) -> Released {
        let w = &mut self.slots[id.index()];
        debug_assert_eq!(w.state, WorkerState::SpinningDown);
        w.state = WorkerState::Off;
        let kind = w.kind;
        let l = &mut self.ledger[kind];
        l.allocated += w.off_at - w.allocated_at + w.prewarm;
        l.spinning += w.off_at - w.released_at;
        l.busy += w.busy;
        l.occupied += w.occupied;
        l.served += w.served;
        let released = Released { kind, rank: w.rank, lifetime: w.released_at - w.allocated_at };
        self.spinning_down[kind] -= 1;
        self.free.push(Reverse(id.0));
        released
    }

    /// Whether no worker is allocated or spinning down.
    pub fn is_empty(&self) -> bool {
        self.allocated.total() == 0 && self.spinning_down.total() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_free_by_prefers_busiest_then_least_idle() {
        let mut p = Pool::new();
        let a = p.prewarm(Kind::Fpga, 0, 10);
        let b = p.prewarm(Kind::Fpga, 0, 10);
        let c = p.prewarm(Kind::Fpga, 0, 10);
        p.assign(a, 0, 50); // busy until 50
        p.assign(b, 0, 100); // busy until 100
        // At now=10, limit 60: b cannot (100 > 60); a can and is busier than idle c.
        assert_eq!(p.latest_free_by(Phase::Active, Kind::Fpga, 10, 60), Some(Unit::of(a)));
        // limit 200: b is the busiest that meets it.
        assert_eq!(p.latest_free_by(Phase::Active, Kind::Fpga, 10, 200), Some(Unit::of(b)));
        // limit below now: nobody can start in time.
        assert_eq!(p.latest_free_by(Phase::Active, Kind::Fpga, 10, 5), None);
        // Only idle c qualifies when limit is in [now, 50).
        assert_eq!(p.latest_free_by(Phase::Active, Kind::Fpga, 10, 20), Some(Unit::of(c)));
    }

    /// Two boards of three CUs: dispatch sees six queues, release sees two boards.
    fn two_boards_of_three() -> (Pool, WorkerId, WorkerId) {
        let mut p = Pool::new().with_compute_units(Kind::Fpga, 3);
        let (a, b) = (p.prewarm(Kind::Fpga, 0, 10), p.prewarm(Kind::Fpga, 0, 10));
        (p, a, b)
    }

    #[test]
    fn compute_units_are_packed_busiest_first_and_a_board_drains_with_its_last_cu() {
        let (mut p, a, b) = two_boards_of_three();
        let cu = |worker, cu| Unit { worker, cu };
        assert_eq!(p.active_units(Kind::Fpga).len(), 6);
        assert_eq!(p.assign(cu(a, 1), 0, 50), (0, 50));
        assert_eq!(p.assign(cu(b, 0), 0, 80), (0, 80));
        // Busiest CU that meets the limit, then the least idle: a.1 by 60, b.0 by 100.
        assert_eq!(p.latest_free_by(Phase::Active, Kind::Fpga, 10, 60), Some(cu(a, 1)));
        assert_eq!(p.latest_free_by(Phase::Active, Kind::Fpga, 10, 100), Some(cu(b, 0)));
        assert_eq!(p.latest_free_by(Phase::Active, Kind::Fpga, 10, 30), Some(cu(b, 2)));
        // The CUs of a board run side by side: a second request on `a` starts now, not at 50.
        assert_eq!(p.assign(cu(a, 0), 10, 20), (10, 30));
        assert_eq!(p.earliest_unit(a), cu(a, 2));
        assert_eq!(p.worker(a).busy_until, 50, "the board drains with its last CU");
        assert_eq!(p.earliest_free(Kind::Fpga), Some(cu(a, 2)));
        // Board a served 70 CU-seconds over 50 occupied ones.
        assert_eq!((p.worker(a).busy, p.worker(a).occupied), (70, 50));
        // Released whole once every CU is idle; its CUs leave dispatch with it.
        p.begin_spin_down(a, 50, 1);
        assert_eq!(p.active_units(Kind::Fpga).len(), 3);
        p.finish_spin_down(a);
        let l = p.ledger(Kind::Fpga);
        assert_eq!((l.busy, l.occupied, l.idle()), (70, 50, 0));
    }

    #[test]
    fn a_board_of_cus_draws_idle_power_once() {
        let (mut p, a, _) = two_boards_of_three();
        for c in 0..3 {
            p.assign(Unit { worker: a, cu: c }, 0, 1_000_000_000);
        }
        p.begin_spin_down(a, 2_000_000_000, 0);
        p.finish_spin_down(a);
        let spec = crate::model::Platform::default().fpga;
        let e = p.ledger(Kind::Fpga).energy(&spec);
        // One second with three CUs busy (20 W + 3 x 30 W), one idle second at 20 W (less the 10 ns
        // pre-warm charged as spin).
        assert!((e.busy_j - 110.0).abs() < 1e-9 && (e.idle_j - 20.0).abs() < 1e-6, "{e:?}");
    }

    #[test]
    fn a_failed_board_gives_back_every_cus_undone_work() {
        let (mut p, a, _) = two_boards_of_three();
        p.assign(Unit { worker: a, cu: 0 }, 0, 100);
        p.assign(Unit { worker: a, cu: 1 }, 0, 40);
        p.abort_queue(a, 20);
        let w = p.worker(a);
        assert_eq!((w.busy, w.occupied, w.busy_until), (40, 20, 20));
        assert_eq!(p.start_at(Unit { worker: a, cu: 0 }, 20), 20);
    }

    #[test]
    fn a_late_cu_delays_only_itself_and_its_board() {
        let (mut p, a, _) = two_boards_of_three();
        p.delay(Unit { worker: a, cu: 2 }, 70);
        assert_eq!(p.drains_at(Unit { worker: a, cu: 2 }), 70);
        assert_eq!(p.drains_at(Unit { worker: a, cu: 0 }), 0);
        assert_eq!(p.worker(a).busy_until, 70);
        assert_eq!(p.worker(a).busy, 0, "waiting is not work");
    }

    #[test]
    fn a_cpu_settles_on_its_real_drain_earlier_or_later_but_a_board_only_later() {
        let mut p = Pool::new();
        let cpu = p.prewarm(Kind::Cpu, 0, 10);
        let other = p.prewarm(Kind::Cpu, 0, 10);
        p.assign(cpu, 0, 100); // booked at an estimate: busy until 100
        p.assign(other, 0, 60);
        p.settle(Unit::of(cpu), 30); // ran shorter: free at 30
        assert_eq!(p.worker(cpu).busy_until, 30);
        assert_eq!((p.worker(cpu).busy, p.worker(cpu).occupied), (100, 100), "booked work is charged");
        // Dispatch sees it: by 50, the one that drains at 30 is the only one that can start.
        assert_eq!(p.latest_free_by(Phase::Active, Kind::Cpu, 10, 50), Some(Unit::of(cpu)));
        p.settle(Unit::of(cpu), 120); // and longer
        assert_eq!(p.worker(cpu).busy_until, 120);
        // Never before it is ready.
        let late = p.spin_up(Kind::Cpu, 0, 40);
        p.finish_spin_up(late);
        p.settle(Unit::of(late), 10);
        assert_eq!(p.worker(late).busy_until, 40);
        // A board keeps its booking unless later (a batch may be booked and not yet sent).
        let board = p.prewarm(Kind::Fpga, 0, 10);
        p.assign(board, 0, 100);
        p.settle(Unit::of(board), 30);
        assert_eq!(p.worker(board).busy_until, 100);
        p.settle(Unit::of(board), 130);
        assert_eq!(p.worker(board).busy_until, 130);
        let (mut b, a, _) = two_boards_of_three();
        b.assign(Unit { worker: a, cu: 0 }, 0, 100);
        b.settle(Unit { worker: a, cu: 0 }, 30);
        assert_eq!((b.drains_at(Unit { worker: a, cu: 0 }), b.worker(a).busy_until), (100, 100));
    }

    #[test]
    fn ledger_sums_allocated_busy_and_spin() {
        let mut p = Pool::new();
        let w = p.spin_up(Kind::Cpu, 100, 5);
        p.assign(w, 100, 20); // queued behind spin-up: 105..125
        p.finish_spin_up(w);
        p.begin_spin_down(w, 130, 5);
        let r = p.finish_spin_down(w);
        assert_eq!(r.lifetime, 30);
        let l = p.ledger(Kind::Cpu);
        assert_eq!((l.allocated, l.busy, l.spinning, l.spin_ups, l.served), (35, 20, 10, 1, 1));
        assert_eq!(l.idle(), 5);
        assert!(p.is_empty());
        // The slot is reused with a new generation.
        let w2 = p.spin_up(Kind::Fpga, 200, 10);
        assert_eq!(w2, w);
        assert_eq!(p.worker(w2).generation, 1);
    }
}

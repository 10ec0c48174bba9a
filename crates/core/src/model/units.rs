//! Compute units: a board that serves several requests at once, each on its own CU's queue.
//!
//! A board built with N compute units (N copies of the kernel beside one shell) is one worker to the
//! allocator and the fleet rules: it is spun up, held, drained and released whole. To dispatch it is
//! N FIFO queues. The pool keeps a board's `busy_until` as its last CU's drain (when the board is
//! idle, the release rule's clock) and, for N > 1, an ordered index of the CUs themselves keyed by
//! when each drains, so "the busiest CU that can still meet the deadline" is the same single range
//! query that finds the busiest board when N = 1.

use super::ordered::OrderedSet;
use super::pool::{Phase, WorkerId};
use super::time::Time;

/// Most compute units one board may hold: far beyond what fits beside a shell on today's parts, and
/// small enough that a board's CU queues cost nothing to keep.
pub const MAX_COMPUTE_UNITS: u32 = 64;

/// One compute unit of a worker: where one request runs at a time. A worker with one unit (every CPU,
/// and a board of one CU) is addressed as its unit 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Unit {
    /// The worker (board) it belongs to.
    pub worker: WorkerId,
    /// Its index on that board.
    pub cu: u16,
}

impl Unit {
    /// Unit 0 of `worker`: the whole worker when it has one unit.
    pub const fn of(worker: WorkerId) -> Unit {
        Unit { worker, cu: 0 }
    }
}

impl From<WorkerId> for Unit {
    fn from(worker: WorkerId) -> Unit {
        Unit::of(worker)
    }
}

/// The CU queues of one worker type's boards, by pool slot, and their dispatch indexes.
#[derive(Clone, Debug, Default)]
pub(super) struct Lanes {
    /// When each CU's queue drains, by slot then CU (empty for slots never used).
    busy: Vec<Vec<Time>>,
    /// CUs of active boards, keyed by `(drain, unit)`.
    active: OrderedSet<(Time, Unit)>,
    /// CUs of boards spinning up.
    allocating: OrderedSet<(Time, Unit)>,
}

impl Lanes {
    fn index_mut(&mut self, phase: Phase) -> &mut OrderedSet<(Time, Unit)> {
        match phase {
            Phase::Active => &mut self.active,
            Phase::Allocating => &mut self.allocating,
        }
    }

    /// The CU index of `phase`.
    pub fn index(&self, phase: Phase) -> &OrderedSet<(Time, Unit)> {
        match phase {
            Phase::Active => &self.active,
            Phase::Allocating => &self.allocating,
        }
    }

    /// A new board in `slot` with `n` CUs, each free at `ready_at`, dispatchable in `phase`.
    pub fn add(&mut self, slot: WorkerId, n: u16, ready_at: Time, phase: Phase) {
        let i = slot.index();
        if self.busy.len() <= i {
            self.busy.resize(i + 1, Vec::new());
        }
        self.busy[i] = vec![ready_at; usize::from(n)];
        let set = self.index_mut(phase);
        set.extend((0..n).map(|cu| (ready_at, Unit { worker: slot, cu })));
    }

    /// When `unit`'s queue drains.
    pub fn drains_at(&self, unit: Unit) -> Time {
        self.busy[unit.worker.index()][usize::from(unit.cu)]
    }

    /// The CU of board `slot` whose queue drains first (lowest CU on a tie).
    pub fn earliest_of(&self, slot: WorkerId) -> Unit {
        let lanes = &self.busy[slot.index()];
        let cu = (0..lanes.len()).min_by_key(|&c| (lanes[c], c)).unwrap_or(0);
        Unit { worker: slot, cu: cu as u16 }
    }

    /// Moves `unit`'s drain to `until`, re-keying it in `phase`'s index (none: out of dispatch).
    pub fn set(&mut self, unit: Unit, until: Time, phase: Option<Phase>) {
        let lane = &mut self.busy[unit.worker.index()][usize::from(unit.cu)];
        let old = std::mem::replace(lane, until);
        if let Some(phase) = phase {
            self.index_mut(phase).rekey(&(old, unit), (until, unit));
        }
    }

    /// Every CU of board `slot` with when it drains.
    pub fn of(&self, slot: WorkerId) -> impl Iterator<Item = (Unit, Time)> + '_ {
        self.busy[slot.index()]
            .iter()
            .enumerate()
            .map(move |(cu, &t)| (Unit { worker: slot, cu: cu as u16 }, t))
    }

    /// Takes board `slot`'s CUs out of `from`'s index and, if `to` is given, into `to`'s.
    pub fn move_board(&mut self, slot: WorkerId, from: Option<Phase>, to: Option<Phase>) {
        let keys: Vec<(Time, Unit)> = self.of(slot).map(|(u, t)| (t, u)).collect();
        if let Some(from) = from {
            let set = self.index_mut(from);
            for k in &keys {
                set.remove(k);
            }
        }
        if let Some(to) = to {
            self.index_mut(to).extend(keys);
        }
    }
}

//! Requests in flight: booked on a worker, not yet answered. Board jobs that have started are also
//! kept by when they time out, so overdue ones are found without a scan.

use std::collections::{BTreeSet, HashMap};

use super::incoming::{Inputs, Reply};
use spork_core::engine::Assignment;
use spork_core::model::{Kind, Time, Unit, WorkerId};

/// A request in flight.
#[derive(Debug)]
pub(super) struct Outstanding {
    /// Where the engine booked it, and the request as booked (a re-run is booked anew).
    pub booked: Assignment,
    /// When the request first arrived: its latency counts from here, whatever re-runs it took.
    pub arrived: Time,
    /// Its inputs (a trace's request sent to a board far behind holds only its spec).
    pub inputs: Inputs,
    /// Where a client waits for the answer.
    pub reply: Option<Reply>,
    /// The worker (generation) it was sent to.
    pub generation: u64,
    /// When the worker started it (board jobs are timed out from here).
    pub started: Option<Time>,
}

impl Outstanding {
    /// Its pool slot.
    pub fn slot(&self) -> WorkerId {
        self.booked.worker
    }

    /// Whether `slot`'s worker of `generation` holds it.
    pub fn on(&self, slot: WorkerId, generation: u64) -> bool {
        self.booked.worker == slot && self.generation == generation
    }
}

/// The requests in flight, by id, and the started board jobs by their timeout.
pub(super) struct InFlight {
    by_id: HashMap<u64, Outstanding>,
    /// Requests in flight per compute unit, and their booked service.
    per_unit: HashMap<Unit, (usize, Time)>,
    timeouts: BTreeSet<(Time, u64)>,
    limit: Time,
}

impl InFlight {
    /// Board jobs running longer than `limit` time out.
    pub fn new(limit: Time) -> InFlight {
        InFlight { by_id: HashMap::new(), per_unit: HashMap::new(), timeouts: BTreeSet::new(), limit }
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn insert(&mut self, id: u64, o: Outstanding) {
        let unit = self.per_unit.entry(o.booked.unit()).or_default();
        *unit = (unit.0 + 1, unit.1 + o.booked.share());
        self.by_id.insert(id, o);
    }

    /// Requests in flight on compute unit `unit`.
    pub fn on_unit(&self, unit: Unit) -> usize {
        self.per_unit.get(&unit).map_or(0, |s| s.0)
    }

    /// The booked service of the requests in flight on compute unit `unit`: what its queue still has
    /// to run, as the engine booked it.
    pub fn queued_service(&self, unit: Unit) -> Time {
        self.per_unit.get(&unit).map_or(0, |s| s.1)
    }

    pub fn get(&self, id: u64) -> Option<&Outstanding> {
        self.by_id.get(&id)
    }

    /// Takes request `id` out (answered, moved or rejected).
    pub fn remove(&mut self, id: u64) -> Option<Outstanding> {
        let o = self.by_id.remove(&id)?;
        if let Some(n) = self.per_unit.get_mut(&o.booked.unit()) {
            *n = (n.0.saturating_sub(1), n.1.saturating_sub(o.booked.share()));
        }
        if let Some(s) = o.started.filter(|_| o.booked.kind == Kind::Fpga) {
            self.timeouts.remove(&(s.saturating_add(self.limit), id));
        }
        Some(o)
    }

    /// Request `id` started on `slot`'s worker of `generation` at `at`.
    pub fn started(&mut self, id: u64, slot: WorkerId, generation: u64, at: Time) {
        let limit = self.limit;
        let Some(o) = self.by_id.get_mut(&id).filter(|o| o.on(slot, generation)) else { return };
        o.started = Some(at);
        if o.booked.kind == Kind::Fpga {
            self.timeouts.insert((at.saturating_add(limit), id));
        }
    }

    /// When the next started board job times out.
    pub fn next_timeout(&self) -> Option<Time> {
        self.timeouts.first().map(|&(t, _)| t)
    }

    /// Board jobs that have run past the limit at `now`, taken out.
    pub fn take_overdue(&mut self, now: Time) -> Vec<(u64, Outstanding)> {
        let mut out = Vec::new();
        while let Some(&(due, id)) = self.timeouts.first().filter(|&&(due, _)| due < now) {
            self.timeouts.remove(&(due, id));
            if let Some(o) = self.remove(id) {
                out.push((id, o));
            }
        }
        out
    }

    /// Requests held by `slot`'s worker of `generation`, taken out.
    pub fn take_on(&mut self, slot: WorkerId, generation: u64) -> Vec<(u64, Outstanding)> {
        let ids: Vec<u64> =
            self.by_id.iter().filter(|(_, o)| o.on(slot, generation)).map(|(&id, _)| id).collect();
        ids.into_iter().filter_map(|id| self.remove(id).map(|o| (id, o))).collect()
    }

    /// Everything in flight, taken out.
    pub fn take_all(&mut self) -> Vec<(u64, Outstanding)> {
        self.timeouts.clear();
        self.per_unit.clear();
        self.by_id.drain().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::work::WorkSpec;
    use spork_core::model::Request;

    fn booked(kind: Kind, worker: u32) -> Outstanding {
        let request = Request::new(0, 1, 0);
        let booked = Assignment {
            request,
            worker: WorkerId(worker),
            cu: 0,
            kind,
            start: 0,
            finish: 1,
            deadline: 10,
            batch: 1,
        };
        let inputs = Inputs::Generated(WorkSpec::new(16, 0, 1, 0), None);
        Outstanding { booked, arrived: 0, inputs, reply: None, generation: 1, started: None }
    }

    #[test]
    fn only_started_board_jobs_time_out_in_deadline_order() {
        let mut f = InFlight::new(100);
        f.insert(1, booked(Kind::Fpga, 0));
        f.insert(2, booked(Kind::Fpga, 0));
        f.insert(3, booked(Kind::Cpu, 1));
        f.started(2, WorkerId(0), 1, 10);
        f.started(1, WorkerId(0), 1, 50);
        f.started(3, WorkerId(1), 1, 0);
        f.started(1, WorkerId(0), 2, 0); // another generation: ignored
        assert_eq!(f.next_timeout(), Some(110));
        assert!(f.take_overdue(110).is_empty(), "due at 110 is not yet past it");
        let over: Vec<u64> = f.take_overdue(200).into_iter().map(|(id, _)| id).collect();
        assert_eq!(over, vec![2, 1]);
        assert_eq!(f.len(), 1, "the CPU job never times out");
    }

    #[test]
    fn removing_a_request_forgets_its_timeout() {
        let mut f = InFlight::new(100);
        f.insert(1, booked(Kind::Fpga, 0));
        f.started(1, WorkerId(0), 1, 0);
        assert!(f.remove(1).is_some());
        assert_eq!(f.next_timeout(), None);
        assert!(f.take_overdue(1_000).is_empty());
    }
}

//! Admission: what becomes of a request that no worker can serve by its deadline.
//!
//! The paper queues it anyway (on the worker that starts it first, or a freshly spun-up one) and
//! counts a miss: right for an evaluator that measures misses, wrong for a live pool, where a board
//! that falls behind its model (a Verilated board slower than its clock, a real one stalled) would
//! then collect a backlog without bound. Bounded admission keeps every worker's queue within its
//! requests' deadlines: a request that would wait behind others into a miss is rejected at once, and
//! counted, so it can go elsewhere (a client's retry, a brownout-degraded answer) instead.

use crate::model::Time;
use serde::Serialize;

/// The admission rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Admission {
    /// The paper's: every request is placed; one that cannot meet its deadline is a miss.
    #[default]
    QueueLate,
    /// A queued request must finish by its deadline; one that would not is rejected. A worker
    /// spun up for the request still takes it (its queue is empty: nothing waits behind a backlog).
    RejectLate,
}

impl Admission {
    /// Whether a request finishing at `finish` with `deadline` may join a worker's existing queue.
    pub fn admits_queued(self, finish: Time, deadline: Time) -> bool {
        match self {
            Admission::QueueLate => true,
            Admission::RejectLate => finish <= deadline,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bounded_admission_refuses_a_late_queue() {
        assert!(Admission::QueueLate.admits_queued(11, 10));
        assert!(!Admission::RejectLate.admits_queued(11, 10));
        assert!(Admission::RejectLate.admits_queued(10, 10), "finishing at the deadline meets it");
    }
}

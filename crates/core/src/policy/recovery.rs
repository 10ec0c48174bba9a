//! What becomes of a worker and its request when a job goes wrong: the live pool's failure rules,
//! as pure code so that every driver (the pool's dispatcher loop, tests) applies the same ones.
//!
//! The rule of thumb: a request is never lost and never answered from a worker that cannot be
//! trusted. A board that failed, hung, vanished or answered what its job cannot have produced is
//! taken out of service and its request re-run on a CPU by the rescue rule (with its original
//! deadline); a job handed back unrun, or a board answer that differs from the reference, re-runs
//! without failing the worker (the former is a cancelled or replaced worker's queue, the latter is
//! caught on the worker's own thread, which stays usable). Only the CPU reference failing on an
//! input rejects the request: no worker can answer it.

use crate::model::Kind;

/// How a job (or its worker) went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The worker could not be configured: every job queued on it comes back.
    ConfigureFailed,
    /// The job was handed back unrun (its worker was cancelled or failed before starting it).
    HandedBack,
    /// The worker is gone (a worker host went down or stopped answering).
    Lost,
    /// The board's answer differs from the software reference.
    Mismatch,
    /// An answer the job cannot have produced (a worker host's wrong shape, time or values).
    BadAnswer,
    /// The kernel reported an error.
    KernelError,
    /// A board job ran past the kernel timeout.
    Timeout,
}

/// What to do about a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// Take the worker out of service (the engine releases it; its queue re-runs).
    pub fail_worker: bool,
    /// What becomes of the request.
    pub request: Fate,
}

/// What becomes of the failed job's request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Re-run on a CPU by the rescue rule, with its original deadline.
    Rerun,
    /// Rejected: no worker can answer it.
    Reject,
}

/// The rule for `failure` of a job on a worker of `kind`.
pub fn recover(kind: Kind, failure: Failure) -> Recovery {
    use Failure::*;
    let (fail_worker, request) = match failure {
        HandedBack | Mismatch => (false, Fate::Rerun),
        ConfigureFailed | Lost | BadAnswer | Timeout => (true, Fate::Rerun),
        KernelError if kind == Kind::Fpga => (true, Fate::Rerun),
        // The reference itself failed on this input.
        KernelError => (false, Fate::Reject),
    };
    Recovery { fail_worker, request }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Failure::*;

    const ALL: [Failure; 7] = [ConfigureFailed, HandedBack, Lost, Mismatch, BadAnswer, KernelError, Timeout];

    #[test]
    fn only_the_reference_failing_rejects_a_request() {
        for kind in [Kind::Cpu, Kind::Fpga] {
            for f in ALL {
                let reject = recover(kind, f).request == Fate::Reject;
                assert_eq!(reject, kind == Kind::Cpu && f == KernelError, "{kind:?} {f:?}");
            }
        }
    }

    #[test]
    fn an_untrusted_worker_is_taken_out_of_service() {
        for f in [ConfigureFailed, Lost, BadAnswer, Timeout] {
            assert!(recover(Kind::Cpu, f).fail_worker && recover(Kind::Fpga, f).fail_worker, "{f:?}");
        }
        assert!(recover(Kind::Fpga, KernelError).fail_worker);
        for f in [HandedBack, Mismatch] {
            assert!(!recover(Kind::Fpga, f).fail_worker, "{f:?}: the worker stays usable");
        }
    }
}

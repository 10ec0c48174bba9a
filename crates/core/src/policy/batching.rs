//! Dynamic batching: requests held for a moment to share one board invocation.
//!
//! A board invocation has a fixed cost (its launch and DMA set-up: [`crate::model::Link`]) that
//! dwarfs a small request's kernel time; a batch pays it once for all its members. Triton's dynamic
//! batcher is configured per model by a largest batch, preferred sizes and a maximum queue delay;
//! this rule keeps those and adds what Triton does not know, deadlines:
//!
//! - a request joins the forming batch if the batch with it still goes to an FPGA by the
//!   dispatcher's own deadline check (the batch as one job: its earliest deadline, its summed work,
//!   one invocation); otherwise the forming batch closes first and the request starts the next one,
//!   or goes alone if not even it alone would go to an FPGA;
//! - a batch closes when it is full or at a preferred size; when its delay has expired and the
//!   board it is bound for is free (closing before that board frees gains nothing, so a batch grows
//!   while its board is busy, as Triton forms a batch when an instance frees); and at the latest
//!   at the last start on that board that still meets its earliest deadline;
//! - at closing the dispatcher places the batch as one job; if no FPGA takes it, its member with
//!   the earliest deadline is placed alone (by the same dispatcher: on a CPU, mostly) and the rest
//!   tried again.
//!
//! A batch's size counts requests (each one concatenated along the item dimension): Triton counts
//! the batch dimension, which is the same for clients sending one item per request.

use super::dispatch::{Job, Placement};
use crate::model::{Kind, Platform, Pool, Time, Unit};
use serde::Serialize;

/// The most preferred sizes a model may list.
pub const MAX_PREFERRED: usize = 8;

/// The largest batch allowed: a batch is one job, its members' answers held until all are done.
pub const MAX_BATCH_SIZE: u32 = 4096;

/// The longest queue delay allowed (a second: beyond it no deadline of this project's requests
/// would be met).
pub const MAX_QUEUE_DELAY: Time = 1_000_000_000;

/// A model's dynamic batching, as Triton configures it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Batching {
    /// The most requests in one batch.
    pub max_batch_size: u32,
    /// Sizes at which a batch closes at once (ascending, 0 past the last).
    preferred: [u32; MAX_PREFERRED],
    /// The longest a batch waits for more requests once its board is free.
    pub max_queue_delay: Time,
}

/// A batching setting that cannot work.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BatchingError {
    /// The largest batch is out of range.
    #[error("max_batch_size {0} must be from 1 to {MAX_BATCH_SIZE}")]
    MaxBatchSize(u32),
    /// A preferred size is 0 or above the largest batch.
    #[error("preferred batch size {0} must be from 1 to max_batch_size ({1})")]
    Preferred(u32, u32),
    /// Too many preferred sizes.
    #[error("{0} preferred batch sizes: at most {MAX_PREFERRED}")]
    TooManyPreferred(usize),
    /// The delay is out of range.
    #[error("max queue delay {0} ns must be at most 1 s")]
    Delay(Time),
}

impl Batching {
    /// Batches of up to `max_batch_size` requests, closing at once at any of `preferred` sizes, and
    /// waiting at most `max_queue_delay` for more requests once their board is free.
    pub fn new(max_batch_size: u32, preferred: &[u32], max_queue_delay: Time) -> Result<Self, BatchingError> {
        if !(1..=MAX_BATCH_SIZE).contains(&max_batch_size) {
            return Err(BatchingError::MaxBatchSize(max_batch_size));
        }
        if preferred.len() > MAX_PREFERRED {
            return Err(BatchingError::TooManyPreferred(preferred.len()));
        }
        if let Some(&p) = preferred.iter().find(|&&p| p == 0 || p > max_batch_size) {
            return Err(BatchingError::Preferred(p, max_batch_size));
        }
        if max_queue_delay > MAX_QUEUE_DELAY {
            return Err(BatchingError::Delay(max_queue_delay));
        }
        let mut sizes = [0; MAX_PREFERRED];
        sizes[..preferred.len()].copy_from_slice(preferred);
        sizes[..preferred.len()].sort_unstable();
        Ok(Batching { max_batch_size, preferred: sizes, max_queue_delay })
    }

    /// The preferred sizes, ascending.
    pub fn preferred(&self) -> impl Iterator<Item = u32> + '_ {
        self.preferred.iter().copied().take_while(|&p| p > 0)
    }

    /// Whether a batch of `members` closes at once: it is full or at a preferred size.
    pub fn closes_at_size(&self, members: u32) -> bool {
        members >= self.max_batch_size || self.preferred().any(|p| p == members)
    }

    /// When `forming`, bound for a compute unit whose queue frees at `board_free` and placed as
    /// `job`, closes, at `now` or later (see the module's rule).
    pub fn close_at(&self, forming: &Forming, job: &Job, board_free: Time, now: Time) -> Time {
        if self.closes_at_size(forming.members) {
            return now;
        }
        let waited = forming.opened.saturating_add(self.max_queue_delay).max(board_free);
        let latest = job.latest_start(Kind::Fpga).unwrap_or(now);
        waited.min(latest).max(now)
    }
}

/// A batch being formed, as the rule sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forming {
    /// When its first member arrived.
    pub opened: Time,
    /// Its requests.
    pub members: u32,
    /// Its earliest member deadline: every member is answered when the batch is done.
    pub deadline: Time,
    /// Its members' summed CPU-time work, as they really are.
    pub work: Time,
    /// The same as dispatch sees it (at the size estimates, with unknown sizes).
    pub estimated: Time,
}

impl Forming {
    /// A batch opened at `now` by a request due by `deadline` of `work` (`estimated` for dispatch).
    pub fn open(now: Time, deadline: Time, work: Time, estimated: Time) -> Self {
        Forming { opened: now, members: 1, deadline, work, estimated }
    }

    /// The batch with one more member.
    pub fn with(&self, deadline: Time, work: Time, estimated: Time) -> Self {
        Forming {
            members: self.members + 1,
            deadline: self.deadline.min(deadline),
            work: self.work.saturating_add(work),
            estimated: self.estimated.saturating_add(estimated),
            ..*self
        }
    }

    /// The batch as one job on `platform`, as dispatch sees it: one invocation for all its work.
    pub fn job(&self, platform: &Platform) -> Job {
        job_of(platform, self.deadline, self.estimated)
    }

    /// The batch as one job as it really is.
    pub fn actual(&self, platform: &Platform) -> Job {
        job_of(platform, self.deadline, self.work)
    }
}

fn job_of(platform: &Platform, deadline: Time, work: Time) -> Job {
    Job { deadline, service: [platform.cpu.service(work), platform.fpga.service(work)] }
}

/// The compute unit a batch placed as `job` at `now` is bound for when the dispatcher answered
/// `placement`: an FPGA's that starts it in time for its earliest deadline, or none (a batch goes
/// only to a board, where it saves invocations, and never as a dispatcher's last resort: an
/// FPGA-only fleet queues a request it cannot serve in time on the board freeing first).
pub fn bound(pool: &Pool, placement: Placement, job: &Job, now: Time) -> Option<Unit> {
    let Placement::Assign(u) = placement else { return None };
    let in_time = job.latest_start(Kind::Fpga).is_some_and(|ls| pool.start_at(u, now) <= ls);
    (pool.worker(u.worker).kind == Kind::Fpga && in_time).then_some(u)
}

/// Which member of a batch that no FPGA takes is placed alone: the one due first (ties: the
/// earliest to join). `None` for no members.
pub fn peel(deadlines: impl Iterator<Item = Time>) -> Option<usize> {
    deadlines.enumerate().min_by_key(|&(i, d)| (d, i)).map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Link, Platform};

    fn rule(max: u32, preferred: &[u32], delay: Time) -> Batching {
        Batching::new(max, preferred, delay).expect("a valid setting")
    }

    #[test]
    fn impossible_settings_are_refused_with_their_reason() {
        assert_eq!(Batching::new(0, &[], 0), Err(BatchingError::MaxBatchSize(0)));
        assert_eq!(Batching::new(4, &[8], 0), Err(BatchingError::Preferred(8, 4)));
        assert_eq!(Batching::new(4, &[0], 0), Err(BatchingError::Preferred(0, 4)));
        assert_eq!(Batching::new(64, &[1; 9], 0), Err(BatchingError::TooManyPreferred(9)));
        assert_eq!(Batching::new(4, &[], 2_000_000_000), Err(BatchingError::Delay(2_000_000_000)));
        assert_eq!(rule(16, &[8, 2], 0).preferred().collect::<Vec<_>>(), vec![2, 8]);
    }

    #[test]
    fn a_batch_closes_full_or_at_a_preferred_size() {
        let b = rule(8, &[4], 1_000);
        let f = |n| Forming { members: n, ..Forming::open(0, 1_000_000, 10, 10) };
        let job = Job { deadline: 1_000_000, service: [10, 5] };
        assert_eq!(b.close_at(&f(3), &job, 0, 7), 1_000, "3 members wait for the delay");
        assert_eq!(b.close_at(&f(4), &job, 0, 7), 7, "a preferred size closes at once");
        assert_eq!(b.close_at(&f(8), &job, 0, 7), 7, "a full batch closes at once");
    }

    #[test]
    fn a_batch_waits_for_its_busy_board_but_never_past_its_earliest_deadline() {
        let b = rule(8, &[], 1_000);
        let f = Forming::open(0, 50_000, 10, 10);
        let job = Job { deadline: 50_000, service: [10, 5_000] };
        assert_eq!(b.close_at(&f, &job, 20_000, 0), 20_000, "it grows while its board is busy");
        assert_eq!(b.close_at(&f, &job, 90_000, 0), 45_000, "the last start that meets its deadline");
        assert_eq!(b.close_at(&f, &job, 90_000, 60_000), 60_000, "never in the past");
    }

    #[test]
    fn a_batch_pays_one_invocation_for_its_summed_work() {
        let mut p = Platform::default();
        p.fpga.speedup = 2.0;
        p.fpga.link = Some(Link { invocation: 50_000, bytes_per_s: 1e9, bytes_per_cpu_s: 0.0 });
        let f = Forming::open(0, 10_000_000, 1_000_000, 1_000_000).with(5_000_000, 1_000_000, 2_000_000);
        assert_eq!((f.members, f.deadline, f.work, f.estimated), (2, 5_000_000, 2_000_000, 3_000_000));
        let alone = p.fpga.service(1_000_000);
        assert_eq!(f.actual(&p).service[Kind::Fpga.index()], 2 * alone - 50_000, "one invocation, not two");
        assert_eq!(
            f.job(&p).service[Kind::Fpga.index()],
            p.fpga.service(3_000_000),
            "dispatch sees estimates"
        );
    }

    #[test]
    fn the_member_due_first_is_peeled() {
        assert_eq!(peel([30, 10, 20, 10].into_iter()), Some(1));
        assert_eq!(peel(std::iter::empty()), None);
    }
}

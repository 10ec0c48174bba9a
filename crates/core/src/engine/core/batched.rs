//! The engine's side of dynamic batching: the batch forming, its requests, and booking it as one
//! job. The rule (who joins, when a batch closes, who leaves it) is [`crate::policy::batching`]'s.

use super::Engine;
use crate::engine::effects::{Arrival, Assignment, Effects};
use crate::model::{Kind, Request, Time, Unit};
use crate::policy::Job;
use crate::policy::batching::{Batching, Forming, bound, peel};

/// A request held for a batch.
#[derive(Clone, Copy, Debug)]
pub(super) struct Member {
    /// What its driver settles it by.
    pub ticket: u64,
    pub request: Request,
    pub deadline: Time,
    /// How much earlier dispatch plans it to finish (see [`crate::engine::Plan::margin`]).
    pub margin: Time,
    /// Its size as dispatch sees it, with unknown sizes.
    pub estimate: Option<Time>,
}

impl Member {
    /// The deadline dispatch plans it by.
    fn aim(&self) -> Time {
        self.deadline.saturating_sub(self.margin)
    }

    /// Its work as it is, and as dispatch sees it (the rule sums both).
    fn work(&self) -> (Time, Time) {
        let r = &self.request;
        (r.size + r.optional, self.estimate.unwrap_or(r.size) + r.optional)
    }
}

/// The batch forming (when it closes is the engine's `batch_close`).
#[derive(Debug)]
struct Open {
    forming: Forming,
    members: Vec<Member>,
}

/// Dynamic batching's rule and the batch forming, if any.
#[derive(Debug)]
pub(super) struct Batcher {
    rule: Batching,
    open: Option<Open>,
}

impl Batcher {
    pub fn new(rule: Batching) -> Self {
        Batcher { rule, open: None }
    }
}

impl Engine {
    /// When the batch forming closes, if one is.
    pub(super) fn batch_due(&self) -> Option<Time> {
        (self.batch_close != Time::MAX).then_some(self.batch_close)
    }

    /// A request arrives with batching on: it joins the batch forming if the batch with it still
    /// goes to a board by its deadline; otherwise that batch closes and it opens the next, or goes
    /// alone if not even it alone would go to a board. Kept out of line: the paper's runs never
    /// batch, and the evaluator's hot path stays as it was.
    #[inline(never)]
    pub(super) fn arrive_batched(&mut self, m: Member, jobs: (Job, Job), fx: &mut impl Effects) -> Arrival {
        let now = m.request.arrival;
        if self.join(m, now) {
            return self.held(m.ticket, now, fx);
        }
        if self.batch_due().is_some() {
            self.close_batch(now, fx);
            if self.join(m, now) {
                return self.held(m.ticket, now, fx);
            }
        }
        let arrival = self.place(m.request, now, jobs, false, m.estimate, fx);
        self.counts.optional.1 += u64::from(matches!(arrival, Arrival::Assigned(a) if a.optional()));
        arrival
    }

    /// `m` is held under `ticket`; its batch closes now if the rule says so.
    fn held(&mut self, ticket: u64, now: Time, fx: &mut impl Effects) -> Arrival {
        if self.batch_due().is_some_and(|at| at <= now) {
            self.close_batch(now, fx);
        }
        Arrival::Held(ticket)
    }

    /// Adds `m` to the batch forming (or opens one with it) if the dispatcher sends the batch with
    /// it to a board; false, and nothing changed, otherwise.
    fn join(&mut self, m: Member, now: Time) -> bool {
        let Some(batch) = self.batch.as_ref() else { return false };
        let (work, estimated) = m.work();
        let forming = match &batch.open {
            Some(o) => o.forming.with(m.aim(), work, estimated),
            None => Forming::open(now, m.aim(), work, estimated),
        };
        let job = forming.job(&self.platform);
        let placement = self.dispatcher.place(&self.pool, &job, now);
        let Some(unit) = bound(&self.pool, placement, &job, now) else { return false };
        let close_at = batch.rule.close_at(&forming, &job, self.pool.start_at(unit, now), now);
        let Some(batch) = self.batch.as_mut() else { return false };
        let open = batch.open.get_or_insert_with(|| Open { forming, members: Vec::new() });
        open.forming = forming;
        open.members.push(m);
        self.batch_close = close_at;
        true
    }

    /// Closes the batch forming at `now`: the dispatcher places it as one job; while no board takes
    /// it (by its earliest deadline, and the admission rule), its member due first is placed alone.
    #[inline(never)]
    pub(super) fn close_batch(&mut self, now: Time, fx: &mut impl Effects) {
        let Some(open) = self.batch.as_mut().and_then(|b| b.open.take()) else { return };
        self.batch_close = Time::MAX;
        let mut members = open.members;
        while let Some(first) = members.first() {
            let (work, estimated) = first.work();
            let start = Forming::open(now, first.aim(), work, estimated);
            let forming = members[1..].iter().fold(start, |f, m| {
                let (work, estimated) = m.work();
                f.with(m.aim(), work, estimated)
            });
            let job = forming.job(&self.platform);
            let (placement, _) = self.decide(&job, now, false);
            if let Some(unit) = bound(&self.pool, placement, &job, now).filter(|&u| self.admits(u, &job, now))
            {
                return self.book_batch(members, unit, forming.actual(&self.platform), now, fx);
            }
            let Some(i) = peel(members.iter().map(Member::aim)) else { break };
            let m = members.remove(i);
            self.place_alone(m, now, fx);
        }
    }

    /// Places a held request alone at `now`, by the dispatcher, and settles it.
    fn place_alone(&mut self, m: Member, now: Time, fx: &mut impl Effects) {
        let jobs = self.jobs(&m.request, m.deadline, m.estimate, m.margin);
        let arrival = self.place(m.request, now, jobs, false, m.estimate, fx);
        self.counts.optional.1 += u64::from(matches!(arrival, Arrival::Assigned(a) if a.optional()));
        fx.resolved(&[(m.ticket, arrival)]);
    }

    /// Books `members` on board unit `unit` at `now` as one job of `job`'s service (one invocation
    /// for their summed work), and settles them: each is tallied by its own arrival and deadline.
    fn book_batch(&mut self, members: Vec<Member>, unit: Unit, job: Job, now: Time, fx: &mut impl Effects) {
        let (id, kind) = (unit.worker, Kind::Fpga);
        let (start, finish) = self.occupy(unit, kind, now, job.service[kind.index()]);
        let batch = members.len() as u32;
        self.counts.batches.0 += 1;
        self.counts.batches.1 += u64::from(batch);
        let mut settled = Vec::with_capacity(members.len());
        for m in members {
            let r = m.request;
            self.counts.total_size += r.size + r.optional;
            self.counts.optional.1 += u64::from(r.optional > 0);
            self.tally.record(kind, finish - r.arrival, finish > m.deadline);
            self.sizes.booked(m.estimate, r.size, finish);
            fx.served(&r, id, kind, start, finish);
            let a = Assignment {
                request: r,
                worker: id,
                cu: unit.cu,
                kind,
                start,
                finish,
                deadline: m.deadline,
                batch,
            };
            settled.push((m.ticket, Arrival::Assigned(a)));
        }
        fx.resolved(&settled);
    }
}

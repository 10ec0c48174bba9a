//! A batch on a worker: its members' inputs stacked into one payload (see
//! [`crate::datapath::batch`]), run as one invocation, the answer cut back and each member answered
//! and held to the reference on its own. Members that do not stack run one after another.

use super::{Event, JobMsg, PoolJobs, board_span, run_guarded};
use crate::backend::{Backend, BackendError};
use crate::datapath::batch::concat;
use crate::datapath::work::{Answer, Payload};
use spork_core::model::Unit;

impl PoolJobs {
    /// Runs `job` and its batch as one invocation, or one at a time if they do not stack (or
    /// carry optional parts to run, which a batch does not stack).
    pub(super) fn run_batch(&mut self, backend: &mut dyn Backend, job: JobMsg) {
        let ids: Vec<u64> = job.ids().collect();
        let works: Vec<_> = std::iter::once(&job.input)
            .chain(job.batch.iter().map(|m| &m.1))
            .map(|i| self.image.inputs(i))
            .collect();
        let optional = job.optional && works.iter().any(|w| w.optional.is_some());
        let payloads: Vec<&Payload> = works.iter().map(|w| &w.mandatory).collect();
        let Some((batch, cuts)) = concat(&payloads, &self.image.kernel).filter(|_| !optional) else {
            return self.one_at_a_time(backend, job);
        };
        let start = self.clock.now();
        let (unit, generation) = (Unit { worker: self.slot, cu: self.cu }, self.generation);
        for &id in &ids {
            let _ = self.events.send(Event::Started { id, unit, generation, at: start });
        }
        if let Some(stall) = job.stall {
            std::thread::sleep(stall);
        }
        let ran = run_guarded(backend, &batch);
        let end = self.clock.now();
        let ran = ran.and_then(|m| {
            let parts = cuts.split(&m.output).ok_or_else(|| {
                BackendError::BadAnswer(format!(
                    "a batch answer of {} values cut for {} members",
                    m.output.len(),
                    cuts.len()
                ))
            })?;
            Ok((m, parts))
        });
        let (m, parts) = match ran {
            Ok(r) => r,
            Err(e) => {
                for id in ids {
                    self.done(id, backend.power(), (start, end), (None, false), Err(e.clone()));
                }
                return;
            }
        };
        // One invocation for the whole batch, and its bytes both ways.
        let link = if backend.models_link() {
            let bytes = batch.bytes() + m.output.bytes();
            self.link.invocation.saturating_add(self.link.transfer(bytes))
        } else {
            0
        };
        let device = m.device.map(|_| {
            let span = board_span(self.device_free.max(job.dispatched), &[m.device], link);
            self.device_free = span.1;
            span
        });
        let end = self.released(backend, device, end);
        for ((id, work), part) in ids.into_iter().zip(&works).zip(parts) {
            let answer = Answer { mandatory: part, optional: None };
            let mismatch = !backend.is_reference()
                && !backend.checks_answers()
                && self.image.answer(work, false).ok().as_ref() != Some(&answer);
            self.done(id, backend.power(), (start, end), (device, mismatch), Ok(Some(answer)));
        }
    }

    /// Runs each member as a job alone, in order (the first with the job's injected stall).
    fn one_at_a_time(&mut self, backend: &mut dyn Backend, job: JobMsg) {
        let JobMsg { id, input, optional, dispatched, stall, batch } = job;
        let first = JobMsg { id, input, optional, dispatched, stall, batch: Vec::new() };
        let rest = batch.into_iter().map(|(id, input)| JobMsg {
            id,
            input,
            optional,
            dispatched,
            stall: None,
            batch: Vec::new(),
        });
        for member in std::iter::once(first).chain(rest) {
            self.run_one(backend, member);
        }
    }
}

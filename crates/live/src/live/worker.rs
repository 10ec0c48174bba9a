//! The live pool's workers on the generic runner ([`super::runner`]): [`Worker`] is one thread per
//! worker (per compute unit of a board of several) whose [`Jobs`] report every outcome to the
//! dispatcher, keep a board's own timeline, release an emulated board, and check answers against
//! the reference.
//!
//! A pool worker that fails to configure hands every job it was given back unrun; a cancelled
//! worker skips its remaining jobs the same way.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

mod batched;

use super::clock::Clock;
use super::runner::{Jobs, run_guarded, run_worker};
use crate::backend::{Backend, BackendError, Configured, Power};
use crate::datapath::work::{Answer, Input, KernelImage, Work};
use crate::priority::Priority;
use spork_core::model::time::from_duration;
use spork_core::model::{Kind, Link, Time, Unit, WorkerId};

/// A job as a worker receives it.
#[derive(Clone, Debug)]
pub struct JobMsg {
    /// Request id.
    pub id: u64,
    /// Inputs, or how to build them.
    pub input: Input,
    /// Run the optional part too (the brownout gate's decision).
    pub optional: bool,
    /// When the dispatcher sent it.
    pub dispatched: Time,
    /// Fault injection: stall this long before running (a hung kernel).
    pub stall: Option<Duration>,
    /// The other members of its batch (request id, inputs), run with it as one invocation; empty
    /// for a job alone.
    pub batch: Vec<(u64, Input)>,
}

impl JobMsg {
    /// Every request id it answers, its own first.
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        std::iter::once(self.id).chain(self.batch.iter().map(|m| m.0))
    }
}

/// What a worker reports.
#[derive(Debug)]
pub enum Event {
    /// Configured and serving.
    Ready {
        /// Pool slot.
        slot: WorkerId,
        /// The compute unit that configured (a board of several reports each).
        cu: u16,
        /// Generation of the slot (a reused slot is a new worker).
        generation: u64,
        /// What configuring took.
        configured: Configured,
    },
    /// Configuration failed.
    ConfigureFailed {
        /// Pool slot.
        slot: WorkerId,
        /// Generation.
        generation: u64,
        /// Why.
        error: BackendError,
    },
    /// A job is starting on the worker.
    Started {
        /// Request id.
        id: u64,
        /// Pool slot and compute unit.
        unit: Unit,
        /// Generation of the slot's worker.
        generation: u64,
        /// When.
        at: Time,
    },
    /// A job ended: run, failed or handed back unrun.
    Done(Done),
    /// The worker was lost (its host went down): its queue re-runs elsewhere.
    Lost {
        /// Pool slot.
        slot: WorkerId,
        /// Generation.
        generation: u64,
        /// Why.
        why: String,
    },
}

/// How a job ended on a worker.
#[derive(Debug)]
pub struct Done {
    /// Request id.
    pub id: u64,
    /// Pool slot.
    pub slot: WorkerId,
    /// Generation of the slot's worker (a reused slot is a new worker).
    pub generation: u64,
    /// Worker type.
    pub kind: Kind,
    /// FPGA: the board's answer differed from the software reference (checked on the worker's thread).
    pub mismatch: bool,
    /// The backend's power draw after the job.
    pub power: Power,
    /// Wall time the job started and ended on the worker.
    pub wall: (Time, Time),
    /// FPGA: the job on the board's own timeline (start, finish) and its cycles.
    pub device: Option<(Time, Time, u64)>,
    /// The answer, or why there is none (`None` with no error: handed back unrun).
    pub result: Result<Option<Answer>, BackendError>,
}

/// A board job's span on the board's timeline from `start` (start, finish, cycles), its parts'
/// cycles and times summed. Saturating: a backend's times come from a worker host too, and however
/// large they are they must not wrap the timeline or panic (remote slots also bound them).
fn board_span(start: Time, parts: &[Option<(u64, Duration)>], link: Time) -> (Time, Time, u64) {
    let (cycles, took) = parts
        .iter()
        .flatten()
        .fold((0u64, Duration::ZERO), |a, p| (a.0.saturating_add(p.0), a.1.saturating_add(p.1)));
    (start, start.saturating_add(from_duration(took)).saturating_add(link), cycles)
}

/// What one job of `work` (its optional part if it ran) with `answer` spends on `link`: one
/// invocation and the bytes both ways.
fn link_cost(link: &Link, work: &Work, answer: &Answer) -> Time {
    let optional = work.optional.as_ref().filter(|_| answer.optional.is_some()).map_or(0, |p| p.bytes());
    let back = answer.mandatory.bytes() + answer.optional.as_ref().map_or(0, |o| o.bytes());
    link.invocation.saturating_add(link.transfer(work.mandatory.bytes() + optional + back))
}

/// A pool worker's side of the runner: it reports to the dispatcher and keeps a board's timeline.
struct PoolJobs {
    slot: WorkerId,
    /// The compute unit this thread runs.
    cu: u16,
    generation: u64,
    kind: Kind,
    image: Arc<KernelImage>,
    events: UnboundedSender<Event>,
    clock: Clock,
    cancelled: Arc<AtomicBool>,
    /// The board's own timeline: when this compute unit is next free.
    device_free: Time,
    /// The host link an emulated board's jobs are charged (free on a CPU).
    link: Link,
}

impl Jobs for PoolJobs {
    type Job = JobMsg;

    fn configured(&mut self, _: &dyn Backend, result: Result<Configured, BackendError>) -> bool {
        let (slot, generation, cu) = (self.slot, self.generation, self.cu);
        let event = match result {
            Ok(configured) => Event::Ready { slot, cu, generation, configured },
            Err(error) => Event::ConfigureFailed { slot, generation, error },
        };
        let serving = matches!(event, Event::Ready { .. });
        let _ = self.events.send(event);
        self.device_free = self.clock.now();
        serving
    }

    fn run(&mut self, backend: &mut dyn Backend, job: JobMsg) {
        if self.cancelled.load(Ordering::Relaxed) {
            return self.skip(backend, job);
        }
        if job.batch.is_empty() { self.run_one(backend, job) } else { self.run_batch(backend, job) }
    }

    fn skip(&mut self, backend: &dyn Backend, job: JobMsg) {
        let now = self.clock.now();
        for id in job.ids() {
            self.done(id, backend.power(), (now, now), (None, false), Ok(None));
        }
    }
}

impl PoolJobs {
    /// Runs a job alone: its mandatory part, its optional part if it is to run.
    fn run_one(&mut self, backend: &mut dyn Backend, job: JobMsg) {
        // Deferred inputs are built here, before the job's wall time starts.
        let work = self.image.inputs(&job.input);
        let start = self.clock.now();
        let (unit, generation) = (Unit { worker: self.slot, cu: self.cu }, self.generation);
        let _ = self.events.send(Event::Started { id: job.id, unit, generation, at: start });
        if let Some(stall) = job.stall {
            std::thread::sleep(stall);
        }
        let mandatory = run_guarded(backend, &work.mandatory);
        let optional = match (&work.optional, job.optional, &mandatory) {
            (Some(p), true, Ok(_)) => Some(run_guarded(backend, p)),
            _ => None,
        };
        let end = self.clock.now();
        let (result, device) = match (mandatory, optional.transpose()) {
            (Ok(m), Ok(o)) => {
                let parts = [m.device, o.as_ref().and_then(|o| o.device)];
                let answer = Answer { mandatory: m.output, optional: o.map(|o| o.output) };
                let link = if backend.models_link() { link_cost(&self.link, &work, &answer) } else { 0 };
                let device = m.device.map(|_| {
                    let span = board_span(self.device_free.max(job.dispatched), &parts, link);
                    self.device_free = span.1;
                    span
                });
                (Ok(Some(answer)), device)
            }
            (Err(e), _) | (_, Err(e)) => (Err(e), None),
        };
        let end = self.released(backend, device, end);
        // Every board answer is held to the software reference, here, off the dispatcher's thread.
        let mismatch = self.kind == Kind::Fpga
            && !backend.is_reference()
            && !backend.checks_answers()
            && matches!(&result, Ok(Some(a)) if self.image.answer(&work, job.optional).ok().as_ref() != Some(a));
        self.done(job.id, backend.power(), (start, end), (device, mismatch), result);
    }

    /// An emulated board releases its answer when its own timeline says the job is done, so its
    /// wall time is the board's and per-job overheads do not add up; when the answer is out.
    fn released(&self, backend: &dyn Backend, device: Option<(Time, Time, u64)>, end: Time) -> Time {
        match device.filter(|_| backend.is_reference()) {
            Some((_, finish, _)) => {
                let due = self.clock.instant(finish);
                std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
                self.clock.now()
            }
            None => end,
        }
    }

    /// Reports how job `id` ended.
    fn done(
        &self,
        id: u64,
        power: Power,
        wall: (Time, Time),
        board: (Option<(Time, Time, u64)>, bool),
        result: Result<Option<Answer>, BackendError>,
    ) {
        let (slot, generation, kind) = (self.slot, self.generation, self.kind);
        let (device, mismatch) = board;
        let done = Done { id, slot, generation, kind, mismatch, power, wall, device, result };
        let _ = self.events.send(Event::Done(done));
    }
}

/// A running pool worker: one thread per compute unit, each with its own backend and queue.
pub struct Worker {
    /// One queue per compute unit; dropped to stop the worker after its queues.
    tx: Vec<mpsc::Sender<JobMsg>>,
    cancel: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

/// How a worker's units run, by their kind.
#[derive(Clone, Copy, Debug, Default)]
pub struct UnitSetup {
    /// An FPGA unit's link to the host: its transfers are charged on the board's timeline.
    pub link: Link,
    /// A CPU unit's thread priority.
    pub cpu_priority: Priority,
}

impl Worker {
    /// Starts a worker for pool slot `slot` (generation `generation`): a thread per backend in
    /// `units` (its compute units, in order) that configures it with `image`, then serves the jobs
    /// of its own queue, reporting to `events`.
    pub fn spawn(
        slot: WorkerId,
        generation: u64,
        units: Vec<Box<dyn Backend>>,
        image: Arc<KernelImage>,
        setup: UnitSetup,
        events: UnboundedSender<Event>,
        clock: Clock,
    ) -> Worker {
        let cancel = Arc::new(AtomicBool::new(false));
        let mut worker = Worker { tx: Vec::new(), cancel: cancel.clone(), threads: Vec::new() };
        for (cu, backend) in units.into_iter().enumerate() {
            let (tx, rx) = mpsc::channel::<JobMsg>();
            let kind = backend.kind();
            let name = format!("spork-{}-{}.{cu}", kind.name(), slot.0);
            let jobs = PoolJobs {
                slot,
                cu: cu as u16,
                generation,
                kind,
                image: image.clone(),
                events: events.clone(),
                clock: clock.clone(),
                cancelled: cancel.clone(),
                device_free: 0,
                link: if kind == Kind::Fpga { setup.link } else { Link::default() },
            };
            let priority = if kind == Kind::Cpu { setup.cpu_priority } else { Priority::Normal };
            let thread = run_worker(name, backend, image.clone(), jobs, rx, priority)
                .expect("spawning a worker thread");
            worker.tx.push(tx);
            worker.threads.push(thread);
        }
        worker
    }

    /// Queues a job on compute unit `cu`. Returns it if the worker has gone (or has no such CU).
    /// No model code runs on the sender's thread (a server's protocol thread, whose wait no kernel
    /// may hold): every job goes through the unit's own.
    pub fn send(&self, cu: u16, job: JobMsg) -> Result<(), JobMsg> {
        match self.tx.get(usize::from(cu)) {
            Some(tx) => tx.send(job).map_err(|e| e.0),
            None => Err(job),
        }
    }

    /// Hands back every job not yet started, unrun.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Stops the worker after its queues; does not wait.
    pub fn stop(&mut self) {
        self.tx.clear();
    }

    /// Stops the worker without waiting for its threads (a failed board may be stuck in its kernel).
    pub fn detach(mut self) {
        self.cancel();
        self.stop();
        self.threads.clear();
    }

    /// Stops the worker and waits for its threads.
    pub fn join(mut self) {
        self.stop();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_board_span_adds_its_parts_and_never_wraps() {
        let ms = Duration::from_millis(1);
        assert_eq!(board_span(5, &[Some((3, ms)), Some((4, ms)), None], 0), (5, 5 + 2_000_000, 7));
        assert_eq!(board_span(5, &[Some((3, ms))], 50_000), (5, 5 + 1_050_000, 3), "the link once per job");
        let huge = Some((u64::MAX, Duration::MAX));
        assert_eq!(board_span(Time::MAX - 1, &[huge, huge], 9), (Time::MAX - 1, Time::MAX, u64::MAX));
    }
}

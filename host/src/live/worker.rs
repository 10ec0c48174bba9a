//! The worker runner: one OS thread per worker (per compute unit of a board of several) that
//! configures its backend, then runs the jobs of its queue in order (FIFO), a panicking backend
//! failing its job, never the thread. A short CPU job sent to an idle unit may instead run on the
//! sender's thread ([`Worker::send`]: the unit's backend is behind a lock its thread holds while it
//! configures and runs, so the two never run at once and the queue's order holds). The live pool's
//! workers ([`Worker`]: every outcome reported to the dispatcher, a board's own timeline, an
//! emulated board's release, the check against the reference) and a worker host's leased slots
//! (`worker_host`) both run on it, each with its own [`Jobs`].
//!
//! A pool worker that fails to configure hands every job it was given back unrun; a cancelled
//! worker skips its remaining jobs the same way.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

mod batched;

use super::clock::Clock;
use crate::backend::{Backend, BackendError, Configured, Executed, Power};
use crate::datapath::work::{Answer, Input, KernelImage, Payload, Work};
use crate::model::time::from_duration;
use crate::model::{Kind, Link, Time, Unit, WorkerId};
use crate::priority::Priority;

/// What a worker does around its backend: told how configuring went, then given each job.
pub trait Jobs: Send + 'static {
    /// A job in the worker's queue.
    type Job: Send + 'static;
    /// Configuring ended with `result`; whether the worker serves (else every job is `skip`ped).
    fn configured(&mut self, backend: &dyn Backend, result: Result<Configured, BackendError>) -> bool;
    /// Runs `job` on `backend`.
    fn run(&mut self, backend: &mut dyn Backend, job: Self::Job);
    /// Hands `job` back unrun (the worker did not configure).
    fn skip(&mut self, backend: &dyn Backend, job: Self::Job);
}

/// A unit's backend and what it does around it: its thread's, and a caller's that runs a job inline
/// while the unit is idle (see [`Worker::send`]).
pub struct Runner<J: Jobs> {
    backend: Box<dyn Backend>,
    jobs: J,
    /// Whether it serves: `None` until configured.
    serving: Option<bool>,
}

impl<J: Jobs> Runner<J> {
    fn take(&mut self, job: J::Job) {
        match self.serving {
            Some(true) => self.jobs.run(self.backend.as_mut(), job),
            _ => self.jobs.skip(self.backend.as_ref(), job),
        }
    }
}

/// What a unit's thread shares with its senders: its runner, and the jobs queued on it or running.
pub struct Shared<J: Jobs> {
    runner: Arc<Mutex<Runner<J>>>,
    pending: Arc<AtomicUsize>,
}

/// A started unit: its thread, and what it shares.
pub struct UnitHandle<J: Jobs> {
    /// Its thread.
    pub thread: JoinHandle<()>,
    /// Shared with its senders.
    pub shared: Shared<J>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A job that panicked failed on its own (`run_guarded`); the runner is still whole.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Starts a worker thread named `name`: configures `backend` with `image`, then runs `queue`'s jobs
/// through `jobs` until every sender of the queue is gone and the queue is empty.
pub fn run_worker<J: Jobs>(
    name: String,
    backend: Box<dyn Backend>,
    image: Arc<KernelImage>,
    jobs: J,
    queue: mpsc::Receiver<J::Job>,
    priority: Priority,
) -> std::io::Result<UnitHandle<J>> {
    let runner = Arc::new(Mutex::new(Runner { backend, jobs, serving: None }));
    let pending = Arc::new(AtomicUsize::new(0));
    let (r, p) = (runner.clone(), pending.clone());
    let thread = std::thread::Builder::new().name(name).spawn(move || {
        // Allowed: whoever asked for it checked first (`priority::check`).
        let _ = crate::priority::set(priority);
        {
            let mut g = lock(&r);
            let Runner { backend, jobs, serving } = &mut *g;
            let configured = backend.configure(&image);
            *serving = Some(jobs.configured(backend.as_ref(), configured));
        }
        while let Ok(job) = queue.recv() {
            lock(&r).take(job);
            let _ = p.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| Some(n.saturating_sub(1)));
        }
    })?;
    Ok(UnitHandle { thread, shared: Shared { runner, pending } })
}

/// Runs `payload` on `backend`; a backend that panics fails this job, never the worker's thread.
pub fn run_guarded(backend: &mut dyn Backend, payload: &Payload) -> Result<Executed, BackendError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| backend.submit(payload)))
        .unwrap_or_else(|_| Err(BackendError::Kernel("the backend panicked".into())))
}

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
    /// Each compute unit's runner and the jobs queued on it or running.
    units: Vec<Shared<PoolJobs>>,
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
        let mut worker =
            Worker { tx: Vec::new(), units: Vec::new(), cancel: cancel.clone(), threads: Vec::new() };
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
            let unit = run_worker(name, backend, image.clone(), jobs, rx, priority)
                .expect("spawning a worker thread");
            worker.tx.push(tx);
            worker.units.push(unit.shared);
            worker.threads.push(unit.thread);
        }
        worker
    }

    /// Queues a job on compute unit `cu`; with `inline`, runs it on the calling thread instead if the
    /// unit has nothing queued or running (its thread would only be woken to run it, on another core
    /// than the one whose cache holds its inputs). Returns it if the worker has gone (or has no such
    /// CU).
    pub fn send(&self, cu: u16, job: JobMsg, inline: bool) -> Result<(), JobMsg> {
        let (Some(tx), Some(Shared { runner, pending })) =
            (self.tx.get(usize::from(cu)), self.units.get(usize::from(cu)))
        else {
            return Err(job);
        };
        if inline
            && pending.load(Ordering::Acquire) == 0
            && let Ok(mut r) = runner.try_lock()
            && r.serving == Some(true)
            && r.backend.runs_inline()
        {
            r.take(job);
            return Ok(());
        }
        pending.fetch_add(1, Ordering::AcqRel);
        tx.send(job).map_err(|e| {
            pending.fetch_sub(1, Ordering::AcqRel);
            e.0
        })
    }

    /// Hands back every job not yet started, unrun.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Stops the worker after its queues; does not wait.
    pub fn stop(&mut self) {
        self.tx.clear();
        self.units.clear();
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
    use crate::backend::CpuWorker;
    use crate::datapath::work::Work;
    use rand::SeedableRng;

    fn job(id: u64, image: &KernelImage) -> JobMsg {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(id);
        let work = Work { mandatory: image.payload(256, &mut rng), optional: None };
        JobMsg {
            id,
            input: Input::Built(Arc::new(work)),
            optional: false,
            dispatched: 0,
            stall: None,
            batch: Vec::new(),
        }
    }

    #[test]
    fn an_idle_cpu_unit_runs_an_inline_job_before_send_returns_and_answers_it_once() {
        let (events, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let image = Arc::new(KernelImage::new(spork_golden::Kernel::Sobel, 0));
        let cpu =
            CpuWorker::new(crate::model::Platform::default().cpu, Duration::ZERO, std::time::Instant::now());
        let units: Vec<Box<dyn Backend>> = vec![Box::new(cpu)];
        let w =
            Worker::spawn(WorkerId(0), 1, units, image.clone(), UnitSetup::default(), events, Clock::start());
        assert!(matches!(rx.blocking_recv(), Some(Event::Ready { .. })), "configured");
        // Its thread reports Ready before it lets go of the runner: wait (bounded) until it has.
        let released = (0..10_000_000).any(|_| {
            std::thread::yield_now();
            w.units[0].runner.try_lock().is_ok_and(|r| r.serving == Some(true))
        });
        assert!(released, "the unit's thread kept its runner after configuring");
        // Inline on an idle unit: both of its reports are out before `send` returns.
        w.send(0, job(1, &image), true).expect("sent");
        assert!(matches!(rx.try_recv(), Ok(Event::Started { id: 1, .. })), "started on this thread");
        match rx.try_recv() {
            Ok(Event::Done(d)) => assert!(d.id == 1 && matches!(d.result, Ok(Some(_))), "{d:?}"),
            other => panic!("not done on this thread: {other:?}"),
        }
        // Not inline: its thread runs it, and reports it once.
        w.send(0, job(2, &image), false).expect("sent");
        assert!(matches!(rx.blocking_recv(), Some(Event::Started { id: 2, .. })));
        assert!(matches!(rx.blocking_recv(), Some(Event::Done(d)) if d.id == 2));
        w.join();
        assert!(rx.try_recv().is_err(), "nothing more");
    }

    #[test]
    fn a_board_span_adds_its_parts_and_never_wraps() {
        let ms = Duration::from_millis(1);
        assert_eq!(board_span(5, &[Some((3, ms)), Some((4, ms)), None], 0), (5, 5 + 2_000_000, 7));
        assert_eq!(board_span(5, &[Some((3, ms))], 50_000), (5, 5 + 1_050_000, 3), "the link once per job");
        let huge = Some((u64::MAX, Duration::MAX));
        assert_eq!(board_span(Time::MAX - 1, &[huge, huge], 9), (Time::MAX - 1, Time::MAX, u64::MAX));
    }
}

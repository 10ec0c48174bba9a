//! The worker thread: configures its backend, then runs jobs from its queue (FIFO) and reports
//! every outcome to the dispatcher. A worker that fails to configure hands every job it was given
//! back unrun; a cancelled worker skips its remaining jobs the same way.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::backend::{Backend, BackendError, Configured, Power};
use super::clock::Clock;
use super::work::{Answer, Input, KernelImage};
use crate::model::time::from_duration;
use crate::model::{Kind, Time, WorkerId};

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
}

enum Msg {
    Job(JobMsg),
    Stop,
}

/// What a worker reports.
#[derive(Debug)]
pub enum Event {
    /// Configured and serving.
    Ready {
        /// Pool slot.
        slot: WorkerId,
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
        /// Pool slot.
        slot: WorkerId,
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
fn board_span(start: Time, parts: &[Option<(u64, Duration)>]) -> (Time, Time, u64) {
    let (cycles, took) = parts
        .iter()
        .flatten()
        .fold((0u64, Duration::ZERO), |a, p| (a.0.saturating_add(p.0), a.1.saturating_add(p.1)));
    (start, start.saturating_add(from_duration(took)), cycles)
}

/// A running worker thread.
pub struct Worker {
    tx: mpsc::Sender<Msg>,
    cancel: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts a worker thread for pool slot `slot` (generation `generation`) that configures
    /// `backend` with `image`, then serves jobs, reporting to `events`.
    pub fn spawn(
        slot: WorkerId,
        generation: u64,
        mut backend: Box<dyn Backend>,
        image: Arc<KernelImage>,
        events: UnboundedSender<Event>,
        clock: Clock,
    ) -> Worker {
        let (tx, rx) = mpsc::channel::<Msg>();
        let cancel = Arc::new(AtomicBool::new(false));
        let cancelled = cancel.clone();
        let name = format!("spork-{}-{}", backend.kind().name(), slot.0);
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                let kind = backend.kind();
                let configured = backend.configure(&image);
                let ok = match configured {
                    Ok(c) => {
                        let _ = events.send(Event::Ready { slot, generation, configured: c });
                        true
                    }
                    Err(error) => {
                        let _ = events.send(Event::ConfigureFailed { slot, generation, error });
                        false
                    }
                };
                // The board's own timeline: when its processing element is next free.
                let mut device_free: Time = clock.now();
                while let Ok(Msg::Job(job)) = rx.recv() {
                    if !ok || cancelled.load(Ordering::Relaxed) {
                        let now = clock.now();
                        let _ = events.send(Event::Done(Done {
                            id: job.id,
                            slot,
                            generation,
                            kind,
                            mismatch: false,
                            power: backend.power(),
                            wall: (now, now),
                            device: None,
                            result: Ok(None),
                        }));
                        continue;
                    }
                    // Deferred inputs are built here, before the job's wall time starts.
                    let work = image.inputs(&job.input);
                    let start = clock.now();
                    let _ = events.send(Event::Started { id: job.id, slot, generation, at: start });
                    if let Some(stall) = job.stall {
                        std::thread::sleep(stall);
                    }
                    // A backend that panics fails this job (and is failed by the dispatcher), never
                    // the thread with its queue.
                    let mut run = |p: &super::work::Payload| {
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| backend.submit(p)))
                            .unwrap_or_else(|_| Err(BackendError::Kernel("the backend panicked".into())))
                    };
                    let mandatory = run(&work.mandatory);
                    let optional = match (&work.optional, job.optional, &mandatory) {
                        (Some(p), true, Ok(_)) => Some(run(p)),
                        _ => None,
                    };
                    let end = clock.now();
                    let (result, device) = match (mandatory, optional.transpose()) {
                        (Ok(m), Ok(o)) => {
                            let parts = [m.device, o.as_ref().and_then(|o| o.device)];
                            let device = m.device.map(|_| {
                                let (s, f, cycles) = board_span(device_free.max(job.dispatched), &parts);
                                device_free = f;
                                (s, f, cycles)
                            });
                            (Ok(Some(Answer { mandatory: m.output, optional: o.map(|o| o.output) })), device)
                        }
                        (Err(e), _) | (_, Err(e)) => (Err(e), None),
                    };
                    // An emulated board releases its answer when its own timeline says the job is
                    // done, so its wall time is the board's and per-job overheads do not add up.
                    let end = match device.filter(|_| backend.is_reference()) {
                        Some((_, finish, _)) => {
                            let due = clock.instant(finish);
                            std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
                            clock.now()
                        }
                        None => end,
                    };
                    // Every board answer is held to the software reference, here, off the
                    // dispatcher's thread.
                    let mismatch = kind == Kind::Fpga
                        && !backend.is_reference()
                        && matches!(&result, Ok(Some(a)) if image.answer(&work, job.optional).ok().as_ref() != Some(a));
                    let power = backend.power();
                    let _ = events.send(Event::Done(Done {
                        id: job.id,
                        slot,
                        generation,
                        kind,
                        mismatch,
                        power,
                        wall: (start, end),
                        device,
                        result,
                    }));
                }
            })
            .expect("spawning a worker thread");
        Worker { tx, cancel, thread: Some(thread) }
    }

    /// Queues a job. Returns it if the worker has gone.
    pub fn send(&self, job: JobMsg) -> Result<(), JobMsg> {
        self.tx.send(Msg::Job(job)).map_err(|e| match e.0 {
            Msg::Job(j) => j,
            Msg::Stop => unreachable!("only jobs are sent here"),
        })
    }

    /// Hands back every job not yet started, unrun.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Stops the worker after its queue; does not wait.
    pub fn stop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
    }

    /// Stops the worker without waiting for its thread (a failed board may be stuck in its kernel).
    pub fn detach(mut self) {
        self.cancel();
        self.stop();
        self.thread.take();
    }

    /// Stops the worker and waits for its thread.
    pub fn join(mut self) {
        self.stop();
        if let Some(t) = self.thread.take() {
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
        assert_eq!(board_span(5, &[Some((3, ms)), Some((4, ms)), None]), (5, 5 + 2_000_000, 7));
        let huge = Some((u64::MAX, Duration::MAX));
        assert_eq!(board_span(Time::MAX - 1, &[huge, huge]), (Time::MAX - 1, Time::MAX, u64::MAX));
    }
}

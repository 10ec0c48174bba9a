//! A worker host's slots and the leases on them. Each lease has its slot's backend on a thread of
//! its own (one owner per board); its jobs run in order, and each job id is run at most once: a
//! retry of a finished job is answered from the record, a retry of a running one when it ends.
//! Leases of a scheduler not heard from for the lease timeout are freed. A lease id is a random
//! token, and a job is taken only from the session that took its lease: another scheduler (any
//! mutual-TLS peer) can neither guess a lease nor run, answer or spoil its jobs' record.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::backend::Board;
use crate::backend::calibrate::Calibration;
use crate::backend::{self, Backend, BackendError, Configured, Power};
use crate::datapath::work::{KernelImage, Payload};
use crate::live::runner::{Jobs, run_guarded, run_worker};
use crate::repository::kernel::RepoKernel;
use crate::worker_api::wire::pb;
use spork_core::model::{Kind, PerKind, Platform};

/// Finished jobs a lease remembers, for retries.
const REMEMBERED: usize = 256;

/// Why a slot cannot be leased or configured.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Every slot of the kind is leased.
    #[error("no free {0} slot on this host")]
    Full(&'static str),
    /// A kernel this host has no image for, or a malformed request.
    #[error("{0}")]
    Invalid(String),
    /// The backend failed to configure.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// What runs on a slot's thread.
type Job = (u64, Payload);

/// One lease: its slot's thread and its record of jobs.
pub struct Lease {
    session: u64,
    kind: Kind,
    /// Dropped with the lease: the slot's thread then ends after its job.
    jobs: std::sync::mpsc::Sender<Job>,
    shared: Arc<Shared>,
}

/// What the lease shares with its slot's thread.
struct Shared {
    record: Mutex<Record>,
    power: Mutex<Power>,
}

#[derive(Default)]
struct Record {
    /// Job ids seen, with their results once finished (oldest first).
    seen: BTreeMap<u64, Option<pb::JobResult>>,
    waiting: HashMap<u64, Vec<oneshot::Sender<pb::JobResult>>>,
}

impl Lease {
    /// Runs job `id` (or, if this lease has seen the id, waits for its one run); answers on the receiver.
    pub fn run(&self, id: u64, payload: Payload) -> oneshot::Receiver<pb::JobResult> {
        let (tx, rx) = oneshot::channel();
        let mut rec = self.shared.record.lock().unwrap_or_else(PoisonError::into_inner);
        match rec.seen.get(&id) {
            Some(Some(done)) => {
                let _ = tx.send(done.clone());
            }
            Some(None) => rec.waiting.entry(id).or_default().push(tx),
            None if rec.seen.first_key_value().is_some_and(|(&first, _)| id < first) => {
                let _ = tx.send(lost(id, "the job is older than this host's record: it ran already".into()));
            }
            None => {
                rec.seen.insert(id, None);
                rec.waiting.entry(id).or_default().push(tx);
                if self.jobs.send((id, payload)).is_err() {
                    drop(rec);
                    self.shared.finish(lost(id, "the slot's thread has ended".into()));
                }
            }
        }
        rx
    }

    /// The power its slot drew after its last job.
    pub fn power(&self) -> Power {
        *self.shared.power.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Shared {
    /// Records `r` and answers whoever waits for it.
    fn finish(&self, r: pb::JobResult) {
        let mut rec = self.record.lock().unwrap_or_else(PoisonError::into_inner);
        for w in rec.waiting.remove(&r.id).unwrap_or_default() {
            let _ = w.send(r.clone());
        }
        rec.seen.insert(r.id, Some(r));
        while rec.seen.len() > REMEMBERED {
            rec.seen.pop_first();
        }
    }
}

/// A job's answer saying the lease cannot run it.
pub fn lost(id: u64, why: String) -> pb::JobResult {
    pb::JobResult { id, result: Some(pb::job_result::Result::Lost(why)), ..Default::default() }
}

/// What a host offers.
pub struct Offer {
    /// CPU slots.
    pub cpu: u32,
    /// FPGA slots, and each model's board by its name (a real board's image is the model's own).
    pub fpga: u32,
    /// See `fpga`.
    pub boards: HashMap<String, Board>,
    /// The models this host serves, by name: Spork's own repository's and those of the repositories
    /// it was given.
    pub models: HashMap<String, Arc<RepoKernel>>,
    /// Worker specs (their modelled power).
    pub platform: Platform,
    /// Leases of a scheduler silent this long are freed.
    pub lease_timeout: Duration,
}

#[derive(Default)]
struct Table {
    leases: HashMap<u64, Arc<Lease>>,
    used: PerKind<u32>,
    heard: HashMap<u64, Instant>,
}

/// The host's slots.
pub struct Slots {
    /// What the host offers.
    pub offer: Offer,
    table: Mutex<Table>,
    /// Job parts run so far (a retry answered from the record is not run again).
    pub runs: AtomicU64,
}

/// A configured lease.
pub struct Granted {
    /// Its id: a random token, valid with its session only.
    pub lease: u64,
    /// What configuring took.
    pub configured: Configured,
    /// An emulated board.
    pub reference: bool,
    /// Its power.
    pub power: Power,
}

impl Slots {
    /// Slots as `offer` says.
    pub fn new(offer: Offer) -> Arc<Slots> {
        Arc::new(Slots { offer, table: Mutex::new(Table::default()), runs: AtomicU64::new(0) })
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn slots(&self, kind: Kind) -> u32 {
        match kind {
            Kind::Cpu => self.offer.cpu,
            Kind::Fpga => self.offer.fpga,
        }
    }

    /// Free slots per kind.
    pub fn free(&self) -> PerKind<u32> {
        let used = self.table().used;
        PerKind::from_fn(|k| self.slots(k).saturating_sub(used[k]))
    }

    /// Notes that `session` is alive; its leases.
    pub fn heard(&self, session: u64) -> Vec<u64> {
        let mut t = self.table();
        t.heard.insert(session, Instant::now());
        let mut mine: Vec<u64> =
            t.leases.iter().filter(|(_, l)| l.session == session).map(|(&id, _)| id).collect();
        mine.sort_unstable();
        mine
    }

    /// Leases a `kind` slot for `session` and configures it as `req` says, on a new thread (blocks
    /// until configured: call from a blocking context).
    pub fn configure(self: &Arc<Self>, req: &pb::ConfigureRequest) -> Result<Granted, LeaseError> {
        let kind = match pb::SlotKind::try_from(req.kind) {
            Ok(pb::SlotKind::Cpu) => Kind::Cpu,
            Ok(pb::SlotKind::Fpga) => Kind::Fpga,
            _ => return Err(LeaseError::Invalid(format!("slot kind {} is neither CPU nor FPGA", req.kind))),
        };
        let (image, fpga_board) = self.image(&req.kernel, &req.model_digest)?;
        let calibration = Calibration {
            items_per_sec: req.items_per_sec,
            clock_hz: req.clock_hz,
            items_per_cycle: req.items_per_cycle,
            stated_items_per_cycle: None,
        };
        if ![calibration.items_per_sec, calibration.clock_hz, calibration.items_per_cycle]
            .iter()
            .all(|v| v.is_finite() && *v > 0.0)
        {
            return Err(LeaseError::Invalid(format!("calibration {calibration:?} must be positive")));
        }
        let board = match kind {
            Kind::Cpu => Board::Sim,
            Kind::Fpga => fpga_board?,
        };
        {
            let mut t = self.table();
            if t.used[kind] >= self.slots(kind) {
                return Err(LeaseError::Full(kind.name()));
            }
            t.used[kind] += 1;
            t.heard.insert(req.session, Instant::now());
        }
        let delay = Duration::from_nanos(req.delay_ns.min(3_600_000_000_000));
        let backend = backend::spawn(kind, &board, &self.offer.platform, &calibration, &image, delay, false);
        match self.start(backend, image, req.session) {
            Ok(g) => Ok(g),
            Err(e) => {
                let mut t = self.table();
                t.used[kind] = t.used[kind].saturating_sub(1);
                Err(e)
            }
        }
    }

    /// The image a lease of model `name` runs and the board its FPGA slots use (an error if this
    /// host has none for it, or if its folder of that name is not the one of `digest`, when given).
    fn image(
        &self,
        name: &str,
        digest: &str,
    ) -> Result<(KernelImage, Result<Board, LeaseError>), LeaseError> {
        let model = self.offer.models.get(name).ok_or_else(|| {
            let shown: String = name.chars().take(80).collect();
            LeaseError::Invalid(format!(
                "unknown model '{shown}': not a model of this host's repositories \
                 (fix: start the worker with --model-repository DIR holding it)"
            ))
        })?;
        if !digest.is_empty() && digest != model.digest {
            let shown: String = digest.chars().take(64).collect();
            return Err(LeaseError::Invalid(format!(
                "this host's model {name} is not the scheduler's: its folder's digest is {} here and {shown} \
                 there (fix: deploy the same model folder to the scheduler and every worker host)",
                model.digest
            )));
        }
        let board = self.offer.boards.get(name).cloned().ok_or_else(|| {
            LeaseError::Invalid(format!(
                "this host has no board image for {name} (fix: start it with --xclbin {name}=FILE or --agfi \
                 {name}=AGFI, or give the model an [fpga.alveo] / [fpga.f1] image)"
            ))
        });
        Ok((KernelImage::repo(model.clone()), board))
    }

    /// Starts the slot's thread on the worker runner, waits for its configuration, and books the
    /// lease.
    fn start(
        self: &Arc<Self>,
        backend: Box<dyn Backend>,
        image: KernelImage,
        session: u64,
    ) -> Result<Granted, LeaseError> {
        let kind = backend.kind();
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let id = self.new_id();
        let shared =
            Arc::new(Shared { record: Mutex::new(Record::default()), power: Mutex::new(backend.power()) });
        let lease = Arc::new(Lease { session, kind, jobs, shared: shared.clone() });
        let model = image.kernel.clone();
        let slot = SlotJobs { slots: self.clone(), lease: shared, ready: Some(ready_tx), model };
        run_worker(
            format!("spork-slot-{}", kind.name()),
            backend,
            Arc::new(image),
            slot,
            queue,
            Default::default(),
        )
        .map_err(|e| LeaseError::Invalid(format!("cannot start a slot thread: {e}")))?;
        let (configured, reference, power) = ready
            .recv()
            .map_err(|_| LeaseError::Invalid("the slot's thread ended while configuring".into()))??;
        self.table().leases.insert(id, lease);
        Ok(Granted { lease: id, configured, reference, power })
    }

    /// A lease id no lease holds: random (from the thread's CSPRNG), so a lease cannot be guessed
    /// from another's. Two configurations drawing the same one before either is booked is a 2^-64
    /// chance.
    fn new_id(&self) -> u64 {
        let t = self.table();
        loop {
            let id = rand::random::<u64>();
            if id != 0 && !t.leases.contains_key(&id) {
                return id;
            }
        }
    }

    /// The lease `id` if it is held for `session`: the same `None` whether it is not held or held
    /// for another session, so a job names a lease only with the session that took it.
    pub fn lease(&self, session: u64, id: u64) -> Option<Arc<Lease>> {
        self.table().leases.get(&id).filter(|l| l.session == session).cloned()
    }

    /// Frees lease `id` of `session`: its thread ends after the job it is running.
    pub fn release(&self, session: u64, id: u64) -> bool {
        let mut t = self.table();
        match t.leases.get(&id) {
            Some(l) if l.session == session => {
                let kind = l.kind;
                t.leases.remove(&id);
                t.used[kind] = t.used[kind].saturating_sub(1);
                true
            }
            _ => false,
        }
    }

    /// Frees the leases of schedulers silent for the lease timeout; how many.
    pub fn reap(&self, now: Instant) -> usize {
        let mut t = self.table();
        let timeout = self.offer.lease_timeout;
        let silent: Vec<u64> = t
            .leases
            .iter()
            .filter(|(_, l)| t.heard.get(&l.session).is_none_or(|&h| now.duration_since(h) > timeout))
            .map(|(&id, _)| id)
            .collect();
        for id in &silent {
            if let Some(l) = t.leases.remove(id) {
                t.used[l.kind] = t.used[l.kind].saturating_sub(1);
            }
        }
        t.heard.retain(|_, h| now.duration_since(*h) <= timeout);
        silent.len()
    }

    /// Power per lease of `session`.
    pub fn power(&self, session: u64) -> HashMap<u64, Power> {
        self.table()
            .leases
            .iter()
            .filter(|(_, l)| l.session == session)
            .map(|(&id, l)| (id, l.power()))
            .collect()
    }
}

/// What configuring a slot gives its lease: what it took, whether it is an emulated board, its power.
type Ready = Result<(Configured, bool, Power), BackendError>;

/// A leased slot's side of the worker runner: its jobs in order until the lease is freed, each
/// result recorded for retries.
struct SlotJobs {
    slots: Arc<Slots>,
    lease: Arc<Shared>,
    /// Told how configuring went (once).
    ready: Option<std::sync::mpsc::Sender<Ready>>,
    /// The repository model the slot runs: a job's tensors are bound to its spec on arrival (so
    /// its items, and the board's time, are this host's own reading, not the scheduler's).
    model: Arc<RepoKernel>,
}

impl Jobs for SlotJobs {
    type Job = Job;

    fn configured(&mut self, backend: &dyn Backend, result: Result<Configured, BackendError>) -> bool {
        let serving = result.is_ok();
        let ready = result.map(|c| (c, backend.is_reference(), backend.power()));
        if let Some(tx) = self.ready.take() {
            let _ = tx.send(ready);
        }
        serving
    }

    fn run(&mut self, backend: &mut dyn Backend, (id, payload): Job) {
        self.slots.runs.fetch_add(1, Ordering::Relaxed);
        let Payload::Tensors(t) = payload;
        let payload = match self.model.bind(t) {
            Ok(t) => Payload::Tensors(t),
            Err(why) => {
                let r = pb::JobResult {
                    id,
                    result: Some(pb::job_result::Result::KernelError(why)),
                    ..Default::default()
                };
                self.lease.finish(r);
                return;
            }
        };
        let done = run_guarded(backend, &payload);
        let power = backend.power();
        *self.lease.power.lock().unwrap_or_else(PoisonError::into_inner) = power;
        let mut r = pb::JobResult { id, power: Some(power.into()), ..Default::default() };
        match done {
            Ok(e) => {
                r.result = Some(pb::job_result::Result::Output((&e.output).into()));
                if let Some((cycles, d)) = e.device {
                    (r.cycles, r.device_ns, r.has_device) = (cycles, d.as_nanos() as u64, true);
                }
            }
            Err(e) => r.result = Some(pb::job_result::Result::KernelError(e.to_string())),
        }
        self.lease.finish(r);
    }

    /// A slot that did not configure is never leased: nothing can be queued on it.
    fn skip(&mut self, _: &dyn Backend, (id, _): Job) {
        self.lease.finish(lost(id, "the slot did not configure".into()));
    }
}

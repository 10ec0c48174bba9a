//! `spork serve`: the engine's third driver. Clients send requests over the Open Inference Protocol
//! (HTTP/REST and gRPC, what Triton and KServe clients speak); each model's requests go to its own
//! Spork pool (the runtime's dispatcher loop, fed clients' requests instead of a trace), whose
//! engine and policy objects are the evaluator's and `spork run`'s. The server adds only the
//! transport: decoding and checking tensors, the token, limits, metrics, readiness and drain.
//!
//! - [`server`]: the core every transport calls ([`server::Server::infer`]);
//! - [`http`] (its bodies parsed by [`json`]), [`grpc`] (its streams: [`grpc_stream`]): the two
//!   transports, behind one token layer and one budget layer ([`layers`]); [`listen`]: their
//!   sockets, connection rules and bounded drain; [`budget`]: the memory all requests may hold;
//! - [`models`], [`tensor`]: the served models and their tensors; [`pools`]: a pool per model;
//! - [`control`] (over HTTP: [`http_repository`]): the repository API's index, load and unload,
//!   closed unless `--model-control` opens it, behind a control token of its own;
//! - [`metrics`]: Prometheus; [`statistics`]: the statistics extension's per-model figures;
//!   [`error`]: what a request can fail with, per transport.

pub mod activity;
pub mod answer_json;
pub mod budget;
pub mod coalesce;
pub mod config;
pub mod control;
pub mod error;
pub mod frames;
pub mod grpc;
pub mod grpc_stream;
pub mod held;
pub mod http;
pub mod http_repository;
pub mod json;
pub mod layers;
pub mod listen;
pub mod metrics;
pub mod models;
pub mod repo_model;
pub mod server;
pub mod statistics;
pub mod tensor;

use spork_core::policy::estimate::Statistic;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::bitstream::Target;
use crate::backend::{Board, Calibration};
use crate::datapath::work::{KernelImage, Work};
use crate::live::{Clock, FaultPlan, LivePool, PoolConfig, PoolReport};
use crate::priority::Priority;
use crate::repository::kernel::RepoKernel;
pub use error::ServeError;
use models::Model;
pub use server::{Limits, Server};
use spork_core::engine::Oracle;
use spork_core::engine::Plan;
use spork_core::engine::boards::SharedBoards;
use spork_core::model::{Kind, Platform};
use spork_core::policy::arbitrate::Sharing;
use spork_core::policy::batching::Batching;

/// One model's pool as configured: the model, its image, the measured calibration and the platform
/// with it.
#[derive(Clone, Debug)]
pub struct Kernelled {
    /// The model it serves.
    pub model: Model,
    /// Its image (what every worker is configured with).
    pub image: Arc<KernelImage>,
    /// The CPU code's and the board's measured throughput.
    pub calibration: Calibration,
    /// The platform with the measured speedup.
    pub platform: Platform,
    /// Its FPGA workers when not the server's board (a real board's image is the model's own).
    pub board: Option<Board>,
    /// Its dynamic batching, as its model.toml's `[batching]` states it.
    pub batching: Option<Batching>,
}

/// Why a model's pool cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The board's throughput is unknown.
    #[error(transparent)]
    Calibration(#[from] crate::backend::calibrate::CalibrationError),
    /// The platform profile cannot be read.
    #[error(transparent)]
    Input(#[from] spork_core::input::InputError),
    /// The measured platform is out of range.
    #[error("the measured platform is not valid: {0}")]
    Platform(String),
    /// The model's code or RTL did not load.
    #[error(transparent)]
    Load(#[from] crate::repository::kernel::LoadError),
    /// One of Spork's own models did not load.
    #[error(transparent)]
    Own(#[from] crate::repository::own::OwnError),
    /// The model's `[batching]` figures cannot work.
    #[error(
        "model '{0}': [batching]: {1}\n  fix: give max_batch_size 1 to 4096, preferred sizes within it, a delay of at most 1 s"
    )]
    Batching(String, spork_core::policy::batching::BatchingError),
}

impl Kernelled {
    /// Model `name` of Spork's own repository (`models/`: sobel, bloom, dense) with its pool
    /// settings: its CPU code timed here and its board's timing from its model.toml
    /// (`clock_mhz` overrides the clock), over `platform` (a profile file; default the paper's, with
    /// the live 1 s FPGA reconfiguration); its RTL verilated too when `sim`.
    pub fn own(
        name: &str,
        clock_mhz: Option<f64>,
        platform: Option<&std::path::Path>,
        sim: bool,
    ) -> Result<Self, SetupError> {
        let kernel = crate::repository::own::load(name, sim)?;
        Self::measure_repo(Arc::new(kernel), Target::Sim, clock_mhz, platform)
    }

    /// A repository model's pool settings (its CPU code timed here, its board's timing from its
    /// model.toml or `target`'s).
    pub fn measure_repo(
        kernel: Arc<RepoKernel>,
        target: Target,
        clock_mhz: Option<f64>,
        platform: Option<&std::path::Path>,
    ) -> Result<Self, SetupError> {
        let batching = kernel
            .spec
            .dynamic_batching()
            .map(|b| {
                let delay = b.max_queue_delay_us.saturating_mul(1_000);
                Batching::new(b.max_batch_size, &b.preferred_batch_size, delay)
            })
            .transpose()
            .map_err(|e| SetupError::Batching(kernel.spec.name.clone(), e))?;
        let image = Arc::new(KernelImage::repo(kernel.clone()));
        let calibration = Calibration::measure(target, &image, clock_mhz, 200_000)?;
        let base = match platform {
            Some(p) => spork_core::config::read_platform(p)?,
            None => Platform::default(),
        };
        let platform = calibration.apply(base, platform.is_some());
        let platform = calibration.with_manifest(platform, &image);
        platform.validate().map_err(|e| SetupError::Platform(e.to_string()))?;
        Ok(Kernelled { model: Model(kernel), image, calibration, platform, board: None, batching })
    }

    /// The served model it is.
    pub fn model(&self) -> Model {
        self.model.clone()
    }
}

/// What `spork serve` runs.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// HTTP listen address.
    pub http: SocketAddr,
    /// gRPC listen address.
    pub grpc: SocketAddr,
    /// The models served, one pool each.
    pub kernels: Vec<Kernelled>,
    /// Scheduler, caps, brownout (per pool).
    pub plan: Plan,
    /// The FPGA workers.
    pub board: Board,
    /// Boards shared by every model's pool, arbitrated each interval by expected saving
    /// ([`spork_core::policy::arbitrate`]); `None`: each pool has its own (the plan's FPGA cap, if any).
    pub boards: Option<u32>,
    /// The bearer token, if inference and metadata need one.
    pub token: Option<String>,
    /// Health and metrics without the token.
    pub open_health: bool,
    /// Request limits.
    pub limits: Limits,
    /// How long a drain lets requests in flight finish.
    pub grace: Duration,
    /// Threads serving the two protocols (parsing, encoding; the pools have their own). One is the
    /// fastest per request on a small machine: with two, a request's wake-ups cross between them
    /// (measured: 271 us against 170 us at p50 on a 2-core VM); more carry more connections.
    pub io_threads: usize,
    /// How the protocol threads and the CPU workers are scheduled: [`Priority::Realtime`] runs them
    /// ahead of every other thread and never time-slices a kernel (see [`crate::priority`]).
    pub io_priority: Priority,
    /// What a request is booked at before it has run: a statistic of the measured sizes.
    pub size_estimate: Statistic,
    /// A board kernel running longer than this is abandoned and its request re-run on a CPU.
    pub kernel_timeout: Duration,
    /// Injected faults (tests, drills): failed board configurations, stalled kernels.
    pub faults: FaultPlan,
    /// The model repositories, if any (their models to load at start are in its `pending`).
    pub repository: Option<RepositorySetup>,
}

/// The model repositories of a server: their models may be loaded and unloaded while it runs.
#[derive(Clone, Debug)]
pub struct RepositorySetup {
    /// The repository folders.
    pub dirs: Vec<std::path::PathBuf>,
    /// How their models change while the server runs (whether clients may load and unload).
    pub control: control::ModelControl,
    /// The bearer token a load or unload needs (the inference token does not grant it); `None`:
    /// the inference token, if any, and then the listeners must be on loopback.
    pub control_token: Option<String>,
    /// How a model loaded at run time is measured.
    pub measure: control::Measure,
    /// The models to load at start, in order: loaded after the listeners are up
    /// ([`Running::load_pending`]), so that a folder whose build hangs delays only its own model
    /// and liveness answers meanwhile.
    pub pending: Vec<String>,
}

/// What every pool is started with: the plan, the board, the drain and kernel bounds, the shared
/// boards and the clock; for the pools at start and those of models loaded later alike.
pub struct PoolFactory {
    plan: Plan,
    board: Board,
    /// How long a drain lets requests in flight finish.
    pub grace: Duration,
    kernel_timeout: Duration,
    faults: FaultPlan,
    size_estimate: Statistic,
    shared: Option<SharedBoards>,
    clock: Clock,
    /// The protocol runtime: each pool's dispatcher is a task on it (see [`LivePool::start_in`]).
    home: tokio::runtime::Handle,
    /// The CPU workers' priority: the protocol threads'.
    priority: Priority,
}

impl PoolFactory {
    /// Starts `k`'s pool (`share`: its index among the pools sharing boards).
    pub fn start(&self, k: &Kernelled, share: Option<usize>) -> std::io::Result<LivePool> {
        let pool = PoolConfig {
            board: k.board.clone().unwrap_or_else(|| self.board.clone()),
            grace: self.grace,
            kernel_timeout: self.kernel_timeout,
            faults: self.faults.clone(),
            share: self.shared.clone().zip(share),
            cpu_priority: self.priority,
            ..PoolConfig::new(k.platform, self.plan_for(k), k.image.clone(), k.calibration)
        }
        .sized_at(self.size_estimate);
        LivePool::start_in(pool, Oracle::default(), self.clock.clone(), Some(&self.home))
    }

    /// The plan of `k`'s pool: the server's, with the model's own batching (off under brownout, whose
    /// gate decides each request's optional part when it starts, which a batch does not do yet).
    fn plan_for(&self, k: &Kernelled) -> Plan {
        Plan { batching: k.batching.filter(|_| self.plan.brownout.is_none()), ..self.plan }
    }

    /// A new pool's index among the pools sharing boards, if they are shared.
    pub fn add_share(&self) -> Option<usize> {
        self.shared.as_ref().map(SharedBoards::add_pool)
    }

    /// A stopped pool's boards go to the others.
    pub fn retire_share(&self, share: Option<usize>) {
        if let (Some(s), Some(i)) = (&self.shared, share) {
            s.retire(i);
        }
    }
}

/// `plan` with its CPU workers capped at this machine's cores, unless it has a cap or worker hosts
/// serve (`board`): local CPU workers are threads on these cores, so more of them add no capacity,
/// and requests booked on them would run late where admission cannot see it (an overload then
/// answers everything late instead of refusing, explicitly, what cannot be served in time).
pub fn cpu_cap(plan: Plan, board: &Board) -> Plan {
    let mut caps = plan.caps;
    if caps.0[Kind::Cpu].is_none() && !matches!(board, Board::Remote(_)) {
        caps.0[Kind::Cpu] = Some(std::thread::available_parallelism().map_or(1, |n| n.get()) as u32);
    }
    Plan { caps, ..plan }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A listen address is taken or not ours.
    #[error(
        "cannot listen on {addr}: {source}\n  fix: pick another address (--http / --grpc) or stop what holds it"
    )]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The OS refused a thread or the async runtime.
    #[error("cannot start the server: {0}")]
    Io(#[from] std::io::Error),
    /// The protocol threads may not run at the priority asked for.
    #[error("--io-priority: {0}")]
    Priority(#[from] crate::priority::Refused),
    /// Model control open to the network: load and unload taken without a control token while a
    /// listener binds beyond loopback.
    #[error("{0}")]
    OpenControl(String),
    /// A pool did not answer its probe.
    #[error("the {model} pool did not answer its start-up probe: {why}")]
    Probe {
        /// The model.
        model: String,
        /// Why.
        why: String,
    },
}

/// A running server.
pub struct Running {
    /// Where HTTP listens.
    pub http: SocketAddr,
    /// Where gRPC listens.
    pub grpc: SocketAddr,
    /// The server's state.
    pub server: Arc<Server>,
    listeners: listen::Listeners,
    rt: tokio::runtime::Runtime,
    control: Option<Arc<control::Control>>,
    pending: Vec<String>,
}

/// Starts the server: pools, a probe through each, then both listeners; ready unless repository
/// models wait to load ([`Running::load_pending`]).
pub fn start(cfg: ServeConfig) -> Result<Running, StartError> {
    if let Some(repo) = &cfg.repository {
        control::check_exposure(repo.control, repo.control_token.is_some(), &[cfg.http, cfg.grpc])
            .map_err(StartError::OpenControl)?;
    }
    let io_priority = cfg.io_priority;
    crate::priority::check(io_priority)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.io_threads.max(1))
        // The pools' dispatchers are woken from the workers' threads (through the shared queue): look
        // there at every task, not every 31st, so that an answer never waits behind the connections.
        .global_queue_interval(1)
        .thread_name("spork-io")
        // Checked above; the runtime's blocking threads get it too, and drop it for their work.
        .on_thread_start(move || {
            let _ = crate::priority::set(io_priority);
        })
        .enable_all()
        .build()?;
    let cfg = ServeConfig { plan: cpu_cap(cfg.plan, &cfg.board), ..cfg };
    let clock = Clock::start();
    // Remote workers: the hosts' FPGA slots are the boards every pool shares, as many as are up.
    let remote = match &cfg.board {
        Board::Remote(hosts) => Some(hosts.clone()),
        _ => None,
    };
    let boards = remote.as_ref().map(|h| h.capacity()).or(cfg.boards);
    let shared = boards.map(|n| SharedBoards::new(n, cfg.kernels.len(), Sharing::Arbitrate));
    if let (Some(hosts), Some(shared)) = (&remote, &shared) {
        let books = shared.clone();
        hosts.on_capacity(Box::new(move |n| books.set_boards(n)));
    }
    let factory = Arc::new(PoolFactory {
        plan: cfg.plan,
        board: cfg.board.clone(),
        grace: cfg.grace,
        kernel_timeout: cfg.kernel_timeout,
        faults: cfg.faults.clone(),
        size_estimate: cfg.size_estimate,
        shared: shared.clone(),
        clock: clock.clone(),
        home: rt.handle().clone(),
        priority: io_priority,
    });
    let mut pools = Vec::new();
    for (i, k) in cfg.kernels.iter().enumerate() {
        let share = shared.as_ref().map(|_| i);
        pools.push((k.model(), factory.start(k, share)?, share));
    }
    let probes: Vec<(String, Arc<Work>)> =
        cfg.kernels.iter().map(|k| (k.image.kernel.name().to_string(), probe(&k.image))).collect();
    let server = Arc::new(Server::new(pools, cfg.token.clone(), cfg.open_health, cfg.limits));
    if let Some(hosts) = remote {
        server.show_hosts(hosts);
    }
    let failed: Vec<(String, String)> = rt.block_on(async {
        let mut failed = Vec::new();
        for (name, work) in probes {
            if let Err(why) = server.probe(&name, work).await {
                failed.push((name, why));
            }
        }
        failed
    });
    // Without a repository (no index to say why) a failed probe fails the start, as before.
    if cfg.repository.is_none()
        && let Some((model, why)) = failed.first().cloned()
    {
        return Err(StartError::Probe { model, why });
    }
    if let Some(repo) = &cfg.repository {
        let control = Arc::new(control::Control::new(
            repo.dirs.clone(),
            factory,
            repo.measure.clone(),
            repo.control,
            repo.control_token.clone(),
        ));
        for name in &repo.pending {
            control.note(name, "waiting to load at start-up".into());
        }
        for k in &cfg.kernels {
            control.loaded_from(k.model.name(), &k.model.0.spec.dir);
        }
        // A model whose pool cannot answer its probe (a kernel that crashes or errs on every
        // request) is left out with its reason in the index; the server starts with the rest.
        for (name, why) in failed {
            tracing::error!(model = name, "left out: its pool did not answer its start-up probe: {why}");
            control.leave_out(&server, &name, format!("its pool did not answer its start-up probe: {why}"));
        }
        server.set_control(control.clone());
    }
    let listeners = rt.block_on(listen::start(server.clone(), cfg.http, cfg.grpc, cfg.grace))?;
    let control = server.control().ok();
    let pending = cfg.repository.map(|r| r.pending).unwrap_or_default();
    let mut running =
        Running { http: listeners.http, grpc: listeners.grpc, server, listeners, rt, control, pending };
    if running.pending.is_empty() {
        running.load_pending(|_, _| {});
    }
    Ok(running)
}

/// Resolves at SIGTERM or SIGINT (the server and `spork worker` stop on either).
pub async fn terminated() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

/// A small request of `image`'s kernel: a pool that answers it has a CPU worker that can serve.
fn probe(image: &KernelImage) -> Arc<Work> {
    use rand::SeedableRng;
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1);
    Arc::new(image.work(1_024, 0, &mut rng))
}

impl Running {
    /// Loads the repository models waiting to load at start, one at a time, each as a client's load
    /// would be (built within the build timeouts, probed, then served; a failure left out with its
    /// reason in the index), telling `each` how it went; then polls the repositories if asked to,
    /// and the server is ready. The listeners answer throughout (liveness; readiness false).
    pub fn load_pending(&mut self, mut each: impl FnMut(&str, Result<(), String>)) {
        if let Some(control) = &self.control {
            for name in std::mem::take(&mut self.pending) {
                let loaded = self.rt.block_on(control.load(&self.server, &name));
                each(&name, loaded.map_err(|e| e.to_string()));
            }
            if let control::ModelControl::Poll(every) = control.mode() {
                self.rt.spawn(control.clone().poll(self.server.clone(), every));
            }
        }
        self.server.set_ready();
    }

    /// Blocks until SIGTERM or SIGINT.
    pub fn wait_for_signal(&self) -> std::io::Result<()> {
        self.rt.block_on(terminated())
    }

    /// Drains: readiness false, new requests refused (503 / UNAVAILABLE), those in flight finish
    /// within the grace period and the rest are refused; the listeners close once every response
    /// is out. Returns each pool's report (the pools' dispatchers run on the protocol runtime,
    /// so it ends after them).
    pub fn drain(self) -> Vec<(String, Option<PoolReport>)> {
        let Running { server, listeners, rt, .. } = self;
        server.drain();
        rt.block_on(listeners.shut_down());
        let reports = match Arc::try_unwrap(server) {
            Ok(s) => s.join(),
            Err(_) => Vec::new(),
        };
        drop(rt);
        reports
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spork_core::policy::Scheduler;

    #[test]
    fn local_cpu_workers_are_capped_at_the_cores_unless_a_cap_is_given_or_hosts_serve() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let plan = Plan::new(Scheduler::CpuDynamic);
        assert_eq!(plan.caps.0[Kind::Cpu], None, "the evaluator's plan has no cap");
        assert_eq!(cpu_cap(plan, &Board::Model(None)).caps.0[Kind::Cpu], Some(cores));
        assert_eq!(cpu_cap(plan, &Board::Sim).caps.0[Kind::Cpu], Some(cores));
        let mut given = plan;
        given.caps.0[Kind::Cpu] = Some(7);
        assert_eq!(cpu_cap(given, &Board::Sim).caps.0[Kind::Cpu], Some(7), "a cap given is kept");
        assert_eq!(cpu_cap(plan, &Board::Sim).caps.0[Kind::Fpga], plan.caps.0[Kind::Fpga]);
    }
}

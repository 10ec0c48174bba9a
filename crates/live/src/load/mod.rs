//! `spork load`: an open-loop load generator for a Spork server (or any Open Inference Protocol
//! server), over HTTP or gRPC. Requests go out at their trace's times whatever the server does, with
//! many in flight; each latency is measured from the request's intended send time, so a slow server
//! cannot hide its queueing (no coordinated omission). Bounded in count (the trace) and time (a
//! per-request timeout and an end-of-run limit); only loopback and private addresses are targets.

pub mod body;
pub mod check;
pub mod client;
pub mod described;
pub mod report;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::sync::{Mutex, Semaphore};

use crate::datapath::work::KernelImage;
use crate::priority::Priority;
use body::WireTensor;
pub use client::Protocol;
pub use client::{Client, Outcome};
pub use report::{LoadReport, SizedBy};
use spork_core::model::Request;
use spork_core::model::time::to_secs;

/// What to send, where, how.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// The server.
    pub target: SocketAddr,
    /// HTTP or gRPC.
    pub protocol: Protocol,
    /// The model every request runs.
    pub model: String,
    /// Where its requests' inputs come from.
    pub inputs: Inputs,
    /// Arrival times and sizes (CPU time on this machine).
    pub requests: Vec<Request>,
    /// The CPU speed that turns a request's size into its items (given, or the reference's here).
    pub items_per_sec: f64,
    /// Size requests by the server's own stated CPU speed instead, when it states one
    /// ([`Client::cpu_speed`]): a request's size is then its service time on the server.
    pub ask_server: bool,
    /// `deadline_ms` sent with each request (`None`: the server's default).
    pub deadline_ms: Option<f64>,
    /// Bearer token.
    pub token: Option<String>,
    /// Most requests in flight; beyond, a request waits (and its wait counts in its latency).
    pub max_in_flight: usize,
    /// A request unanswered after this is counted as a timeout.
    pub timeout: Duration,
    /// Seed of the request data.
    pub seed: u64,
    /// How the pacing thread is scheduled (the caller's runtime threads are the caller's): on the
    /// server's machine, `Realtime` keeps the server's kernels from delaying the requests' sending
    /// and their answers' reading, which would count in their latency.
    pub priority: Priority,
    /// Compare every answer with the model's CPU code run here ([`check`]).
    pub check: bool,
}

/// Where a load run's request inputs come from.
#[derive(Clone, Debug)]
pub enum Inputs {
    /// A kernel's image here: a built-in kernel's, or a repository model's (whose CPU code `--check`
    /// runs).
    Kernel(Arc<KernelImage>),
    /// The model's description on the server (its metadata and configuration), with the shapes and
    /// data given ([`described`]).
    Served(described::Given),
}

/// The inputs once the server was asked.
enum Source {
    Kernel(Arc<KernelImage>),
    Described(Arc<described::Described>),
}

/// Why a load run could not start.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Not a loopback or private address.
    #[error(
        "{0} is not a loopback or private address: spork load only targets this machine or its own test hosts"
    )]
    Target(SocketAddr),
    /// Nothing to send.
    #[error("the trace holds no requests")]
    Empty,
    /// The priority asked for was refused.
    #[error("--priority: {0}")]
    Priority(#[from] crate::priority::Refused),
    /// The OS refused the pacing thread.
    #[error("cannot start the thread that paces the requests: {0}")]
    Thread(String),
    /// The model's inputs could not be drawn from the server's description.
    #[error("model '{model}': {why}")]
    Describe {
        /// The model.
        model: String,
        /// Why.
        why: String,
    },
    /// The client could not be set up.
    #[error("cannot reach {target}: {why}")]
    Connect {
        /// The server.
        target: SocketAddr,
        /// Why.
        why: String,
    },
}

/// Whether `addr` is this machine or a private network's (the project's test hosts).
pub fn allowed(addr: &SocketAddr) -> bool {
    match addr.ip() {
        std::net::IpAddr::V4(ip) => ip.is_loopback() || ip.is_private(),
        std::net::IpAddr::V6(ip) => ip.is_loopback() || ip.is_unique_local(),
    }
}

/// A client of `model` at `target` (benches, tests).
pub async fn client_for(
    protocol: Protocol,
    target: SocketAddr,
    model: &'static str,
) -> Result<Client, String> {
    Client::new(protocol, target, None, model).await
}

/// Sends the trace and reports.
pub async fn run(mut cfg: LoadConfig) -> Result<LoadReport, LoadError> {
    if !allowed(&cfg.target) {
        return Err(LoadError::Target(cfg.target));
    }
    if cfg.requests.is_empty() {
        return Err(LoadError::Empty);
    }
    let client = Client::new(cfg.protocol, cfg.target, cfg.token.clone(), &cfg.model)
        .await
        .map_err(|why| LoadError::Connect { target: cfg.target, why })?;
    let stated = if cfg.ask_server { client.cpu_speed().await } else { None };
    let describe = |why: String| LoadError::Describe { model: cfg.model.clone(), why };
    let source = match &cfg.inputs {
        Inputs::Kernel(image) => Source::Kernel(image.clone()),
        Inputs::Served(given) => {
            let d = described::Described::new(
                &cfg.model,
                client.inputs().await.map_err(describe)?,
                given.clone(),
            )
            .map_err(describe)?;
            if cfg.ask_server && stated.is_none() && !d.all_fixed() {
                return Err(describe(
                    "the server states no CPU speed to size requests by: give --items-per-sec N, or every variable input's --shape"
                        .into(),
                ));
            }
            Source::Described(Arc::new(d))
        }
    };
    let sized_by = match (stated, cfg.ask_server) {
        (Some(speed), _) => {
            cfg.items_per_sec = speed;
            SizedBy::Server
        }
        (None, true) => SizedBy::LoadGenerator,
        (None, false) => SizedBy::Given,
    };
    let bodies = Bodies::prepare(&cfg, &source).map_err(describe)?;
    let report = Arc::new(Mutex::new(LoadReport::new()));
    let slots = Arc::new(Semaphore::new(cfg.max_in_flight.max(1)));
    let start = std::time::Instant::now();
    let mut due = pace(cfg.requests.iter().map(|r| r.arrival).collect(), start, cfg.priority)?;
    let mut tasks = tokio::task::JoinSet::new();
    while let Some(i) = due.recv().await {
        let r = &cfg.requests[i];
        let intended = tokio::time::Instant::from_std(start + Duration::from_nanos(r.arrival));
        let Ok(permit) = slots.clone().acquire_owned().await else { break };
        let (client, report) = (client.clone(), report.clone());
        let (body, expected) = bodies.get(&cfg, &source, r, i);
        let (deadline, timeout) = (cfg.deadline_ms, cfg.timeout);
        let image = match (&source, cfg.check) {
            (Source::Kernel(image), true) => Some(image.clone()),
            _ => None,
        };
        tasks.spawn(async move {
            let outcome = match body {
                Ok(body) => send(&client, &body, deadline, timeout).await,
                Err(why) => Outcome::Error(format!("request not built: {why}")),
            };
            let latency = intended.elapsed();
            drop(permit);
            report.lock().await.record(&outcome, latency, deadline);
            if let (Some(image), Outcome::Ok { outputs, .. }) = (image, outcome) {
                let verdict = tokio::task::spawn_blocking(move || expected.verdict(&image, &outputs)).await;
                let verdict = verdict.unwrap_or_else(|e| check::Verdict::Unchecked(e.to_string()));
                report.lock().await.checked(verdict);
            }
        });
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    let mut report = Arc::try_unwrap(report).map(Mutex::into_inner).unwrap_or_else(|_| LoadReport::new());
    report.finish(start.elapsed(), to_secs(cfg.requests.last().map_or(0, |r| r.arrival)));
    report.items_per_sec = cfg.items_per_sec;
    report.sized_by = sized_by;
    report.priority = cfg.priority;
    let sent = |r: &Request| match &source {
        Source::Described(d) => d.items(items(&cfg, r)),
        Source::Kernel(_) => items(&cfg, r),
    };
    report.mean_items = cfg.requests.iter().map(|r| sent(r) as f64).sum::<f64>() / cfg.requests.len() as f64;
    Ok(report)
}

/// Hands out each request's index at its intended time, from a thread of its own: tokio's timers
/// tick in whole milliseconds, which would add up to a millisecond of the client's own lag to every
/// latency measured; a thread's sleep is precise to tens of microseconds.
fn pace(
    arrivals: Vec<spork_core::model::Time>,
    start: std::time::Instant,
    priority: Priority,
) -> Result<UnboundedReceiver<usize>, LoadError> {
    crate::priority::check(priority)?;
    let (tx, rx) = unbounded_channel();
    std::thread::Builder::new()
        .name("spork-load-pacer".into())
        .spawn(move || {
            let _ = crate::priority::set(priority);
            for (i, at) in arrivals.into_iter().enumerate() {
                let due = start + Duration::from_nanos(at);
                std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
                if tx.send(i).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| LoadError::Thread(e.to_string()))?;
    Ok(rx)
}

/// One request; unanswered after `timeout`, it counts as the error "timeout" (one key for all, so
/// the report's errors stay a count per kind).
async fn send(client: &Client, t: &[WireTensor], deadline_ms: Option<f64>, timeout: Duration) -> Outcome {
    match tokio::time::timeout(timeout, client.infer(t, deadline_ms)).await {
        Ok(o) => o,
        Err(_) => Outcome::Error(format!("timeout ({timeout:?})")),
    }
}

/// Request inputs built before the run, so that building them (milliseconds for a large image) never
/// delays a send: a few distinct inputs per request size, reused in turn. Sizes beyond the first
/// [`SIZES`] distinct ones are built when sent.
struct Bodies {
    built: std::collections::HashMap<u64, Vec<Prepared>>,
}

/// A request's inputs, and what its answer should be.
type Prepared = (Arc<Vec<WireTensor>>, Arc<check::Expected>);

/// Distinct request sizes built ahead.
const SIZES: usize = 64;
/// Inputs built per size.
const VARIANTS: u64 = 8;

impl Bodies {
    /// The bodies of the first [`SIZES`] sizes; the first that cannot be built stops the run.
    fn prepare(cfg: &LoadConfig, source: &Source) -> Result<Bodies, String> {
        let mut built = std::collections::HashMap::new();
        for r in &cfg.requests {
            let items = items(cfg, r);
            if built.contains_key(&items) || built.len() >= SIZES {
                continue;
            }
            let variants = (0..VARIANTS).map(|v| prepare(cfg, source, items, v)).collect::<Result<_, _>>()?;
            built.insert(items, variants);
        }
        Ok(Bodies { built })
    }

    /// Request `i`'s inputs (or why they could not be built) and what its answer should be.
    fn get(&self, cfg: &LoadConfig, source: &Source, r: &Request, i: usize) -> Built {
        let items = items(cfg, r);
        match self.built.get(&items) {
            Some(v) => {
                let (body, expected) = v[i % v.len()].clone();
                (Ok(body), expected)
            }
            None => {
                let seed = seed(cfg, i as u64);
                (build(source, items, seed, i as u64).map(Arc::new), check::Expected::new(items, seed))
            }
        }
    }
}

/// A request's inputs as built when sent.
type Built = (Result<Arc<Vec<WireTensor>>, String>, Arc<check::Expected>);

/// Request `variant` of `items` items: its inputs, and its seed for the check.
fn prepare(cfg: &LoadConfig, source: &Source, items: u64, variant: u64) -> Result<Prepared, String> {
    let seed = seed(cfg, variant);
    Ok((Arc::new(build(source, items, seed, variant)?), check::Expected::new(items, seed)))
}

fn seed(cfg: &LoadConfig, variant: u64) -> u64 {
    cfg.seed ^ variant.wrapping_mul(0x9e37_79b9)
}

/// The inputs of a request of `items` items from `seed` (`index`: its entry of a data file).
fn build(source: &Source, items: u64, seed: u64, index: u64) -> Result<Vec<WireTensor>, String> {
    match source {
        Source::Kernel(image) => Ok(body::tensors(&payload(image, items, seed))),
        Source::Described(d) => d.tensors(items, seed, index),
    }
}

fn items(cfg: &LoadConfig, r: &Request) -> u64 {
    (to_secs(r.size) * cfg.items_per_sec).round().max(1.0) as u64
}

/// The request of `items` items `seed` builds (the same every time).
fn payload(image: &KernelImage, items: u64, seed: u64) -> crate::datapath::work::Payload {
    use rand::SeedableRng;
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed);
    image.payload(items, &mut rng)
}

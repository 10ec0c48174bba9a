//! The server's core, whatever the transport: models and their pools, readiness and drain, the token,
//! limits and metrics, and the one inference path that HTTP and gRPC both call.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant, SystemTime};

use subtle::ConstantTimeEq;

use super::budget::{Budget, Reservation};
use super::error::ServeError;
use super::metrics::Metrics;
use super::models::{Model, VERSION};
use super::statistics::{Answered, Snapshot, Statistics};
use super::tensor::Tensor;
use crate::datapath::work::Work;
use crate::live::incoming::{Refused, Served};
use crate::live::status::Status;
use crate::live::{LivePool, PoolReport};
use spork_core::model::WorkerState;
use spork_core::model::time::from_secs;

/// The largest deadline a client may ask for: a minute. An interactive request later than that
/// has no use, and a longer one would let a client park work in a pool's queue.
pub const MAX_DEADLINE_MS: f64 = 60_000.0;

/// Request limits.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest request body (HTTP) or message (gRPC), bytes.
    pub max_body: usize,
    /// Most items (pixels, terms, vector elements) in one request.
    pub max_items: u64,
    /// Time to read a request's headers (and the longest a keep-alive connection may idle).
    pub header_timeout: Duration,
    /// Time to read a request's body.
    pub body_timeout: Duration,
    /// Most connections at once, HTTP and gRPC together.
    pub max_connections: usize,
    /// Most HTTP/2 streams (requests) at once on one connection.
    pub max_streams: u32,
    /// Bytes all requests in flight may hold together (bodies received, inputs decoded, queued and
    /// running); a request beyond it is refused at once (429 / RESOURCE_EXHAUSTED).
    pub memory_budget: usize,
    /// Most requests one model's pool holds (queued and running); more are refused at once.
    pub max_queue: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: 16 << 20,
            max_items: 4 << 20,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 1024,
            max_streams: 32,
            memory_budget: 512 << 20,
            max_queue: 1024,
        }
    }
}

/// What a client asks for.
#[derive(Debug)]
pub struct InferRequest {
    /// What the request holds of the memory budget (its body so far); its decoded inputs are added.
    pub reservation: Arc<Reservation>,
    /// Model name.
    pub model: String,
    /// Version, if named.
    pub version: Option<String>,
    /// The client's id, echoed.
    pub id: Option<String>,
    /// Inputs.
    pub inputs: Vec<Tensor>,
    /// Their names and datatypes checked and dimensions bound, once ([`Model::bind`]); a request
    /// that does not bind is refused when it is decoded, after its reservation.
    pub bound: Result<super::repo_model::Bound, ServeError>,
    /// `deadline_ms`, if given.
    pub deadline_ms: Option<f64>,
}

/// What the server answers.
#[derive(Debug)]
pub struct InferResponse {
    /// Model name.
    pub model: String,
    /// The client's id.
    pub id: Option<String>,
    /// Outputs (the optional part's only if it ran).
    pub outputs: Vec<Tensor>,
    /// Where and how it ran.
    pub served: Served,
    /// Decoding its inputs and encoding its outputs (the statistics extension's compute input and
    /// output).
    pub codec: (Duration, Duration),
}

/// One served model and its pool. Requests hold it (an `Arc`) while they run, so a model unloaded
/// or replaced meanwhile finishes them before its pool ends.
pub struct Hosted {
    model: Model,
    pool: LivePool,
    /// Requests its pool holds, queued or running (bounded by [`Limits::max_queue`]).
    held: Arc<AtomicUsize>,
    /// Its index among the pools sharing boards, if they are shared.
    share: Option<usize>,
    /// Its requests' statistics since it was loaded.
    stats: Statistics,
}

/// A request's place in its pool, given back when the pool is done with it.
struct Place(Arc<AtomicUsize>);

impl Place {
    /// A place if the pool holds fewer than `max`.
    fn take(held: &Arc<AtomicUsize>, max: usize) -> Option<Place> {
        held.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| (n < max).then_some(n + 1)).ok()?;
        Some(Place(held.clone()))
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Counts a request once, however it ends: answered, refused, or its client gone (the future
/// dropped mid-wait: counted `cancelled`). Holds the queue gauge up while it lives.
struct Tally<'a> {
    metrics: &'a Metrics,
    model: &'a str,
    stats: &'a Statistics,
    /// When the request's head was read.
    born: Instant,
    done: bool,
}

impl<'a> Tally<'a> {
    fn new(metrics: &'a Metrics, hosted: &'a Hosted, born: Instant) -> Tally<'a> {
        let model = hosted.model.name();
        metrics.queue(model, 1);
        Tally { metrics, model, stats: &hosted.stats, born, done: false }
    }

    fn finish(mut self, result: &Result<InferResponse, ServeError>) {
        self.done = true;
        let age = self.born.elapsed();
        match result {
            Ok(r) => {
                let (input, output) = r.codec;
                let answered = Answered { served: &r.served, total: age, input, output };
                self.stats.answered(answered, SystemTime::now());
                let seconds = (r.served.queue + r.served.service) as f64 / 1e9;
                let outcome = if r.served.missed { "missed" } else { "ok" };
                self.metrics.request(
                    self.model,
                    Some(r.served.kind),
                    outcome,
                    Some(seconds),
                    r.served.missed,
                );
            }
            Err(e) => {
                self.stats.failed(age);
                self.metrics.request(self.model, None, e.outcome(), None, false)
            }
        }
    }
}

impl Drop for Tally<'_> {
    fn drop(&mut self) {
        self.metrics.queue(self.model, -1);
        if !self.done {
            self.stats.failed(self.born.elapsed());
            self.metrics.request(self.model, None, "cancelled", None, false);
        }
    }
}

/// Whether `header` (an `Authorization` header or gRPC metadata value) is `Bearer <token>`,
/// compared in constant time. The scheme is case-insensitive (RFC 9110 11.1); the token is not.
fn bearer_is(token: &str, header: Option<&str>) -> bool {
    let given = header
        .and_then(|h| h.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map_or("", |(_, t)| t.trim_start());
    bool::from(given.as_bytes().ct_eq(token.as_bytes()))
}

/// Most pools ending at once: a client that loads and unloads in a loop is refused (503) rather
/// than leaving a pool's threads behind per call.
pub const MAX_RETIRING: usize = 4;

/// A model's name and its pool's report (`None`: the pool ended abnormally).
pub type ModelReport = (String, Option<PoolReport>);

/// The running server's state.
pub struct Server {
    models: RwLock<BTreeMap<String, Arc<Hosted>>>,
    /// Reports of the pools that ended while the server ran (models unloaded or replaced).
    retired: Arc<Mutex<Vec<ModelReport>>>,
    /// Pools ending on their own threads now (bounded by [`MAX_RETIRING`]).
    retiring: Arc<AtomicUsize>,
    token: Option<String>,
    /// Health and metrics without the token.
    pub open_health: bool,
    /// The limits.
    pub limits: Limits,
    /// The memory budget of all requests in flight.
    pub budget: Arc<Budget>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    ready: AtomicBool,
    draining: AtomicBool,
    /// The worker hosts, when the pools' workers are remote.
    hosts: std::sync::OnceLock<crate::backend::remote::Hosts>,
    /// Model control, when the server has model repositories.
    control: std::sync::OnceLock<Arc<super::control::Control>>,
}

impl Server {
    /// A server of `pools`, not yet ready.
    pub fn new(
        pools: Vec<(Model, LivePool, Option<usize>)>,
        token: Option<String>,
        open_health: bool,
        limits: Limits,
    ) -> Server {
        let models = pools
            .into_iter()
            .map(|(model, pool, share)| {
                (
                    model.name().to_string(),
                    Arc::new(Hosted {
                        model,
                        pool,
                        held: Arc::default(),
                        share,
                        stats: Statistics::default(),
                    }),
                )
            })
            .collect();
        Server {
            models: RwLock::new(models),
            retired: Arc::default(),
            retiring: Arc::default(),
            token,
            open_health,
            limits,
            budget: Budget::new(limits.memory_budget),
            metrics: Arc::new(Metrics::new()),
            ready: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            hosts: std::sync::OnceLock::new(),
            control: std::sync::OnceLock::new(),
        }
    }

    /// Gives the server its model control (it has model repositories).
    pub fn set_control(&self, control: Arc<super::control::Control>) {
        let _ = self.control.set(control);
    }

    /// Its model control: the repository API's, refused when it has no repository.
    pub fn control(&self) -> Result<Arc<super::control::Control>, ServeError> {
        self.control.get().cloned().ok_or_else(|| {
            ServeError::BadRequest(
                "this server has no model repository: start it with --model-repository DIR".into(),
            )
        })
    }

    /// Whether it is draining.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Shows `hosts` in the metrics (the pools' workers are theirs).
    pub fn show_hosts(&self, hosts: crate::backend::remote::Hosts) {
        let _ = self.hosts.set(hosts);
    }

    /// Whether it takes requests: ready and not draining.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed) && !self.draining.load(Ordering::Relaxed)
    }

    /// Every pool answered its probe: ready.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    /// Starts the drain: readiness goes false, new requests are refused, each pool finishes what it
    /// holds within its grace period.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::Relaxed);
        for s in self.hosted_all() {
            s.pool.drain();
        }
    }

    /// Ends every pool (after [`Server::drain`]); their reports, by model, with those of the pools
    /// that ended earlier (models unloaded or replaced).
    pub fn join(self) -> Vec<(String, Option<PoolReport>)> {
        let models = self.models.into_inner().unwrap_or_else(PoisonError::into_inner);
        let mut reports: Vec<ModelReport> = models
            .into_iter()
            .map(|(name, s)| (name, Arc::try_unwrap(s).ok().and_then(|h| h.pool.join())))
            .collect();
        let mut retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner);
        reports.extend(retired.drain(..).map(|(n, r)| (format!("{n} (unloaded)"), r)));
        reports
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, Arc<Hosted>>> {
        self.models.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn hosted_all(&self) -> Vec<Arc<Hosted>> {
        self.read().values().cloned().collect()
    }

    /// The statistics of the model `name` (every model's if `None`), by model name.
    pub fn statistics(
        &self,
        name: Option<&str>,
        version: Option<&str>,
    ) -> Result<Vec<(String, Snapshot)>, ServeError> {
        let hosted = match name {
            Some(n) => vec![self.hosted(n, version)?],
            None => self.hosted_all(),
        };
        Ok(hosted.iter().map(|h| (h.model.name().to_string(), h.stats.snapshot())).collect())
    }

    /// The served models.
    pub fn models(&self) -> Vec<Model> {
        self.read().values().map(|s| s.model.clone()).collect()
    }

    /// Serves `model` on `pool` (its index among shared boards' pools, if shared); the model it
    /// replaces, if any, to retire.
    pub fn insert(&self, model: Model, pool: LivePool, share: Option<usize>) -> Option<Arc<Hosted>> {
        if self.draining.load(Ordering::Relaxed) {
            pool.drain();
        }
        let hosted =
            Arc::new(Hosted { model, pool, held: Arc::default(), share, stats: Statistics::default() });
        let name = hosted.model.name().to_string();
        self.models.write().unwrap_or_else(PoisonError::into_inner).insert(name, hosted)
    }

    /// Stops serving model `name`: later requests find no such model (404); the model, to retire.
    pub fn remove(&self, name: &str) -> Option<Arc<Hosted>> {
        self.models.write().unwrap_or_else(PoisonError::into_inner).remove(name)
    }

    /// Ends a removed model's pool on a thread of its own: drained at once (requests already in it
    /// finish within the grace period, new ones are refused), joined once the last request holding
    /// it is done (at most `wait`), its report kept for [`Server::join`]; then `released` with its
    /// shared-boards index.
    pub fn retire(
        &self,
        hosted: Arc<Hosted>,
        wait: Duration,
        released: impl FnOnce(Option<usize>) + Send + 'static,
    ) {
        hosted.pool.drain();
        let retired = self.retired.clone();
        let retiring = self.retiring.clone();
        let metrics = self.metrics.clone();
        retiring.fetch_add(1, Ordering::AcqRel);
        let spawned = std::thread::Builder::new().name("spork-retire".into()).spawn(move || {
            let name = hosted.model.name().to_string();
            let share = hosted.share;
            let start = std::time::Instant::now();
            while Arc::strong_count(&hosted) > 1 && start.elapsed() < wait {
                std::thread::sleep(Duration::from_millis(20));
            }
            let report = Arc::try_unwrap(hosted).ok().and_then(|h| h.pool.join());
            // Its series go with it (a model loaded again starts them anew), so names that come and
            // go do not grow the scrape.
            metrics.forget(&name);
            retired.lock().unwrap_or_else(PoisonError::into_inner).push((name, report));
            released(share);
            retiring.fetch_sub(1, Ordering::AcqRel);
        });
        if let Err(e) = spawned {
            tracing::error!("cannot start the thread that ends an unloaded model's pool: {e}");
        }
    }

    /// Whether another model may be replaced or unloaded now: fewer than [`MAX_RETIRING`] pools
    /// are still ending.
    pub fn may_retire(&self) -> Result<(), ServeError> {
        if self.retiring.load(Ordering::Acquire) >= MAX_RETIRING {
            return Err(ServeError::Unavailable(format!(
                "{MAX_RETIRING} unloaded models are still finishing their requests: retry in a few seconds"
            )));
        }
        Ok(())
    }

    /// The model `name` (at `version`, if given).
    pub fn model(&self, name: &str, version: Option<&str>) -> Result<Model, ServeError> {
        self.hosted(name, version).map(|h| h.model.clone())
    }

    /// The model `name` and its workers active now, as its configuration shows them.
    pub fn model_config(
        &self,
        name: &str,
        version: Option<&str>,
    ) -> Result<(Model, super::config::Instances), ServeError> {
        let h = self.hosted(name, version)?;
        let at = crate::live::status::STATES.iter().position(|&st| st == WorkerState::Active).unwrap_or(1);
        let active = |k: spork_core::model::Kind| h.pool.status.workers[k][at].load(Ordering::Relaxed);
        let instances = [
            ("cpu", super::config::KIND_CPU, active(spork_core::model::Kind::Cpu)),
            ("fpga", super::config::KIND_MODEL, active(spork_core::model::Kind::Fpga)),
        ];
        Ok((h.model.clone(), instances))
    }

    /// A model's properties in its metadata: `cpu_items_per_sec`, its CPU code's speed as measured
    /// here when it loaded (what its requests are first booked at), so that a client can size its
    /// requests in the server's own service time.
    pub fn model_properties(
        &self,
        name: &str,
        version: Option<&str>,
    ) -> Result<HashMap<String, String>, ServeError> {
        let speed = self.hosted(name, version)?.pool.calibration().items_per_sec;
        Ok(HashMap::from([(crate::oip::CPU_ITEMS_PER_SEC.to_string(), format!("{speed:.0}"))]))
    }

    fn hosted(&self, name: &str, version: Option<&str>) -> Result<Arc<Hosted>, ServeError> {
        let models = self.read();
        let s = models.get(name).ok_or_else(|| {
            let known: Vec<&str> = models.keys().map(String::as_str).collect();
            let shown: String = name.chars().take(80).collect();
            ServeError::NotFound(format!("no model '{shown}': this server has {}", known.join(", ")))
        })?;
        match version {
            Some(v) if !v.is_empty() && v != VERSION => {
                let shown: String = v.chars().take(40).collect();
                Err(ServeError::NotFound(format!(
                    "model '{name}' has no version '{shown}' (it serves {VERSION})"
                )))
            }
            _ => Ok(s.clone()),
        }
    }

    /// Whether model `name` takes requests: the server is ready and the model's kernel works.
    pub fn model_is_ready(&self, name: &str, version: Option<&str>) -> Result<bool, ServeError> {
        let m = self.model(name, version)?;
        Ok(self.is_ready() && m.unavailable().is_none())
    }

    /// Checks the inference token (`Authorization` header or gRPC metadata value), if the server
    /// has one.
    pub fn authorize(&self, header: Option<&str>) -> Result<(), ServeError> {
        match &self.token {
            Some(token) if !bearer_is(token, header) => Err(ServeError::Unauthorized),
            _ => Ok(()),
        }
    }

    /// Checks a load or unload: refused when model control is `none`; else it needs the control
    /// token if the server has one (the inference token does not grant it), or the inference token
    /// if it has only that.
    pub fn authorize_control(&self, header: Option<&str>) -> Result<(), ServeError> {
        let control = self.control()?;
        control.takes_calls()?;
        match control.token() {
            Some(token) if !bearer_is(token, header) => Err(ServeError::UnauthorizedControl),
            Some(_) => Ok(()),
            None => self.authorize(header),
        }
    }

    /// Checks a read of the repository index: the inference token, or the control token.
    pub fn authorize_index(&self, header: Option<&str>) -> Result<(), ServeError> {
        self.authorize(header).or_else(|e| match self.control.get().and_then(|c| c.token()) {
            Some(token) if bearer_is(token, header) => Ok(()),
            _ => Err(e),
        })
    }

    /// The metrics text, each pool's state read now.
    pub fn render_metrics(&self) -> String {
        let models = self.read();
        let pools: Vec<(&str, &Status)> = models.iter().map(|(n, s)| (n.as_str(), &*s.pool.status)).collect();
        for (name, hosted) in models.iter() {
            if let Some(iso) = hosted.model.0.isolated() {
                self.metrics.kernel_processes(name, &iso.counters);
            }
        }
        self.metrics.inflight_bytes(self.budget.used());
        self.metrics.render(pools.into_iter(), self.hosts.get())
    }

    /// Sends `work` through model `name`'s pool, bypassing readiness: the start-up probe.
    pub async fn probe(&self, name: &str, work: Arc<crate::datapath::work::Work>) -> Result<(), String> {
        let hosted = self.read().get(name).cloned().ok_or("no such pool")?;
        hosted.pool.submit(work, None, None).await.map(|_| ()).map_err(|r| r.to_string())
    }

    /// Runs one inference: checked, scheduled by the model's pool, answered (or refused) once.
    pub async fn infer(&self, req: InferRequest) -> Result<InferResponse, ServeError> {
        let hosted = self.hosted(&req.model, req.version.as_deref())?;
        req.reservation.set_counted();
        let born = Instant::now().checked_sub(req.reservation.age()).unwrap_or_else(Instant::now);
        let tally = Tally::new(&self.metrics, &hosted, born);
        let result = self.infer_on(&hosted, req).await;
        tally.finish(&result);
        result
    }

    async fn infer_on(&self, hosted: &Hosted, req: InferRequest) -> Result<InferResponse, ServeError> {
        let model = &hosted.model;
        if !self.is_ready() {
            let why = if self.draining.load(Ordering::Relaxed) { "draining" } else { "not ready yet" };
            return Err(ServeError::Unavailable(format!("the server is {why}: it takes no requests")));
        }
        if let Some(why) = model.unavailable() {
            return Err(ServeError::Unavailable(format!("model '{}' is unavailable: {why}", model.name())));
        }
        let deadline = deadline(req.deadline_ms)?.map(|d| left(d, req.reservation.age())).transpose()?;
        let InferRequest { reservation, inputs, id, bound, .. } = req;
        self.admit(model.decoded_bytes(&inputs, bound.as_ref().ok()), &reservation)?;
        let decoding = Instant::now();
        let work = model.decode(&inputs, &bound?)?;
        let input = decoding.elapsed();
        drop(inputs);
        self.check_items(&work)?;
        let place =
            Place::take(&hosted.held, self.limits.max_queue).ok_or_else(|| ServeError::Overloaded {
                message: format!(
                    "model '{}' holds {} requests, its most: retry shortly",
                    model.name(),
                    self.limits.max_queue
                ),
                retry_after: Duration::from_secs(1),
            })?;
        let work = Arc::new(work);
        let hold: Box<dyn Send + Sync> = Box::new((reservation, place));
        let mut served = hosted.pool.submit(work.clone(), deadline, Some(hold)).await.map_err(refused)?;
        let encoding = Instant::now();
        let outputs = model.encode(&mut served.answer, &work);
        let codec = (input, encoding.elapsed());
        Ok(InferResponse { model: model.name().to_string(), id, outputs, served, codec })
    }

    /// Whether `work` is within the item limit.
    fn check_items(&self, work: &Work) -> Result<(), ServeError> {
        let items = work.mandatory.items() + work.optional.as_ref().map_or(0, |p| p.items());
        if items > self.limits.max_items {
            return Err(ServeError::TooLarge(format!(
                "the request holds {items} items; this server takes at most {}",
                self.limits.max_items
            )));
        }
        Ok(())
    }

    /// Whether inputs taking `bytes` decoded may be held: within the per-request size limit and the
    /// memory budget (reserved on `reservation` until the pool is done with the request).
    fn admit(&self, bytes: usize, reservation: &Reservation) -> Result<(), ServeError> {
        let most = self.limits.max_decoded();
        if bytes > most {
            return Err(ServeError::TooLarge(format!(
                "the request's inputs take {bytes} bytes decoded; this server holds at most {most} per request"
            )));
        }
        self.reserve(reservation, bytes)
    }

    /// Holds `bytes` more of the memory budget on `reservation`: refused if the budget has not got
    /// them now (429: retry), or never could beside what the request holds already (413).
    pub fn reserve(&self, reservation: &Reservation, bytes: usize) -> Result<(), ServeError> {
        reservation.add(bytes).map_err(|e| match reservation.held().saturating_add(e.wanted) > e.capacity {
            true => ServeError::TooLarge(format!(
                "the request needs {} bytes held at once, more than this server's whole memory budget ({}): send a smaller one, ask for its outputs as binary data, or raise memory_budget",
                e.wanted, e.capacity
            )),
            false => ServeError::Overloaded { message: e.to_string(), retry_after: Duration::from_secs(1) },
        })
    }
}

impl Limits {
    /// The most one request's decoded inputs may take: four bodies' worth.
    pub fn max_decoded(&self) -> usize {
        self.max_body.saturating_mul(4)
    }
}

/// A client's `deadline_ms`, checked.
fn deadline(ms: Option<f64>) -> Result<Option<spork_core::model::Time>, ServeError> {
    match ms {
        None => Ok(None),
        Some(d) if d.is_finite() && d > 0.0 && d <= MAX_DEADLINE_MS => Ok(Some(from_secs(d / 1e3).max(1))),
        Some(d) => Err(ServeError::BadRequest(format!(
            "parameter deadline_ms must be a positive number of milliseconds up to {MAX_DEADLINE_MS}, not {d}"
        ))),
    }
}

/// What is left of a client's relative `deadline` for a request `age` old: it runs from when the
/// request's headers were read, so the time its body took and its wait for the protocol thread count
/// (under overload that wait grew to hundreds of milliseconds, and requests the pool then took were
/// answered that late). None left: refused, as one no worker can meet.
fn left(deadline: spork_core::model::Time, age: Duration) -> Result<spork_core::model::Time, ServeError> {
    let age = spork_core::model::time::from_duration(age);
    deadline.checked_sub(age).filter(|&t| t > 0).ok_or_else(|| ServeError::Overloaded {
        message: format!(
            "the request took {:.1} ms to reach the scheduler, its whole deadline: retry shortly",
            age as f64 / 1e6
        ),
        retry_after: Duration::from_secs(1),
    })
}

/// Why the pool did not serve it, as the client hears it.
fn refused(r: Refused) -> ServeError {
    match r {
        Refused::Admission { retry_after } => ServeError::Overloaded { message: r.to_string(), retry_after },
        Refused::Draining | Refused::Stopped => ServeError::Unavailable(r.to_string()),
        Refused::Failed(_) => ServeError::Internal(r.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_runs_from_the_headers_and_one_spent_before_the_scheduler_is_refused() {
        let ms = |n: u64| n * 1_000_000;
        assert_eq!(left(ms(10), Duration::from_millis(3)).expect("7 ms left"), ms(7));
        for spent in [10, 11, 500] {
            let refused = left(ms(10), Duration::from_millis(spent));
            assert!(matches!(refused, Err(ServeError::Overloaded { .. })), "{spent} ms: {refused:?}");
        }
    }
}

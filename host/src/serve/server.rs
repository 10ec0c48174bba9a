//! The server's core, whatever the transport: models and their pools, readiness and drain, the token,
//! limits and metrics, and the one inference path that HTTP and gRPC both call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use spork_golden::Kernel;
use subtle::ConstantTimeEq;

use super::error::ServeError;
use super::metrics::Metrics;
use super::models::{Model, VERSION};
use super::pools::Pool;
use super::tensor::Tensor;
use crate::model::time::from_secs;
use crate::runtime::RunReport;
use crate::runtime::incoming::{Refused, Served};
use crate::runtime::status::Status;

/// The largest deadline a client may ask for: an hour.
pub const MAX_DEADLINE_MS: f64 = 3_600_000.0;

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
    /// Most connections at once (HTTP).
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: 16 << 20,
            max_items: 4 << 20,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 1024,
        }
    }
}

/// What a client asks for.
#[derive(Debug)]
pub struct InferRequest {
    /// Model name.
    pub model: String,
    /// Version, if named.
    pub version: Option<String>,
    /// The client's id, echoed.
    pub id: Option<String>,
    /// Inputs.
    pub inputs: Vec<Tensor>,
    /// `deadline_ms`, if given.
    pub deadline_ms: Option<f64>,
}

/// What the server answers.
#[derive(Debug)]
pub struct InferResponse {
    /// Model name.
    pub model: &'static str,
    /// The client's id.
    pub id: Option<String>,
    /// Outputs (the optional part's only if it ran).
    pub outputs: Vec<Tensor>,
    /// Where and how it ran.
    pub served: Served,
}

/// One served model and its pool.
pub struct Hosted {
    model: Model,
    pool: Pool,
}

/// The running server's state.
pub struct Server {
    models: BTreeMap<&'static str, Hosted>,
    token: Option<String>,
    /// Health and metrics without the token.
    pub open_health: bool,
    /// The limits.
    pub limits: Limits,
    /// Metrics.
    pub metrics: Metrics,
    ready: AtomicBool,
    draining: AtomicBool,
    /// The worker hosts, when the pools' workers are remote.
    hosts: std::sync::OnceLock<crate::runtime::backend::remote::Hosts>,
}

impl Server {
    /// A server of `pools`, not yet ready.
    pub fn new(
        pools: Vec<(Kernel, Pool)>,
        token: Option<String>,
        open_health: bool,
        limits: Limits,
    ) -> Server {
        let models =
            pools.into_iter().map(|(k, pool)| (k.name(), Hosted { model: Model::of(k), pool })).collect();
        Server {
            models,
            token,
            open_health,
            limits,
            metrics: Metrics::new(),
            ready: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            hosts: std::sync::OnceLock::new(),
        }
    }

    /// Shows `hosts` in the metrics (the pools' workers are theirs).
    pub fn show_hosts(&self, hosts: crate::runtime::backend::remote::Hosts) {
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
        for s in self.models.values() {
            s.pool.drain();
        }
    }

    /// Ends every pool (after [`Server::drain`]); their reports, by model.
    pub fn join(self) -> Vec<(&'static str, Option<RunReport>)> {
        self.models.into_iter().map(|(name, s)| (name, s.pool.join())).collect()
    }

    /// The served models.
    pub fn models(&self) -> impl Iterator<Item = Model> + '_ {
        self.models.values().map(|s| s.model)
    }

    /// The model `name` (at `version`, if given).
    pub fn model(&self, name: &str, version: Option<&str>) -> Result<Model, ServeError> {
        let s = self.models.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.models.keys().copied().collect();
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
            _ => Ok(s.model),
        }
    }

    /// Checks a bearer token (`Authorization` header or gRPC metadata value), in constant time.
    pub fn authorize(&self, header: Option<&str>) -> Result<(), ServeError> {
        let Some(token) = &self.token else { return Ok(()) };
        let given = header.and_then(|h| h.strip_prefix("Bearer ")).unwrap_or("");
        if bool::from(given.as_bytes().ct_eq(token.as_bytes())) {
            Ok(())
        } else {
            Err(ServeError::Unauthorized)
        }
    }

    /// The metrics text, each pool's state read now.
    pub fn render_metrics(&self) -> String {
        let pools: Vec<(&str, &Status)> = self.models.iter().map(|(n, s)| (*n, &*s.pool.status)).collect();
        self.metrics.render(pools.into_iter(), self.hosts.get())
    }

    /// Sends `work` through `kernel`'s pool, bypassing readiness: the start-up probe.
    pub async fn probe(&self, kernel: Kernel, work: Arc<crate::runtime::work::Work>) -> Result<(), String> {
        let pool = &self.models.get(kernel.name()).ok_or("no such pool")?.pool;
        pool.submit(work, None).await.map(|_| ()).map_err(|r| r.to_string())
    }

    /// Runs one inference: checked, scheduled by the model's pool, answered (or refused) once.
    pub async fn infer(&self, req: InferRequest) -> Result<InferResponse, ServeError> {
        let model = self.model(&req.model, req.version.as_deref())?;
        let name = model.name();
        let result = self.infer_on(model, req).await;
        match &result {
            Ok(r) => {
                let seconds = (r.served.queue + r.served.service) as f64 / 1e9;
                let outcome = if r.served.missed { "missed" } else { "ok" };
                self.metrics.request(name, Some(r.served.kind), outcome, Some(seconds), r.served.missed);
            }
            Err(e) => self.metrics.request(name, None, e.outcome(), None, false),
        }
        result
    }

    async fn infer_on(&self, model: Model, req: InferRequest) -> Result<InferResponse, ServeError> {
        if !self.is_ready() {
            let why = if self.draining.load(Ordering::Relaxed) { "draining" } else { "not ready yet" };
            return Err(ServeError::Unavailable(format!("the server is {why}: it takes no requests")));
        }
        let deadline = deadline(req.deadline_ms)?;
        let work = model.decode(&req.inputs)?;
        let items = work.mandatory.items() + work.optional.as_ref().map_or(0, |p| p.items());
        if items > self.limits.max_items {
            return Err(ServeError::TooLarge(format!(
                "the request holds {items} items; this server takes at most {}",
                self.limits.max_items
            )));
        }
        let work = Arc::new(work);
        let pool = &self.models[model.name()].pool;
        self.metrics.queue(model.name(), 1);
        let answer = pool.submit(work.clone(), deadline).await;
        self.metrics.queue(model.name(), -1);
        let served = answer.map_err(refused)?;
        let outputs = model.encode(&served.answer, &work);
        Ok(InferResponse { model: model.name(), id: req.id, outputs, served })
    }
}

/// A client's `deadline_ms`, checked.
fn deadline(ms: Option<f64>) -> Result<Option<crate::model::Time>, ServeError> {
    match ms {
        None => Ok(None),
        Some(d) if d.is_finite() && d > 0.0 && d <= MAX_DEADLINE_MS => Ok(Some(from_secs(d / 1e3).max(1))),
        Some(d) => Err(ServeError::BadRequest(format!(
            "parameter deadline_ms must be a positive number of milliseconds up to {MAX_DEADLINE_MS}, not {d}"
        ))),
    }
}

/// Why the pool did not serve it, as the client hears it.
fn refused(r: Refused) -> ServeError {
    match r {
        Refused::Admission { retry_after } => ServeError::Overloaded { message: r.to_string(), retry_after },
        Refused::Draining | Refused::Stopped => ServeError::Unavailable(r.to_string()),
        Refused::Failed(_) => ServeError::Internal(r.to_string()),
    }
}

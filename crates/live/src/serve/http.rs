//! The Open Inference Protocol over HTTP/REST (axum on hyper): health, metadata, inference with
//! JSON tensors and the binary tensor data extension (`Inference-Header-Content-Length`,
//! `binary_data_size`), and `/metrics`. Every error is `{"error": "..."}` with its status.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::answer_json;
use super::budget::{Framing, Refusal, Reservation};
use super::error::{ServeError, outcome_of_http};
use super::frames::Frames;
use super::json;
use super::layers::{self, Access, Protocol};
use super::models::{Model, VERSION};
use super::server::{InferRequest, InferResponse, Server};
use super::tensor::Tensor;

pub use crate::oip::HEADER_LENGTH;

/// The routes, with `server` as their state.
pub fn router(server: Arc<Server>) -> Router {
    Router::new()
        .route("/v2", get(server_metadata))
        .route("/v2/health/live", get(live))
        .route("/v2/health/ready", get(ready))
        .route("/v2/models/{name}", get(model_metadata))
        .route("/v2/models/{name}/versions/{version}", get(model_metadata_v))
        .route("/v2/models/{name}/config", get(model_config))
        .route("/v2/models/{name}/versions/{version}/config", get(model_config_v))
        .route("/v2/models/stats", get(all_statistics))
        .route("/v2/models/{name}/stats", get(model_statistics))
        .route("/v2/models/{name}/versions/{version}/stats", get(model_statistics_v))
        .route("/v2/models/{name}/ready", get(model_ready))
        .route("/v2/models/{name}/versions/{version}/ready", get(model_ready_v))
        .route("/v2/models/{name}/infer", post(infer))
        .route("/v2/models/{name}/versions/{version}/infer", post(infer_v))
        .route("/metrics", get(metrics))
        .route("/v2/repository/index", post(super::http_repository::index))
        .merge(super::http_repository::control_routes(server.clone()))
        .fallback(|| async { error(ServeError::NotFound("no such endpoint: see /v2".into())) })
        // Outermost first: the token before anything else, then the body metered on the budget.
        .layer(middleware::from_fn_with_state(server.clone(), layers::meter::<Http>))
        .layer(middleware::from_fn_with_state(server.clone(), layers::authorize::<Http>))
        .with_state(server)
}

/// HTTP's part of the token and budget layers ([`super::layers`]).
pub struct Http;

impl Protocol for Http {
    const FRAMING: Framing = Framing::Plain;

    /// The inference token on everything but health (and metrics) when those are open, the
    /// repository index (which the control token reads too) and load and unload (whose routes check
    /// the control token instead, and refuse cross-site requests).
    fn access(path: &str) -> Access {
        if path.starts_with("/v2/health/") || path == "/metrics" {
            Access::Health
        } else if super::http_repository::is_control(path) {
            Access::Route
        } else if path == "/v2/repository/index" {
            Access::Index
        } else {
            Access::Inference
        }
    }

    fn is_infer(path: &str) -> bool {
        path.ends_with("/infer")
    }

    fn error(e: ServeError) -> Response {
        error(e)
    }

    fn overflow(r: Refusal) -> axum::BoxError {
        Box::new(r)
    }

    fn outcome(response: &Response) -> &'static str {
        outcome_of_http(response.status().as_u16())
    }
}

/// An error as the protocol says it.
pub fn error(e: ServeError) -> Response {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = (status, axum::Json(json!({ "error": e.to_string() }))).into_response();
    if let ServeError::Overloaded { retry_after, .. } = e {
        let secs = retry_after.as_secs_f64().ceil().max(1.0) as u64;
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    r
}

async fn server_metadata() -> Response {
    axum::Json(json!({
        "name": "spork",
        "version": env!("CARGO_PKG_VERSION"),
        "extensions": super::config::EXTENSIONS,
    }))
    .into_response()
}

async fn live() -> StatusCode {
    StatusCode::OK
}

async fn ready(State(s): State<Arc<Server>>) -> StatusCode {
    if s.is_ready() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE }
}

async fn model_metadata(State(s): State<Arc<Server>>, Path(name): Path<String>) -> Response {
    metadata(&s, &name, None)
}

async fn model_metadata_v(State(s): State<Arc<Server>>, Path((name, v)): Path<(String, String)>) -> Response {
    metadata(&s, &name, Some(&v))
}

async fn model_config(State(s): State<Arc<Server>>, Path(name): Path<String>) -> Response {
    config(&s, &name, None)
}

async fn model_config_v(State(s): State<Arc<Server>>, Path((name, v)): Path<(String, String)>) -> Response {
    config(&s, &name, Some(&v))
}

fn config(s: &Server, name: &str, version: Option<&str>) -> Response {
    match s.model_config(name, version) {
        Ok((m, instances)) => axum::Json(super::config::json(&m, &instances)).into_response(),
        Err(e) => error(e),
    }
}

async fn all_statistics(State(s): State<Arc<Server>>) -> Response {
    statistics(&s, None, None)
}

async fn model_statistics(State(s): State<Arc<Server>>, Path(name): Path<String>) -> Response {
    statistics(&s, Some(&name), None)
}

async fn model_statistics_v(
    State(s): State<Arc<Server>>,
    Path((name, v)): Path<(String, String)>,
) -> Response {
    statistics(&s, Some(&name), Some(&v))
}

fn statistics(s: &Server, name: Option<&str>, version: Option<&str>) -> Response {
    match s.statistics(name, version) {
        Ok(models) => axum::Json(super::statistics::json(&models)).into_response(),
        Err(e) => error(e),
    }
}

fn metadata(s: &Server, name: &str, version: Option<&str>) -> Response {
    match s.model(name, version).and_then(|m| Ok((m, s.model_properties(name, version)?))) {
        Ok((m, properties)) => axum::Json(model_json(&m, &properties)).into_response(),
        Err(e) => error(e),
    }
}

/// A model's metadata: its tensors' names, datatypes and shapes (-1: variable), and its properties
/// (as the gRPC response's `properties`).
pub fn model_json(m: &Model, properties: &std::collections::HashMap<String, String>) -> Value {
    let tensors = |ts: &[super::models::Signature]| -> Vec<Value> {
        ts.iter()
            .map(|t| json!({ "name": t.name, "datatype": t.datatype.name(), "shape": t.shape }))
            .collect()
    };
    let (inputs, outputs) = m.signature();
    json!({
        "name": m.name(),
        "versions": [VERSION],
        "platform": "spork",
        "inputs": tensors(&inputs),
        "outputs": tensors(&outputs),
        "properties": properties,
    })
}

async fn model_ready(State(s): State<Arc<Server>>, Path(name): Path<String>) -> Response {
    readiness(&s, &name, None)
}

async fn model_ready_v(State(s): State<Arc<Server>>, Path((name, v)): Path<(String, String)>) -> Response {
    readiness(&s, &name, Some(&v))
}

fn readiness(s: &Server, name: &str, version: Option<&str>) -> Response {
    match s.model_is_ready(name, version) {
        Ok(true) => StatusCode::OK.into_response(),
        Ok(false) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
        Err(e) => error(e),
    }
}

async fn metrics(State(s): State<Arc<Server>>) -> Response {
    let text = s.render_metrics();
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], text)
        .into_response()
}

async fn infer(State(s): State<Arc<Server>>, Path(name): Path<String>, req: Request) -> Response {
    run(&s, name, None, req).await.unwrap_or_else(error)
}

async fn infer_v(
    State(s): State<Arc<Server>>,
    Path((name, version)): Path<(String, String)>,
    req: Request,
) -> Response {
    run(&s, name, Some(version), req).await.unwrap_or_else(error)
}

async fn run(
    s: &Server,
    model: String,
    version: Option<String>,
    req: Request,
) -> Result<Response, ServeError> {
    // A request refused before it reaches a pool is counted by the budget layer, from its status.
    let taken = std::time::Instant::now();
    let (request, outputs) = prepare(s, model, version, req).await?;
    let answer = s.infer(request).await?;
    respond(&answer, &outputs, taken)
}

/// The request read, parsed and checked (its outputs too) before any work is paid for.
async fn prepare(
    s: &Server,
    model: String,
    version: Option<String>,
    req: Request,
) -> Result<(InferRequest, Outputs), ServeError> {
    let reservation = req.extensions().get::<Arc<Reservation>>().cloned().ok_or_else(|| {
        ServeError::Internal("the request has no memory reservation (the budget layer is missing)".into())
    })?;
    let m = s.model(&model, version.as_deref())?;
    m.expect();
    let json_len = header_length(req.headers())?;
    let body = read_body(s, req.into_body()).await?;
    if json_len.is_some_and(|n| n > body.len()) {
        return Err(bad(format!("{HEADER_LENGTH} must be a length within the body's {} bytes", body.len())));
    }
    let parsed = json::parse(&body, json_len.unwrap_or(body.len()), s.limits.max_items)?;
    drop(body);
    let named = match &parsed.outputs {
        None => None,
        Some(named) => {
            let chosen = m.outputs_named(named.iter().map(|(n, _)| n.as_str()))?;
            let binary = |name: &str| named.iter().find(|(n, _)| n == name).is_some_and(|(_, b)| *b);
            Some(
                chosen
                    .into_iter()
                    .map(|n| {
                        let b = binary(&n);
                        (n, b)
                    })
                    .collect(),
            )
        }
    };
    let outputs = Outputs { named, all_binary: parsed.all_binary };
    // An answer's JSON text can be several times its outputs' bytes: the budget holds the most it
    // can take before any work is paid for.
    let bound = m.bind(&parsed.inputs);
    let text = answer_json::text_bound(&m.answer_shapes(bound.as_ref().ok()), |n| outputs.as_json(n));
    s.reserve(&reservation, usize::try_from(text).unwrap_or(usize::MAX))?;
    let request = InferRequest {
        reservation,
        model,
        version,
        id: parsed.id,
        inputs: parsed.inputs,
        bound,
        deadline_ms: parsed.deadline_ms,
    };
    Ok((request, outputs))
}

/// The binary extension's JSON length, if the client gave one.
fn header_length(headers: &HeaderMap) -> Result<Option<usize>, ServeError> {
    match headers.get(HEADER_LENGTH) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map(Some)
            .ok_or_else(|| bad(format!("{HEADER_LENGTH} must be a byte count"))),
    }
}

/// The body, within the size limit, the memory budget and the body timeout; a body that breaks
/// off (the client reset it) is told apart from one that is too large.
async fn read_body(s: &Server, body: Body) -> Result<Bytes, ServeError> {
    let limit = s.limits.max_body;
    let read = axum::body::to_bytes(body, limit);
    match tokio::time::timeout(s.limits.body_timeout, read).await {
        Err(_) => {
            Err(ServeError::BadRequest(format!("the body did not arrive within {:?}", s.limits.body_timeout)))
        }
        Ok(Err(e)) => Err(body_error(&e, limit)),
        Ok(Ok(b)) => Ok(b),
    }
}

/// What a failed body read was: over the size limit, over the memory budget, or broken off.
fn body_error(e: &(dyn std::error::Error + 'static), limit: usize) -> ServeError {
    let mut cause = Some(e);
    while let Some(c) = cause {
        let too_large =
            || ServeError::TooLarge(format!("the request body is over this server's limit of {limit} bytes"));
        if c.is::<http_body_util::LengthLimitError>() {
            return too_large();
        }
        match c.downcast_ref::<Refusal>() {
            Some(Refusal::TooLarge { .. }) => return too_large(),
            Some(r @ Refusal::Budget(_)) => {
                let retry_after = std::time::Duration::from_secs(1);
                return ServeError::Overloaded { message: r.to_string(), retry_after };
            }
            None => {}
        }
        cause = c.source();
    }
    ServeError::BadRequest(format!("the request body could not be read: {e}"))
}

/// Which outputs, and how: binary (`true`) or JSON; `None`: all of them.
struct Outputs {
    named: Option<Vec<(String, bool)>>,
    all_binary: bool,
}

impl Outputs {
    /// Whether output `name` is sent as JSON `data`.
    fn as_json(&self, name: &str) -> bool {
        match &self.named {
            None => !self.all_binary,
            Some(named) => named.iter().any(|(n, binary)| n == name && !binary),
        }
    }
}

fn bad(what: impl std::fmt::Display) -> ServeError {
    ServeError::BadRequest(what.to_string())
}

/// The response: JSON, with binary outputs appended after it when asked for.
fn respond(a: &InferResponse, wanted: &Outputs, taken: std::time::Instant) -> Result<Response, ServeError> {
    // An optional part's output the gate did not run is left out.
    let chosen: Vec<(&Tensor, bool)> = match &wanted.named {
        None => a.outputs.iter().map(|t| (t, wanted.all_binary)).collect(),
        Some(named) => named
            .iter()
            .filter_map(|(name, binary)| a.outputs.iter().find(|t| t.name == *name).map(|t| (t, *binary)))
            .collect(),
    };
    // The binary outputs, sent after the JSON head as they are (the kernel's buffers).
    let tail: Vec<Bytes> = chosen.iter().filter(|(_, binary)| *binary).map(|(t, _)| t.data.clone()).collect();
    let s = &a.served;
    let answer = answer_json::Answer {
        model_name: &a.model,
        model_version: VERSION,
        id: a.id.as_deref(),
        parameters: json!({
            "worker_kind": s.kind.name(),
            "worker": s.worker,
            "queue_ms": s.queue as f64 / 1e6,
            "service_ms": s.service as f64 / 1e6,
            "optional_served": s.optional,
            "deadline_missed": s.missed,
            // From the handler taking the request (its head read, its body not yet) to this answer.
            "handled_ms": taken.elapsed().as_secs_f64() * 1e3,
        }),
        outputs: chosen.iter().map(|(t, binary)| answer_json::Output::new(t, *binary)).collect(),
    };
    let head = answer.to_vec()?;
    if tail.is_empty() {
        return Ok(([(header::CONTENT_TYPE, "application/json")], head).into_response());
    }
    let len = head.len();
    let frames = Body::new(Frames::new(std::iter::once(Bytes::from(head)).chain(tail)));
    let mut r = ([(header::CONTENT_TYPE, "application/octet-stream")], frames).into_response();
    r.headers_mut().insert(HEADER_LENGTH, HeaderValue::from(len));
    Ok(r)
}

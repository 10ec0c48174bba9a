//! The Open Inference Protocol over HTTP/REST (axum on hyper): health, metadata, inference with
//! JSON tensors and the binary tensor data extension (`Inference-Header-Content-Length`,
//! `binary_data_size`), and `/metrics`. Every error is `{"error": "..."}` with its status.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::error::ServeError;
use super::models::{Model, VERSION};
use super::server::{InferRequest, InferResponse, Server};
use super::tensor::Tensor;

/// The binary extension's header: the length of the JSON part of a body.
pub const HEADER_LENGTH: &str = "inference-header-content-length";

/// The routes, with `server` as their state.
pub fn router(server: Arc<Server>) -> Router {
    Router::new()
        .route("/v2", get(server_metadata))
        .route("/v2/health/live", get(live))
        .route("/v2/health/ready", get(ready))
        .route("/v2/models/{name}", get(model_metadata))
        .route("/v2/models/{name}/versions/{version}", get(model_metadata_v))
        .route("/v2/models/{name}/ready", get(model_ready))
        .route("/v2/models/{name}/versions/{version}/ready", get(model_ready_v))
        .route("/v2/models/{name}/infer", post(infer))
        .route("/v2/models/{name}/versions/{version}/infer", post(infer_v))
        .route("/metrics", get(metrics))
        .fallback(|| async { error(ServeError::NotFound("no such endpoint: see /v2".into())) })
        .layer(middleware::from_fn_with_state(server.clone(), authorize))
        .with_state(server)
}

/// An error as the protocol says it.
fn error(e: ServeError) -> Response {
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

/// The token on everything but health (and metrics) when those are open.
async fn authorize(State(s): State<Arc<Server>>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let open = s.open_health && (path.starts_with("/v2/health/") || path == "/metrics");
    let given = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    match if open { Ok(()) } else { s.authorize(given) } {
        Ok(()) => next.run(req).await,
        Err(e) => error(e),
    }
}

async fn server_metadata() -> Response {
    axum::Json(json!({
        "name": "spork",
        "version": env!("CARGO_PKG_VERSION"),
        "extensions": ["binary_tensor_data", "parameters"],
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

fn metadata(s: &Server, name: &str, version: Option<&str>) -> Response {
    match s.model(name, version) {
        Ok(m) => axum::Json(model_json(&m)).into_response(),
        Err(e) => error(e),
    }
}

/// A model's metadata: its tensors' names, datatypes and shapes (-1: variable).
pub fn model_json(m: &Model) -> Value {
    let tensors = |ts: &[super::models::TensorSpec]| -> Vec<Value> {
        ts.iter()
            .map(|t| json!({ "name": t.name, "datatype": t.datatype.name(), "shape": t.shape }))
            .collect()
    };
    json!({
        "name": m.name(),
        "versions": [VERSION],
        "platform": "spork",
        "inputs": tensors(m.inputs),
        "outputs": tensors(m.outputs),
    })
}

async fn model_ready(State(s): State<Arc<Server>>, Path(name): Path<String>) -> Response {
    readiness(&s, &name, None)
}

async fn model_ready_v(State(s): State<Arc<Server>>, Path((name, v)): Path<(String, String)>) -> Response {
    readiness(&s, &name, Some(&v))
}

fn readiness(s: &Server, name: &str, version: Option<&str>) -> Response {
    match s.model(name, version) {
        Ok(_) if s.is_ready() => StatusCode::OK.into_response(),
        Ok(_) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
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
    let headers = req.headers().clone();
    let body = read_body(s, req.into_body()).await?;
    let parsed = parse(&headers, &body)?;
    let request = InferRequest {
        model,
        version,
        id: parsed.id.clone(),
        inputs: parsed.inputs,
        deadline_ms: parsed.deadline_ms,
    };
    let answer = s.infer(request).await?;
    respond(&answer, &parsed.outputs)
}

/// The body, within the size limit and the body timeout.
async fn read_body(s: &Server, body: Body) -> Result<Bytes, ServeError> {
    let limit = s.limits.max_body;
    let read = axum::body::to_bytes(body, limit);
    match tokio::time::timeout(s.limits.body_timeout, read).await {
        Err(_) => {
            Err(ServeError::BadRequest(format!("the body did not arrive within {:?}", s.limits.body_timeout)))
        }
        Ok(Err(_)) => Err(ServeError::TooLarge(format!(
            "the request body is over this server's limit of {limit} bytes"
        ))),
        Ok(Ok(b)) => Ok(b),
    }
}

/// What the client asked for, parsed.
struct Parsed {
    id: Option<String>,
    inputs: Vec<Tensor>,
    deadline_ms: Option<f64>,
    outputs: Outputs,
}

/// Which outputs, and how: binary (`true`) or JSON.
struct Outputs {
    named: Option<Vec<(String, bool)>>,
    all_binary: bool,
}

fn bad(what: impl std::fmt::Display) -> ServeError {
    ServeError::BadRequest(what.to_string())
}

fn parse(headers: &HeaderMap, body: &[u8]) -> Result<Parsed, ServeError> {
    let json_len = match headers.get(HEADER_LENGTH) {
        None => body.len(),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n <= body.len())
            .ok_or_else(|| {
                bad(format!("{HEADER_LENGTH} must be a length within the body's {} bytes", body.len()))
            })?,
    };
    let (head, mut binary) = body.split_at(json_len);
    let v: Value =
        serde_json::from_slice(head).map_err(|e| bad(format!("the request is not valid JSON: {e}")))?;
    let obj = v.as_object().ok_or_else(|| bad("the request must be a JSON object"))?;
    let params = obj.get("parameters").and_then(Value::as_object);
    let deadline_ms = match params.and_then(|p| p.get("deadline_ms")) {
        None => None,
        Some(d) => Some(d.as_f64().ok_or_else(|| bad("parameter deadline_ms must be a number"))?),
    };
    let inputs = obj
        .get("inputs")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("the request needs an 'inputs' array"))?;
    let mut tensors = Vec::with_capacity(inputs.len());
    for i in inputs {
        tensors.push(input(i, &mut binary)?);
    }
    if !binary.is_empty() {
        return Err(bad(format!(
            "{} bytes of binary data follow the inputs that no input claims",
            binary.len()
        )));
    }
    let all_binary =
        params.and_then(|p| p.get("binary_data_output")).and_then(Value::as_bool).unwrap_or(false);
    let named = match obj.get("outputs") {
        None => None,
        Some(o) => Some(
            o.as_array()
                .ok_or_else(|| bad("'outputs' must be an array"))?
                .iter()
                .map(|o| {
                    let name = o
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad("each output needs a name"))?;
                    let binary =
                        o.pointer("/parameters/binary_data").and_then(Value::as_bool).unwrap_or(all_binary);
                    Ok((name.to_string(), binary))
                })
                .collect::<Result<Vec<_>, ServeError>>()?,
        ),
    };
    let id = obj.get("id").and_then(Value::as_str).map(|s| s.chars().take(256).collect());
    Ok(Parsed { id, inputs: tensors, deadline_ms, outputs: Outputs { named, all_binary } })
}

/// One input: its data from `data` (JSON, nested or flat) or the next `binary_data_size` bytes.
fn input(v: &Value, binary: &mut &[u8]) -> Result<Tensor, ServeError> {
    let name = v.get("name").and_then(Value::as_str).ok_or_else(|| bad("each input needs a 'name'"))?;
    let datatype = v
        .get("datatype")
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("input '{name}' needs a 'datatype'")))?;
    let shape: Vec<i64> = v
        .get("shape")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().map(Value::as_i64).collect())
        .ok_or_else(|| bad(format!("input '{name}' needs a 'shape' of integers")))?;
    if let Some(size) = v.pointer("/parameters/binary_data_size") {
        let size = size
            .as_u64()
            .ok_or_else(|| bad(format!("input '{name}': binary_data_size must be a byte count")))?;
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if size > binary.len() {
            return Err(bad(format!(
                "input '{name}': binary_data_size is {size} but only {} bytes of binary data remain (truncated?)",
                binary.len()
            )));
        }
        let (data, rest) = binary.split_at(size);
        *binary = rest;
        return Tensor::new(name, datatype, &shape, data.to_vec());
    }
    let data = v
        .get("data")
        .ok_or_else(|| bad(format!("input '{name}' has neither 'data' nor binary_data_size")))?;
    let mut values = Vec::new();
    flatten(name, data, &mut values)?;
    Tensor::from_values(name, datatype, &shape, &values)
}

fn flatten(name: &str, v: &Value, out: &mut Vec<i64>) -> Result<(), ServeError> {
    match v {
        Value::Array(a) => a.iter().try_for_each(|x| flatten(name, x, out)),
        Value::Number(n) => {
            out.push(n.as_i64().ok_or_else(|| bad(format!("input '{name}': {n} is not an integer")))?);
            Ok(())
        }
        other => Err(bad(format!("input '{name}': data holds {}, not numbers", kind_of(other)))),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::String(_) => "a string",
        Value::Object(_) => "an object",
        _ => "a value",
    }
}

/// The response: JSON, with binary outputs appended after it when asked for.
fn respond(a: &InferResponse, wanted: &Outputs) -> Result<Response, ServeError> {
    let chosen: Vec<(&Tensor, bool)> = match &wanted.named {
        None => a.outputs.iter().map(|t| (t, wanted.all_binary)).collect(),
        Some(named) => {
            let mut out = Vec::new();
            for (name, binary) in named {
                match a.outputs.iter().find(|t| &t.name == name) {
                    Some(t) => out.push((t, *binary)),
                    // An optional part's output the gate did not run is left out.
                    None if is_optional_output(a.model, name) => {}
                    None => {
                        return Err(bad(format!(
                            "model '{}' has no output '{}'",
                            a.model,
                            name.chars().take(80).collect::<String>()
                        )));
                    }
                }
            }
            out
        }
    };
    let mut tail = Vec::new();
    let outputs: Vec<Value> = chosen
        .iter()
        .map(|(t, binary)| {
            let mut o = json!({ "name": t.name, "datatype": t.datatype.name(), "shape": t.shape_i64() });
            if *binary {
                o["parameters"] = json!({ "binary_data_size": t.data.len() });
                tail.extend_from_slice(&t.data);
            } else {
                o["data"] = json!(t.values());
            }
            o
        })
        .collect();
    let s = &a.served;
    let mut body = json!({
        "model_name": a.model,
        "model_version": VERSION,
        "parameters": {
            "worker_kind": s.kind.name(),
            "worker": s.worker,
            "queue_ms": s.queue as f64 / 1e6,
            "service_ms": s.service as f64 / 1e6,
            "optional_served": s.optional,
            "deadline_missed": s.missed,
        },
        "outputs": outputs,
    });
    if let Some(id) = &a.id {
        body["id"] = json!(id);
    }
    let head = serde_json::to_vec(&body).map_err(|e| ServeError::Internal(e.to_string()))?;
    if tail.is_empty() {
        return Ok(([(header::CONTENT_TYPE, "application/json")], head).into_response());
    }
    let len = head.len();
    let mut bytes = head;
    bytes.extend_from_slice(&tail);
    let mut r = ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response();
    r.headers_mut().insert(HEADER_LENGTH, HeaderValue::from(len));
    Ok(r)
}

fn is_optional_output(model: &str, name: &str) -> bool {
    spork_golden::Kernel::from_name(model)
        .is_some_and(|k| Model::of(k).outputs.get(1).is_some_and(|o| o.name == name))
}

//! The two transports a load run speaks: HTTP (hyper, pooled keep-alive connections, the binary
//! tensor extension) and gRPC (tonic, one multiplexed channel). Either answers an [`Outcome`].

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::body::{WireTensor, http_body};
use crate::oip::HEADER_LENGTH;
use crate::oip::proto;
use crate::oip::proto::grpc_inference_service_client::GrpcInferenceServiceClient;

/// How long a pooled connection may sit idle before the client drops it: under the 10 s after
/// which `spork serve` closes an idle connection. A connection the server is closing just as a
/// burst takes it from the pool would fail that request in transit (hyper's "SendRequest"), a
/// client-made error that is not the server's.
const POOL_IDLE: std::time::Duration = std::time::Duration::from_secs(4);

/// HTTP or gRPC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// HTTP/REST with binary tensors.
    Http,
    /// gRPC.
    Grpc,
}

/// How one request ended.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Answered: where it ran, and whether the server says it missed its deadline.
    Ok {
        /// `cpu` or `fpga`.
        kind: String,
        /// The server's `deadline_missed`.
        missed: bool,
        /// The server's own part (its `queue_ms` plus `service_ms`: from the request reaching the
        /// scheduler until its worker finished), if it says.
        server_ms: Option<f64>,
        /// The server's `handled_ms`: from its handler taking the request to the answer, if it says.
        handled_ms: Option<f64>,
        /// The output tensors' bytes, by name (binary data; an output sent as JSON is left out).
        outputs: super::check::Named,
    },
    /// Not answered: the status ("http 429", "grpc ResourceExhausted") or what went wrong.
    Error(String),
}

/// The most bytes of a model's metadata read over HTTP.
const METADATA_MOST: usize = 64 << 10;

/// A client of one server and model.
#[derive(Clone)]
pub enum Client {
    /// HTTP.
    Http {
        /// Pooled connections.
        client: HyperClient<HttpConnector, Full<Bytes>>,
        /// The infer URL.
        url: String,
        /// `Bearer <token>`.
        auth: Option<String>,
    },
    /// gRPC.
    Grpc {
        /// The channel.
        client: GrpcInferenceServiceClient<tonic::transport::Channel>,
        /// The model.
        model: Arc<str>,
        /// `Bearer <token>`.
        auth: Option<String>,
    },
}

impl Client {
    /// A client of `model` at `target`.
    pub async fn new(
        protocol: Protocol,
        target: SocketAddr,
        token: Option<String>,
        model: &str,
    ) -> Result<Client, String> {
        let auth = token.map(|t| format!("Bearer {t}"));
        Ok(match protocol {
            Protocol::Http => {
                let client = HyperClient::builder(TokioExecutor::new())
                    .pool_max_idle_per_host(1024)
                    .pool_idle_timeout(POOL_IDLE)
                    .pool_timer(TokioTimer::new())
                    .build_http();
                Client::Http { client, url: format!("http://{target}/v2/models/{model}/infer"), auth }
            }
            Protocol::Grpc => {
                let channel = tonic::transport::Endpoint::from_shared(format!("http://{target}"))
                    .map_err(|e| e.to_string())?
                    .connect()
                    .await
                    .map_err(|e| e.to_string())?;
                let client = GrpcInferenceServiceClient::new(channel).max_decoding_message_size(usize::MAX);
                Client::Grpc { client, model: model.into(), auth }
            }
        })
    }

    /// The model's CPU speed as the server states it (items per second; `spork serve` does, in its
    /// metadata's `properties`), or `None` if it states none or cannot be asked.
    pub async fn cpu_speed(&self) -> Option<f64> {
        let stated = match self {
            Client::Http { client, url, auth } => {
                let v = get_json(client, url.strip_suffix("/infer")?, auth.as_deref()).await.ok()?;
                v.pointer(&format!("/properties/{}", crate::oip::CPU_ITEMS_PER_SEC))?.as_str()?.to_string()
            }
            Client::Grpc { client, model, auth } => {
                let req = authorized(
                    proto::ModelMetadataRequest { name: model.to_string(), version: String::new() },
                    auth,
                );
                let r = client.clone().model_metadata(req).await.ok()?;
                r.into_inner().properties.remove(crate::oip::CPU_ITEMS_PER_SEC)?
            }
        };
        stated.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 1.0)
    }

    /// The model's inputs as the server describes them (name, datatype, shape with -1 where
    /// variable), from its metadata; those its configuration marks optional (where it serves one:
    /// Spork and Triton do) left out.
    pub async fn inputs(&self) -> Result<Vec<(String, String, Vec<i64>)>, String> {
        let (all, optional) = match self {
            Client::Http { client, url, auth } => {
                let base = url.strip_suffix("/infer").unwrap_or(url);
                let meta = get_json(client, base, auth.as_deref()).await?;
                let config = get_json(client, &format!("{base}/config"), auth.as_deref()).await.ok();
                let optional: Vec<String> = config
                    .as_ref()
                    .and_then(|c| c.get("input")?.as_array().cloned())
                    .unwrap_or_default()
                    .iter()
                    .filter(|i| i.get("optional").and_then(serde_json::Value::as_bool) == Some(true))
                    .filter_map(|i| Some(i.get("name")?.as_str()?.to_string()))
                    .collect();
                let inputs = meta
                    .get("inputs")
                    .and_then(|i| i.as_array())
                    .ok_or("the model's metadata lists no inputs")?;
                let all = inputs
                    .iter()
                    .map(|i| {
                        let name = i.get("name")?.as_str()?.to_string();
                        let datatype = i.get("datatype")?.as_str()?.to_string();
                        let shape = i
                            .get("shape")?
                            .as_array()?
                            .iter()
                            .map(|d| d.as_i64())
                            .collect::<Option<Vec<i64>>>()?;
                        Some((name, datatype, shape))
                    })
                    .collect::<Option<Vec<_>>>()
                    .ok_or("the model's metadata has an input without a name, datatype or shape")?;
                (all, optional)
            }
            Client::Grpc { client, model, auth } => {
                let req = authorized(
                    proto::ModelMetadataRequest { name: model.to_string(), version: String::new() },
                    auth,
                );
                let meta = client
                    .clone()
                    .model_metadata(req)
                    .await
                    .map_err(|s| format!("{}: {}", s.code(), s.message()))?;
                let req = authorized(
                    proto::ModelConfigRequest { name: model.to_string(), version: String::new() },
                    auth,
                );
                let optional = match client.clone().model_config(req).await {
                    Ok(c) => c
                        .into_inner()
                        .config
                        .map(|c| c.input)
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|i| i.optional)
                        .map(|i| i.name)
                        .collect(),
                    Err(_) => Vec::new(),
                };
                let all =
                    meta.into_inner().inputs.into_iter().map(|t| (t.name, t.datatype, t.shape)).collect();
                (all, optional)
            }
        };
        Ok(all.into_iter().filter(|(name, _, _)| !optional.contains(name)).collect())
    }

    /// Sends one inference.
    pub async fn infer(&self, t: &[WireTensor], deadline_ms: Option<f64>) -> Outcome {
        match self {
            Client::Http { client, url, auth } => http(client, url, auth.as_deref(), t, deadline_ms).await,
            Client::Grpc { client, model, auth } => {
                grpc(client.clone(), model, auth.as_deref(), t, deadline_ms).await
            }
        }
    }
}

/// A JSON document the server gives at `url` (metadata, configuration: a few hundred bytes; a
/// server sending more than [`METADATA_MOST`] is not read past it).
async fn get_json(
    client: &HyperClient<HttpConnector, Full<Bytes>>,
    url: &str,
    auth: Option<&str>,
) -> Result<serde_json::Value, String> {
    let mut req = hyper::Request::get(url);
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    let req = req.body(Full::new(Bytes::new())).map_err(|e| e.to_string())?;
    let resp = client.request(req).await.map_err(|e| format!("GET {url}: {e}"))?;
    let status = resp.status();
    let body = http_body_util::Limited::new(resp.into_body(), METADATA_MOST)
        .collect()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?
        .to_bytes();
    if !status.is_success() {
        let text: String = String::from_utf8_lossy(&body).chars().take(200).collect();
        return Err(format!("GET {url}: {status}: {text}"));
    }
    serde_json::from_slice(&body).map_err(|e| format!("GET {url}: {e}"))
}

/// `msg` as a gRPC request with the bearer token, if any.
fn authorized<T>(msg: T, auth: &Option<String>) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    if let Some(v) = auth.as_deref().and_then(|a| a.parse().ok()) {
        req.metadata_mut().insert("authorization", v);
    }
    req
}

async fn http(
    client: &HyperClient<HttpConnector, Full<Bytes>>,
    url: &str,
    auth: Option<&str>,
    t: &[WireTensor],
    deadline_ms: Option<f64>,
) -> Outcome {
    let (body, len) = http_body(t, deadline_ms);
    let mut req = hyper::Request::post(url).header(HEADER_LENGTH, len);
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    let Ok(req) = req.body(Full::new(Bytes::from(body))) else {
        return Outcome::Error("request build".into());
    };
    let resp = match client.request(req).await {
        Ok(r) => r,
        Err(e) => return Outcome::Error(format!("http transport: {e}")),
    };
    let status = resp.status().as_u16();
    let head_len = resp.headers().get(HEADER_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    let Ok(bytes) = resp.into_body().collect().await.map(|b| b.to_bytes()) else {
        return Outcome::Error("http body".into());
    };
    if status != 200 {
        return Outcome::Error(format!("http {status}"));
    }
    let head = &bytes[..head_len.unwrap_or(bytes.len()).min(bytes.len())];
    match serde_json::from_slice::<serde_json::Value>(head) {
        Ok(v) => Outcome::Ok {
            kind: v.pointer("/parameters/worker_kind").and_then(|k| k.as_str()).unwrap_or("?").to_string(),
            missed: v
                .pointer("/parameters/deadline_missed")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            server_ms: ["queue_ms", "service_ms"]
                .iter()
                .map(|k| v.pointer(&format!("/parameters/{k}")).and_then(serde_json::Value::as_f64))
                .sum(),
            handled_ms: v.pointer("/parameters/handled_ms").and_then(serde_json::Value::as_f64),
            outputs: binary_outputs(&v, bytes.slice(head.len()..)),
        },
        Err(_) => Outcome::Error("http bad response".into()),
    }
}

/// The binary outputs of an HTTP answer: each output's `binary_data_size` bytes of `tail`, in order.
fn binary_outputs(head: &serde_json::Value, tail: Bytes) -> super::check::Named {
    let mut at = 0usize;
    let mut named = Vec::new();
    for o in head.get("outputs").and_then(serde_json::Value::as_array).into_iter().flatten() {
        let size = o.pointer("/parameters/binary_data_size").and_then(serde_json::Value::as_u64);
        let (Some(name), Some(size)) = (o.get("name").and_then(serde_json::Value::as_str), size) else {
            continue;
        };
        let end = at.saturating_add(size as usize).min(tail.len());
        named.push((name.to_string(), tail.slice(at..end)));
        at = end;
    }
    named
}

async fn grpc(
    mut client: GrpcInferenceServiceClient<tonic::transport::Channel>,
    model: &str,
    auth: Option<&str>,
    ts: &[WireTensor],
    deadline_ms: Option<f64>,
) -> Outcome {
    use proto::infer_parameter::ParameterChoice;
    let mut parameters = std::collections::HashMap::new();
    if let Some(d) = deadline_ms {
        parameters.insert(
            "deadline_ms".to_string(),
            proto::InferParameter { parameter_choice: Some(ParameterChoice::DoubleParam(d)) },
        );
    }
    let msg = proto::ModelInferRequest {
        model_name: model.into(),
        inputs: ts
            .iter()
            .map(|t| proto::model_infer_request::InferInputTensor {
                name: t.name.clone(),
                datatype: t.datatype.into(),
                shape: t.shape.clone(),
                ..Default::default()
            })
            .collect(),
        raw_input_contents: ts.iter().map(|t| t.data.clone()).collect(),
        parameters,
        ..Default::default()
    };
    let mut req = tonic::Request::new(msg);
    if let Some(v) = auth.and_then(|a| a.parse().ok()) {
        req.metadata_mut().insert("authorization", v);
    }
    match client.model_infer(req).await {
        Ok(r) => {
            let p = &r.get_ref().parameters;
            let kind = match p.get("worker_kind").and_then(|v| v.parameter_choice.as_ref()) {
                Some(ParameterChoice::StringParam(s)) => s.clone(),
                _ => "?".into(),
            };
            let missed = matches!(
                p.get("deadline_missed").and_then(|v| v.parameter_choice.as_ref()),
                Some(ParameterChoice::BoolParam(true))
            );
            let ms = |k: &str| match p.get(k).and_then(|v| v.parameter_choice.as_ref()) {
                Some(ParameterChoice::DoubleParam(ms)) => Some(*ms),
                _ => None,
            };
            let server_ms = ["queue_ms", "service_ms"].iter().map(|k| ms(k)).sum();
            let handled_ms = ms("handled_ms");
            let r = r.into_inner();
            let names = r.outputs.into_iter().map(|o| o.name);
            let outputs = names.zip(r.raw_output_contents).collect();
            Outcome::Ok { kind, missed, server_ms, handled_ms, outputs }
        }
        Err(s) => Outcome::Error(format!("grpc {:?}", s.code())),
    }
}

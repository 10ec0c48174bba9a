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
                let mut req = hyper::Request::get(url.strip_suffix("/infer")?);
                if let Some(a) = auth {
                    req = req.header("authorization", a.as_str());
                }
                let resp = client.request(req.body(Full::new(Bytes::new())).ok()?).await.ok()?;
                // Metadata is a few hundred bytes: a server sending more is not read past this.
                let body = http_body_util::Limited::new(resp.into_body(), METADATA_MOST)
                    .collect()
                    .await
                    .ok()?
                    .to_bytes();
                let v: serde_json::Value = serde_json::from_slice(&body).ok()?;
                v.pointer(&format!("/properties/{}", crate::oip::CPU_ITEMS_PER_SEC))?.as_str()?.to_string()
            }
            Client::Grpc { client, model, auth } => {
                let mut req = tonic::Request::new(proto::ModelMetadataRequest {
                    name: model.to_string(),
                    version: String::new(),
                });
                if let Some(v) = auth.as_deref().and_then(|a| a.parse().ok()) {
                    req.metadata_mut().insert("authorization", v);
                }
                let r = client.clone().model_metadata(req).await.ok()?;
                r.into_inner().properties.remove(crate::oip::CPU_ITEMS_PER_SEC)?
            }
        };
        stated.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 1.0)
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
        },
        Err(_) => Outcome::Error("http bad response".into()),
    }
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
            Outcome::Ok { kind, missed, server_ms, handled_ms: ms("handled_ms") }
        }
        Err(s) => Outcome::Error(format!("grpc {:?}", s.code())),
    }
}

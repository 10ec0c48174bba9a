//! The Open Inference Protocol over gRPC (tonic): `inference.GRPCInferenceService`, from the
//! `.proto` written from the protocol's spec. Tensors come in `raw_input_contents` or typed
//! contents and go out in `raw_output_contents` (what clients decode).

use std::collections::HashMap;
use std::sync::Arc;

use axum::middleware;
use tonic::{Request, Response, Status};

use super::budget::{Framing, Refusal, Reservation};
use super::error::{ServeError, outcome_of_grpc};
use super::layers::{self, Access, Protocol};
use super::models::VERSION;
use super::server::{InferRequest, InferResponse, Server};
use super::tensor::Tensor;

pub use crate::oip::proto;

use proto::grpc_inference_service_server::GrpcInferenceService;
pub use proto::grpc_inference_service_server::GrpcInferenceServiceServer;
use proto::infer_parameter::ParameterChoice;
use proto::model_infer_request::InferInputTensor;
use proto::model_infer_response::InferOutputTensor;
use proto::model_metadata_response::TensorMetadata;
use proto::*;

/// The service over `server`.
pub struct Service {
    server: Arc<Server>,
}

/// The inference method.
const INFER: &str = "/inference.GRPCInferenceService/ModelInfer";

/// The repository index: the inference token or the control token reads it.
const INDEX: &str = "/inference.GRPCInferenceService/RepositoryIndex";

/// Load and unload: refused under `--model-control none`, else the control token's.
const CONTROL: [&str; 2] = [
    "/inference.GRPCInferenceService/RepositoryModelLoad",
    "/inference.GRPCInferenceService/RepositoryModelUnload",
];

/// The health methods: open without the token when health is open.
const HEALTH: [&str; 3] = [
    "/inference.GRPCInferenceService/ServerLive",
    "/inference.GRPCInferenceService/ServerReady",
    "/inference.GRPCInferenceService/ModelReady",
];

/// The service as routes, behind the token check (the control token's for load and unload) and
/// the memory budget ([`super::layers`]): both run on a request's headers, before tonic decodes a
/// byte of its message.
pub fn router(server: Arc<Server>) -> axum::Router {
    tonic::service::Routes::new(Service::new(server.clone()))
        .into_axum_router()
        .layer(middleware::from_fn_with_state(server.clone(), layers::meter::<Grpc>))
        .layer(middleware::from_fn_with_state(server, layers::authorize::<Grpc>))
}

/// gRPC's part of the token and budget layers.
pub struct Grpc;

impl Protocol for Grpc {
    const FRAMING: Framing = Framing::Grpc;

    fn access(path: &str) -> Access {
        if HEALTH.contains(&path) {
            Access::Health
        } else if CONTROL.contains(&path) {
            Access::Control
        } else if path == INDEX {
            Access::Index
        } else {
            Access::Inference
        }
    }

    fn is_infer(path: &str) -> bool {
        path == INFER
    }

    fn error(e: ServeError) -> axum::response::Response {
        Status::from(e).into_http()
    }

    fn overflow(r: Refusal) -> axum::BoxError {
        Box::new(Status::resource_exhausted(r.to_string()))
    }

    /// A refusal before the pool (tonic's own, or ours) is a trailers-only answer: its status is in
    /// the headers.
    fn outcome(response: &axum::response::Response) -> &'static str {
        let code = response.headers().get("grpc-status").and_then(|v| v.to_str().ok()?.parse::<i32>().ok());
        outcome_of_grpc(tonic::Code::from(code.unwrap_or(13)))
    }

    /// A stream's messages are requests of their own: each reserves on its own
    /// ([`super::grpc_stream::Messages`]).
    fn stream(s: &Server, req: &mut axum::extract::Request) -> bool {
        if req.uri().path() != super::grpc_stream::PATH {
            return false;
        }
        let inbox = Arc::new(super::grpc_stream::Inbox::default());
        req.extensions_mut().insert(inbox.clone());
        let body = std::mem::take(req.body_mut());
        let messages = super::grpc_stream::Messages::new(
            body,
            s.budget.clone(),
            s.limits.max_body,
            inbox,
            Self::overflow,
        );
        *req.body_mut() = axum::body::Body::new(messages);
        true
    }
}

impl Service {
    /// The gRPC service of `server`, decoding at most the body limit (the budget layer refuses a
    /// larger message as RESOURCE_EXHAUSTED as soon as its length prefix arrives).
    pub fn new(server: Arc<Server>) -> GrpcInferenceServiceServer<Service> {
        let limit = server.limits.max_body;
        GrpcInferenceServiceServer::new(Service { server })
            .max_decoding_message_size(limit)
            .max_encoding_message_size(usize::MAX)
    }
}

#[tonic::async_trait]
impl GrpcInferenceService for Service {
    async fn server_live(
        &self,
        _req: Request<ServerLiveRequest>,
    ) -> Result<Response<ServerLiveResponse>, Status> {
        Ok(Response::new(ServerLiveResponse { live: true }))
    }

    async fn server_ready(
        &self,
        _req: Request<ServerReadyRequest>,
    ) -> Result<Response<ServerReadyResponse>, Status> {
        Ok(Response::new(ServerReadyResponse { ready: self.server.is_ready() }))
    }

    async fn model_ready(
        &self,
        req: Request<ModelReadyRequest>,
    ) -> Result<Response<ModelReadyResponse>, Status> {
        let r = req.get_ref();
        let ready = self.server.model_is_ready(&r.name, Some(&r.version))?;
        Ok(Response::new(ModelReadyResponse { ready }))
    }

    async fn server_metadata(
        &self,
        _req: Request<ServerMetadataRequest>,
    ) -> Result<Response<ServerMetadataResponse>, Status> {
        Ok(Response::new(ServerMetadataResponse {
            name: "spork".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            extensions: super::config::EXTENSIONS.iter().map(|e| e.to_string()).collect(),
        }))
    }

    async fn model_config(
        &self,
        req: Request<ModelConfigRequest>,
    ) -> Result<Response<ModelConfigResponse>, Status> {
        let r = req.get_ref();
        let (m, instances) = self.server.model_config(&r.name, Some(&r.version))?;
        Ok(Response::new(ModelConfigResponse { config: Some(super::config::message(&m, &instances)) }))
    }

    async fn model_statistics(
        &self,
        req: Request<ModelStatisticsRequest>,
    ) -> Result<Response<ModelStatisticsResponse>, Status> {
        let r = req.get_ref();
        let name = Some(r.name.as_str()).filter(|n| !n.is_empty());
        let models = self.server.statistics(name, Some(&r.version))?;
        Ok(Response::new(super::statistics::message(&models)))
    }

    async fn model_metadata(
        &self,
        req: Request<ModelMetadataRequest>,
    ) -> Result<Response<ModelMetadataResponse>, Status> {
        let r = req.get_ref();
        let m = self.server.model(&r.name, Some(&r.version))?;
        let properties = self.server.model_properties(&r.name, Some(&r.version))?;
        let tensors = |ts: Vec<super::models::Signature>| {
            ts.into_iter()
                .map(|t| TensorMetadata { name: t.name, datatype: t.datatype.name().into(), shape: t.shape })
                .collect()
        };
        let (inputs, outputs) = m.signature();
        Ok(Response::new(ModelMetadataResponse {
            name: m.name().into(),
            versions: vec![VERSION.into()],
            platform: "spork".into(),
            inputs: tensors(inputs),
            outputs: tensors(outputs),
            properties,
        }))
    }

    async fn model_infer(
        &self,
        req: Request<ModelInferRequest>,
    ) -> Result<Response<ModelInferResponse>, Status> {
        // A refusal here is counted by the budget layer, from its status.
        let taken = std::time::Instant::now();
        let reservation = req.extensions().get::<Arc<Reservation>>().cloned().ok_or_else(|| {
            ServeError::Internal("the request has no memory reservation (the budget layer is missing)".into())
        })?;
        let (request, wanted) = prepare(&self.server, reservation.clone(), req.into_inner())?;
        let answer = self.server.infer(request).await?;
        Ok(Response::new(Service::respond(&answer, &reservation, wanted.as_deref(), taken)))
    }

    type ModelStreamInferStream = super::grpc_stream::Answers;

    async fn model_stream_infer(
        &self,
        req: Request<tonic::Streaming<ModelInferRequest>>,
    ) -> Result<Response<Self::ModelStreamInferStream>, Status> {
        let inbox = req.extensions().get::<Arc<super::grpc_stream::Inbox>>().cloned().ok_or_else(|| {
            ServeError::Internal("the stream has no message meter (the budget layer is missing)".into())
        })?;
        Ok(Response::new(super::grpc_stream::serve(self.server.clone(), inbox, req.into_inner())))
    }

    async fn repository_index(
        &self,
        req: Request<RepositoryIndexRequest>,
    ) -> Result<Response<RepositoryIndexResponse>, Status> {
        let control = self.server.control()?;
        let models = control
            .index(&self.server, req.get_ref().ready)
            .into_iter()
            .map(|e| repository_index_response::ModelIndex {
                name: e.name,
                version: e.version,
                state: e.state.into(),
                reason: e.reason,
            })
            .collect();
        Ok(Response::new(RepositoryIndexResponse { models }))
    }

    async fn repository_model_load(
        &self,
        req: Request<RepositoryModelLoadRequest>,
    ) -> Result<Response<RepositoryModelLoadResponse>, Status> {
        let control = self.server.control()?;
        let r = req.into_inner();
        if let Some(key) = r.parameters.keys().find(|k| *k == "config" || k.starts_with("file:")) {
            let key: String = key.chars().take(80).collect();
            return Err(ServeError::BadRequest(format!(
                "load parameter '{key}' is not taken: edit the model's folder and load it again"
            ))
            .into());
        }
        control.load(&self.server, &r.model_name).await?;
        Ok(Response::new(RepositoryModelLoadResponse {}))
    }

    async fn repository_model_unload(
        &self,
        req: Request<RepositoryModelUnloadRequest>,
    ) -> Result<Response<RepositoryModelUnloadResponse>, Status> {
        let control = self.server.control()?;
        control.unload(&self.server, &req.get_ref().model_name).await?;
        Ok(Response::new(RepositoryModelUnloadResponse {}))
    }
}

impl Service {
    /// The answer's message, with what the server adds as parameters; `reservation` shrinks to what
    /// the answer holds until tonic has encoded and sent it.
    pub fn respond(
        answer: &InferResponse,
        reservation: &Reservation,
        wanted: Option<&[String]>,
        taken: std::time::Instant,
    ) -> ModelInferResponse {
        let chosen: Vec<&Tensor> =
            answer.outputs.iter().filter(|t| wanted.is_none_or(|w| w.contains(&t.name))).collect();
        // The answer holds its outputs until tonic encodes them, and the encoding until it is sent.
        reservation.shrink_to(
            chosen.iter().map(|t| t.data.len()).sum::<usize>().saturating_mul(2).saturating_add(4096),
        );
        let s = &answer.served;
        let param = |p: ParameterChoice| InferParameter { parameter_choice: Some(p) };
        let parameters = HashMap::from([
            ("worker_kind".to_string(), param(ParameterChoice::StringParam(s.kind.name().into()))),
            ("worker".to_string(), param(ParameterChoice::Int64Param(i64::from(s.worker)))),
            ("queue_ms".to_string(), param(ParameterChoice::DoubleParam(s.queue as f64 / 1e6))),
            ("service_ms".to_string(), param(ParameterChoice::DoubleParam(s.service as f64 / 1e6))),
            ("optional_served".to_string(), param(ParameterChoice::BoolParam(s.optional))),
            ("deadline_missed".to_string(), param(ParameterChoice::BoolParam(s.missed))),
            // From the handler taking the request (tonic has decoded it already) to this answer.
            (
                "handled_ms".to_string(),
                param(ParameterChoice::DoubleParam(taken.elapsed().as_secs_f64() * 1e3)),
            ),
        ]);
        ModelInferResponse {
            model_name: answer.model.clone(),
            model_version: VERSION.into(),
            id: answer.id.clone().unwrap_or_default(),
            parameters,
            outputs: chosen
                .iter()
                .map(|t| InferOutputTensor {
                    name: t.name.clone(),
                    datatype: t.datatype.name().into(),
                    shape: t.shape_i64(),
                    parameters: HashMap::new(),
                    contents: None,
                })
                .collect(),
            raw_output_contents: chosen.iter().map(|t| t.data.clone()).collect(),
        }
    }
}

/// The request as the server takes it, and the outputs asked for (each once; `None`: all),
/// checked before any work is paid for. The message is dropped once its tensors are taken.
pub fn prepare(
    server: &Server,
    reservation: Arc<Reservation>,
    r: ModelInferRequest,
) -> Result<(InferRequest, Option<Vec<String>>), ServeError> {
    let model = server.model(&r.model_name, Some(&r.model_version))?;
    model.expect();
    let wanted = match r.outputs.is_empty() {
        true => None,
        false => Some(model.outputs_named(r.outputs.iter().map(|o| o.name.as_str()))?),
    };
    let inputs = inputs(&r)?;
    let bound = model.bind(&inputs);
    // prost copies the outputs into the answer's message: the copy is held beside them.
    server.reserve(&reservation, model.answer_bytes(bound.as_ref().ok()))?;
    let request = InferRequest {
        reservation,
        deadline_ms: deadline(&r.parameters)?,
        inputs,
        bound,
        model: r.model_name,
        version: Some(r.model_version),
        id: Some(r.id).filter(|id| !id.is_empty()),
    };
    Ok((request, wanted))
}

/// `deadline_ms` as whichever number type the client sent.
fn deadline(params: &HashMap<String, InferParameter>) -> Result<Option<f64>, ServeError> {
    let Some(p) = params.get("deadline_ms") else { return Ok(None) };
    match &p.parameter_choice {
        Some(ParameterChoice::Int64Param(v)) => Ok(Some(*v as f64)),
        Some(ParameterChoice::Uint64Param(v)) => Ok(Some(*v as f64)),
        Some(ParameterChoice::DoubleParam(v)) => Ok(Some(*v)),
        _ => Err(ServeError::BadRequest("parameter deadline_ms must be a number".into())),
    }
}

/// The inputs, from raw contents (one per input, in order) or typed contents.
fn inputs(r: &ModelInferRequest) -> Result<Vec<Tensor>, ServeError> {
    let raw = &r.raw_input_contents;
    if !raw.is_empty() && raw.len() != r.inputs.len() {
        return Err(ServeError::BadRequest(format!(
            "{} raw_input_contents for {} inputs: give one per input, or none",
            raw.len(),
            r.inputs.len()
        )));
    }
    r.inputs
        .iter()
        .enumerate()
        .map(|(i, t)| match raw.get(i) {
            Some(bytes) => Tensor::new(&t.name, &t.datatype, &t.shape, bytes.clone()),
            None => typed(t),
        })
        .collect()
}

fn typed(t: &InferInputTensor) -> Result<Tensor, ServeError> {
    let c = t.contents.as_ref().ok_or_else(|| {
        ServeError::BadRequest(format!("input '{}' has neither raw nor typed contents", t.name))
    })?;
    let values: Vec<i64> = if !c.uint_contents.is_empty() {
        c.uint_contents.iter().map(|&v| i64::from(v)).collect()
    } else {
        c.int_contents.iter().map(|&v| i64::from(v)).collect()
    };
    Tensor::from_values(&t.name, &t.datatype, &t.shape, &values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Any tensor a client can send (raw or typed, any datatype name, any shape) converts to a
        /// tensor whose bytes are exactly its shape's, or is refused; never a panic.
        #[test]
        fn any_request_converts_exactly_or_is_refused(
            shape in vec(-3i64..70_000, 0..4),
            raw in vec(any::<u8>(), 0..64),
            uints in vec(any::<u32>(), 0..32),
            ints in vec(any::<i32>(), 0..32),
            datatype in 0usize..6,
            use_raw in any::<bool>(),
        ) {
            let names = ["UINT8", "UINT16", "UINT32", "INT16", "FP32", ""];
            let contents = InferTensorContents { uint_contents: uints, int_contents: ints, ..Default::default() };
            let t = InferInputTensor {
                name: "x".into(),
                datatype: names[datatype].into(),
                shape,
                parameters: HashMap::new(),
                contents: Some(contents),
            };
            let raw_input_contents = if use_raw { vec![raw.into()] } else { Vec::new() };
            let r = ModelInferRequest { inputs: vec![t], raw_input_contents, ..Default::default() };
            if let Ok(tensors) = inputs(&r) {
                for t in tensors {
                    let elements = t.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
                    prop_assert_eq!(Some(t.data.len() as u64), elements.map(|e| e * t.datatype.size() as u64));
                }
            }
        }
    }
}

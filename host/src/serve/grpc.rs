//! The Open Inference Protocol over gRPC (tonic): `inference.GRPCInferenceService`, from the
//! `.proto` written from the protocol's spec. Tensors come in `raw_input_contents` or typed
//! contents and go out in `raw_output_contents` (what clients decode).

use std::collections::HashMap;
use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::error::ServeError;
use super::models::VERSION;
use super::server::{InferRequest, Server};
use super::tensor::Tensor;

/// The generated protocol types.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("inference");
}

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

impl Service {
    /// The gRPC service of `server`, with its message size limit.
    pub fn new(server: Arc<Server>) -> GrpcInferenceServiceServer<Service> {
        // tonic refuses messages over its own limit with OUT_OF_RANGE; ours is checked in `infer` so
        // that an oversized request gets RESOURCE_EXHAUSTED like any other limit. Tonic's is a
        // backstop well above it.
        let backstop = server.limits.max_body.saturating_mul(2).saturating_add(8 << 20);
        GrpcInferenceServiceServer::new(Service { server })
            .max_decoding_message_size(backstop)
            .max_encoding_message_size(usize::MAX)
    }

    fn authorize<T>(&self, req: &Request<T>, health: bool) -> Result<(), Status> {
        if health && self.server.open_health {
            return Ok(());
        }
        let given = req.metadata().get("authorization").and_then(|v| v.to_str().ok());
        self.server.authorize(given).map_err(Status::from)
    }
}

#[tonic::async_trait]
impl GrpcInferenceService for Service {
    async fn server_live(
        &self,
        req: Request<ServerLiveRequest>,
    ) -> Result<Response<ServerLiveResponse>, Status> {
        self.authorize(&req, true)?;
        Ok(Response::new(ServerLiveResponse { live: true }))
    }

    async fn server_ready(
        &self,
        req: Request<ServerReadyRequest>,
    ) -> Result<Response<ServerReadyResponse>, Status> {
        self.authorize(&req, true)?;
        Ok(Response::new(ServerReadyResponse { ready: self.server.is_ready() }))
    }

    async fn model_ready(
        &self,
        req: Request<ModelReadyRequest>,
    ) -> Result<Response<ModelReadyResponse>, Status> {
        self.authorize(&req, true)?;
        let r = req.get_ref();
        self.server.model(&r.name, Some(&r.version))?;
        Ok(Response::new(ModelReadyResponse { ready: self.server.is_ready() }))
    }

    async fn server_metadata(
        &self,
        req: Request<ServerMetadataRequest>,
    ) -> Result<Response<ServerMetadataResponse>, Status> {
        self.authorize(&req, false)?;
        Ok(Response::new(ServerMetadataResponse {
            name: "spork".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            extensions: vec!["binary_tensor_data".into(), "parameters".into()],
        }))
    }

    async fn model_metadata(
        &self,
        req: Request<ModelMetadataRequest>,
    ) -> Result<Response<ModelMetadataResponse>, Status> {
        self.authorize(&req, false)?;
        let r = req.get_ref();
        let m = self.server.model(&r.name, Some(&r.version))?;
        let tensors = |ts: &[super::models::TensorSpec]| {
            ts.iter()
                .map(|t| TensorMetadata {
                    name: t.name.into(),
                    datatype: t.datatype.name().into(),
                    shape: t.shape.to_vec(),
                })
                .collect()
        };
        Ok(Response::new(ModelMetadataResponse {
            name: m.name().into(),
            versions: vec![VERSION.into()],
            platform: "spork".into(),
            inputs: tensors(m.inputs),
            outputs: tensors(m.outputs),
            properties: HashMap::new(),
        }))
    }

    async fn model_infer(
        &self,
        req: Request<ModelInferRequest>,
    ) -> Result<Response<ModelInferResponse>, Status> {
        self.authorize(&req, false)?;
        let r = req.into_inner();
        let size = prost::Message::encoded_len(&r);
        if size > self.server.limits.max_body {
            let limit = self.server.limits.max_body;
            return Err(ServeError::TooLarge(format!(
                "the request is {size} bytes; this server takes at most {limit}"
            ))
            .into());
        }
        let request = InferRequest {
            deadline_ms: deadline(&r.parameters)?,
            inputs: inputs(&r)?,
            model: r.model_name,
            version: Some(r.model_version),
            id: Some(r.id).filter(|id| !id.is_empty()),
        };
        let answer = self.server.infer(request).await?;
        let wanted: Vec<&str> = r.outputs.iter().map(|o| o.name.as_str()).collect();
        let chosen: Vec<&Tensor> = answer
            .outputs
            .iter()
            .filter(|t| wanted.is_empty() || wanted.contains(&t.name.as_str()))
            .collect();
        let s = &answer.served;
        let param = |p: ParameterChoice| InferParameter { parameter_choice: Some(p) };
        let parameters = HashMap::from([
            ("worker_kind".to_string(), param(ParameterChoice::StringParam(s.kind.name().into()))),
            ("worker".to_string(), param(ParameterChoice::Int64Param(i64::from(s.worker)))),
            ("queue_ms".to_string(), param(ParameterChoice::DoubleParam(s.queue as f64 / 1e6))),
            ("service_ms".to_string(), param(ParameterChoice::DoubleParam(s.service as f64 / 1e6))),
            ("optional_served".to_string(), param(ParameterChoice::BoolParam(s.optional))),
            ("deadline_missed".to_string(), param(ParameterChoice::BoolParam(s.missed))),
        ]);
        Ok(Response::new(ModelInferResponse {
            model_name: answer.model.into(),
            model_version: VERSION.into(),
            id: answer.id.unwrap_or_default(),
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
        }))
    }
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

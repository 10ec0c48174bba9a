//! The worker API's messages (`proto/worker.proto`) and their conversions to the runtime's types:
//! a payload goes out as bytes and integer lists, an output comes back the same way; a malformed
//! message is an error naming the field, never a panic.

use crate::datapath::work::{Output, Payload};
use crate::repository::kernel::TensorPayload;
use crate::repository::tensor::TensorBuf;
use spork_core::model::Power;
use spork_kernel::ffi::DType;

/// The generated worker API.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("spork.worker.v1");
}

/// The worker API's version. A scheduler and a worker host speak only their own: a message that
/// changes meaning between versions would change answers silently, so a mismatch is refused at
/// Describe (and on health checks). 0 is a peer older than the versioned API; 2 is the first
/// versioned one (jobs carry their session, leases are random tokens bound to it); 3 names a
/// repository model by its folder's digest and no longer lets a host's `reference` claim spare its
/// board answers from checking; 4 carries tensors only (the built-in kernels' payloads, outputs
/// and image seed are retired, their field numbers reserved). Bump it with any change to what a
/// message means.
pub const API_VERSION: u32 = 4;

/// This build's spork version, named beside the API version so a refusal says what to install.
pub const SPORK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The scheduler's Describe request: its versions, which the host checks.
pub fn describe_request() -> pb::DescribeRequest {
    pb::DescribeRequest { api_version: API_VERSION, version: SPORK_VERSION.into() }
}

/// Why `peer`, speaking worker API `api` of spork `version`, cannot talk to this build (`me`: what
/// this side is, "scheduler" or "worker host"); `None` when the API versions agree.
pub fn version_skew(peer: &str, api: u32, version: &str, me: &str) -> Option<String> {
    if api == API_VERSION {
        return None;
    }
    let theirs = match (api, version) {
        (0, _) => "a spork older than the versioned API".to_string(),
        (_, "") => "its spork version not given".to_string(),
        (_, v) => format!("spork {v}"),
    };
    Some(format!(
        "{peer} speaks worker API v{api} ({theirs}) but this {me} speaks v{API_VERSION} (spork \
         {SPORK_VERSION}): refused, answers could differ silently (fix: run the same spork version on \
         `spork serve` and every `spork worker`)"
    ))
}

/// A message that does not describe a payload or an output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("malformed worker message: {0}")]
pub struct WireError(pub String);

fn tensors_to_wire(ts: &[TensorBuf]) -> pb::Tensors {
    let tensor = |t: &TensorBuf| pb::Tensor {
        dtype: t.dtype as u32,
        shape: t.shape.clone(),
        data: t.bytes().to_vec(),
    };
    pb::Tensors { tensors: ts.iter().map(tensor).collect() }
}

/// Tensors from the wire, each checked: a known datatype, at most `MAX_RANK` dimensions, and data
/// exactly its shape's size.
fn tensors_from_wire(t: pb::Tensors) -> Result<Vec<TensorBuf>, WireError> {
    t.tensors
        .into_iter()
        .map(|t| {
            let dtype = DType::from_code(t.dtype)
                .ok_or_else(|| WireError(format!("unknown tensor datatype {}", t.dtype)))?;
            if t.shape.len() > spork_kernel::MAX_RANK {
                return Err(WireError(format!("a tensor of {} dimensions", t.shape.len())));
            }
            TensorBuf::from_bytes(dtype, &t.shape, &t.data).ok_or_else(|| {
                WireError(format!(
                    "a {} tensor of shape {:?} with {} bytes of data",
                    dtype.name(),
                    t.shape,
                    t.data.len()
                ))
            })
        })
        .collect()
}

impl From<&Payload> for pb::Payload {
    fn from(p: &Payload) -> pb::Payload {
        use pb::payload::Kind;
        let Payload::Tensors(t) = p;
        pb::Payload { kind: Some(Kind::Tensors(tensors_to_wire(&t.inputs))) }
    }
}

impl TryFrom<pb::Payload> for Payload {
    type Error = WireError;

    fn try_from(p: pb::Payload) -> Result<Payload, WireError> {
        use pb::payload::Kind;
        let Kind::Tensors(t) = p.kind.ok_or_else(|| WireError("a job without tensors".into()))?;
        // Unbound: the host binds it to its own copy of the model's spec (`KernelImage::bind`).
        Ok(Payload::Tensors(TensorPayload::unbound(tensors_from_wire(t)?)))
    }
}

impl From<&Output> for pb::Output {
    fn from(o: &Output) -> pb::Output {
        use pb::output::Kind;
        let Output::Tensors(ts) = o;
        pb::Output { kind: Some(Kind::Tensors(tensors_to_wire(ts))) }
    }
}

impl TryFrom<pb::Output> for Output {
    type Error = WireError;

    fn try_from(o: pb::Output) -> Result<Output, WireError> {
        use pb::output::Kind;
        let Kind::Tensors(t) = o.kind.ok_or_else(|| WireError("a result without tensors".into()))?;
        Ok(Output::Tensors(tensors_from_wire(t)?))
    }
}

impl From<Power> for pb::Power {
    fn from(p: Power) -> pb::Power {
        pb::Power { watts: p.watts, measured: p.measured }
    }
}

impl From<pb::Power> for Power {
    fn from(p: pb::Power) -> Power {
        Power { watts: p.watts, measured: p.measured }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::work::KernelImage;
    use rand::SeedableRng;

    /// Each of Spork's own models: its payload's tensors and its answer's come back as they went
    /// (the payload unbound: the host binds it to its own copy of the spec).
    #[test]
    fn payloads_and_outputs_of_every_own_model_survive_the_wire() {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(5);
        for name in crate::repository::own::names() {
            let model = crate::repository::own::load(name, false).expect("an own model");
            let image = KernelImage::repo(std::sync::Arc::new(model));
            let payload = image.payload(3000, &mut rng);
            let Payload::Tensors(back) = Payload::try_from(pb::Payload::from(&payload)).expect("decodes");
            let Payload::Tensors(sent) = &payload;
            assert_eq!(back.inputs, sent.inputs, "{name}");
            let output = image.reference(&payload).expect("reference");
            assert_eq!(Output::try_from(pb::Output::from(&output)).expect("decodes"), output, "{name}");
        }
    }

    #[test]
    fn a_version_skew_names_both_versions_and_the_fix() {
        assert_eq!(version_skew("the scheduler", API_VERSION, SPORK_VERSION, "worker host"), None);
        let why =
            version_skew("worker host 10.0.0.1:7070", API_VERSION + 1, "9.9.9", "scheduler").expect("a skew");
        let next = format!("v{}", API_VERSION + 1);
        for part in ["10.0.0.1:7070", next.as_str(), "9.9.9", SPORK_VERSION, "same spork version"] {
            assert!(why.contains(part), "{part} missing from: {why}");
        }
        let old = version_skew("the scheduler", 0, "", "worker host").expect("an unversioned peer");
        assert!(old.contains("older than the versioned API"), "{old}");
        assert_eq!(describe_request().api_version, API_VERSION);
    }

    #[test]
    fn malformed_messages_are_errors_that_name_the_problem() {
        use prost::Message;
        assert!(Payload::try_from(pb::Payload { kind: None }).is_err());
        // A v3 peer's image (field 1, now reserved) decodes as no payload at all, and is refused.
        let v3_image = pb::Payload::decode(&[0x0a, 0x02, 0x0a, 0x00][..]).expect("protobuf skips it");
        assert!(Payload::try_from(v3_image).unwrap_err().0.contains("without tensors"));
        let v3_magnitudes = pb::Output::decode(&[0x0a, 0x01, 0x07][..]).expect("protobuf skips it");
        assert!(Output::try_from(v3_magnitudes).unwrap_err().0.contains("without tensors"));
    }

    #[test]
    fn tensors_round_trip_and_a_malformed_one_is_refused() {
        let mut t = TensorBuf::zeroed(DType::Int16, &[2, 3]).unwrap();
        t.set_bits(4, 0xfffe);
        let out = Output::Tensors(vec![t.clone()]);
        assert_eq!(Output::try_from(pb::Output::from(&out)).expect("decodes"), out);
        let p = Payload::Tensors(TensorPayload::unbound(vec![t]));
        let Payload::Tensors(back) = Payload::try_from(pb::Payload::from(&p)).expect("decodes");
        assert_eq!(back.inputs[0].show(4), "-2");
        let short = pb::Tensor { dtype: DType::Int16 as u32, shape: vec![2, 3], data: vec![0; 11] };
        let e = Output::try_from(pb::Output {
            kind: Some(pb::output::Kind::Tensors(pb::Tensors { tensors: vec![short] })),
        });
        assert!(e.unwrap_err().0.contains("11 bytes"));
        let unknown = pb::Tensor { dtype: 77, shape: vec![1], data: vec![0] };
        let e = Output::try_from(pb::Output {
            kind: Some(pb::output::Kind::Tensors(pb::Tensors { tensors: vec![unknown] })),
        });
        assert!(e.unwrap_err().0.contains("datatype 77"));
    }
}

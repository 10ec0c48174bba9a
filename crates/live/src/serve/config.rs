//! The model configuration extension: a model's configuration as Triton's clients read it
//! (`get_model_config` over HTTP and gRPC), from its signature. Tools built on those clients read it
//! before anything else. Inputs of the optional (brownout) part are marked optional.

use serde_json::{Value, json};

use super::grpc::proto;
use super::models::{Model, Signature};

/// The protocol extensions the server metadata lists (Triton's names): the index, load and unload
/// are served (load and unload as `--model-control` allows), the configuration and the statistics.
pub const EXTENSIONS: [&str; 5] =
    ["binary_tensor_data", "parameters", "model_repository", "model_configuration", "statistics"];

/// Triton's DataType names, in the order of their numbers (`TYPE_` + each).
const TYPES: [&str; 15] = [
    "INVALID", "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16",
    "FP32", "FP64", "STRING", "BF16",
];

/// The Triton DataType of an Open Inference Protocol datatype (BYTES is Triton's STRING).
fn triton_type(datatype: &str) -> (i32, String) {
    let name = if datatype == "BYTES" { "STRING" } else { datatype };
    let number = TYPES.iter().position(|t| *t == name).unwrap_or(0);
    (number as i32, format!("TYPE_{}", TYPES[number]))
}

/// Whether `t` belongs to the model's optional part.
fn optional(m: &Model, t: &Signature) -> bool {
    m.0.spec
        .optional
        .as_ref()
        .is_some_and(|(inputs, outputs)| inputs.contains(&t.name) || outputs.contains(&t.name))
}

/// A model's worker groups as Triton's instance groups: (name, Triton's kind, count active now).
pub type Instances = [(&'static str, i32, u64); 2];

/// Triton's `KIND_CPU` and `KIND_MODEL` (the model picks its device: a board).
pub const KIND_CPU: i32 = 2;
/// See [`KIND_CPU`].
pub const KIND_MODEL: i32 = 3;

const KIND_NAMES: [&str; 4] = ["KIND_AUTO", "KIND_GPU", "KIND_CPU", "KIND_MODEL"];

/// The configuration as JSON (Triton's HTTP form).
pub fn json(m: &Model, instances: &Instances) -> Value {
    let (inputs, outputs) = m.signature();
    let tensor = |t: &Signature, input: bool| {
        let mut v = json!({ "name": t.name, "data_type": triton_type(t.datatype.name()).1, "dims": t.shape });
        if input && optional(m, t) {
            v["optional"] = json!(true);
        }
        v
    };
    let mut v = json!({
        "name": m.name(),
        "platform": "spork",
        "backend": "spork",
        "max_batch_size": 0,
        "input": inputs.iter().map(|t| tensor(t, true)).collect::<Vec<_>>(),
        "output": outputs.iter().map(|t| tensor(t, false)).collect::<Vec<_>>(),
        "instance_group": instances.iter().map(|(name, kind, count)| json!({
            "name": name, "kind": KIND_NAMES[*kind as usize], "count": count,
        })).collect::<Vec<_>>(),
    });
    if let Some(b) = m.0.spec.dynamic_batching() {
        v["dynamic_batching"] = json!({
            "preferred_batch_size": b.preferred_batch_size,
            "max_queue_delay_microseconds": b.max_queue_delay_us,
        });
    }
    v
}

/// The configuration as Triton's gRPC message.
pub fn message(m: &Model, instances: &Instances) -> proto::ModelConfig {
    let (inputs, outputs) = m.signature();
    proto::ModelConfig {
        name: m.name().into(),
        platform: "spork".into(),
        backend: "spork".into(),
        max_batch_size: 0,
        input: inputs
            .iter()
            .map(|t| proto::ModelInput {
                name: t.name.clone(),
                data_type: triton_type(t.datatype.name()).0,
                dims: t.shape.clone(),
                optional: optional(m, t),
            })
            .collect(),
        output: outputs
            .iter()
            .map(|t| proto::ModelOutput {
                name: t.name.clone(),
                data_type: triton_type(t.datatype.name()).0,
                dims: t.shape.clone(),
            })
            .collect(),
        instance_group: instances
            .iter()
            .map(|(name, kind, count)| proto::ModelInstanceGroup {
                name: name.to_string(),
                count: i32::try_from(*count).unwrap_or(i32::MAX),
                kind: *kind,
            })
            .collect(),
        dynamic_batching: m.0.spec.dynamic_batching().map(|b| proto::ModelDynamicBatching {
            preferred_batch_size: b.preferred_batch_size.iter().map(|&n| n as i32).collect(),
            max_queue_delay_microseconds: b.max_queue_delay_us,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datatypes_take_tritons_numbers() {
        assert_eq!(triton_type("UINT8"), (2, "TYPE_UINT8".into()));
        assert_eq!(triton_type("FP64"), (12, "TYPE_FP64".into()));
        assert_eq!(triton_type("BYTES"), (13, "TYPE_STRING".into()));
        assert_eq!(triton_type("BF16"), (14, "TYPE_BF16".into()));
    }
}

//! A request's inputs as the protocol's tensors (every input of its model, by its model.toml's
//! names) as raw little-endian bytes, for the HTTP binary extension and gRPC raw contents alike.

use crate::datapath::work::Payload;

/// One input tensor on the wire.
#[derive(Clone, Debug)]
pub struct WireTensor {
    /// Its name.
    pub name: String,
    /// Its datatype.
    pub datatype: &'static str,
    /// Its shape.
    pub shape: Vec<i64>,
    /// Row-major little-endian bytes (shared, so that sending them copies nothing).
    pub data: bytes::Bytes,
}

/// `payload` as its model's inputs.
pub fn tensors(payload: &Payload) -> Vec<WireTensor> {
    let Payload::Tensors(t) = payload;
    t.inputs
        .iter()
        .zip(t.names.iter())
        .map(|(b, name)| WireTensor {
            name: name.clone(),
            datatype: b.dtype.name(),
            shape: b.shape.iter().map(|&d| d as i64).collect(),
            data: bytes::Bytes::copy_from_slice(b.bytes()),
        })
        .collect()
}

/// The HTTP body: the JSON header, then the tensor's bytes (the binary tensor data extension);
/// returns the body and the JSON part's length.
pub fn http_body(ts: &[WireTensor], deadline_ms: Option<f64>) -> (Vec<u8>, usize) {
    let mut params = serde_json::json!({ "binary_data_output": true });
    if let Some(d) = deadline_ms {
        params["deadline_ms"] = serde_json::json!(d);
    }
    let head = serde_json::json!({
        "inputs": ts.iter().map(|t| serde_json::json!({
            "name": t.name,
            "datatype": t.datatype,
            "shape": t.shape,
            "parameters": { "binary_data_size": t.data.len() },
        })).collect::<Vec<_>>(),
        "parameters": params,
    });
    let mut body = serde_json::to_vec(&head).unwrap_or_default();
    let len = body.len();
    for t in ts {
        body.extend_from_slice(&t.data);
    }
    (body, len)
}

//! An HTTP answer's JSON: its head and each output, an output's `data` written straight from the
//! kernel's buffer (a JSON value per element took 32 bytes each: 130 MB for one 4 Mi-pixel image),
//! and the most bytes that text can take, which the request reserves on the memory budget before
//! any work is done.

use serde::ser::{Serialize, SerializeSeq, Serializer};
use serde_json::Value;

use super::error::ServeError;
use super::tensor::{DataType, Tensor};

/// The head and outputs' text beyond their `data`: names, shapes, parameters.
const HEAD: u64 = 4096;
/// One output's text beyond its `data`.
const PER_OUTPUT: u64 = 512;

/// The most characters one element of `dt` takes in `data`, its comma included: the longest
/// integer, or the longest float as serde_json writes an f64 (`-2.2250738585072014e-308`).
pub fn width(dt: DataType) -> u64 {
    match dt {
        DataType::Uint8 => 4,
        DataType::Int8 => 5,
        DataType::Uint16 => 6,
        DataType::Int16 => 7,
        DataType::Uint32 => 11,
        DataType::Int32 => 12,
        DataType::Uint64 | DataType::Int64 => 21,
        DataType::Fp32 | DataType::Fp64 => 25,
    }
}

/// The most bytes an answer's JSON takes whose outputs are `shapes` (name, datatype, elements),
/// of which those `as_json` says are written as `data`.
pub fn text_bound<'a>(shapes: &'a [(String, DataType, u64)], as_json: impl Fn(&'a str) -> bool) -> u64 {
    shapes
        .iter()
        .filter(|(name, _, _)| as_json(name))
        .map(|&(_, dt, n)| output_bound(dt, n))
        .fold(HEAD, u64::saturating_add)
}

/// The most bytes one output's text takes with `n` elements of `dt` as `data`.
fn output_bound(dt: DataType, n: u64) -> u64 {
    n.saturating_mul(width(dt)).saturating_add(PER_OUTPUT)
}

/// A tensor's elements as `data`: integers as integers, floats as floats (NaN and the infinities
/// as `null`, as JSON has them).
pub struct Data<'a>(pub &'a Tensor);

impl Serialize for Data<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let n = t.datatype.size();
        let mut seq = s.serialize_seq(Some(t.data.len() / n))?;
        for c in t.data.chunks_exact(n) {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(c);
            let bits = u64::from_le_bytes(b);
            match t.datatype {
                DataType::Int8 => seq.serialize_element(&(bits as u8 as i8))?,
                DataType::Int16 => seq.serialize_element(&(bits as u16 as i16))?,
                DataType::Int32 => seq.serialize_element(&(bits as u32 as i32))?,
                DataType::Int64 => seq.serialize_element(&(bits as i64))?,
                DataType::Fp32 => seq.serialize_element(&f64::from(f32::from_bits(bits as u32)))?,
                DataType::Fp64 => seq.serialize_element(&f64::from_bits(bits))?,
                _ => seq.serialize_element(&bits)?,
            }
        }
        seq.end()
    }
}

/// One output in the answer's JSON: its `data`, or its `binary_data_size` (the bytes follow the JSON).
#[derive(serde::Serialize)]
pub struct Output<'a> {
    name: &'a str,
    datatype: &'static str,
    shape: Vec<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Data<'a>>,
}

impl<'a> Output<'a> {
    /// `t`, sent binary or as `data`.
    pub fn new(t: &'a Tensor, binary: bool) -> Output<'a> {
        Output {
            name: &t.name,
            datatype: t.datatype.name(),
            shape: t.shape_i64(),
            parameters: binary.then(|| serde_json::json!({ "binary_data_size": t.data.len() })),
            data: (!binary).then_some(Data(t)),
        }
    }

    /// The most bytes its text takes.
    fn bound(&self) -> u64 {
        self.data
            .as_ref()
            .map_or(PER_OUTPUT, |d| output_bound(d.0.datatype, (d.0.data.len() / d.0.datatype.size()) as u64))
    }
}

/// The answer's JSON.
#[derive(serde::Serialize)]
pub struct Answer<'a> {
    /// Model name.
    pub model_name: &'a str,
    /// Its version.
    pub model_version: &'a str,
    /// The client's id, echoed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a str>,
    /// How it was served.
    pub parameters: Value,
    /// The outputs.
    pub outputs: Vec<Output<'a>>,
}

impl Answer<'_> {
    /// Its text, written into room for the most it can take (no copy as it grows).
    pub fn to_vec(&self) -> Result<Vec<u8>, ServeError> {
        let most = self.outputs.iter().map(Output::bound).fold(HEAD, u64::saturating_add);
        let mut text = Vec::with_capacity(usize::try_from(most).unwrap_or(usize::MAX));
        serde_json::to_writer(&mut text, self).map_err(|e| ServeError::Internal(e.to_string()))?;
        text.shrink_to_fit();
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tensor(dt: DataType, data: Vec<u8>) -> Tensor {
        let n = (data.len() / dt.size()) as i64;
        Tensor::new("t", dt.name(), &[n], data).unwrap()
    }

    #[test]
    fn data_is_integers_as_integers_and_floats_as_floats() {
        let t = Tensor::from_values("x", "INT16", &[3], &[-5, 0, 300]).unwrap();
        assert_eq!(serde_json::to_string(&Data(&t)).unwrap(), "[-5,0,300]");
        let f = tensor(DataType::Fp32, [1.5f32, f32::NAN].iter().flat_map(|v| v.to_le_bytes()).collect());
        assert_eq!(serde_json::to_string(&Data(&f)).unwrap(), "[1.5,null]");
        let u = tensor(DataType::Uint64, u64::MAX.to_le_bytes().to_vec());
        assert_eq!(serde_json::to_string(&Data(&u)).unwrap(), format!("[{}]", u64::MAX));
    }

    proptest! {
        /// The bound the budget reserves is never less than the text: every datatype, every
        /// element (the extremes included), sent as `data`.
        #[test]
        fn the_text_never_exceeds_its_bound(
            dt in proptest::sample::select(DataType::ALL.to_vec()),
            raw in proptest::collection::vec(any::<u8>(), 0..256),
            extremes in any::<bool>(),
        ) {
            let size = dt.size();
            let mut data: Vec<u8> = raw[..raw.len() / size * size].to_vec();
            if extremes {
                // The longest forms: the least integer of a signed type, the longest float.
                let longest: Vec<u8> = match dt {
                    DataType::Fp64 => (-2.2250738585072014e-308f64).to_le_bytes().to_vec(),
                    DataType::Fp32 => (-1.1754944e-38f32).to_le_bytes().to_vec(),
                    _ => { let mut b = vec![0u8; size]; b[size - 1] = 0x80; b }
                };
                data.extend(longest);
            }
            let t = tensor(dt, data);
            let shapes = [(t.name.clone(), dt, (t.data.len() / size) as u64)];
            let answer = Answer {
                model_name: "m",
                model_version: "1",
                id: Some("request-0"),
                parameters: serde_json::json!({ "worker_kind": "cpu", "queue_ms": 0.25 }),
                outputs: vec![Output::new(&t, false)],
            };
            let text = answer.to_vec().unwrap();
            prop_assert!(text.len() as u64 <= text_bound(&shapes, |_| true), "{} bytes", text.len());
        }
    }
}

//! An HTTP inference body: the JSON head and the binary tail (`Inference-Header-Content-Length`,
//! `binary_data_size`), parsed with every bound enforced while parsing, not after: the head's
//! strings are borrowed from the body, arrays of inputs, outputs and dimensions have a most, and
//! each input's `data` is read straight into the tensor's bytes, counted against the item limit as
//! it goes. A 16 MiB body therefore never costs more than its tensors' bytes.

pub use crate::oip::{MAX_DIMS, MAX_TENSORS};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use bytes::Bytes;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::error::ServeError;
use super::tensor::{DataType, Tensor, holds};

/// What the client asked for.
#[derive(Debug)]
pub struct Parsed {
    /// The client's id, cut to 256 characters.
    pub id: Option<String>,
    /// The inputs.
    pub inputs: Vec<Tensor>,
    /// `deadline_ms`, if given.
    pub deadline_ms: Option<f64>,
    /// Outputs asked for by name, each with whether it goes binary; `None`: all.
    pub outputs: Option<Vec<(String, bool)>>,
    /// `binary_data_output`: every output binary unless it says otherwise.
    pub all_binary: bool,
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    parameters: Option<RequestParameters>,
    #[serde(borrow, deserialize_with = "at_most::<_, _, MAX_TENSORS>")]
    inputs: Vec<InputHead<'a>>,
    #[serde(default, borrow, deserialize_with = "at_most_opt::<_, _, MAX_TENSORS>")]
    outputs: Option<Vec<OutputHead<'a>>>,
}

#[derive(Deserialize)]
struct RequestParameters {
    deadline_ms: Option<f64>,
    binary_data_output: Option<bool>,
}

#[derive(Deserialize)]
struct InputHead<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    datatype: Cow<'a, str>,
    #[serde(deserialize_with = "at_most::<_, _, MAX_DIMS>")]
    shape: Vec<i64>,
    #[serde(default)]
    parameters: Option<InputParameters>,
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct InputParameters {
    binary_data_size: Option<u64>,
}

#[derive(Deserialize)]
struct OutputHead<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    parameters: Option<OutputParameters>,
}

#[derive(Deserialize)]
struct OutputParameters {
    binary_data: Option<bool>,
}

fn bad(what: impl fmt::Display) -> ServeError {
    ServeError::BadRequest(what.to_string())
}

/// Parses `body`, whose first `json_len` bytes are JSON (the rest the inputs' binary data), taking
/// at most `max_items` elements over all inputs. Binary inputs are slices of `body`, not copies.
pub fn parse(body: &Bytes, json_len: usize, max_items: u64) -> Result<Parsed, ServeError> {
    let (head, mut binary) = body.split_at(json_len.min(body.len()));
    let head: Head<'_> =
        serde_json::from_slice(head).map_err(|e| bad(format!("the request is not valid: {e}")))?;
    let mut room = max_items;
    let mut inputs = Vec::with_capacity(head.inputs.len());
    for i in &head.inputs {
        inputs.push(input(i, body, &mut binary, &mut room)?);
    }
    if !binary.is_empty() {
        return Err(bad(format!(
            "{} bytes of binary data follow the inputs that no input claims",
            binary.len()
        )));
    }
    let params = head.parameters.as_ref();
    let all_binary = params.and_then(|p| p.binary_data_output).unwrap_or(false);
    let outputs = head.outputs.map(|os| {
        os.into_iter()
            .map(|o| {
                let binary = o.parameters.and_then(|p| p.binary_data).unwrap_or(all_binary);
                (o.name.into_owned(), binary)
            })
            .collect()
    });
    Ok(Parsed {
        id: head.id.map(|s| s.chars().take(256).collect()),
        inputs,
        deadline_ms: params.and_then(|p| p.deadline_ms),
        outputs,
        all_binary,
    })
}

/// One input: its data from `data` (JSON, nested or flat) or the next `binary_data_size` bytes
/// (of `binary`, the rest of `body`).
fn input(i: &InputHead<'_>, body: &Bytes, binary: &mut &[u8], room: &mut u64) -> Result<Tensor, ServeError> {
    let name = cut(&i.name);
    if let Some(size) = i.parameters.as_ref().and_then(|p| p.binary_data_size) {
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if size > binary.len() {
            return Err(bad(format!(
                "input '{name}': binary_data_size is {size} but only {} bytes of binary data remain (truncated?)",
                binary.len()
            )));
        }
        let (data, rest) = binary.split_at(size);
        *binary = rest;
        return Tensor::new(&name, &i.datatype, &i.shape, body.slice_ref(data));
    }
    let raw = i.data.ok_or_else(|| bad(format!("input '{name}' has neither 'data' nor binary_data_size")))?;
    let datatype = DataType::parse(&i.datatype)
        .ok_or_else(|| bad(format!("input '{name}': datatype '{}' is not served here", cut(&i.datatype))))?;
    let mut bytes = Vec::new();
    let mut de = serde_json::Deserializer::from_str(raw.get());
    let flat = Flat { name: &name, datatype, out: &mut bytes, room };
    flat.deserialize(&mut de).map_err(|e| bad(format!("input '{name}': {e}")))?;
    Tensor::new(&name, &i.datatype, &i.shape, bytes)
}

/// A client's name, cut to 80 characters for messages and tensors.
fn cut(s: &str) -> String {
    s.chars().take(80).collect()
}

/// Nested arrays of integers flattened into `datatype`'s little-endian bytes, each value checked to
/// fit, at most `room` of them.
struct Flat<'a> {
    name: &'a str,
    datatype: DataType,
    out: &'a mut Vec<u8>,
    room: &'a mut u64,
}

impl Flat<'_> {
    fn push<E: de::Error>(self, v: i64) -> Result<(), E> {
        if *self.room == 0 {
            return Err(E::custom("holds more items than this server takes in one request"));
        }
        if !self.datatype.is_integer() {
            let what = self.datatype.name();
            return Err(E::custom(format!(
                "{what} data is taken binary (binary_data_size), not as JSON numbers"
            )));
        }
        if !holds(self.datatype, v) {
            return Err(E::custom(format!("value {v} does not fit {}", self.datatype.name())));
        }
        *self.room -= 1;
        self.out.extend_from_slice(&v.to_le_bytes()[..self.datatype.size()]);
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Flat<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Flat<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "integers (input '{}' data)", self.name)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.push(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        let v = i64::try_from(v)
            .map_err(|_| E::custom(format!("value {v} does not fit {}", self.datatype.name())))?;
        self.push(v)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Flat { name, datatype, out, room } = self;
        while seq.next_element_seed(Flat { name, datatype, out: &mut *out, room: &mut *room })?.is_some() {}
        Ok(())
    }
}

/// An array of at most `N` entries: refused while parsing at the entry past `N`.
fn at_most<'de, D, T, const N: usize>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    d.deserialize_seq(AtMost::<T, N>(PhantomData))
}

fn at_most_opt<'de, D, T, const N: usize>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    at_most::<D, T, N>(d).map(Some)
}

struct AtMost<T, const N: usize>(PhantomData<T>);

impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for AtMost<T, N> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an array of at most {N} entries")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut out = Vec::new();
        while let Some(x) = seq.next_element()? {
            if out.len() == N {
                return Err(de::Error::custom(format!("an array of more than {N} entries")));
            }
            out.push(x);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn json(s: &str) -> Result<Parsed, ServeError> {
        json_within(s, 1 << 20)
    }

    fn json_within(s: &str, max_items: u64) -> Result<Parsed, ServeError> {
        parse(&Bytes::copy_from_slice(s.as_bytes()), s.len(), max_items)
    }

    #[test]
    fn nested_and_flat_data_become_the_tensor_bytes() {
        let p = json(
            r#"{"id":"a","inputs":[{"name":"vectors","datatype":"INT16","shape":[1,2],"data":[[-2,300]]}],
               "outputs":[{"name":"activations","parameters":{"binary_data":true}}],
               "parameters":{"deadline_ms":20,"extra":{"deep":[1,2]}}}"#,
        )
        .unwrap();
        assert_eq!(p.inputs[0].data, vec![0xfe, 0xff, 0x2c, 0x01]);
        assert_eq!((p.id.as_deref(), p.deadline_ms), (Some("a"), Some(20.0)));
        assert_eq!(p.outputs, Some(vec![("activations".to_string(), true)]));
    }

    #[test]
    fn binary_data_follows_the_head() {
        let head = r#"{"inputs":[{"name":"image","datatype":"UINT8","shape":[1,3],"parameters":{"binary_data_size":3}}]}"#;
        let mut body = head.as_bytes().to_vec();
        body.extend_from_slice(&[7, 8, 9]);
        assert_eq!(parse(&Bytes::from(body.clone()), head.len(), 10).unwrap().inputs[0].data, vec![7, 8, 9]);
        body.push(1);
        assert!(
            parse(&Bytes::from(body), head.len(), 10).unwrap_err().to_string().contains("no input claims")
        );
    }

    #[test]
    fn bounds_are_enforced_while_parsing() {
        let data =
            format!(r#"{{"inputs":[{{"name":"x","datatype":"UINT8","shape":[11],"data":{:?}}}]}}"#, [0; 11]);
        let e = json_within(&data, 10).unwrap_err().to_string();
        assert!(e.contains("more items"), "{e}");
        let one = r#"{"name":"x","datatype":"UINT8","shape":[1],"data":[1]}"#;
        let many = format!(r#"{{"inputs":[{}]}}"#, vec![one; 17].join(","));
        assert!(json(&many).unwrap_err().to_string().contains("more than 16"));
        let outs =
            format!(r#"{{"inputs":[],"outputs":[{}]}}"#, vec![r#"{"name":"magnitudes"}"#; 20_000].join(","));
        assert!(json(&outs).unwrap_err().to_string().contains("more than 16"));
        let dims = r#"{"inputs":[{"name":"x","datatype":"UINT8","shape":[1,1,1,1,1,1,1,1,1],"data":[1]}]}"#;
        assert!(json(dims).unwrap_err().to_string().contains("more than 8"));
    }

    #[test]
    fn values_must_be_integers_that_fit() {
        let t = |d: &str| {
            json(&format!(r#"{{"inputs":[{{"name":"x","datatype":"UINT8","shape":[1],"data":{d}}}]}}"#))
        };
        assert!(t("[256]").unwrap_err().to_string().contains("does not fit UINT8"));
        assert!(t("[1.5]").is_err());
        assert!(t(r#"["1"]"#).is_err());
        assert!(t("[null]").is_err());
        assert!(t("[18446744073709551615]").is_err());
        assert_eq!(t("[[[255]]]").unwrap().inputs[0].data, vec![255]);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Any bytes, any header split: an answer or a clean error, never a panic, and never more
        /// than the item bound decoded.
        #[test]
        fn arbitrary_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..512), split in 0usize..600) {
            if let Ok(p) = parse(&Bytes::from(body.clone()), split, 64) {
                prop_assert!(p.inputs.iter().map(|t| t.data.len()).sum::<usize>() <= body.len() + 64 * 4);
            }
        }

        /// Mutations of a valid request (a seed corpus of one per datatype) stay clean.
        #[test]
        fn mutated_requests_never_panic(seed in 0usize..4, at in 0usize..200, byte in any::<u8>()) {
            let seeds = [
                r#"{"inputs":[{"name":"image","datatype":"UINT8","shape":[3,3],"data":[1,2,3,4,5,6,7,8,9]}]}"#,
                r#"{"inputs":[{"name":"documents","datatype":"UINT32","shape":[1,2],"data":[[1,2]]}],"outputs":[{"name":"scores"}]}"#,
                r#"{"inputs":[{"name":"vectors","datatype":"INT16","shape":[1,1],"data":[-1]}],"parameters":{"deadline_ms":5}}"#,
                r#"{"id":"x","inputs":[{"name":"s","datatype":"UINT16","shape":[2],"data":[65535,0]}]}"#,
            ];
            let mut body = seeds[seed].as_bytes().to_vec();
            let at = at % body.len();
            body[at] = byte;
            let _ = parse(&Bytes::from(body.clone()), body.len(), 1 << 10);
        }
    }
}

//! The inference service's codec: prost's, with a scan of each `ModelInferRequest`'s wire bytes
//! before it is decoded. Protobuf lets a few bytes stand for a large decoded value (an empty
//! repeated message is two bytes on the wire and a hundred in memory), so the counts that make a
//! request large in memory are bounded here, while it is still bytes: inputs, outputs, raw
//! contents, parameters, dimensions and typed elements.

use std::marker::PhantomData;

use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

use super::proto;
use super::{MAX_DIMS, MAX_TENSORS};

/// Most parameters on a request, an input or an output.
pub const MAX_PARAMETERS: usize = 64;
/// Most typed-content elements in one request (raw contents carry larger tensors).
pub const MAX_TYPED: u64 = 4 << 20;

/// A message that may be bounded before it is decoded.
pub trait WireBound {
    /// Refuses `bytes` (the encoded message) if decoding it would take too much.
    fn check(_bytes: &[u8]) -> Result<(), Status> {
        Ok(())
    }
}

/// Prost's codec with [`WireBound::check`] before each decode.
#[derive(Debug)]
pub struct BoundedCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for BoundedCodec<T, U> {
    fn default() -> Self {
        BoundedCodec(PhantomData)
    }
}

impl<T, U> Codec for BoundedCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + WireBound + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = BoundedDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::default().encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        BoundedDecoder(ProstDecoder::default())
    }
}

/// Prost's decoder after the bound.
#[derive(Debug)]
pub struct BoundedDecoder<U>(ProstDecoder<U>);

impl<U: Message + Default + WireBound> Decoder for BoundedDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        // A message is whole and contiguous when decoded: its chunk is all of it.
        U::check(bytes::Buf::chunk(buf))?;
        self.0.decode(buf)
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}

macro_rules! unbounded {
    ($($t:ty),*) => { $(impl WireBound for $t {})* };
}

unbounded!(
    proto::ServerLiveRequest,
    proto::ServerLiveResponse,
    proto::ServerReadyRequest,
    proto::ServerReadyResponse,
    proto::ModelReadyRequest,
    proto::ModelReadyResponse,
    proto::ServerMetadataRequest,
    proto::ServerMetadataResponse,
    proto::ModelMetadataRequest,
    proto::ModelMetadataResponse,
    proto::ModelConfigRequest,
    proto::ModelConfigResponse,
    proto::ModelStatisticsRequest,
    proto::ModelStatisticsResponse,
    proto::ModelInferResponse,
    proto::ModelStreamInferResponse,
    proto::RepositoryIndexRequest,
    proto::RepositoryIndexResponse,
    // Their parameter maps are bounded by the message limit alone: a load or unload is served one
    // at a time, and its parameters are only looked up, never kept.
    proto::RepositoryModelLoadRequest,
    proto::RepositoryModelLoadResponse,
    proto::RepositoryModelUnloadRequest,
    proto::RepositoryModelUnloadResponse
);

impl WireBound for proto::ModelInferRequest {
    fn check(bytes: &[u8]) -> Result<(), Status> {
        let mut typed = 0;
        request(bytes, &mut typed)
            .map_err(|e| Status::resource_exhausted(format!("the request is refused: {e}")))
    }
}

/// One field as the wire has it.
enum Value<'a> {
    Varint,
    Fixed,
    Bytes(&'a [u8]),
}

/// The fields of an encoded message, in order.
struct Fields<'a>(&'a [u8]);

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u64, Value<'a>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        Some(self.field())
    }
}

impl<'a> Fields<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut buf = self.0;
        let v = prost::encoding::decode_varint(&mut buf).map_err(|e| e.to_string())?;
        self.0 = buf;
        Ok(v)
    }

    fn skip(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.0.len() {
            return Err("a field runs past the message".into());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn field(&mut self) -> Result<(u64, Value<'a>), String> {
        let key = self.varint()?;
        let value = match key & 7 {
            0 => self.varint().map(|_| Value::Varint)?,
            1 => self.skip(8).map(|_| Value::Fixed)?,
            5 => self.skip(4).map(|_| Value::Fixed)?,
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| "a field's length overflows")?;
                Value::Bytes(self.skip(n)?)
            }
            t => return Err(format!("wire type {t} is not used by this protocol")),
        };
        Ok((key >> 3, value))
    }
}

/// Counts one more of `what`, refusing past `most`.
fn count(n: &mut usize, most: usize, what: &str) -> Result<(), String> {
    *n += 1;
    if *n > most { Err(format!("more than {most} {what}")) } else { Ok(()) }
}

fn request(bytes: &[u8], typed: &mut u64) -> Result<(), String> {
    let (mut params, mut inputs, mut outputs, mut raw) = (0, 0, 0, 0);
    for f in Fields(bytes) {
        match f? {
            (4, _) => count(&mut params, MAX_PARAMETERS, "parameters")?,
            (5, Value::Bytes(b)) => {
                count(&mut inputs, MAX_TENSORS, "inputs")?;
                input(b, typed)?;
            }
            (6, Value::Bytes(b)) => {
                count(&mut outputs, MAX_TENSORS, "requested outputs")?;
                parameters_of(b, 2)?;
            }
            (7, _) => count(&mut raw, MAX_TENSORS, "raw_input_contents")?,
            _ => {}
        }
    }
    Ok(())
}

/// Bounds the parameters (field `field`) of a nested message.
fn parameters_of(bytes: &[u8], field: u64) -> Result<(), String> {
    let mut n = 0;
    for f in Fields(bytes) {
        if f?.0 == field {
            count(&mut n, MAX_PARAMETERS, "parameters")?;
        }
    }
    Ok(())
}

fn input(bytes: &[u8], typed: &mut u64) -> Result<(), String> {
    let (mut dims, mut params) = (0, 0);
    for f in Fields(bytes) {
        match f? {
            (3, Value::Bytes(packed)) => {
                dims += varints(packed);
                if dims > MAX_DIMS {
                    return Err(format!("a shape of more than {MAX_DIMS} dimensions"));
                }
            }
            (3, _) => count(&mut dims, MAX_DIMS, "dimensions")?,
            (4, _) => count(&mut params, MAX_PARAMETERS, "parameters")?,
            (5, Value::Bytes(c)) => contents(c, typed)?,
            _ => {}
        }
    }
    Ok(())
}

/// Typed contents: every element, packed or not, counts against [`MAX_TYPED`].
fn contents(bytes: &[u8], typed: &mut u64) -> Result<(), String> {
    for f in Fields(bytes) {
        let n = match f? {
            // Packed: bools and varints one element per final byte, fixed-width by their size.
            (1..=5, Value::Bytes(p)) => varints(p) as u64,
            (6, Value::Bytes(p)) => p.len() as u64 / 4,
            (7, Value::Bytes(p)) => p.len() as u64 / 8,
            _ => 1,
        };
        *typed += n;
        if *typed > MAX_TYPED {
            return Err(format!("more than {MAX_TYPED} typed elements (send raw_input_contents)"));
        }
    }
    Ok(())
}

/// Varints in a packed field: one per byte without the continuation bit.
fn varints(packed: &[u8]) -> usize {
    packed.iter().filter(|&&b| b & 0x80 == 0).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proto::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};

    fn tensor(shape: Vec<i64>, uints: Vec<u32>) -> InferInputTensor {
        InferInputTensor {
            name: "image".into(),
            datatype: "UINT8".into(),
            shape,
            parameters: Default::default(),
            contents: Some(proto::InferTensorContents { uint_contents: uints, ..Default::default() }),
        }
    }

    fn check(r: &proto::ModelInferRequest) -> Result<(), Status> {
        proto::ModelInferRequest::check(&r.encode_to_vec())
    }

    #[test]
    fn an_ordinary_request_passes() {
        let r = proto::ModelInferRequest {
            model_name: "sobel".into(),
            inputs: vec![tensor(vec![3, 3], vec![1; 9])],
            outputs: vec![InferRequestedOutputTensor { name: "magnitudes".into(), ..Default::default() }],
            raw_input_contents: vec![],
            ..Default::default()
        };
        assert!(check(&r).is_ok());
    }

    #[test]
    fn floods_of_empty_entries_are_refused_before_decoding() {
        let flood = proto::ModelInferRequest { inputs: vec![Default::default(); 17], ..Default::default() };
        let e = check(&flood).unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert!(e.message().contains("more than 16 inputs"), "{}", e.message());
        let outs = proto::ModelInferRequest { outputs: vec![Default::default(); 1000], ..Default::default() };
        assert!(check(&outs).unwrap_err().message().contains("requested outputs"));
        let raw = proto::ModelInferRequest {
            raw_input_contents: vec![bytes::Bytes::new(); 17],
            ..Default::default()
        };
        assert!(check(&raw).is_err());
        let dims =
            proto::ModelInferRequest { inputs: vec![tensor(vec![1; 9], vec![])], ..Default::default() };
        assert!(check(&dims).unwrap_err().message().contains("dimensions"));
        let big = proto::ModelInferRequest {
            inputs: vec![tensor(vec![1], vec![0; MAX_TYPED as usize + 1])],
            ..Default::default()
        };
        assert!(check(&big).unwrap_err().message().contains("typed elements"));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Arbitrary bytes: the scan answers, never panics, and whatever it passes prost decodes or
        /// refuses cleanly.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            if proto::ModelInferRequest::check(&bytes).is_ok() {
                let _ = proto::ModelInferRequest::decode(bytes.as_slice());
            }
        }

        /// A valid request with one byte changed (a seed corpus of one) stays clean.
        #[test]
        fn mutated_requests_never_panic(at in 0usize..64, byte in any::<u8>()) {
            let r = proto::ModelInferRequest {
                model_name: "sobel".into(),
                inputs: vec![tensor(vec![2, 2], vec![1, 2, 3, 4])],
                ..Default::default()
            };
            let mut bytes = r.encode_to_vec();
            let at = at % bytes.len();
            bytes[at] = byte;
            let _ = proto::ModelInferRequest::check(&bytes);
        }
    }
}

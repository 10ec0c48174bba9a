//! Tensors as the protocol carries them: a name, a datatype, a shape and little-endian bytes in row
//! major order, whichever way they came (JSON `data`, the binary extension, gRPC raw or typed
//! contents). Every tensor is checked here: a known datatype, non-negative dimensions, and data whose
//! length is exactly what the shape says.

use bytes::Bytes;

use super::error::ServeError;

/// The protocol's datatypes this server reads and writes: every one the kernel ABI takes (BOOL,
/// FP16, BF16 and BYTES have no kernel to go to).
pub use spork_kernel::ffi::DType as DataType;

/// Whether an integer from JSON `data` or gRPC typed contents fits `dt` (floats come binary).
pub fn holds(dt: DataType, v: i64) -> bool {
    match dt {
        DataType::Uint8 => (0..=u8::MAX as i64).contains(&v),
        DataType::Uint16 => (0..=u16::MAX as i64).contains(&v),
        DataType::Uint32 => (0..=u32::MAX as i64).contains(&v),
        DataType::Uint64 => v >= 0,
        DataType::Int8 => (i8::MIN as i64..=i8::MAX as i64).contains(&v),
        DataType::Int16 => (i16::MIN as i64..=i16::MAX as i64).contains(&v),
        DataType::Int32 => (i32::MIN as i64..=i32::MAX as i64).contains(&v),
        DataType::Int64 => true,
        DataType::Fp32 | DataType::Fp64 => false,
    }
}

/// A tensor with its data as little-endian bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    /// Its name.
    pub name: String,
    /// Element type.
    pub datatype: DataType,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// Row-major little-endian elements: shared, not copied, from a request's body or into an
    /// answer's (a slice of the body; the kernel's own output buffer).
    pub data: Bytes,
}

impl Tensor {
    /// A tensor from its wire parts, checked: the datatype is known, the shape non-negative, and
    /// `data` holds exactly the shape's elements.
    pub fn new(
        name: &str,
        datatype: &str,
        shape: &[i64],
        data: impl Into<Bytes>,
    ) -> Result<Tensor, ServeError> {
        let data = data.into();
        let dt = datatype_of(name, datatype)?;
        let shape = dims(name, shape)?;
        let elements = elements(name, &shape)?;
        let expected = elements.checked_mul(dt.size() as u64);
        if expected != Some(data.len() as u64) {
            return Err(ServeError::BadRequest(format!(
                "input '{name}': shape {shape:?} of {} holds {elements} elements ({} bytes), the data has {} bytes",
                dt.name(),
                expected.map_or("too many".into(), |b| b.to_string()),
                data.len()
            )));
        }
        Ok(Tensor { name: name.to_string(), datatype: dt, shape, data })
    }

    /// A tensor from integer values (JSON `data`, gRPC typed contents), each checked to fit.
    pub fn from_values(
        name: &str,
        datatype: &str,
        shape: &[i64],
        values: &[i64],
    ) -> Result<Tensor, ServeError> {
        let dt = datatype_of(name, datatype)?;
        let mut data = Vec::with_capacity(values.len() * dt.size());
        for &v in values {
            if !holds(dt, v) {
                return Err(ServeError::BadRequest(format!(
                    "input '{name}': value {v} does not fit {}",
                    dt.name()
                )));
            }
            data.extend_from_slice(&v.to_le_bytes()[..dt.size()]);
        }
        Tensor::new(name, datatype, shape, data)
    }

    /// Its shape as the protocol writes it.
    pub fn shape_i64(&self) -> Vec<i64> {
        self.shape.iter().map(|&d| d as i64).collect()
    }
}

fn datatype_of(name: &str, datatype: &str) -> Result<DataType, ServeError> {
    DataType::parse(datatype).ok_or_else(|| {
        let known: Vec<&str> = DataType::ALL.iter().map(|d| d.name()).collect();
        let shown: String = datatype.chars().take(40).collect();
        ServeError::BadRequest(format!(
            "input '{name}': datatype '{shown}' is not served here (expected one of {})",
            known.join(", ")
        ))
    })
}

fn dims(name: &str, shape: &[i64]) -> Result<Vec<u64>, ServeError> {
    shape
        .iter()
        .map(|&d| {
            u64::try_from(d).map_err(|_| {
                ServeError::BadRequest(format!("input '{name}': shape {shape:?} has a negative dimension"))
            })
        })
        .collect()
}

fn elements(name: &str, shape: &[u64]) -> Result<u64, ServeError> {
    shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| ServeError::BadRequest(format!("input '{name}': shape {shape:?} overflows")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_must_fill_the_shape_exactly() {
        assert!(Tensor::new("x", "INT16", &[2, 3], vec![0; 12]).is_ok());
        let short = Tensor::new("x", "INT16", &[2, 3], vec![0; 11]).unwrap_err();
        assert!(short.to_string().contains("12 bytes"), "{short}");
        assert!(Tensor::new("x", "INT16", &[-1, 3], vec![]).is_err());
        assert!(Tensor::new("x", "FP16", &[1], vec![0; 2]).unwrap_err().to_string().contains("FP16"));
        assert!(Tensor::new("x", "UINT8", &[i64::MAX, i64::MAX], vec![]).is_err());
    }

    #[test]
    fn values_must_fit() {
        let t = Tensor::from_values("x", "INT16", &[3], &[-5, 0, 300]).unwrap();
        assert_eq!(&t.data[..], &[251, 255, 0, 0, 44, 1]);
        assert!(Tensor::from_values("x", "UINT8", &[1], &[256]).is_err());
        assert!(Tensor::from_values("x", "UINT32", &[1], &[-1]).is_err());
    }
}

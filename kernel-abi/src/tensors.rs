//! Safe views of the tensors one call is given: typed slices, checked for type, length and alignment.

use std::ffi::CStr;

use crate::ffi::{DType, Tensor};

/// A Rust type that is one element of a tensor.
pub trait Element: Copy + 'static {
    /// Its ABI type.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => { $(impl Element for $t { const DTYPE: DType = DType::$d; })* };
}
element!(u8 => Uint8, u16 => Uint16, u32 => Uint32, u64 => Uint64, i8 => Int8, i16 => Int16,
    i32 => Int32, i64 => Int64, f32 => Fp32, f64 => Fp64);

/// Why a tensor cannot be viewed as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TensorError {
    /// No tensor at this position.
    Missing(usize),
    /// Another element type.
    Type { index: usize, want: &'static str, got: u32 },
    /// Data not aligned for the type, or a size that is not a whole number of elements.
    Layout(usize),
}

impl std::fmt::Display for TensorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TensorError::Missing(i) => write!(f, "no tensor {i}"),
            TensorError::Type { index, want, got } => {
                let got = DType::from_code(*got).map_or("an unknown type", DType::name);
                write!(f, "tensor {index} is {got}, not {want}")
            }
            TensorError::Layout(i) => write!(f, "tensor {i}'s data is misaligned or not whole elements"),
        }
    }
}

impl std::error::Error for TensorError {}

impl From<TensorError> for String {
    fn from(e: TensorError) -> String {
        e.to_string()
    }
}

fn checked<T: Element>(tensors: &[Tensor], index: usize) -> Result<(&Tensor, usize), TensorError> {
    let t = tensors.get(index).ok_or(TensorError::Missing(index))?;
    if t.dtype != T::DTYPE as u32 {
        return Err(TensorError::Type { index, want: T::DTYPE.name(), got: t.dtype });
    }
    let size = std::mem::size_of::<T>();
    let aligned = (t.data as usize).is_multiple_of(std::mem::align_of::<T>());
    if (t.bytes > 0 && (t.data.is_null() || !aligned)) || !t.bytes.is_multiple_of(size as u64) {
        return Err(TensorError::Layout(index));
    }
    Ok((t, (t.bytes / size as u64) as usize))
}

fn shape(t: &Tensor) -> &[u64] {
    if t.shape.is_null() || t.rank == 0 {
        &[]
    } else {
        // SAFETY: the caller of the ABI gives `rank` dimensions at `shape`.
        unsafe { std::slice::from_raw_parts(t.shape, t.rank as usize) }
    }
}

fn name(t: &Tensor) -> &str {
    if t.name.is_null() {
        return "";
    }
    // SAFETY: names are NUL-terminated strings that live for the call.
    unsafe { CStr::from_ptr(t.name) }.to_str().unwrap_or("")
}

/// The inputs of one call, in model.toml's order.
pub struct Inputs<'a> {
    tensors: &'a [Tensor],
}

impl<'a> Inputs<'a> {
    /// Views over raw tensors that are valid for `'a`.
    pub fn new(tensors: &'a [Tensor]) -> Inputs<'a> {
        Inputs { tensors }
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Input `index`'s elements.
    pub fn get<T: Element>(&self, index: usize) -> Result<&'a [T], TensorError> {
        let (t, n) = checked::<T>(self.tensors, index)?;
        if n == 0 {
            return Ok(&[]);
        }
        // SAFETY: checked: the type, alignment and element count match the buffer Spork gave.
        Ok(unsafe { std::slice::from_raw_parts(t.data.cast::<T>(), n) })
    }

    /// Input `index`'s dimensions.
    pub fn shape(&self, index: usize) -> &'a [u64] {
        self.tensors.get(index).map_or(&[], shape)
    }

    /// Input `index`'s name.
    pub fn name(&self, index: usize) -> &'a str {
        self.tensors.get(index).map_or("", name)
    }
}

/// The outputs of one call, in model.toml's order, to be filled.
pub struct Outputs<'a> {
    tensors: &'a [Tensor],
}

impl<'a> Outputs<'a> {
    /// Views over raw tensors that are valid and writable for `'a`.
    pub fn new(tensors: &'a [Tensor]) -> Outputs<'a> {
        Outputs { tensors }
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Output `index`'s elements, to write. Borrowing `self` mutably keeps two views of one
    /// output from existing at once.
    pub fn get_mut<T: Element>(&mut self, index: usize) -> Result<&mut [T], TensorError> {
        let (t, n) = checked::<T>(self.tensors, index)?;
        if n == 0 {
            return Ok(&mut []);
        }
        // SAFETY: checked as for inputs; output buffers are writable, distinct from the inputs, and
        // `&mut self` allows one live view at a time.
        Ok(unsafe { std::slice::from_raw_parts_mut(t.data.cast::<T>(), n) })
    }

    /// Output `index`'s dimensions (fixed by the inputs' before the call).
    pub fn shape(&self, index: usize) -> &'a [u64] {
        self.tensors.get(index).map_or(&[], shape)
    }
}

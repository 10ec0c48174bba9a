//! A tensor of any ABI datatype, its bytes held 8-byte aligned (what `spork_kernel.h` promises a
//! kernel): the inputs and outputs of a repository model's kernel.

use std::sync::Arc;

use spork_kernel::ffi::DType;

use super::arena::{Arena, Block};

/// A row-major tensor in the machine's byte order.
pub struct TensorBuf {
    /// Element type.
    pub dtype: DType,
    /// Dimensions.
    pub shape: Vec<u64>,
    store: Store,
    len: usize,
}

/// Where a tensor's bytes live.
enum Store {
    /// The server's own heap.
    Heap(Vec<u64>),
    /// A model's shared arena, where its kernel processes read or write them in place.
    Shared(Block),
}

/// A copy on the heap (a copy is the server's, not shared with any kernel).
impl Clone for TensorBuf {
    fn clone(&self) -> TensorBuf {
        match &self.store {
            Store::Heap(words) => TensorBuf {
                dtype: self.dtype,
                shape: self.shape.clone(),
                store: Store::Heap(words.clone()),
                len: self.len,
            },
            Store::Shared(_) => TensorBuf::heap(self.dtype, &self.shape, self.bytes())
                .unwrap_or_else(|| TensorBuf::empty(self.dtype)),
        }
    }
}

/// Equal type, shape and bytes, wherever they live.
impl PartialEq for TensorBuf {
    fn eq(&self, other: &TensorBuf) -> bool {
        self.dtype == other.dtype && self.shape == other.shape && self.bytes() == other.bytes()
    }
}

impl Eq for TensorBuf {}

impl std::fmt::Debug for TensorBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TensorBuf({} {:?}, {} bytes)", self.dtype.name(), self.shape, self.len)
    }
}

/// The bytes `shape`'s elements of `dtype` take; `None` past memory's address range.
fn byte_len(dtype: DType, shape: &[u64]) -> Option<usize> {
    let elements = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
    usize::try_from(elements.checked_mul(dtype.size() as u64)?).ok()
}

/// Its bytes, so that an answer's tensor can be sent without a copy (`bytes::Bytes::from_owner`).
impl AsRef<[u8]> for TensorBuf {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

impl TensorBuf {
    /// A zeroed tensor of `shape`; `None` if its size does not fit in memory's address range.
    pub fn zeroed(dtype: DType, shape: &[u64]) -> Option<TensorBuf> {
        let len = byte_len(dtype, shape)?;
        Some(TensorBuf { dtype, shape: shape.to_vec(), store: Store::Heap(vec![0; len.div_ceil(8)]), len })
    }

    /// A zeroed tensor of `shape` in `arena` when it has room, else on the heap; `None` if its size
    /// does not fit in memory's address range.
    pub fn zeroed_in(arena: Option<&Arc<Arena>>, dtype: DType, shape: &[u64]) -> Option<TensorBuf> {
        let len = byte_len(dtype, shape)?;
        match arena.and_then(|a| a.zeroed(len)) {
            Some(b) => Some(TensorBuf { dtype, shape: shape.to_vec(), store: Store::Shared(b), len }),
            None => TensorBuf::zeroed(dtype, shape),
        }
    }

    /// A tensor of no element (shape `[0]`).
    pub fn empty(dtype: DType) -> TensorBuf {
        TensorBuf { dtype, shape: vec![0], store: Store::Heap(Vec::new()), len: 0 }
    }

    /// A tensor holding `bytes`, which must be exactly `shape`'s elements: one pass over them (a
    /// request's input is copied in once, not zeroed first).
    pub fn from_bytes(dtype: DType, shape: &[u64], bytes: &[u8]) -> Option<TensorBuf> {
        TensorBuf::from_bytes_in(None, dtype, shape, bytes)
    }

    /// As [`TensorBuf::from_bytes`], in `arena` when it has room (a request decoded straight into
    /// the memory its model's kernel processes read).
    pub fn from_bytes_in(
        arena: Option<&Arc<Arena>>,
        dtype: DType,
        shape: &[u64],
        bytes: &[u8],
    ) -> Option<TensorBuf> {
        let len = byte_len(dtype, shape)?;
        if len != bytes.len() {
            return None;
        }
        match arena.and_then(|a| a.copy_of(bytes)) {
            Some(b) => Some(TensorBuf { dtype, shape: shape.to_vec(), store: Store::Shared(b), len }),
            None => TensorBuf::heap(dtype, shape, bytes),
        }
    }

    /// `bytes` (exactly `shape`'s) on the heap.
    fn heap(dtype: DType, shape: &[u64], bytes: &[u8]) -> Option<TensorBuf> {
        let len = bytes.len();
        let (whole, tail) = bytes.split_at(len - len % 8);
        let mut words: Vec<u64> = Vec::with_capacity(len.div_ceil(8));
        words.extend(whole.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default())));
        if !tail.is_empty() {
            let mut last = [0u8; 8];
            last[..tail.len()].copy_from_slice(tail);
            words.push(u64::from_ne_bytes(last));
        }
        Some(TensorBuf { dtype, shape: shape.to_vec(), store: Store::Heap(words), len })
    }

    /// The arena block its bytes lie in, if shared.
    pub fn block(&self) -> Option<&Block> {
        match &self.store {
            Store::Shared(b) => Some(b),
            Store::Heap(_) => None,
        }
    }

    /// Its elements' bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.store {
            // SAFETY: `words` holds at least `len` initialised bytes; u8 has no alignment needs.
            Store::Heap(words) => unsafe {
                std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), self.len)
            },
            Store::Shared(b) => b.bytes(),
        }
    }

    /// Its elements' bytes, to write.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        match &mut self.store {
            // SAFETY: as in `bytes`, uniquely borrowed.
            Store::Heap(words) => unsafe {
                std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), self.len)
            },
            Store::Shared(b) => b.bytes_mut(),
        }
    }

    /// Elements.
    pub fn elements(&self) -> u64 {
        (self.len / self.dtype.size()) as u64
    }

    /// Element `i` as its raw bits (zero-extended).
    pub fn bits(&self, i: usize) -> u64 {
        let n = self.dtype.size();
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&self.bytes()[i * n..(i + 1) * n]);
        u64::from_le_bytes(b)
    }

    /// Sets element `i` from the low bits of `bits`.
    pub fn set_bits(&mut self, i: usize, bits: u64) {
        let n = self.dtype.size();
        self.bytes_mut()[i * n..(i + 1) * n].copy_from_slice(&bits.to_le_bytes()[..n]);
    }

    /// Element `i` for a message: the value its datatype gives the bits.
    pub fn show(&self, i: usize) -> String {
        let b = self.bits(i);
        match self.dtype {
            DType::Int8 => (b as u8 as i8).to_string(),
            DType::Int16 => (b as u16 as i16).to_string(),
            DType::Int32 => (b as u32 as i32).to_string(),
            DType::Int64 => (b as i64).to_string(),
            DType::Fp32 => f32::from_bits(b as u32).to_string(),
            DType::Fp64 => f64::from_bits(b).to_string(),
            _ => b.to_string(),
        }
    }

    /// The data pointer of an input handed to a kernel (8-byte aligned; read-only by the ABI).
    pub fn as_ptr(&self) -> *const u8 {
        self.bytes().as_ptr()
    }

    /// The data pointer of an output handed to a kernel (8-byte aligned).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.bytes_mut().as_mut_ptr()
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_round_trip_through_their_bits_and_buffers_are_aligned() {
        let mut t = TensorBuf::zeroed(DType::Int16, &[3, 2]).unwrap();
        assert_eq!((t.len(), t.elements()), (12, 6));
        t.set_bits(5, (-2i16) as u16 as u64);
        assert_eq!(t.show(5), "-2");
        assert_eq!(t.bits(5), 0xfffe);
        assert_eq!(t.as_mut_ptr() as usize % 8, 0);
        assert!(TensorBuf::zeroed(DType::Fp64, &[u64::MAX, 2]).is_none());
        assert!(TensorBuf::from_bytes(DType::Uint8, &[2], &[1, 2, 3]).is_none());
    }

    /// Bytes copied in come out the same, whole words and a part word alike, aligned.
    #[test]
    fn bytes_round_trip_at_every_length() {
        for n in 0..=17u8 {
            let bytes: Vec<u8> = (1..=n).collect();
            let t = TensorBuf::from_bytes(DType::Uint8, &[u64::from(n)], &bytes).unwrap();
            assert_eq!((t.bytes(), t.as_ref()), (&bytes[..], &bytes[..]));
            assert_eq!(t.as_ptr() as usize % 8, 0);
        }
        assert!(TensorBuf::from_bytes(DType::Fp64, &[u64::MAX, 2], &[]).is_none());
    }
}

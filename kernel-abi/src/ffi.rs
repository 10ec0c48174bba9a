//! The header's types, `#[repr(C)]`, and the call glue [`export_kernel!`](crate::export_kernel) uses.

use std::ffi::{c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::tensors::{Inputs, Outputs};

/// `spork_tensor`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Tensor {
    /// NUL-terminated name.
    pub name: *const c_char,
    /// A [`DType`] code.
    pub dtype: u32,
    /// Dimensions.
    pub rank: u32,
    /// `rank` dimensions.
    pub shape: *const u64,
    /// Row-major elements, aligned to 8 bytes.
    pub data: *mut c_void,
    /// Size of `data`.
    pub bytes: u64,
}

/// `spork_kernel_info`.
#[repr(C)]
#[derive(Debug)]
pub struct KernelInfo {
    /// The ABI the library was built against.
    pub abi_version: u32,
    /// NUL-terminated kernel name.
    pub name: *const c_char,
}

// SAFETY: a `KernelInfo` is immutable static data (a version and a pointer to a string literal).
unsafe impl Sync for KernelInfo {}

/// `spork_dtype`: element types by their code, with the protocol's name and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum DType {
    /// 8-bit unsigned.
    Uint8 = 1,
    /// 16-bit unsigned.
    Uint16 = 2,
    /// 32-bit unsigned.
    Uint32 = 3,
    /// 64-bit unsigned.
    Uint64 = 4,
    /// 8-bit signed.
    Int8 = 5,
    /// 16-bit signed.
    Int16 = 6,
    /// 32-bit signed.
    Int32 = 7,
    /// 64-bit signed.
    Int64 = 8,
    /// IEEE binary32.
    Fp32 = 9,
    /// IEEE binary64.
    Fp64 = 10,
}

impl DType {
    /// Every type the ABI takes.
    pub const ALL: [DType; 10] = [
        DType::Uint8,
        DType::Uint16,
        DType::Uint32,
        DType::Uint64,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::Fp32,
        DType::Fp64,
    ];

    /// The Open Inference Protocol's name (`"INT16"`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Uint8 => "UINT8",
            DType::Uint16 => "UINT16",
            DType::Uint32 => "UINT32",
            DType::Uint64 => "UINT64",
            DType::Int8 => "INT8",
            DType::Int16 => "INT16",
            DType::Int32 => "INT32",
            DType::Int64 => "INT64",
            DType::Fp32 => "FP32",
            DType::Fp64 => "FP64",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Uint8 | DType::Int8 => 1,
            DType::Uint16 | DType::Int16 => 2,
            DType::Uint32 | DType::Int32 | DType::Fp32 => 4,
            DType::Uint64 | DType::Int64 | DType::Fp64 => 8,
        }
    }

    /// By the protocol's name.
    pub fn parse(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// By its code.
    pub fn from_code(code: u32) -> Option<DType> {
        DType::ALL.into_iter().find(|&d| d as u32 == code)
    }

    /// Whether it is an integer type (its bits are the value; no NaN).
    pub fn is_integer(self) -> bool {
        !matches!(self, DType::Fp32 | DType::Fp64)
    }
}

/// Signature of `spork_kernel_describe`.
pub type DescribeFn = unsafe extern "C" fn() -> *const KernelInfo;
/// Signature of `spork_kernel_init`.
pub type InitFn = unsafe extern "C" fn(*const c_char, *mut c_char, usize) -> *mut c_void;
/// Signature of `spork_kernel_run`.
pub type RunFn =
    unsafe extern "C" fn(*mut c_void, *const Tensor, u32, *mut Tensor, u32, *mut c_char, usize) -> i32;
/// Signature of `spork_kernel_release`.
pub type ReleaseFn = unsafe extern "C" fn(*mut c_void);

/// The body of an exported `spork_kernel_run`: wraps the raw tensors, calls `run`, and turns an
/// error or a panic into a message in `err` and a non-zero return.
///
/// # Safety
/// `inputs` and `outputs` point to `n_inputs` and `n_outputs` tensors valid as the header says, and
/// `err` to `err_len` writable bytes.
pub unsafe fn run_with(
    inputs: *const Tensor,
    n_inputs: u32,
    outputs: *mut Tensor,
    n_outputs: u32,
    err: *mut c_char,
    err_len: usize,
    run: fn(&Inputs, &mut Outputs) -> Result<(), String>,
) -> i32 {
    let slice = |p: *const Tensor, n: u32| {
        if p.is_null() || n == 0 {
            &[][..]
        } else {
            // SAFETY: the caller gives `n` tensors at `p`.
            unsafe { std::slice::from_raw_parts(p, n as usize) }
        }
    };
    let ins = Inputs::new(slice(inputs, n_inputs));
    let outs_raw = slice(outputs, n_outputs);
    let mut outs = Outputs::new(outs_raw);
    let result = catch_unwind(AssertUnwindSafe(|| run(&ins, &mut outs)));
    let message = match result {
        Ok(Ok(())) => return 0,
        Ok(Err(m)) => m,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            format!("the kernel panicked: {what}")
        }
    };
    // SAFETY: the caller gives `err_len` writable bytes at `err`.
    unsafe { crate::write_error(err, err_len, &message) };
    1
}

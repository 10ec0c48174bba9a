//! The C ABI of a Spork CPU kernel (`include/spork_kernel.h`, version 1), in Rust.
//!
//! Two users: Spork itself, which loads a model's library and calls it through the [`ffi`] types, and
//! a kernel author who writes one plain function and exports it with [`export_kernel!`]:
//!
//! ```
//! use spork_kernel::{Inputs, Outputs};
//!
//! /// Adds two INT16 tensors element by element, saturating.
//! fn saturating_add(inputs: &Inputs, outputs: &mut Outputs) -> Result<(), String> {
//!     let (a, b) = (inputs.get::<i16>(0)?, inputs.get::<i16>(1)?);
//!     let sum = outputs.get_mut::<i16>(0)?;
//!     for ((s, x), y) in sum.iter_mut().zip(a).zip(b) {
//!         *s = x.saturating_add(*y);
//!     }
//!     Ok(())
//! }
//! spork_kernel::export_kernel!("satadd", saturating_add);
//! ```
//!
//! Built as a `cdylib`, that is a library `spork serve --model-repository` loads.

pub mod ffi;
mod tensors;

pub use tensors::{Element, Inputs, Outputs, TensorError};

/// The ABI version this crate implements (`SPORK_KERNEL_ABI_VERSION`).
pub const ABI_VERSION: u32 = 1;

/// Most dimensions a tensor has (`SPORK_MAX_RANK`).
pub const MAX_RANK: usize = 8;

/// Writes `message` into a C error buffer of `len` bytes, cut to fit and NUL-terminated.
///
/// # Safety
/// `err` is null or points to `len` writable bytes.
pub unsafe fn write_error(err: *mut std::ffi::c_char, len: usize, message: &str) {
    if err.is_null() || len == 0 {
        return;
    }
    let n = message.len().min(len - 1);
    // SAFETY: the caller gives `len` writable bytes; we write n + 1 <= len of them.
    unsafe {
        std::ptr::copy_nonoverlapping(message.as_ptr(), err.cast::<u8>(), n);
        *err.add(n) = 0;
    }
}

/// Exports the four functions of the ABI from `fn(&Inputs, &mut Outputs) -> Result<(), String>`:
/// `export_kernel!("name", function)`. The kernel keeps no state between requests; a panic in it
/// is caught and reported as the request's error rather than unwinding into Spork.
#[macro_export]
macro_rules! export_kernel {
    ($name:literal, $run:path) => {
        const _: () = {
            use $crate::ffi;

            static INFO: ffi::KernelInfo = ffi::KernelInfo {
                abi_version: $crate::ABI_VERSION,
                name: concat!($name, "\0").as_ptr().cast(),
            };

            /// `spork_kernel_describe`.
            #[unsafe(no_mangle)]
            pub extern "C" fn spork_kernel_describe() -> *const ffi::KernelInfo {
                &INFO
            }

            /// `spork_kernel_init`: the kernel is stateless, so any non-null token will do.
            #[unsafe(no_mangle)]
            pub extern "C" fn spork_kernel_init(
                _config: *const ::std::ffi::c_char,
                _err: *mut ::std::ffi::c_char,
                _err_len: usize,
            ) -> *mut ::std::ffi::c_void {
                ::std::ptr::NonNull::<u64>::dangling().as_ptr().cast()
            }

            /// `spork_kernel_run`.
            ///
            /// # Safety
            /// Spork's contract in `spork_kernel.h`: valid tensors and an `err_len`-byte buffer.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn spork_kernel_run(
                _state: *mut ::std::ffi::c_void,
                inputs: *const ffi::Tensor,
                n_inputs: u32,
                outputs: *mut ffi::Tensor,
                n_outputs: u32,
                err: *mut ::std::ffi::c_char,
                err_len: usize,
            ) -> i32 {
                // SAFETY: forwarded from the caller's contract.
                unsafe { $crate::ffi::run_with(inputs, n_inputs, outputs, n_outputs, err, err_len, $run) }
            }

            /// `spork_kernel_release`: nothing to free.
            #[unsafe(no_mangle)]
            pub extern "C" fn spork_kernel_release(_state: *mut ::std::ffi::c_void) {}
        };
    };
}

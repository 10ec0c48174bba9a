//! Raw bindings to the XRT C API (bindgen, feature `xrt`).
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case, dead_code, missing_docs)]
#![allow(clippy::all)]

include!(concat!(env!("OUT_DIR"), "/xrt_bindings.rs"));

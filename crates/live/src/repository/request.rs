//! One request to a repository model: its inputs checked against the spec (datatypes, ranks,
//! dimension bounds), its outputs sized from the bound dimensions, its items counted; and random
//! requests drawn from the spec for `spork kernel check`.

use std::sync::Arc;

use rand::{Rng, RngExt};
use spork_kernel::ffi::DType;

use super::arena::Arena;
use super::shape;
use super::spec::ModelSpec;
use super::tensor::TensorBuf;

impl ModelSpec {
    /// Its inputs' and outputs' names as C strings, in order (what the C ABI's tensors point to).
    pub fn c_names(&self) -> (Vec<std::ffi::CString>, Vec<std::ffi::CString>) {
        let c = |ts: &[super::spec::TensorSpec]| {
            ts.iter().map(|t| std::ffi::CString::new(t.name.clone()).unwrap_or_default()).collect()
        };
        (c(&self.inputs), c(&self.outputs))
    }

    /// The dimensions `inputs` bind (each checked), or why they do not fit.
    pub fn bind(&self, inputs: &[TensorBuf]) -> Result<Vec<u64>, String> {
        if inputs.len() != self.inputs.len() {
            return Err(format!(
                "model '{}' takes {} inputs, not {}",
                self.name,
                self.inputs.len(),
                inputs.len()
            ));
        }
        for (t, s) in inputs.iter().zip(&self.inputs) {
            if t.dtype != s.dtype {
                return Err(format!("input '{}' must be {}, not {}", s.name, s.dtype.name(), t.dtype.name()));
            }
        }
        let specs: Vec<(&str, &[_])> = self.inputs.iter().map(|s| (s.name.as_str(), &s.shape[..])).collect();
        let shapes: Vec<&[u64]> = inputs.iter().map(|t| &t.shape[..]).collect();
        shape::bind(&self.dims, &specs, &shapes)
    }

    /// The outputs for bound dimensions `values`, zeroed.
    pub fn outputs_for(&self, values: &[u64]) -> Vec<TensorBuf> {
        self.outputs_in(None, values)
    }

    /// As [`ModelSpec::outputs_for`], in `arena` where it has room.
    pub fn outputs_in(&self, arena: Option<&Arc<Arena>>, values: &[u64]) -> Vec<TensorBuf> {
        self.output_shapes(values)
            .into_iter()
            // The spec's bounds keep every tensor under 2^32 elements: this always fits.
            .map(|(dtype, shape)| {
                TensorBuf::zeroed_in(arena, dtype, &shape).unwrap_or_else(|| TensorBuf::empty(dtype))
            })
            .collect()
    }

    /// The most bytes one call's tensors take (every input and output at the dimensions' maximums),
    /// each rounded up to 64; `None` past `u64`.
    pub fn max_call_bytes(&self) -> Option<u64> {
        let max: Vec<u64> = self.dims.iter().map(|d| d.max).collect();
        self.inputs.iter().chain(&self.outputs).try_fold(0u64, |sum, t| {
            let elements = t.shape.iter().try_fold(1u64, |a, e| a.checked_mul(e.eval(&max)))?;
            let bytes = elements.checked_mul(t.dtype.size() as u64)?.checked_next_multiple_of(64)?;
            sum.checked_add(bytes)
        })
    }

    /// Each output's type and shape for bound dimensions `values`.
    pub fn output_shapes(&self, values: &[u64]) -> Vec<(DType, Vec<u64>)> {
        self.outputs.iter().map(|s| (s.dtype, s.shape.iter().map(|e| e.eval(values)).collect())).collect()
    }

    /// The work items of a request of dimensions `values`: the product of the `items` dimensions,
    /// else the first input's elements.
    pub fn items(&self, values: &[u64]) -> u64 {
        if self.items.is_empty() {
            return self.inputs.first().map_or(0, |t| t.shape.iter().map(|e| e.eval(values)).product());
        }
        self.items.iter().map(|&d| values[d]).product()
    }

    /// Random dimensions within their bounds, each at most `cap` (to keep a check quick).
    pub fn random_dims(&self, rng: &mut impl Rng, cap: u64) -> Vec<u64> {
        self.dims.iter().map(|d| rng.random_range(d.min..=d.max.min(cap.max(d.min)))).collect()
    }

    /// Inputs of dimensions `values`, filled with random elements (finite floats).
    pub fn random_inputs(&self, values: &[u64], rng: &mut impl Rng) -> Vec<TensorBuf> {
        self.inputs
            .iter()
            .map(|s| {
                let shape: Vec<u64> = s.shape.iter().map(|e| e.eval(values)).collect();
                let mut t = TensorBuf::zeroed(s.dtype, &shape).unwrap_or_else(|| TensorBuf::empty(s.dtype));
                let n = t.elements() as usize;
                match s.dtype {
                    DType::Fp32 => (0..n)
                        .for_each(|i| t.set_bits(i, u64::from(rng.random_range(-1e3f32..1e3).to_bits()))),
                    DType::Fp64 => {
                        (0..n).for_each(|i| t.set_bits(i, rng.random_range(-1e3f64..1e3).to_bits()))
                    }
                    // Every bit pattern is an integer: the bytes at once (a 1 ms Sobel request's
                    // 400k pixels one at a time took longer than the C code takes to run it).
                    _ => rng.fill_bytes(t.bytes_mut()),
                }
                t
            })
            .collect()
    }
}

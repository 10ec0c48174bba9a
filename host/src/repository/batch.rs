//! A model's requests stacked along its `[batching]` dimension: one payload for one board
//! invocation. Every input and output leads with that dimension (the spec checks it), so stacking is
//! appending each input's rows, and a member's answer is its own rows of each output.

use super::kernel::{RepoKernel, TensorPayload};
use super::tensor::TensorBuf;

impl RepoKernel {
    /// `members` (bound payloads of this model) as one bound payload, and each member's rows along
    /// the batch dimension; `None` if the model declares no batching, the members' other dimensions
    /// or types differ, or the stack passes the dimension's bound.
    pub fn stack(&self, members: &[&TensorPayload]) -> Option<(TensorPayload, Vec<u64>)> {
        self.spec.batching.as_ref()?;
        let first = members.first()?;
        let n = first.inputs.len();
        let rows: Vec<u64> =
            members.iter().map(|m| m.inputs.first()?.shape.first().copied()).collect::<Option<_>>()?;
        let mut inputs = Vec::with_capacity(n);
        for i in 0..n {
            let head = first.inputs.get(i)?;
            let rest = head.shape.get(1..)?;
            let mut bytes = Vec::new();
            let mut total = 0u64;
            for m in members {
                let t =
                    m.inputs.get(i).filter(|t| t.dtype == head.dtype && t.shape.get(1..) == Some(rest))?;
                total = total.checked_add(*t.shape.first()?)?;
                bytes.extend_from_slice(t.bytes());
            }
            let shape: Vec<u64> = std::iter::once(total).chain(rest.iter().copied()).collect();
            inputs.push(TensorBuf::from_bytes(head.dtype, &shape, &bytes)?);
        }
        // Bound again: the stacked dimension must be within its bounds.
        let stacked = self.payload(inputs).ok()?;
        Some((stacked, rows))
    }
}

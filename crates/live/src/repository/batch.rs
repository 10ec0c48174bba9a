//! A model's requests stacked along its `[batching]` dimension: one payload for one board
//! invocation. Every input and output leads with that dimension (the spec checks it), so stacking is
//! appending each input's rows, and a member's answer is its own rows of each output. A windowed
//! kernel (`halo` rows on either side: outputs lead with `dim - 2 halo`) answers output row `r` from
//! stacked input rows `r .. r + 2 halo`: a member starting at stacked row `R` owns output rows
//! `R .. R + rows - 2 halo`, and the `2 halo` rows after it, centred on the seam, are dropped.

use super::kernel::{RepoKernel, TensorPayload};
use super::tensor::TensorBuf;

impl RepoKernel {
    /// `members` (bound payloads of this model) as one bound payload, and where each member's answer
    /// lies in its outputs (first row, rows) along the batch dimension; `None` if the model declares
    /// no batching, the members' other dimensions or types differ, or the stack passes the
    /// dimension's bound.
    pub fn stack(&self, members: &[&TensorPayload]) -> Option<(TensorPayload, Vec<(u64, u64)>)> {
        let halo = self.spec.batching.as_ref()?.halo;
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
        let mut top = 0u64;
        let mut cuts = Vec::with_capacity(rows.len());
        for r in rows {
            cuts.push((top, r.checked_sub(2 * halo)?));
            top += r;
        }
        Some((stacked, cuts))
    }
}

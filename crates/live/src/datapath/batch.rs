//! A batch as one payload: its members' inputs concatenated along the model's batch dimension, run
//! as one board invocation, and the answer cut back into each member's.
//!
//! A model's tensors stack along the dimension its `[batching]` declares (`RepoKernel::stack`; a
//! windowed kernel's `halo` rows centred on each seam are computed and dropped), each member's
//! answer its own rows of every output. Payloads that do not stack (a model that declares no
//! batching, or members whose other dimensions differ) are not concatenated: [`concat`] says so and
//! the worker runs them one at a time.

use super::work::{Output, Payload};
use crate::repository::kernel::{RepoKernel, TensorPayload};
use crate::repository::tensor::TensorBuf;

/// Where each member's answer lies in the batch's: rows along the model's batch dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cuts(Vec<(usize, usize)>);

/// The most input bytes one stacked payload may hold: stacking copies its members' inputs once more,
/// so a batch of large requests (each already within its own bound) could otherwise double what a
/// worker holds; beyond it the members run one at a time, in their own buffers.
pub const MAX_STACK_BYTES: u64 = 64 << 20;

/// `members` as one payload, and where their answers lie in its answer; `None` if they do not stack
/// (or there is only one, or they hold more than [`MAX_STACK_BYTES`]). `model`: the model whose
/// tensors they are.
pub fn concat(members: &[&Payload], model: &RepoKernel) -> Option<(Payload, Cuts)> {
    if members.len() < 2 || members.iter().map(|p| p.bytes()).sum::<u64>() > MAX_STACK_BYTES {
        return None;
    }
    let tensors: Vec<&TensorPayload> = members
        .iter()
        .map(|p| match p {
            Payload::Tensors(t) => t,
        })
        .collect();
    let (stacked, cuts) = model.stack(&tensors)?;
    let cuts =
        cuts.into_iter().map(|(at, rows)| Some((usize::try_from(at).ok()?, usize::try_from(rows).ok()?)));
    Some((Payload::Tensors(stacked), Cuts(cuts.collect::<Option<_>>()?)))
}

impl Cuts {
    /// The batch's answer `out` cut into its members'; `None` if it is too short for its cuts (a
    /// backend that answered the wrong shape: every member's answer is then held to the reference).
    pub fn split(&self, out: &Output) -> Option<Vec<Output>> {
        self.0
            .iter()
            .map(|&(at, len)| {
                let Output::Tensors(ts) = out;
                Some(Output::Tensors(ts.iter().map(|t| rows_of(t, at, len)).collect::<Option<_>>()?))
            })
            .collect()
    }

    /// Members.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it has no member.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Rows `at .. at + len` of `t` along its first dimension.
fn rows_of(t: &TensorBuf, at: usize, len: usize) -> Option<TensorBuf> {
    let total = usize::try_from(*t.shape.first()?).ok()?;
    let end = at.checked_add(len).filter(|&e| e <= total && total > 0)?;
    let row = t.bytes().len() / total;
    let shape: Vec<u64> = std::iter::once(len as u64).chain(t.shape[1..].iter().copied()).collect();
    TensorBuf::from_bytes(t.dtype, &shape, &t.bytes()[at * row..end * row])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repository::kernel::RepoKernel;
    use rand::SeedableRng;

    fn own(name: &str) -> RepoKernel {
        crate::repository::own::load(name, false).expect("an own model")
    }

    /// A sobel image `h` rows of `w` pixels.
    fn image(kernel: &RepoKernel, h: u64, w: u64) -> Payload {
        let bytes: Vec<u8> = (0..h * w).map(|i| (i * 37 % 251) as u8).collect();
        let image = TensorBuf::from_bytes(kernel.spec.inputs[0].dtype, &[h, w], &bytes).expect("image");
        Payload::Tensors(kernel.payload(vec![image]).expect("bound"))
    }

    /// Spork's own sobel (a 3x3 window: halo 1), dense and bloom (independent rows), as their
    /// model.toml's `[batching]` declares them, their C code compiled: a batch of tensors, run once,
    /// cut back, equals each member run alone (images of different heights, one width).
    #[test]
    fn tensors_stack_along_their_batch_dimension_seams_dropped() {
        for (name, items) in [("sobel", [5, 9, 3]), ("dense", [64 * 2, 64 * 7, 64]), ("bloom", [64, 640, 64])]
        {
            let kernel = own(name);
            let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(11);
            let members: Vec<Payload> = items
                .iter()
                .map(|&n| match name {
                    "sobel" => image(&kernel, n, 16),
                    // Documents of one length (8 terms) stack; random picks near-square ones.
                    "bloom" => {
                        let terms: Vec<u8> = (0..n * 4).map(|i| (i * 13 % 256) as u8).collect();
                        let dtype = kernel.spec.inputs[0].dtype;
                        let docs = TensorBuf::from_bytes(dtype, &[n / 8, 8], &terms).expect("documents");
                        Payload::Tensors(kernel.payload(vec![docs]).expect("bound"))
                    }
                    _ => Payload::Tensors(kernel.random(n, &mut rng)),
                })
                .collect();
            let refs: Vec<&Payload> = members.iter().collect();
            let (Payload::Tensors(stacked), cuts) = concat(&refs, &kernel).expect("they stack");
            assert_eq!(stacked.items, members.iter().map(Payload::items).sum::<u64>(), "{name}");
            let whole = Output::Tensors(kernel.reference(&stacked).expect("the batch runs"));
            for (m, part) in members.iter().zip(cuts.split(&whole).expect("cut back")) {
                let Payload::Tensors(alone) = m;
                assert_eq!(part, Output::Tensors(kernel.reference(alone).expect("runs")), "{name}");
            }
        }
    }

    #[test]
    fn payloads_that_do_not_stack_are_left_alone() {
        let sobel = own("sobel");
        assert_eq!(concat(&[&image(&sobel, 4, 8), &image(&sobel, 4, 9)], &sobel), None, "different widths");
        assert_eq!(concat(&[&image(&sobel, 4, 8)], &sobel), None, "one member is no batch");
        let big = image(&sobel, 4096, 4096);
        assert_eq!(concat(&[&big; 5], &sobel), None, "a stack past the byte bound is not made");
        let (_, cuts) = concat(&[&image(&sobel, 4, 8), &image(&sobel, 4, 8)], &sobel).expect("one width");
        let short = TensorBuf::from_bytes(sobel.spec.outputs[0].dtype, &[3, 6], &[0; 18]).expect("3 rows");
        assert_eq!(cuts.split(&Output::Tensors(vec![short])), None, "an answer too short for its cuts");
        // A model that declares no [batching] never stacks.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/dense");
        let text = std::fs::read_to_string(dir.join("model.toml")).expect("model.toml");
        let text = text.split("\n[batching]").next().expect("its head").to_string();
        let spec = crate::repository::spec::parse(&dir, &dir.join("model.toml"), &text).expect("parses");
        let rows = RepoKernel::load(spec, false).expect("compiles");
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(3);
        let (a, b) =
            (Payload::Tensors(rows.random(64, &mut rng)), Payload::Tensors(rows.random(64, &mut rng)));
        assert_eq!(concat(&[&a, &b], &rows), None, "no [batching], no batch");
    }
}

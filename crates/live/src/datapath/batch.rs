//! A batch as one payload: its members' inputs concatenated along the item dimension, run as one
//! board invocation, and the answer cut back into each member's.
//!
//! Documents and vectors are independent rows: they stack as they are. Images of one width stack
//! into a taller image: a 3x3 window centred on a member's interior row reads only that member's
//! rows, so each member's interior magnitudes are exactly its own; the two rows centred on each seam
//! are computed and dropped (what batching images costs: two rows per member). A repository model's
//! tensors stack along the dimension its `[batching]` declares (`RepoKernel::stack`), each member's
//! answer its own rows of every output. Payloads that do not stack (mixed kernels, images of
//! different widths, tensors of a model that declares no batching, or whose other dimensions
//! differ) are not concatenated: [`concat`] says so and the worker runs them one at a time.

use super::work::{Output, Payload};
use crate::repository::kernel::{RepoKernel, TensorPayload};
use crate::repository::tensor::TensorBuf;

/// Where each member's answer lies in the batch's: in the output's values (rows for activations and
/// along a repository model's batch dimension).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cuts(Vec<(usize, usize)>);

/// The most input bytes one stacked payload may hold: stacking copies its members' inputs once more,
/// so a batch of large requests (each already within its own bound) could otherwise double what a
/// worker holds; beyond it the members run one at a time, in their own buffers.
pub const MAX_STACK_BYTES: u64 = 64 << 20;

/// `members` as one payload, and where their answers lie in its answer; `None` if they do not stack
/// (or there is only one, or they hold more than [`MAX_STACK_BYTES`]). `repo`: the repository model
/// whose tensors they are, if any.
pub fn concat(members: &[&Payload], repo: Option<&RepoKernel>) -> Option<(Payload, Cuts)> {
    let (first, rest) = members.split_first()?;
    if rest.is_empty() || members.iter().map(|p| p.bytes()).sum::<u64>() > MAX_STACK_BYTES {
        return None;
    }
    match first {
        Payload::Image { width, .. } => images(members, *width),
        Payload::Documents(_) => {
            let docs = rows(members, |p| if let Payload::Documents(d) = p { Some(d) } else { None })?;
            Some((Payload::Documents(docs.0), docs.1))
        }
        Payload::Vectors(_) => {
            let xs = rows(members, |p| if let Payload::Vectors(v) = p { Some(v) } else { None })?;
            Some((Payload::Vectors(xs.0), xs.1))
        }
        Payload::Tensors(_) => {
            let tensors: Vec<&TensorPayload> = members
                .iter()
                .map(|p| if let Payload::Tensors(t) = p { Some(t) } else { None })
                .collect::<Option<_>>()?;
            let (stacked, cuts) = repo?.stack(&tensors)?;
            let cuts = cuts
                .into_iter()
                .map(|(at, rows)| Some((usize::try_from(at).ok()?, usize::try_from(rows).ok()?)));
            Some((Payload::Tensors(stacked), Cuts(cuts.collect::<Option<_>>()?)))
        }
    }
}

/// Independent rows, stacked; each member's answer is one value per row of its own.
fn rows<T: Clone>(members: &[&Payload], of: impl Fn(&Payload) -> Option<&Vec<T>>) -> Option<(Vec<T>, Cuts)> {
    let mut all = Vec::new();
    let mut cuts = Vec::with_capacity(members.len());
    for m in members {
        let rows = of(m)?;
        cuts.push((all.len(), rows.len()));
        all.extend_from_slice(rows);
    }
    Some((all, Cuts(cuts)))
}

/// Images of one `width`, stacked; each member's interior rows are its own answer.
fn images(members: &[&Payload], width: usize) -> Option<(Payload, Cuts)> {
    let mut pixels = Vec::new();
    let mut cuts = Vec::with_capacity(members.len());
    for m in members {
        let Payload::Image { pixels: p, width: w } = m else { return None };
        let height = spork_golden::sobel::check_shape(p.len(), *w).ok()?;
        if *w != width {
            return None;
        }
        // Its interior centres are stacked rows top+1 ..= top+height-2: output rows top .. .
        let top = pixels.len() / width;
        cuts.push((top * (width - 2), (height - 2) * (width - 2)));
        pixels.extend_from_slice(p);
    }
    Some((Payload::Image { pixels, width }, Cuts(cuts)))
}

impl Cuts {
    /// The batch's answer `out` cut into its members'; `None` if it is too short for its cuts (a
    /// backend that answered the wrong shape: every member's answer is then held to the reference).
    pub fn split(&self, out: &Output) -> Option<Vec<Output>> {
        self.0
            .iter()
            .map(|&(at, len)| {
                let range = |n: usize| at.checked_add(len).filter(|&end| end <= n).map(|end| at..end);
                Some(match out {
                    Output::Magnitudes(m) => Output::Magnitudes(m[range(m.len())?].to_vec()),
                    Output::Scores(s) => Output::Scores(s[range(s.len())?].to_vec()),
                    Output::Activations(a) => Output::Activations(a[range(a.len())?].to_vec()),
                    Output::Tensors(ts) => {
                        Output::Tensors(ts.iter().map(|t| rows_of(t, at, len)).collect::<Option<_>>()?)
                    }
                })
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
    use crate::datapath::work::KernelImage;
    use rand::SeedableRng;
    use spork_golden::Kernel;

    /// Every built-in kernel: a batch of its payloads, run once by the reference, cut back, equals
    /// each member run alone.
    #[test]
    fn a_batch_answers_each_member_exactly_as_it_would_alone() {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(5);
        for kernel in [Kernel::Sobel, Kernel::Bloom, Kernel::Dense] {
            let image = KernelImage::new(kernel, 3);
            // Images of one width stack (256 items: 16 x 16); rows of any count do.
            let items: &[u64] = if kernel == Kernel::Sobel { &[256, 256, 256] } else { &[256, 1024, 64] };
            let members: Vec<Payload> = items.iter().map(|&n| image.payload(n, &mut rng)).collect();
            let refs: Vec<&Payload> = members.iter().collect();
            let Some((batch, cuts)) = concat(&refs, None) else {
                panic!("{kernel:?}: payloads of one kernel stack")
            };
            assert_eq!(batch.items(), members.iter().map(Payload::items).sum::<u64>());
            let whole = image.reference(&batch).expect("the batch runs");
            let parts = cuts.split(&whole).expect("cut back");
            for (m, part) in members.iter().zip(parts) {
                assert_eq!(Some(part), image.reference(m).ok(), "{kernel:?}");
            }
        }
    }

    /// Spork's own sobel model (a 3x3 window: halo 1) and dense (independent rows), as their
    /// model.toml's `[batching]` declares them, their C code compiled: a batch of tensors, run once, cut back,
    /// equals each member run alone (images of different heights, one width).
    #[test]
    fn repository_tensors_stack_along_their_batch_dimension_seams_dropped() {
        use crate::repository::kernel::RepoKernel;
        let models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
        for (name, items) in [("sobel", [16 * 5, 16 * 9, 16 * 3]), ("dense", [64 * 2, 64 * 7, 64])] {
            let spec = crate::repository::spec::load(&models.join(name)).expect("a batching model");
            let kernel = RepoKernel::load(spec, false).expect("its C code compiles");
            let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(11);
            let members: Vec<Payload> = items
                .iter()
                .map(|&n| {
                    let mut p = kernel.random(n, &mut rng);
                    if name == "sobel" {
                        // One width (16), heights 5, 9 and 3: rows from the items.
                        let h = n / 16;
                        let bytes: Vec<u8> = (0..n).map(|i| (i * 37 % 251) as u8).collect();
                        let image =
                            TensorBuf::from_bytes(p.inputs[0].dtype, &[h, 16], &bytes).expect("image");
                        p = kernel.payload(vec![image]).expect("bound");
                    }
                    Payload::Tensors(p)
                })
                .collect();
            let refs: Vec<&Payload> = members.iter().collect();
            let (batch, cuts) = concat(&refs, Some(&kernel)).expect("they stack");
            let Payload::Tensors(stacked) = &batch else { panic!("tensors") };
            let whole = Output::Tensors(kernel.reference(stacked).expect("the batch runs"));
            for (m, part) in members.iter().zip(cuts.split(&whole).expect("cut back")) {
                let Payload::Tensors(alone) = m else { panic!("tensors") };
                assert_eq!(part, Output::Tensors(kernel.reference(alone).expect("runs")), "{name}");
            }
        }
    }

    #[test]
    fn payloads_that_do_not_stack_are_left_alone() {
        let img = |w: usize| Payload::Image { pixels: vec![7; w * 4], width: w };
        assert_eq!(concat(&[&img(8), &img(9)], None), None, "different widths");
        assert_eq!(concat(&[&img(8), &Payload::Documents(vec![vec![1]])], None), None, "different kernels");
        assert_eq!(concat(&[&img(8)], None), None, "one member is no batch");
        let big = Payload::Image { pixels: vec![0; (MAX_STACK_BYTES / 2) as usize + 256], width: 256 };
        assert_eq!(concat(&[&big, &big], None), None, "a stack past the byte bound is not made");
        let (_, cuts) = concat(&[&img(8), &img(8)], None).expect("same width");
        assert_eq!(cuts.split(&Output::Magnitudes(vec![0; 5])), None, "an answer too short for its cuts");
    }
}

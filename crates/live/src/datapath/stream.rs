//! The word stream a board kernel exchanges with the host through the data movers (`mm2s` ->
//! `<kernel>_axis` -> `s2mm`): 64-bit words, the kernel's on-chip state first, then its items. The
//! AXI4-Stream wrappers in `scripts/vitis/` and the XRT loopback in `tests/xrt_loopback/` implement the
//! same layout.
//!
//! - sobel: word 0 = image width; then one pixel per word (bits 7:0). Out: one magnitude per word.
//! - bloom: 16 words = the 1024-bit profile (bit b of word w is profile bit 64w + b); then one term per
//!   word (bits 31:0 hash, bit 32 = last term of its document). Out: one score per document.
//! - dense: 128 words = the 512 int16 weights, four per word (weight 4w + k in bits 16k+15:16k; weight
//!   n is neuron n / 64, input n % 64); then one element per word (bits 15:0, bit 16 = last of its
//!   vector). Out: two words per vector (neurons 0-3, then 4-7, 16 bits each).

use spork_golden::bloom::PROFILE_BITS;
use spork_golden::dense::{MAX_INPUTS, NEURONS};

use spork_sim::beats::Beats;

use super::work::{KernelImage, Output, Payload};
use crate::repository::tensor::TensorBuf;

/// Stream words.
pub type Words = Vec<u64>;

/// A stream that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {kernel} output stream has {got} words, expected {expected}")]
pub struct StreamError {
    /// Kernel.
    pub kernel: String,
    /// Words received.
    pub got: usize,
    /// Words expected.
    pub expected: usize,
}

/// The input words for `payload` on `image`'s kernel.
pub fn encode(image: &KernelImage, payload: &Payload) -> Vec<u64> {
    let mut w = Vec::new();
    match payload {
        // A repository model's scalars (one word each), then its beats packed as on the simulated
        // board; TLAST is the data mover's side signal ([`framing`]).
        Payload::Tensors(t) => {
            let sim = image.kernel.repo().and_then(|r| r.spec.sim.as_ref());
            let scalars = sim.map_or(&[][..], |s| s.scalars.as_slice());
            let lanes = sim.map_or(1, |s| s.lanes);
            let per = mover_words(image);
            for &d in scalars {
                w.push(t.dims.get(d).copied().unwrap_or(0));
                w.extend(std::iter::repeat_n(0, per - 1));
            }
            w.extend(
                crate::repository::stream::beats(
                    &t.inputs,
                    crate::repository::spec::Last::Request,
                    lanes,
                    per,
                )
                .data,
            );
        }
        Payload::Image { pixels, width } => {
            w.push(*width as u64);
            w.extend(pixels.iter().map(|&p| u64::from(p)));
        }
        Payload::Documents(docs) => {
            for word in 0..PROFILE_BITS / 64 {
                w.push((0..64).fold(0u64, |acc, b| acc | (u64::from(image.profile.bit(64 * word + b)) << b)));
            }
            for d in docs.iter().filter(|d| !d.is_empty()) {
                for (i, &t) in d.iter().enumerate() {
                    w.push(u64::from(t) | (u64::from(i + 1 == d.len()) << 32));
                }
            }
        }
        Payload::Vectors(xs) => {
            let flat: Vec<i16> = image.layer.weights.iter().flat_map(|r| r.iter().copied()).collect();
            debug_assert_eq!(flat.len(), NEURONS * MAX_INPUTS);
            for four in flat.chunks(4) {
                w.push(
                    four.iter()
                        .enumerate()
                        .fold(0u64, |acc, (k, &x)| acc | (u64::from(x as u16) << (16 * k))),
                );
            }
            for x in xs {
                for (i, &e) in x.iter().enumerate() {
                    w.push(u64::from(e as u16) | (u64::from(i + 1 == x.len()) << 16));
                }
            }
        }
    }
    w
}

/// How the data mover frames `payload`'s words: the leading scalar words (never with TLAST), and
/// the row length after which TLAST falls on every row (0: on the job's last word only). Spork's
/// built-in layouts are `(0, 0)`; a repository model's come from its `[fpga.sim]`.
pub fn framing(image: &KernelImage, payload: &Payload) -> (u32, u32) {
    let (Payload::Tensors(t), Some(sim)) = (payload, image.kernel.repo().and_then(|r| r.spec.sim.as_ref()))
    else {
        return (0, 0);
    };
    let row = match sim.last {
        crate::repository::spec::Last::Row => {
            t.inputs.first().and_then(|i| i.shape.last()).copied().unwrap_or(0).div_ceil(sim.lanes as u64)
        }
        crate::repository::spec::Last::Request => 0,
    };
    (sim.scalars.len() as u32, u32::try_from(row).unwrap_or(0))
}

/// 64-bit words in one of the data movers' words: 8 when `image`'s model streams beats wider than
/// 64 bits (its image is built with 512-bit movers, [`crate::repository::spec::ModelSpec::mover_bits`]),
/// else 1. Word counts the movers take (and [`framing`]'s row) are in the movers' words.
pub fn mover_words(image: &KernelImage) -> usize {
    image.kernel.repo().map_or(1, |r| r.spec.mover_bits() / 64)
}

/// Lanes of `image`'s kernel stream (a repository model's `[fpga.sim] lanes`; 1 for the built-ins).
fn lanes(image: &KernelImage) -> usize {
    image.kernel.repo().and_then(|r| r.spec.sim.as_ref()).map_or(1, |s| s.lanes)
}

/// Output words `image`'s kernel produces for `payload`.
pub fn expected_words(image: &KernelImage, payload: &Payload) -> usize {
    match payload {
        Payload::Image { pixels, width } => {
            let h = pixels.len() / width.max(&1);
            width.saturating_sub(2) * h.saturating_sub(2)
        }
        Payload::Documents(docs) => docs.iter().filter(|d| !d.is_empty()).count(),
        Payload::Vectors(xs) => 2 * xs.len(),
        Payload::Tensors(t) => t.outputs.first().map_or(0, |(_, shape)| {
            let row = shape.last().copied().unwrap_or(1).max(1);
            let rows = shape.iter().product::<u64>() / row;
            (rows * row.div_ceil(lanes(image) as u64)) as usize * mover_words(image)
        }),
    }
}

/// The result carried by `words` for `payload` on `image`'s kernel.
pub fn decode(image: &KernelImage, payload: &Payload, words: &[u64]) -> Result<Output, StreamError> {
    let expected = expected_words(image, payload);
    if words.len() != expected {
        return Err(StreamError { kernel: image.kernel.name().to_string(), got: words.len(), expected });
    }
    Ok(match payload {
        Payload::Tensors(t) => {
            let mut outputs: Vec<TensorBuf> = t
                .outputs
                .iter()
                .map(|(dt, shape)| TensorBuf::zeroed(*dt, shape).unwrap_or_else(|| TensorBuf::empty(*dt)))
                .collect();
            // The data mover carries no TKEEP: the words are unpacked by their place in the rows.
            let per = mover_words(image);
            let n = words.len() / per;
            let mut beats = Beats::with_len(per, n);
            beats.data.copy_from_slice(&words[..n * per]);
            let _ = crate::repository::stream::unpack(&beats, &mut outputs, lanes(image));
            Output::Tensors(outputs)
        }
        Payload::Image { .. } => Output::Magnitudes(words.iter().map(|&w| w as u8).collect()),
        Payload::Documents(docs) => {
            let mut scores = words.iter().map(|&w| w as u16);
            Output::Scores(
                docs.iter().map(|d| if d.is_empty() { 0 } else { scores.next().unwrap_or(0) }).collect(),
            )
        }
        Payload::Vectors(_) => Output::Activations(
            words
                .chunks(2)
                .map(|pair| std::array::from_fn(|j| (pair[j / 4] >> (16 * (j % 4))) as u16 as i16))
                .collect(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use spork_golden::Kernel;

    /// A software model of the board side: decode the input stream, run the reference, encode.
    fn software_board(image: &KernelImage, words: &[u64]) -> Vec<u64> {
        match image.kernel.builtin().expect("the tests use built-in kernels") {
            Kernel::Sobel => {
                let width = words[0] as usize;
                let pixels: Vec<u8> = words[1..].iter().map(|&w| w as u8).collect();
                spork_golden::sobel::sobel(&pixels, width)
                    .expect("shape")
                    .into_iter()
                    .map(u64::from)
                    .collect()
            }
            Kernel::Bloom => {
                let mut p = spork_golden::bloom::Profile::default();
                for b in 0..PROFILE_BITS {
                    p.set(b, words[b / 64] >> (b % 64) & 1 == 1);
                }
                let mut out = Vec::new();
                let mut doc = Vec::new();
                for &w in &words[16..] {
                    doc.push(w as u32);
                    if w >> 32 & 1 == 1 {
                        out.push(u64::from(p.score(&doc)));
                        doc.clear();
                    }
                }
                out
            }
            Kernel::Dense => {
                let mut l = spork_golden::dense::Layer::default();
                for n in 0..NEURONS * MAX_INPUTS {
                    l.weights[n / MAX_INPUTS][n % MAX_INPUTS] =
                        (words[n / 4] >> (16 * (n % 4))) as u16 as i16;
                }
                let mut out = Vec::new();
                let mut x = Vec::new();
                for &w in &words[128..] {
                    x.push(w as u16 as i16);
                    if w >> 16 & 1 == 1 {
                        let y = l.forward(&x).expect("shape");
                        for half in y.chunks(4) {
                            out.push(
                                half.iter()
                                    .enumerate()
                                    .fold(0u64, |a, (k, &v)| a | (u64::from(v as u16) << (16 * k))),
                            );
                        }
                        x.clear();
                    }
                }
                out
            }
        }
    }

    #[test]
    fn encode_then_board_then_decode_is_the_reference() {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(4);
        for kernel in Kernel::ALL {
            let image = KernelImage::new(kernel, 2);
            for items in [9u64, 700, 5000] {
                let p = image.payload(items, &mut rng);
                let out = software_board(&image, &encode(&image, &p));
                assert_eq!(
                    decode(&image, &p, &out).expect("decode"),
                    image.reference(&p).expect("ref"),
                    "{kernel}"
                );
            }
        }
    }

    #[test]
    fn a_short_stream_is_an_error() {
        let image = KernelImage::new(Kernel::Sobel, 1);
        let p = Payload::Image { pixels: vec![0; 16], width: 4 };
        assert!(decode(&image, &p, &[0, 0, 0]).is_err());
        assert!(decode(&image, &p, &[0; 4]).is_ok());
        assert_eq!(encode(&image, &p).len(), 17);
    }
}

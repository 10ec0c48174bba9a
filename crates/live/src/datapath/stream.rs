//! The word stream a board kernel exchanges with the host through the data movers (`mm2s` -> the
//! model's RTL -> `s2mm`): the model's `[fpga.sim] scalars` first (one mover word each), then its
//! input tensors packed into beats as on the simulated board (`lanes` element groups a beat, each
//! beat one mover word of 64 or 512 bits, [`mover_words`]); out, its output tensors packed the
//! same way. The data mover carries TLAST as a side signal ([`framing`]) and no TKEEP. The XRT
//! loopback in `tests/xrt_loopback/` and `spork kernel package`'s Vitis top implement the same
//! layout.

use spork_sim::beats::Beats;

use super::work::{KernelImage, Output, Payload};
use crate::repository::spec::{Last, SimSpec};
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

/// The input words for `payload` on `image`'s model.
pub fn encode(image: &KernelImage, payload: &Payload) -> Vec<u64> {
    let Payload::Tensors(t) = payload;
    let per = mover_words(image);
    let mut w = Vec::new();
    for &d in sim(image).map_or(&[][..], |s| s.scalars.as_slice()) {
        w.push(t.dims.get(d).copied().unwrap_or(0));
        w.extend(std::iter::repeat_n(0, per - 1));
    }
    w.extend(crate::repository::stream::beats(&t.inputs, Last::Request, lanes(image), per).data);
    w
}

/// How the data mover frames `payload`'s words: the leading scalar words (never with TLAST), and
/// the row length after which TLAST falls on every row (0: on the job's last word only), from the
/// model's `[fpga.sim]` (`(0, 0)` without one).
pub fn framing(image: &KernelImage, payload: &Payload) -> (u32, u32) {
    let Payload::Tensors(t) = payload;
    let Some(sim) = sim(image) else { return (0, 0) };
    let row = match sim.last {
        Last::Row => {
            t.inputs.first().and_then(|i| i.shape.last()).copied().unwrap_or(0).div_ceil(sim.lanes as u64)
        }
        Last::Request => 0,
    };
    (sim.scalars.len() as u32, u32::try_from(row).unwrap_or(0))
}

/// 64-bit words in one of the data movers' words: 8 when `image`'s model streams beats wider than
/// 64 bits (its image is built with 512-bit movers, [`crate::repository::spec::ModelSpec::mover_bits`]),
/// else 1. Word counts the movers take (and [`framing`]'s row) are in the movers' words.
pub fn mover_words(image: &KernelImage) -> usize {
    image.kernel.spec.mover_bits() / 64
}

/// The model's `[fpga.sim]`, if it has RTL.
fn sim(image: &KernelImage) -> Option<&SimSpec> {
    image.kernel.spec.sim.as_ref()
}

/// Lanes of `image`'s model's stream (its `[fpga.sim] lanes`; 1 without RTL).
fn lanes(image: &KernelImage) -> usize {
    sim(image).map_or(1, |s| s.lanes)
}

/// Output words `image`'s model produces for `payload`.
pub fn expected_words(image: &KernelImage, payload: &Payload) -> usize {
    let Payload::Tensors(t) = payload;
    t.outputs.first().map_or(0, |(_, shape)| {
        let row = shape.last().copied().unwrap_or(1).max(1);
        let rows = shape.iter().product::<u64>() / row;
        (rows * row.div_ceil(lanes(image) as u64)) as usize * mover_words(image)
    })
}

/// The result carried by `words` for `payload` on `image`'s model.
pub fn decode(image: &KernelImage, payload: &Payload, words: &[u64]) -> Result<Output, StreamError> {
    let Payload::Tensors(t) = payload;
    let expected = expected_words(image, payload);
    if words.len() != expected {
        return Err(StreamError { kernel: image.kernel.name().to_string(), got: words.len(), expected });
    }
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
    Ok(Output::Tensors(outputs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn own(name: &str) -> KernelImage {
        KernelImage::repo(Arc::new(crate::repository::own::load(name, false).expect("an own model")))
    }

    /// A sobel image `h` x `w` of pixels that are not all alike.
    fn image(sobel: &KernelImage, h: u64, w: u64) -> (Vec<u8>, Payload) {
        let pixels: Vec<u8> = (0..h * w).map(|i| (i * 37 % 251) as u8).collect();
        let t = TensorBuf::from_bytes(sobel.kernel.spec.inputs[0].dtype, &[h, w], &pixels).expect("image");
        (pixels, Payload::Tensors(sobel.kernel.payload(vec![t]).expect("bound")))
    }

    /// A board in software for Spork's own sobel: the width scalar word, then the pixels unpacked
    /// from their beats, the golden Sobel run on them, and its magnitudes packed back.
    fn software_sobel(sobel: &KernelImage, words: &[u64]) -> Vec<u64> {
        let (w, pixels) = (words[0], &words[1..]);
        let h = pixels.len() as u64 / w.div_ceil(8);
        let mut input = [TensorBuf::zeroed(sobel.kernel.spec.inputs[0].dtype, &[h, w]).expect("tensor")];
        let mut beats = Beats::with_len(1, pixels.len());
        beats.data.copy_from_slice(pixels);
        crate::repository::stream::unpack(&beats, &mut input, 8).expect("the pixels' beats");
        let out = spork_golden::sobel::sobel(input[0].bytes(), w as usize).expect("an image");
        let dtype = sobel.kernel.spec.outputs[0].dtype;
        let out = TensorBuf::from_bytes(dtype, &[h - 2, w - 2], &out).expect("magnitudes");
        crate::repository::stream::beats(&[out], Last::Request, 8, 1).data
    }

    #[test]
    fn encode_then_board_then_decode_is_the_reference() {
        let sobel = own("sobel");
        for (h, w) in [(3, 3), (7, 20), (40, 129)] {
            let (pixels, p) = image(&sobel, h, w);
            let words = encode(&sobel, &p);
            assert_eq!(words[0], w, "the width leads, one scalar word");
            assert_eq!(framing(&sobel, &p), (1, 0), "TLAST on the last word only");
            let out = decode(&sobel, &p, &software_sobel(&sobel, &words)).expect("decode");
            let golden = spork_golden::sobel::sobel(&pixels, w as usize).expect("an image");
            let Output::Tensors(ts) = &out;
            assert_eq!(ts[0].bytes(), &golden[..], "{h}x{w}");
            assert_eq!(out, sobel.reference(&p).expect("the C code"), "{h}x{w}");
        }
    }

    #[test]
    fn a_short_stream_is_an_error_and_wide_beats_take_eight_words() {
        let sobel = own("sobel");
        let (_, p) = image(&sobel, 4, 4);
        // 2 x 2 magnitudes: two rows of one 8-lane beat each.
        assert!(decode(&sobel, &p, &[0]).is_err());
        assert!(decode(&sobel, &p, &[0; 2]).is_ok());
        assert_eq!(encode(&sobel, &p).len(), 1 + 4);
        // Dense streams 32 int16 lanes: 512-bit beats, eight words a mover word.
        let dense = own("dense");
        let mut rng = <rand::rngs::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(2);
        let p = dense.payload(3 * 64, &mut rng);
        assert_eq!(mover_words(&dense), 8);
        assert_eq!(encode(&dense, &p).len(), 3 * 2 * 8, "two beats a vector");
        assert_eq!(expected_words(&dense, &p), 3 * 8, "one beat of 8 neurons a vector");
    }
}

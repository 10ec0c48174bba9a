//! The word stream of Spork's first kernels' Vitis stream wrappers (`scripts/vitis/<kernel>_axis.v`,
//! driven by the data movers `mm2s` -> `<kernel>_axis` -> `s2mm`): 64-bit words, the kernel's
//! on-chip state first, then its items, one a word. (The layout the runtime's built-in kernels
//! streamed, kept here over the golden models' state for the tests of those wrappers.)
//!
//! - sobel: word 0 = image width; then one pixel per word (bits 7:0). Out: one magnitude per word.
//! - bloom: 16 words = the 1024-bit profile (bit b of word w is profile bit 64w + b); then one term per
//!   word (bits 31:0 hash, bit 32 = last term of its document); empty documents are not sent. Out: one
//!   score per (non-empty) document.
//! - dense: 128 words = the 512 int16 weights, four per word (weight 4w + k in bits 16k+15:16k; weight
//!   n is neuron n / 64, input n % 64); then one element per word (bits 15:0, bit 16 = last of its
//!   vector). Out: two words per vector (neurons 0-3, then 4-7, 16 bits each).

use spork_golden::bloom::PROFILE_BITS;
use spork_golden::dense::{MAX_INPUTS, NEURONS};

use super::golden::{Answer, Job, State};

/// The input words for `job`, `state` (the profile or the weights) first.
pub fn encode(state: &State, job: &Job) -> Vec<u64> {
    let mut w = Vec::new();
    match job {
        Job::Image { pixels, width } => {
            w.push(*width as u64);
            w.extend(pixels.iter().map(|&p| u64::from(p)));
        }
        Job::Documents(docs) => {
            for word in 0..PROFILE_BITS / 64 {
                w.push((0..64).fold(0u64, |acc, b| acc | (u64::from(state.profile.bit(64 * word + b)) << b)));
            }
            for d in docs.iter().filter(|d| !d.is_empty()) {
                for (i, &t) in d.iter().enumerate() {
                    w.push(u64::from(t) | (u64::from(i + 1 == d.len()) << 32));
                }
            }
        }
        Job::Vectors(xs) => {
            let flat: Vec<i16> = state.layer.weights.iter().flat_map(|r| r.iter().copied()).collect();
            assert_eq!(flat.len(), NEURONS * MAX_INPUTS);
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

/// Output words the wrapper produces for `job`.
pub fn expected_words(job: &Job) -> usize {
    match job {
        Job::Image { pixels, width } => {
            let h = pixels.len() / width.max(&1);
            width.saturating_sub(2) * h.saturating_sub(2)
        }
        Job::Documents(docs) => docs.iter().filter(|d| !d.is_empty()).count(),
        Job::Vectors(xs) => 2 * xs.len(),
    }
}

/// The answer `words` carry for `job` (an empty document scores 0), or why they cannot.
pub fn decode(job: &Job, words: &[u64]) -> Result<Answer, String> {
    let expected = expected_words(job);
    if words.len() != expected {
        return Err(format!("the output stream has {} words, expected {expected}", words.len()));
    }
    Ok(match job {
        Job::Image { .. } => Answer::Magnitudes(words.iter().map(|&w| w as u8).collect()),
        Job::Documents(docs) => {
            let mut scores = words.iter().map(|&w| w as u16);
            Answer::Scores(
                docs.iter().map(|d| if d.is_empty() { 0 } else { scores.next().unwrap_or(0) }).collect(),
            )
        }
        Job::Vectors(_) => Answer::Activations(
            words
                .chunks(2)
                .map(|pair| std::array::from_fn(|j| (pair[j / 4] >> (16 * (j % 4))) as u16 as i16))
                .collect(),
        ),
    })
}

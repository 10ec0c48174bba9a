//! `spork load --check`: every answer compared with the model's own CPU code run here on the same
//! inputs. A request's inputs are rebuilt from their seed and its expected outputs computed once per
//! distinct request, off the runtime's threads, after its answer came (so the check never delays a
//! send); an answer is wrong if any output the model gives is missing or differs by a byte.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use crate::datapath::work::{KernelImage, Output};

/// Output tensors by name, as the wire carries them.
pub type Named = Vec<(String, Bytes)>;

/// The verdict on one answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every output equals the CPU code's.
    Right,
    /// How it differs (the first difference).
    Wrong(String),
    /// The CPU code here could not answer it (said so once in the report, not counted wrong).
    Unchecked(String),
}

/// One distinct request's inputs, and its expected outputs once computed.
#[derive(Debug)]
pub struct Expected {
    items: u64,
    seed: u64,
    outputs: OnceLock<Result<Named, String>>,
}

impl Expected {
    /// The request of `items` items built from `seed`.
    pub fn new(items: u64, seed: u64) -> Arc<Expected> {
        Arc::new(Expected { items, seed, outputs: OnceLock::new() })
    }

    /// The CPU code's outputs (computed on first use).
    fn outputs(&self, image: &KernelImage) -> &Result<Named, String> {
        self.outputs.get_or_init(|| reference(image, self.items, self.seed))
    }

    /// `got` against the CPU code's outputs.
    pub fn verdict(&self, image: &KernelImage, got: &Named) -> Verdict {
        let want = match self.outputs(image) {
            Ok(w) => w,
            Err(e) => return Verdict::Unchecked(e.clone()),
        };
        for (name, bytes) in want {
            let Some((_, g)) = got.iter().find(|(n, _)| n == name) else {
                return Verdict::Wrong(format!("output '{name}' is missing"));
            };
            if g != bytes {
                return Verdict::Wrong(difference(name, bytes, g));
            }
        }
        Verdict::Right
    }
}

/// The first difference of output `name`.
fn difference(name: &str, want: &[u8], got: &[u8]) -> String {
    if want.len() != got.len() {
        return format!("output '{name}' is {} bytes, the CPU code's {}", got.len(), want.len());
    }
    let at = want.iter().zip(got).position(|(a, b)| a != b).unwrap_or(0);
    let differ = want.iter().zip(got).filter(|(a, b)| a != b).count();
    format!("output '{name}': {differ} of {} bytes differ, the first at byte {at}", want.len())
}

/// The model's CPU code on the request built from `seed`: its outputs by name.
fn reference(image: &KernelImage, items: u64, seed: u64) -> Result<Named, String> {
    let payload = super::payload(image, items, seed);
    let Output::Tensors(ts) = image.reference(&payload).map_err(|e| e.to_string())?;
    let names = image.kernel.spec.outputs.iter().map(|spec| spec.name.clone());
    Ok(names.zip(ts).map(|(name, t)| (name, Bytes::copy_from_slice(t.bytes()))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_difference_names_the_output_and_the_first_byte() {
        assert_eq!(
            difference("y", &[1, 2, 3], &[1, 9, 9]),
            "output 'y': 2 of 3 bytes differ, the first at byte 1"
        );
        assert_eq!(difference("y", &[1, 2], &[1]), "output 'y' is 1 bytes, the CPU code's 2");
    }
}

//! The eight-term Bloom core (`bloom8`) driven beat by beat: each document cut into beats of eight
//! term hashes, its last beat's lanes marked on `in_keep`, one score collected per document, as
//! `spork_golden::bloom::Profile::score` gives it.

use spork_golden::bloom::Profile;

use crate::cores::{Run, finish};
use crate::state::ProfilePort;
use crate::{Instance, Model, Port, SimError};

/// Terms per beat.
pub const LANES: usize = 8;

/// Cycles after the last beat by which the last score has appeared (two stages and slack).
const DRAIN: u64 = 8;

/// The `bloom8` core on the simulated board.
pub struct Bloom8 {
    inst: Instance,
    profile: ProfilePort,
    in_valid: Port,
    in_last: Port,
    in_keep: Port,
    in_hashes: Port,
    out_valid: Port,
    out_score: Port,
}

impl Bloom8 {
    pub fn new(model: &Model) -> Result<Bloom8, SimError> {
        Ok(Bloom8 {
            profile: ProfilePort::new(model)?,
            in_valid: model.input("in_valid")?,
            in_last: model.input("in_last")?,
            in_keep: model.input("in_keep")?,
            in_hashes: model.input("in_hashes")?,
            out_valid: model.output("out_valid")?,
            out_score: model.output("out_score")?,
            inst: model.instantiate("clock")?,
        })
    }

    /// Writes the profile into every copy, a bit per cycle; returns the cycles it took.
    pub fn load_profile(&mut self, profile: &Profile) -> u64 {
        self.profile.load(&mut self.inst, profile)
    }

    /// Each document's score against the loaded profile; an empty document scores 0 without
    /// touching the RTL (it has no beat to carry the end-of-document mark).
    pub fn score(&mut self, documents: &[Vec<u32>]) -> Result<Run<Vec<u16>>, SimError> {
        let start = self.inst.cycle_count();
        let expected = documents.iter().filter(|d| !d.is_empty()).count();
        let mut scores = Vec::with_capacity(expected);
        for doc in documents.iter().filter(|d| !d.is_empty()) {
            let beats = doc.len().div_ceil(LANES);
            for (i, terms) in doc.chunks(LANES).enumerate() {
                self.inst.set(self.in_valid, 1);
                self.inst.set(self.in_last, u64::from(i + 1 == beats));
                self.inst.set(self.in_keep, (1u64 << terms.len()) - 1);
                self.inst.set_words(self.in_hashes, &pack(terms));
                self.inst.cycle();
                self.collect(&mut scores);
            }
        }
        self.inst.set(self.in_valid, 0);
        self.inst.set(self.in_last, 0);
        for _ in 0..DRAIN {
            if scores.len() == expected {
                break;
            }
            self.inst.cycle();
            self.collect(&mut scores);
        }
        let Run { output, cycles } = finish("bloom8", scores, expected, self.inst.cycle_count() - start)?;
        let mut rtl = output.into_iter();
        let output =
            documents.iter().map(|d| if d.is_empty() { 0 } else { rtl.next().unwrap_or(0) }).collect();
        Ok(Run { output, cycles })
    }

    fn collect(&mut self, out: &mut Vec<u16>) {
        if self.inst.get(self.out_valid) == 1 {
            out.push(self.inst.get(self.out_score) as u16);
        }
    }
}

/// Up to eight term hashes as the four 64-bit words of one beat, lane k in bits 32k+31:32k.
fn pack(terms: &[u32]) -> [u64; 4] {
    let mut w = [0u64; 4];
    for (k, &t) in terms.iter().enumerate() {
        w[k / 2] |= u64::from(t) << (32 * (k % 2));
    }
    w
}

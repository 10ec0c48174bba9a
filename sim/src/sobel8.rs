//! The eight-pixel Sobel core (`sobel8`) driven beat by beat: each row cut into beats of eight
//! pixels, `in_ready` respected, the output beats' lanes gathered back into the interior in raster
//! order, as `spork_golden::sobel::sobel_wide` gives it.

use spork_golden::sobel;

use crate::cores::Run;
use crate::{Instance, Model, Port, SimError};

/// Pixels per beat.
pub const LANES: usize = 8;

/// Cycles after the last beat by which the last output beat has appeared (three stages and the
/// row's closing beat).
const DRAIN: u64 = 8;

/// The `sobel8` core on the simulated board.
pub struct Sobel8 {
    inst: Instance,
    width: Port,
    in_valid: Port,
    in_first: Port,
    in_last: Port,
    in_pixels: Port,
    in_ready: Port,
    out_valid: Port,
    out_mags: Port,
    out_count: Port,
}

impl Sobel8 {
    pub fn new(model: &Model) -> Result<Sobel8, SimError> {
        Ok(Sobel8 {
            width: model.input("width")?,
            in_valid: model.input("in_valid")?,
            in_first: model.input("in_first")?,
            in_last: model.input("in_last")?,
            in_pixels: model.input("in_pixels")?,
            in_ready: model.output("in_ready")?,
            out_valid: model.output("out_valid")?,
            out_mags: model.output("out_mags")?,
            out_count: model.output("out_count")?,
            inst: model.instantiate("clock")?,
        })
    }

    /// The interior gradient magnitudes of a `width`-wide image (as `sobel_wide`).
    pub fn run(&mut self, pixels: &[u8], width: usize) -> Result<Run<Vec<u8>>, SimError> {
        let height = sobel::sobel_wide_shape(pixels.len(), width)?;
        let expected = (width - 2) * (height - 2);
        let start = self.inst.cycle_count();
        let mut out = Vec::with_capacity(expected);
        self.inst.set(self.width, width as u64);
        let beats: Vec<u64> = pixels.chunks(width).flat_map(|row| row.chunks(LANES).map(pack)).collect();
        self.inst.eval();
        for (i, &b) in beats.iter().enumerate() {
            self.inst.set(self.in_valid, 1);
            self.inst.set(self.in_first, u64::from(i == 0));
            self.inst.set(self.in_last, u64::from(i + 1 == beats.len()));
            self.inst.set(self.in_pixels, b);
            // The one idle cycle after some rows' last beat: hold the beat until it is taken.
            while self.inst.get(self.in_ready) == 0 {
                self.inst.cycle();
                self.collect(&mut out);
            }
            self.inst.cycle();
            self.collect(&mut out);
        }
        self.inst.set(self.in_valid, 0);
        self.inst.set(self.in_first, 0);
        self.inst.set(self.in_last, 0);
        for _ in 0..DRAIN {
            if out.len() >= expected {
                break;
            }
            self.inst.cycle();
            self.collect(&mut out);
        }
        let cycles = self.inst.cycle_count() - start;
        if out.len() != expected {
            return Err(SimError::Stalled { model: "sobel8".into(), got: out.len(), expected, cycles });
        }
        Ok(Run { output: out, cycles })
    }

    fn collect(&mut self, out: &mut Vec<u8>) {
        if self.inst.get(self.out_valid) == 1 {
            let (m, n) = (self.inst.get(self.out_mags), self.inst.get(self.out_count));
            out.extend((0..n.min(LANES as u64)).map(|k| (m >> (8 * k)) as u8));
        }
    }
}

/// Up to eight pixels as one beat, lane k in bits 8k+7:8k.
fn pack(pixels: &[u8]) -> u64 {
    pixels.iter().enumerate().fold(0, |v, (k, &p)| v | u64::from(p) << (8 * k))
}

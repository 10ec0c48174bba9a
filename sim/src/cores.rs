//! Core-level drivers: real inputs streamed through a bare Verilated kernel core's ports, one item
//! per cycle, returning what the RTL computed in the shape of `spork_golden`'s reference with the
//! cycles it took. The simulated board serves the built-in kernels' requests with them (a bare core
//! simulates about twice as fast as its stream wrapper), and they measure a core's throughput for
//! its manifest ([`crate::measure`]).

use spork_golden::bloom::Profile;
use spork_golden::dense::{Layer, MAX_INPUTS, NEURONS};
use spork_golden::{ShapeError, sobel};

use crate::state::{ProfilePort, WeightPort, neuron_outputs};
use crate::{Instance, Model, Port, SimError};

/// Cycles after the last input by which every kernel's last output has appeared (the deepest
/// pipeline is Sobel's, three stages); a driver that sees fewer outputs by then reports a stall.
const DRAIN: u64 = 8;

/// A kernel's result with the clock cycles the RTL spent on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run<T> {
    pub output: T,
    pub cycles: u64,
}

/// The 3x3 Sobel kernel on the simulated board.
pub struct Sobel {
    inst: Instance,
    width: Port,
    in_valid: Port,
    in_first: Port,
    in_pixel: Port,
    out_valid: Port,
    out_mag: Port,
}

impl Sobel {
    pub fn new(model: &Model) -> Result<Sobel, SimError> {
        Ok(Sobel {
            width: model.input("width")?,
            in_valid: model.input("in_valid")?,
            in_first: model.input("in_first")?,
            in_pixel: model.input("in_pixel")?,
            out_valid: model.output("out_valid")?,
            out_mag: model.output("out_mag")?,
            inst: model.instantiate("clock")?,
        })
    }

    /// The interior gradient magnitudes of a `width`-wide image (as `spork_golden::sobel::sobel`).
    pub fn run(&mut self, pixels: &[u8], width: usize) -> Result<Run<Vec<u8>>, SimError> {
        let height = sobel::check_shape(pixels.len(), width)?;
        let expected = (width - 2) * (height - 2);
        let start = self.inst.cycle_count();
        let mut out = Vec::with_capacity(expected);
        self.inst.set(self.width, width as u64);
        for (i, &p) in pixels.iter().enumerate() {
            self.inst.set(self.in_valid, 1);
            self.inst.set(self.in_first, u64::from(i == 0));
            self.inst.set(self.in_pixel, u64::from(p));
            self.inst.cycle();
            self.collect(&mut out);
        }
        self.inst.set(self.in_valid, 0);
        self.inst.set(self.in_first, 0);
        for _ in 0..DRAIN {
            if out.len() == expected {
                break;
            }
            self.inst.cycle();
            self.collect(&mut out);
        }
        finish("sobel", out, expected, self.inst.cycle_count() - start)
    }

    fn collect(&mut self, out: &mut Vec<u8>) {
        if self.inst.get(self.out_valid) == 1 {
            out.push(self.inst.get(self.out_mag) as u8);
        }
    }
}

pub(crate) fn finish<T>(
    model: &str,
    output: Vec<T>,
    expected: usize,
    cycles: u64,
) -> Result<Run<Vec<T>>, SimError> {
    if output.len() != expected {
        return Err(SimError::Stalled { model: model.into(), got: output.len(), expected, cycles });
    }
    Ok(Run { output, cycles })
}

/// The Bloom-filter document scorer on the simulated board.
pub struct Bloom {
    inst: Instance,
    profile: ProfilePort,
    in_valid: Port,
    in_last: Port,
    in_hash: Port,
    out_valid: Port,
    out_score: Port,
}

impl Bloom {
    pub fn new(model: &Model) -> Result<Bloom, SimError> {
        Ok(Bloom {
            profile: ProfilePort::new(model)?,
            in_valid: model.input("in_valid")?,
            in_last: model.input("in_last")?,
            in_hash: model.input("in_hash")?,
            out_valid: model.output("out_valid")?,
            out_score: model.output("out_score")?,
            inst: model.instantiate("clock")?,
        })
    }

    /// Writes the profile into the on-chip filter, a bit per cycle; returns the cycles taken.
    pub fn load_profile(&mut self, profile: &Profile) -> u64 {
        self.profile.load(&mut self.inst, profile)
    }

    /// Each document's score against the loaded profile. An empty document scores 0 without
    /// touching the RTL (it has no term to carry the end-of-document mark).
    pub fn score(&mut self, documents: &[Vec<u32>]) -> Result<Run<Vec<u16>>, SimError> {
        let start = self.inst.cycle_count();
        let expected = documents.iter().filter(|d| !d.is_empty()).count();
        let mut scores = Vec::with_capacity(expected);
        for doc in documents {
            for (i, &term) in doc.iter().enumerate() {
                self.inst.set(self.in_valid, 1);
                self.inst.set(self.in_last, u64::from(i + 1 == doc.len()));
                self.inst.set(self.in_hash, u64::from(term));
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
        let Run { output, cycles } = finish("bloom", scores, expected, self.inst.cycle_count() - start)?;
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

/// The dense int16 layer on the simulated board.
pub struct Dense {
    inst: Instance,
    weights: WeightPort,
    in_valid: Port,
    in_last: Port,
    in_x: Port,
    out_valid: Port,
    out_y: [Port; NEURONS],
}

impl Dense {
    pub fn new(model: &Model) -> Result<Dense, SimError> {
        Ok(Dense {
            weights: WeightPort::new(model)?,
            in_valid: model.input("in_valid")?,
            in_last: model.input("in_last")?,
            in_x: model.input("in_x")?,
            out_valid: model.output("out_valid")?,
            out_y: neuron_outputs(model)?,
            inst: model.instantiate("clock")?,
        })
    }

    /// Writes the layer's weights into the on-chip memories, one per cycle; returns the cycles.
    pub fn load(&mut self, layer: &Layer) -> u64 {
        self.weights.load(&mut self.inst, layer)
    }

    /// The loaded layer applied to each input vector (as `Layer::forward`).
    pub fn forward(&mut self, inputs: &[Vec<i16>]) -> Result<Run<Vec<[i16; NEURONS]>>, SimError> {
        if let Some(bad) = inputs.iter().find(|x| x.is_empty() || x.len() > MAX_INPUTS) {
            return Err(ShapeError::Inputs { len: bad.len(), max: MAX_INPUTS }.into());
        }
        let start = self.inst.cycle_count();
        let mut out = Vec::with_capacity(inputs.len());
        for x in inputs {
            for (i, &v) in x.iter().enumerate() {
                self.inst.set(self.in_valid, 1);
                self.inst.set(self.in_last, u64::from(i + 1 == x.len()));
                self.inst.set(self.in_x, u64::from(v as u16));
                self.inst.cycle();
                self.collect(&mut out);
            }
        }
        self.inst.set(self.in_valid, 0);
        self.inst.set(self.in_last, 0);
        for _ in 0..DRAIN {
            if out.len() == inputs.len() {
                break;
            }
            self.inst.cycle();
            self.collect(&mut out);
        }
        finish("dense", out, inputs.len(), self.inst.cycle_count() - start)
    }

    fn collect(&mut self, out: &mut Vec<[i16; NEURONS]>) {
        if self.inst.get(self.out_valid) == 1 {
            let y = std::array::from_fn(|j| self.inst.get(self.out_y[j]) as u16 as i16);
            out.push(y);
        }
    }
}

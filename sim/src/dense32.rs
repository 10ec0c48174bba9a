//! The 32-lane dense core (`dense32`) driven beat by beat: each vector cut into beats of 32
//! elements, its last beat's lanes marked on `in_keep`, eight outputs collected per vector, as
//! `spork_golden::dense::Layer::forward` gives them.

use spork_golden::ShapeError;
use spork_golden::dense::{Layer, MAX_INPUTS, NEURONS};

use crate::cores::{Run, finish};
use crate::state::{WeightPort, neuron_outputs};
use crate::{Instance, Model, Port, SimError};

/// Input elements per beat.
pub const LANES: usize = 32;

/// Cycles after the last beat by which the last outputs have appeared (three stages and slack).
const DRAIN: u64 = 8;

/// The `dense32` core on the simulated board.
pub struct Dense32 {
    inst: Instance,
    weights: WeightPort,
    in_valid: Port,
    in_last: Port,
    in_keep: Port,
    in_x: Port,
    out_valid: Port,
    out_y: [Port; NEURONS],
}

impl Dense32 {
    pub fn new(model: &Model) -> Result<Dense32, SimError> {
        Ok(Dense32 {
            weights: WeightPort::new(model)?,
            in_valid: model.input("in_valid")?,
            in_last: model.input("in_last")?,
            in_keep: model.input("in_keep")?,
            in_x: model.input("in_x")?,
            out_valid: model.output("out_valid")?,
            out_y: neuron_outputs(model)?,
            inst: model.instantiate("clock")?,
        })
    }

    /// Writes the layer's weights, one per cycle; returns the cycles.
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
            let beats = x.len().div_ceil(LANES);
            for (i, xs) in x.chunks(LANES).enumerate() {
                self.inst.set(self.in_valid, 1);
                self.inst.set(self.in_last, u64::from(i + 1 == beats));
                self.inst.set(self.in_keep, (1u64 << xs.len()) - 1);
                self.inst.set_words(self.in_x, &pack(xs));
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
        finish("dense32", out, inputs.len(), self.inst.cycle_count() - start)
    }

    fn collect(&mut self, out: &mut Vec<[i16; NEURONS]>) {
        if self.inst.get(self.out_valid) == 1 {
            let y = std::array::from_fn(|j| self.inst.get(self.out_y[j]) as u16 as i16);
            out.push(y);
        }
    }
}

/// Up to 32 elements as the eight 64-bit words of one beat, lane k in bits 16k+15:16k.
fn pack(xs: &[i16]) -> [u64; 8] {
    let mut w = [0u64; 8];
    for (k, &x) in xs.iter().enumerate() {
        w[k / 4] |= u64::from(x as u16) << (16 * (k % 4));
    }
    w
}

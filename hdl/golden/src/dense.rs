//! A dense int16 layer: `NEURONS` dot products over up to `MAX_INPUTS` inputs, ReLU, then a fixed
//! point rescale (`>> SHIFT`) saturated to int16, exactly as the RTL's multiply-accumulate does it.

use crate::ShapeError;

/// Output neurons, one multiply-accumulate unit each in the RTL.
pub const NEURONS: usize = 8;
/// The weight memories hold this many inputs per neuron.
pub const MAX_INPUTS: usize = 64;
/// The accumulator is scaled down by this many bits (Q8 weights).
pub const SHIFT: u32 = 8;

/// The weights held on chip: `weights[neuron][input]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    /// Q8 weights: `weights[j][i]` multiplies input `i` into neuron `j`.
    pub weights: [[i16; MAX_INPUTS]; NEURONS],
}

impl Default for Layer {
    fn default() -> Self {
        Layer { weights: [[0; MAX_INPUTS]; NEURONS] }
    }
}

/// ReLU, rescale and saturate one accumulator.
pub fn activate(acc: i64) -> i16 {
    if acc < 0 { 0 } else { (acc >> SHIFT).min(i64::from(i16::MAX)) as i16 }
}

impl Layer {
    /// The layer's output for one input vector.
    pub fn forward(&self, x: &[i16]) -> Result<[i16; NEURONS], ShapeError> {
        if x.is_empty() || x.len() > MAX_INPUTS {
            return Err(ShapeError::Inputs { len: x.len(), max: MAX_INPUTS });
        }
        Ok(std::array::from_fn(|j| {
            let acc = x.iter().zip(&self.weights[j]).map(|(&a, &w)| i64::from(a) * i64::from(w)).sum();
            activate(acc)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_weights_rescale() {
        let mut l = Layer::default();
        for j in 0..NEURONS {
            l.weights[j][j] = 256; // 1.0 in Q8
        }
        let x: Vec<i16> = (0..NEURONS as i16).map(|i| i * 100 - 300).collect();
        let y = l.forward(&x).unwrap();
        assert_eq!(y, [0, 0, 0, 0, 100, 200, 300, 400]);
    }

    #[test]
    fn saturates_and_relus() {
        let mut l = Layer::default();
        l.weights[0] = [i16::MAX; MAX_INPUTS];
        l.weights[1] = [i16::MIN; MAX_INPUTS];
        let y = l.forward(&[i16::MAX; MAX_INPUTS]).unwrap();
        assert_eq!((y[0], y[1]), (i16::MAX, 0));
    }

    #[test]
    fn rejects_bad_lengths() {
        let l = Layer::default();
        assert!(l.forward(&[]).is_err());
        assert!(l.forward(&[0; MAX_INPUTS + 1]).is_err());
    }
}

//! The on-chip state the Bloom and dense cores load after reset, one value per cycle through ports
//! that the one-lane and the wide core of each kernel share.

use spork_golden::bloom::{PROFILE_BITS, Profile};
use spork_golden::dense::{Layer, MAX_INPUTS, NEURONS};

use crate::{Instance, Model, Port, SimError};

/// A Bloom core's profile port: `load_we`, `load_addr`, `load_bit`.
pub(crate) struct ProfilePort {
    we: Port,
    addr: Port,
    bit: Port,
}

impl ProfilePort {
    pub(crate) fn new(model: &Model) -> Result<ProfilePort, SimError> {
        Ok(ProfilePort {
            we: model.input("load_we")?,
            addr: model.input("load_addr")?,
            bit: model.input("load_bit")?,
        })
    }

    /// Writes `profile` into the core (every copy it keeps), a bit per cycle; the cycles taken.
    pub(crate) fn load(&self, inst: &mut Instance, profile: &Profile) -> u64 {
        for bit in 0..PROFILE_BITS {
            inst.set(self.we, 1);
            inst.set(self.addr, bit as u64);
            inst.set(self.bit, u64::from(profile.bit(bit)));
            inst.cycle();
        }
        inst.set(self.we, 0);
        PROFILE_BITS as u64
    }
}

/// A dense core's weight port: `w_we`, `w_neuron`, `w_index`, `w_data`.
pub(crate) struct WeightPort {
    we: Port,
    neuron: Port,
    index: Port,
    data: Port,
}

impl WeightPort {
    pub(crate) fn new(model: &Model) -> Result<WeightPort, SimError> {
        Ok(WeightPort {
            we: model.input("w_we")?,
            neuron: model.input("w_neuron")?,
            index: model.input("w_index")?,
            data: model.input("w_data")?,
        })
    }

    /// Writes `layer`'s weights into the core, one per cycle; the cycles taken.
    pub(crate) fn load(&self, inst: &mut Instance, layer: &Layer) -> u64 {
        for (j, row) in layer.weights.iter().enumerate() {
            for (i, &w) in row.iter().enumerate() {
                inst.set(self.we, 1);
                inst.set(self.neuron, j as u64);
                inst.set(self.index, i as u64);
                inst.set(self.data, u64::from(w as u16));
                inst.cycle();
            }
        }
        inst.set(self.we, 0);
        (NEURONS * MAX_INPUTS) as u64
    }
}

/// A dense core's eight outputs, `out_y$0` to `out_y$7`.
pub(crate) fn neuron_outputs(model: &Model) -> Result<[Port; NEURONS], SimError> {
    let mut out_y = [model.output("out_y$0")?; NEURONS];
    for (j, p) in out_y.iter_mut().enumerate() {
        *p = model.output(&format!("out_y${j}"))?;
    }
    Ok(out_y)
}

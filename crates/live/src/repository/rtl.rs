//! A repository model's RTL on the simulated board: verilated through the cache, its stream ports
//! bound and their widths checked against the tensors, then run request by request.

use spork_sim::axis::Axis;
use spork_sim::cache::{self, Built};
use spork_sim::verilate::Design;
use spork_sim::{Model, SimError};

use super::spec::{ModelSpec, SimSpec};
use super::stream;
use super::tensor::TensorBuf;

/// A model's verilated design, loaded.
#[derive(Clone, Debug)]
pub struct Rtl {
    /// The loaded simulation library, from which instances are made.
    pub model: Model,
    /// Where the library is, and whether it came from the cache.
    pub built: Built,
    /// `[fpga.sim]`: the ports to bind and the TLAST rule.
    pub sim: SimSpec,
}

/// The most memory one instance of a user's design may take: the simulated board runs it in the
/// server's process (one instance a board, and one at a time to time it at load).
pub const STATE_MAX: u64 = 256 << 20;

/// Why a model's RTL cannot run on the simulated board.
#[derive(Debug, thiserror::Error)]
pub enum RtlError {
    /// Verilating, loading or resetting the design failed.
    #[error("{model}: {source}")]
    Sim {
        /// The model's name.
        model: String,
        /// What the simulator reported.
        source: SimError,
    },
    /// A stream's TDATA is too narrow for one beat of its tensors.
    #[error(
        "{model}: {port} is {width} bits, the {what} need {need}\n  fix: widen it to at least {need} bits (a beat \
         packs `lanes` element groups, each one element of every tensor, from bit 0 up)"
    )]
    Width {
        /// The model's name.
        model: String,
        /// The TDATA port, as `s_axis_tdata`.
        port: String,
        /// Its width in bits.
        width: u32,
        /// "inputs" or "outputs".
        what: &'static str,
        /// Bits a beat needs: `lanes` elements of every tensor on that side.
        need: usize,
    },
    /// One instance of the design would take more memory than a simulated board may hold.
    #[error(
        "{model}: one instance of its RTL takes {bytes} bytes (its registers and memories, as Verilator \
         holds them), past the {max} a simulated board holds in the server's process\n  fix: shrink the \
         design's memories for simulation, or serve it on a real board (--board alveo or f1)"
    )]
    State {
        /// The model's name.
        model: String,
        /// Bytes one instance takes.
        bytes: u64,
        /// [`STATE_MAX`].
        max: u64,
    },
    /// `lanes` > 1 and the design has no TKEEP on a stream.
    #[error(
        "{model}: lanes = {lanes} and the design has no {port}\n  fix: add {port}[{lanes}-1:0] (one bit per lane; \
         a row's last beat keeps only the lanes it fills)"
    )]
    Keep {
        /// The model's name.
        model: String,
        /// The missing port, as `s_axis_tkeep`.
        port: String,
        /// `[fpga.sim] lanes`.
        lanes: usize,
    },
}

impl Rtl {
    /// Verilates (or finds in the cache) and loads `spec`'s `[fpga.sim]`, and checks its ports.
    pub fn load(spec: &ModelSpec, sim: &SimSpec) -> Result<Rtl, RtlError> {
        let err = |source| RtlError::Sim { model: spec.name.clone(), source };
        let design = Design {
            name: spec.name.clone(),
            top: sim.top.clone(),
            sources: sim.sources.clone(),
            dir: spec.dir.clone(),
            waivers: Vec::new(),
            strict: false,
        };
        let built = cache::verilated(&design).map_err(err)?;
        let model = Model::load_path(&built.library).map_err(err)?;
        // Checked before the first instance: making one resets (touches) all of it.
        if model.state_bytes() > STATE_MAX {
            return Err(RtlError::State {
                model: spec.name.clone(),
                bytes: model.state_bytes(),
                max: STATE_MAX,
            });
        }
        let rtl = Rtl { model, built, sim: sim.clone() };
        let axis = rtl.instance().map_err(err)?;
        for (what, tensors, (port, width)) in [
            ("inputs", &spec.inputs, (&sim.ports.input, axis.widths.0)),
            ("outputs", &spec.outputs, (&sim.ports.output, axis.widths.1)),
        ] {
            let need: usize = tensors.iter().map(|t| t.dtype.size() * 8).sum::<usize>() * sim.lanes;
            if (width as usize) < need {
                let port = format!("{port}_tdata");
                return Err(RtlError::Width { model: spec.name.clone(), port, width, what, need });
            }
        }
        for (port, width) in [(&sim.ports.input, axis.keeps.0), (&sim.ports.output, axis.keeps.1)] {
            if sim.lanes > 1 && (width as usize) < sim.lanes {
                let (port, lanes) = (format!("{port}_tkeep"), sim.lanes);
                return Err(RtlError::Keep { model: spec.name.clone(), port, lanes });
            }
        }
        Ok(rtl)
    }

    /// A fresh instance, reset.
    pub fn instance(&self) -> Result<Axis, SimError> {
        Axis::new(&self.model, &self.sim.ports)
    }

    /// Streams `inputs` (which bound `dims`) through `axis` into `outputs` (sized beforehand), the
    /// scalar ports set from `dims`; the output's TREADY follows `ready`, repeated (empty: always
    /// high). Returns the cycles taken.
    pub fn run(
        &self,
        axis: &mut Axis,
        inputs: &[TensorBuf],
        dims: &[u64],
        outputs: &mut [TensorBuf],
        ready: &[bool],
    ) -> Result<u64, SimError> {
        let lanes = self.sim.lanes;
        let beats = stream::beats(inputs, self.sim.last, lanes, axis.words().0);
        let values: Vec<u64> = self.sim.scalars.iter().map(|&i| dims.get(i).copied().unwrap_or(0)).collect();
        let out = axis.run(&values, &beats, stream::expected(outputs, lanes), ready)?;
        stream::unpack(&out.beats, outputs, lanes).map_err(|k| SimError::Keep {
            model: self.model.name().to_string(),
            beat: k.beat,
            got: k.got,
            want: k.want,
        })?;
        Ok(out.cycles)
    }
}

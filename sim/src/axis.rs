//! A generic AXI4-Stream driver (the Vitis RTL-kernel convention): any design with a clock, an
//! optional active-low reset, one slave stream in and one master stream out runs on the simulated
//! board through it, whatever it computes.
//!
//! Each cycle the driver offers the next input beat, sets the output's TREADY (always high, or as a
//! backpressure pattern says), lets the combinational logic settle, samples both handshakes, then
//! clocks the design: a beat moves when TVALID and TREADY were both high before the rising edge.

use crate::{Instance, Model, Port, SimError};

/// The names of a design's stream ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisPorts {
    /// The clock.
    pub clock: String,
    /// The active-low reset, if the design has one.
    pub reset: Option<String>,
    /// The slave stream's prefix (`s_axis` for `s_axis_tdata`, ...).
    pub input: String,
    /// The master stream's prefix.
    pub output: String,
    /// Scalar inputs set before each run and held through it (a Vitis kernel's scalar arguments,
    /// such as an image's width), in the order [`Axis::run`] takes their values.
    pub scalars: Vec<String>,
}

impl Default for AxisPorts {
    fn default() -> AxisPorts {
        AxisPorts {
            clock: "ap_clk".into(),
            reset: Some("ap_rst_n".into()),
            input: "s_axis".into(),
            output: "m_axis".into(),
            scalars: Vec::new(),
        }
    }
}

/// One beat: TDATA and TLAST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Beat {
    pub data: u64,
    pub last: bool,
}

/// What a stream run gave: the output beats and the cycles from the first offered beat to the last
/// output taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Streamed {
    pub beats: Vec<Beat>,
    pub cycles: u64,
}

/// Cycles without any beat moving after which a run is declared stalled.
const PATIENCE: u64 = 10_000;

/// Cycles the reset is held.
const RESET_CYCLES: u64 = 4;

/// A design instance behind its stream ports.
pub struct Axis {
    inst: Instance,
    model: String,
    reset: Option<Port>,
    s_data: Port,
    s_valid: Port,
    s_ready: Port,
    s_last: Port,
    m_data: Port,
    m_valid: Port,
    m_ready: Port,
    m_last: Port,
    scalars: Vec<Port>,
    /// TDATA widths in bits (input, output).
    pub widths: (u32, u32),
}

impl Axis {
    /// Binds `model`'s ports by `ports`' names (each missing one named in the error) and resets it.
    pub fn new(model: &Model, ports: &AxisPorts) -> Result<Axis, SimError> {
        let name = |prefix: &str, signal: &str| format!("{prefix}_{signal}");
        let (i, o) = (&ports.input, &ports.output);
        let width = |n: &str| model.ports().iter().find(|p| p.name == n).map_or(0, |p| p.width);
        let widths = (width(&name(i, "tdata")), width(&name(o, "tdata")));
        let mut axis = Axis {
            reset: ports.reset.as_deref().map(|r| model.input(r)).transpose()?,
            s_data: model.input(&name(i, "tdata"))?,
            s_valid: model.input(&name(i, "tvalid"))?,
            s_ready: model.output(&name(i, "tready"))?,
            s_last: model.input(&name(i, "tlast"))?,
            m_data: model.output(&name(o, "tdata"))?,
            m_valid: model.output(&name(o, "tvalid"))?,
            m_ready: model.input(&name(o, "tready"))?,
            m_last: model.output(&name(o, "tlast"))?,
            scalars: ports.scalars.iter().map(|s| model.input(s)).collect::<Result<_, _>>()?,
            inst: model.instantiate(&ports.clock)?,
            model: model.name().to_string(),
            widths,
        };
        axis.reset();
        Ok(axis)
    }

    /// Holds the reset low for a few cycles with both streams idle.
    pub fn reset(&mut self) {
        self.inst.set(self.s_valid, 0);
        self.inst.set(self.m_ready, 0);
        if let Some(r) = self.reset {
            self.inst.set(r, 0);
            self.inst.cycles(RESET_CYCLES);
            self.inst.set(r, 1);
            self.inst.eval();
        }
    }

    /// Sets the scalar inputs to `values` (in [`AxisPorts::scalars`]' order), then streams `input`
    /// through the design until `expected` output beats have come out. `ready` says, per cycle,
    /// whether the output's TREADY is high (`|_| true`: no backpressure).
    pub fn run(
        &mut self,
        values: &[u64],
        input: &[Beat],
        expected: usize,
        mut ready: impl FnMut(u64) -> bool,
    ) -> Result<Streamed, SimError> {
        for (&port, &v) in self.scalars.iter().zip(values) {
            self.inst.set(port, v);
        }
        let start = self.inst.cycle_count();
        let mut out = Vec::with_capacity(expected);
        let (mut sent, mut idle) = (0usize, 0u64);
        while out.len() < expected || sent < input.len() {
            let offered = input.get(sent);
            if let Some(b) = offered {
                self.inst.set(self.s_data, b.data);
                self.inst.set(self.s_last, u64::from(b.last));
            }
            self.inst.set(self.s_valid, u64::from(offered.is_some()));
            let taking = ready(self.inst.cycle_count() - start);
            self.inst.set(self.m_ready, u64::from(taking));
            self.inst.eval();
            let accepted = offered.is_some() && self.inst.get(self.s_ready) == 1;
            let produced = taking && self.inst.get(self.m_valid) == 1;
            if produced {
                out.push(Beat { data: self.inst.get(self.m_data), last: self.inst.get(self.m_last) == 1 });
            }
            self.inst.cycle();
            sent += usize::from(accepted);
            idle = if accepted || produced { 0 } else { idle + 1 };
            if idle > PATIENCE || out.len() > expected {
                break;
            }
        }
        self.inst.set(self.s_valid, 0);
        self.inst.set(self.m_ready, 0);
        self.inst.eval();
        let cycles = self.inst.cycle_count() - start;
        if out.len() != expected || sent != input.len() {
            return Err(SimError::Stream {
                model: self.model.clone(),
                sent,
                offered: input.len(),
                got: out.len(),
                expected,
                cycles,
            });
        }
        Ok(Streamed { beats: out, cycles })
    }
}

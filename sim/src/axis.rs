//! A generic AXI4-Stream driver (the Vitis RTL-kernel convention): any design with a clock, an
//! optional reset (active low as Vitis's `ap_rst_n`, or active high), one slave stream in and one master stream out runs on the simulated
//! board through it, whatever it computes.
//!
//! Each cycle the driver offers the next input beat, sets the output's TREADY (always high, or as a
//! repeating backpressure pattern says), lets the combinational logic settle on the falling
//! edge, samples both handshakes, then clocks the design: a beat moves when TVALID and TREADY were
//! both high before the rising edge. The loop runs inside the model's library
//! ([`Instance::stream`]): a call per cycle cost more than the design's own evaluation.

use crate::beats::Beats;
use crate::{Instance, Model, Port, SimError, StreamPorts};

/// The names of a design's stream ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisPorts {
    /// The clock.
    pub clock: String,
    /// The reset, if the design has one.
    pub reset: Option<String>,
    /// Whether the reset is asserted high (`rst`) rather than low (`ap_rst_n`, the default).
    pub reset_active_high: bool,
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
            reset_active_high: false,
            input: "s_axis".into(),
            output: "m_axis".into(),
            scalars: Vec::new(),
        }
    }
}

/// What a stream run gave: the output beats and the cycles from the first offered beat to the last
/// output taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Streamed {
    pub beats: Beats,
    pub cycles: u64,
}

/// Cycles without any beat moving after which a run is declared stalled.
const PATIENCE: u64 = 10_000;

/// What a stalled run says of the reset: a design whose reset is of the other polarity sits in
/// reset through the run and moves no beat.
fn reset_hint(ports: &AxisPorts) -> String {
    match (&ports.reset, ports.reset_active_high) {
        (None, _) => "; no reset is driven (give [fpga.sim] reset = \"NAME\" if the design has one)".into(),
        (Some(r), false) => format!(
            "; its reset `{r}` is driven active low (held 0, then 1): a design whose reset is active high \
             stays in reset (give [fpga.sim] reset_active = \"high\")"
        ),
        (Some(r), true) => format!(
            "; its reset `{r}` is driven active high (held 1, then 0): a design whose reset is active low \
             stays in reset (drop reset_active = \"high\")"
        ),
    }
}

/// Cycles the reset is held.
const RESET_CYCLES: u64 = 4;

/// A design instance behind its stream ports.
pub struct Axis {
    inst: Instance,
    model: String,
    /// The reset port and its asserted level.
    reset: Option<(Port, u64)>,
    /// Said when a run stalls: the reset as driven, which a design held in reset would explain.
    reset_hint: String,
    ports: StreamPorts,
    scalars: Vec<Port>,
    /// TDATA widths in bits (input, output).
    pub widths: (u32, u32),
    /// TKEEP widths in bits (input, output): 0 where the design has none.
    pub keeps: (u32, u32),
}

impl Axis {
    /// Binds `model`'s ports by `ports`' names (each missing one named in the error) and resets it.
    pub fn new(model: &Model, ports: &AxisPorts) -> Result<Axis, SimError> {
        let name = |prefix: &str, signal: &str| format!("{prefix}_{signal}");
        let (i, o) = (&ports.input, &ports.output);
        let width = |n: &str| model.ports().iter().find(|p| p.name == n).map_or(0, |p| p.width);
        let widths = (width(&name(i, "tdata")), width(&name(o, "tdata")));
        let keeps = (width(&name(i, "tkeep")), width(&name(o, "tkeep")));
        let keep = |n: String, w: u32| {
            (w > 0).then(|| if n.starts_with(i) { model.input(&n) } else { model.output(&n) })
        };
        let stream = StreamPorts {
            s_data: model.input(&name(i, "tdata"))?,
            s_valid: model.input(&name(i, "tvalid"))?,
            s_ready: model.output(&name(i, "tready"))?,
            s_last: model.input(&name(i, "tlast"))?,
            m_data: model.output(&name(o, "tdata"))?,
            m_valid: model.output(&name(o, "tvalid"))?,
            m_ready: model.input(&name(o, "tready"))?,
            m_last: model.output(&name(o, "tlast"))?,
            s_keep: keep(name(i, "tkeep"), keeps.0).transpose()?,
            m_keep: keep(name(o, "tkeep"), keeps.1).transpose()?,
        };
        let mut axis = Axis {
            reset: ports
                .reset
                .as_deref()
                .map(|r| model.input(r))
                .transpose()?
                .map(|p| (p, u64::from(ports.reset_active_high))),
            reset_hint: reset_hint(ports),
            ports: stream,
            scalars: ports.scalars.iter().map(|s| model.input(s)).collect::<Result<_, _>>()?,
            inst: model.instantiate(&ports.clock)?,
            model: model.name().to_string(),
            widths,
            keeps,
        };
        axis.reset();
        Ok(axis)
    }

    /// Holds the reset asserted for a few cycles with both streams idle, then releases it.
    pub fn reset(&mut self) {
        self.inst.set(self.ports.s_valid, 0);
        self.inst.set(self.ports.m_ready, 0);
        if let Some((r, asserted)) = self.reset {
            self.inst.set(r, asserted);
            self.inst.cycles(RESET_CYCLES);
            self.inst.set(r, asserted ^ 1);
            self.inst.eval();
        }
    }

    /// 64-bit words per beat (input, output): what [`Axis::run`]'s beats carry.
    pub fn words(&self) -> (usize, usize) {
        (self.ports.s_data.words(), self.ports.m_data.words())
    }

    /// Sets the scalar inputs to `values` (in [`AxisPorts::scalars`]' order), then streams `input`
    /// (of [`Axis::words`]' input words per beat) through the design until `expected` output beats
    /// have come out. The output's TREADY follows `ready` cycle by cycle, repeated (empty: always
    /// high, no backpressure).
    pub fn run(
        &mut self,
        values: &[u64],
        input: &Beats,
        expected: usize,
        ready: &[bool],
    ) -> Result<Streamed, SimError> {
        if input.words != self.words().0 {
            let (got, want) = (input.words, self.words().0);
            return Err(SimError::BeatWords { model: self.model.clone(), got, want });
        }
        for (&port, &v) in self.scalars.iter().zip(values) {
            self.inst.set(port, v);
        }
        let moved = self.inst.stream(&self.ports, input, expected, ready, PATIENCE);
        if let Some(why) = self.inst.failed() {
            return Err(SimError::Stopped { model: self.model.clone(), why });
        }
        if moved.got != expected || moved.sent != input.len() {
            return Err(SimError::Stream {
                model: self.model.clone(),
                sent: moved.sent,
                offered: input.len(),
                got: moved.got,
                expected,
                cycles: moved.cycles,
                hint: self.reset_hint.clone(),
            });
        }
        Ok(Streamed { beats: moved.beats, cycles: moved.cycles })
    }
}

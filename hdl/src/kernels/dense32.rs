//! A streaming dense int16 layer at 32 input elements per cycle: 256 multiply-accumulates a cycle.
//!
//! Why 32: the layer is 64 inputs x 8 neurons, 512 multiplies a vector. A vector a cycle would need
//! 1,024-bit beats, past the stream convention's 512; 32 lanes fill a 512-bit beat and use 256
//! DSPs, a twelfth of the 3,072 in one SLR of an Alveo U250, so the stream, not the DSP budget,
//! sets the width. Each neuron ([`Neuron32`]) keeps its 64 weights as 32 two-entry RAMs, one per
//! lane (weight `i` in lane `i % 32` at address `i / 32`), so a beat reads all 32 at once.
//!
//! Stage 0 reads every lane's weight for the beat's place in the vector; stage 1 multiplies (16x16
//! -> 32, a DSP each) into registers; stage 2 adds the 32 products with a tree into the 48-bit
//! accumulator, and on the vector's last beat passes the sum through ReLU, `>> 8` and int16
//! saturation into the output register. Lanes `in_keep` leaves unused multiply by zero.

use rust_hdl::prelude::*;

/// Input elements per beat.
pub const LANES: usize = 32;

/// One neuron's 32 lanes: weights, multipliers and the adder tree into its accumulator.
///
/// Its stage-1 inputs (`x`, `keep`, `valid`, `last`) are the beat registered by [`Dense32`] in the
/// cycle after `rd_beat` was presented, when the weight RAMs' reads arrive.
#[derive(LogicBlock, Default)]
pub struct Neuron32 {
    /// The clock; everything is registered on its rising edge.
    pub clock: Signal<In, Clock>,
    /// Writes `w_data` as weight `w_index` of this neuron on the rising edge.
    pub w_we: Signal<In, Bit>,
    /// The input index (0..=63) of the weight written.
    pub w_index: Signal<In, Bits<6>>,
    /// Signed 16-bit Q8 weight.
    pub w_data: Signal<In, Signed<16>>,
    /// Stage 0: the beat's place in its vector (0: inputs 0..31, 1: inputs 32..63).
    pub rd_beat: Signal<In, Bits<1>>,
    /// Stage 1: the beat's 32 elements, lane k in bits 16k+15:16k.
    pub x: Signal<In, Bits<512>>,
    /// Stage 1: the lanes that hold an element.
    pub keep: Signal<In, Bits<32>>,
    /// Stage 1: a beat is in the stage.
    pub valid: Signal<In, Bit>,
    /// Stage 1: the beat ends its vector.
    pub last: Signal<In, Bit>,
    /// The neuron's output for the last finished vector, as int16 bits (0..=32767 after ReLU).
    pub y: Signal<Out, Bits<16>>,
    w_lane: Signal<Local, Bits<5>>,
    weights: [RAM<Signed<16>, 1>; 32],
    lane: [Signal<Local, Signed<16>>; 32],
    product: [Signal<Local, Signed<32>>; 32],
    p: [DFF<Signed<32>>; 32],
    s2_valid: DFF<Bit>,
    s2_last: DFF<Bit>,
    wide: [Signal<Local, Signed<48>>; 32],
    s16: [Signal<Local, Signed<48>>; 16],
    s8: [Signal<Local, Signed<48>>; 8],
    s4: [Signal<Local, Signed<48>>; 4],
    s2: [Signal<Local, Signed<48>>; 2],
    acc: DFF<Signed<48>>,
    total: Signal<Local, Signed<48>>,
    total_bits: Signal<Local, Bits<48>>,
    scaled: Signal<Local, Bits<40>>,
    y_r: DFF<Bits<16>>,
}

impl Logic for Neuron32 {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, s2_valid, s2_last, acc, y_r);
        self.w_lane.next = self.w_index.val().get_bits::<5>(0);
        for k in 0..32 {
            self.weights[k].read_clock.next = self.clock.val();
            self.weights[k].write_clock.next = self.clock.val();
            self.weights[k].read_address.next = self.rd_beat.val();
            self.weights[k].write_address.next = self.w_index.val().get_bits::<1>(5);
            self.weights[k].write_data.next = self.w_data.val();
            self.weights[k].write_enable.next = self.w_we.val() & (self.w_lane.val().index() == k);
            // Stage 1: the lane's element (zero where unused) times its weight. The product gets
            // its own 32-bit signal: Verilog sizes `a * b` by its context.
            self.lane[k].next = 0.into();
            if self.keep.val().get_bit(k) {
                self.lane[k].next = signed_cast(self.x.val().get_bits::<16>(16 * k));
            }
            self.product[k].next = self.weights[k].read_data.val() * self.lane[k].val();
            self.p[k].clock.next = self.clock.val();
            self.p[k].d.next = self.product[k].val();
            self.wide[k].next = signed_bit_cast::<48, 32>(self.p[k].q.val());
        }
        self.s2_valid.d.next = self.valid.val();
        self.s2_last.d.next = self.last.val();
        // Stage 2: the adder tree. (Written out: rust-hdl's generator takes no arithmetic in an
        // array index.)
        self.s16[0].next = self.wide[0].val() + self.wide[1].val();
        self.s16[1].next = self.wide[2].val() + self.wide[3].val();
        self.s16[2].next = self.wide[4].val() + self.wide[5].val();
        self.s16[3].next = self.wide[6].val() + self.wide[7].val();
        self.s16[4].next = self.wide[8].val() + self.wide[9].val();
        self.s16[5].next = self.wide[10].val() + self.wide[11].val();
        self.s16[6].next = self.wide[12].val() + self.wide[13].val();
        self.s16[7].next = self.wide[14].val() + self.wide[15].val();
        self.s16[8].next = self.wide[16].val() + self.wide[17].val();
        self.s16[9].next = self.wide[18].val() + self.wide[19].val();
        self.s16[10].next = self.wide[20].val() + self.wide[21].val();
        self.s16[11].next = self.wide[22].val() + self.wide[23].val();
        self.s16[12].next = self.wide[24].val() + self.wide[25].val();
        self.s16[13].next = self.wide[26].val() + self.wide[27].val();
        self.s16[14].next = self.wide[28].val() + self.wide[29].val();
        self.s16[15].next = self.wide[30].val() + self.wide[31].val();
        self.s8[0].next = self.s16[0].val() + self.s16[1].val();
        self.s8[1].next = self.s16[2].val() + self.s16[3].val();
        self.s8[2].next = self.s16[4].val() + self.s16[5].val();
        self.s8[3].next = self.s16[6].val() + self.s16[7].val();
        self.s8[4].next = self.s16[8].val() + self.s16[9].val();
        self.s8[5].next = self.s16[10].val() + self.s16[11].val();
        self.s8[6].next = self.s16[12].val() + self.s16[13].val();
        self.s8[7].next = self.s16[14].val() + self.s16[15].val();
        self.s4[0].next = self.s8[0].val() + self.s8[1].val();
        self.s4[1].next = self.s8[2].val() + self.s8[3].val();
        self.s4[2].next = self.s8[4].val() + self.s8[5].val();
        self.s4[3].next = self.s8[6].val() + self.s8[7].val();
        self.s2[0].next = self.s4[0].val() + self.s4[1].val();
        self.s2[1].next = self.s4[2].val() + self.s4[3].val();
        self.total.next = self.acc.q.val() + self.s2[0].val() + self.s2[1].val();
        self.total_bits.next = unsigned_cast(self.total.val());
        self.scaled.next = self.total_bits.val().get_bits::<40>(8);
        if self.s2_valid.q.val() {
            if self.s2_last.q.val() {
                self.acc.d.next = 0.into();
                if self.total.val().get_bit(47) {
                    self.y_r.d.next = 0.into();
                } else if self.scaled.val() > 0x7FFF {
                    self.y_r.d.next = 0x7FFF.into();
                } else {
                    self.y_r.d.next = self.scaled.val().get_bits::<16>(0);
                }
            } else {
                self.acc.d.next = self.total.val();
            }
        }
        self.y.next = self.y_r.q.val();
    }
}

/// A dense int16 layer streamed 32 input elements per cycle: eight neurons of 32 multipliers each,
/// 48-bit accumulators over up to 64 inputs, then ReLU, `>> 8` and int16 saturation
/// (`spork_golden::dense::Layer::forward`).
///
/// Latency: three cycles. When a vector's last beat is presented in cycle `t`, its eight outputs
/// are on `out_y` in cycle `t + 3`. Throughput: one beat (up to 32 elements) per cycle, vectors back
/// to back with no gap. There is no back-pressure: `out_valid` pulses for one cycle per vector.
///
/// ### Inputs
///
/// * [`clock`](Self::clock) Every register and the 256 weight RAMs run on its rising edge.
/// * [`w_we`](Self::w_we) Writes [`w_data`](Self::w_data) as weight [`w_index`](Self::w_index) of
///   neuron [`w_neuron`](Self::w_neuron) on the rising edge.
/// * [`w_neuron`](Self::w_neuron) 3-bit neuron (0..=7) written.
/// * [`w_index`](Self::w_index) 6-bit input index (0..=63) of the weight written.
/// * [`w_data`](Self::w_data) Signed 16-bit Q8 weight.
/// * [`in_valid`](Self::in_valid) A beat is presented this cycle; the other inputs are ignored
///   while low.
/// * [`in_last`](Self::in_last) The beat ends its vector: the outputs are computed, and the beat
///   count and accumulators restart for the next vector.
/// * [`in_keep`](Self::in_keep) Lane k holds an element when bit k is set (unset lanes add zero).
/// * [`in_x`](Self::in_x) 32 signed 16-bit elements, lane k in bits 16k+15:16k; the element's index
///   in the vector is 32 x (the beat's place in the vector) + k.
///
/// ### Outputs
///
/// * [`out_valid`](Self::out_valid) High for one cycle per vector, three cycles after its last beat.
/// * [`out_y`](Self::out_y) Neuron `j`'s output as int16 bits; valid while `out_valid` is high and
///   held until the next vector finishes.
///
/// ### Hazards
///
/// * The beat count is one bit cleared only by `in_last`: a vector of more than two beats wraps to
///   the first weights, and a vector without `in_last` runs into the next one.
/// * As for [`Dense`](super::Dense), vectors streamed while the weights load see a mix of old and
///   new weights: load first, then stream.
#[derive(LogicBlock, Default)]
pub struct Dense32 {
    /// The clock; everything is registered on its rising edge.
    pub clock: Signal<In, Clock>,
    /// Weight write enable.
    pub w_we: Signal<In, Bit>,
    /// Neuron (0..=7) whose weight `w_we` writes.
    pub w_neuron: Signal<In, Bits<3>>,
    /// Input index (0..=63) of the weight `w_we` writes.
    pub w_index: Signal<In, Bits<6>>,
    /// Signed 16-bit Q8 weight written when `w_we` is high.
    pub w_data: Signal<In, Signed<16>>,
    /// A beat is presented this cycle.
    pub in_valid: Signal<In, Bit>,
    /// The beat ends its vector.
    pub in_last: Signal<In, Bit>,
    /// The lanes that hold an element, lane k at bit k.
    pub in_keep: Signal<In, Bits<32>>,
    /// 32 signed 16-bit elements, lane k in bits 16k+15:16k.
    pub in_x: Signal<In, Bits<512>>,
    /// High for one cycle per vector: cycle `t + 3` when its last beat was presented in cycle `t`.
    pub out_valid: Signal<Out, Bit>,
    /// Each neuron's output as int16 bits (0..=32767 after ReLU); valid while `out_valid`, then held.
    pub out_y: [Signal<Out, Bits<16>>; 8],
    neurons: [Neuron32; 8],
    beat: DFF<Bits<1>>,
    s1_valid: DFF<Bit>,
    s1_last: DFF<Bit>,
    s1_keep: DFF<Bits<32>>,
    s1_x: DFF<Bits<512>>,
    s2_done: DFF<Bit>,
    out_v: DFF<Bit>,
}

impl Logic for Dense32 {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, beat, s1_valid, s1_last, s1_keep, s1_x, s2_done, out_v);
        if self.in_valid.val() {
            if self.in_last.val() {
                self.beat.d.next = 0.into();
            } else {
                self.beat.d.next = self.beat.q.val() + 1;
            }
        }
        self.s1_valid.d.next = self.in_valid.val();
        self.s1_last.d.next = self.in_last.val();
        self.s1_keep.d.next = self.in_keep.val();
        self.s1_x.d.next = self.in_x.val();
        self.s2_done.d.next = self.s1_valid.q.val() & self.s1_last.q.val();
        self.out_v.d.next = self.s2_done.q.val();
        for j in 0..8 {
            self.neurons[j].clock.next = self.clock.val();
            self.neurons[j].w_we.next = self.w_we.val() & (self.w_neuron.val().index() == j);
            self.neurons[j].w_index.next = self.w_index.val();
            self.neurons[j].w_data.next = self.w_data.val();
            self.neurons[j].rd_beat.next = self.beat.q.val();
            self.neurons[j].x.next = self.s1_x.q.val();
            self.neurons[j].keep.next = self.s1_keep.q.val();
            self.neurons[j].valid.next = self.s1_valid.q.val();
            self.neurons[j].last.next = self.s1_last.q.val();
            self.out_y[j].next = self.neurons[j].y.val();
        }
        self.out_valid.next = self.out_v.q.val();
    }
}

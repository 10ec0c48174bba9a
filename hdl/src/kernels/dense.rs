//! A streaming dense int16 layer: one input element per cycle feeds eight multiply-accumulate units,
//! each with its neuron's weights in its own block RAM (loaded through the `w_*` port).
//!
//! Stage 0 reads every neuron's weight for the element's index; stage 1 multiplies (16x16 -> 32,
//! one DSP each) and accumulates in 48 bits. On the vector's last element the eight sums pass ReLU,
//! `>> 8` and int16 saturation into the output registers, valid for one cycle, while the
//! accumulators restart: vectors stream back to back.

use rust_hdl::prelude::*;

/// A dense int16 layer streamed one input element per cycle: eight neurons, each a 16x16 multiply and
/// a 48-bit accumulator over up to 64 inputs, then ReLU, `>> 8` and int16 saturation
/// (`spork_golden::dense::Layer::forward`).
///
/// Latency: two cycles. When a vector's last element is presented in cycle `t` (inputs are sampled on
/// the rising edge that ends the cycle), its eight outputs are on `out_y` in cycle `t + 2`.
/// Throughput: one element per cycle, vectors back to back with no gap. There is no back-pressure:
/// `out_valid` pulses for one cycle per vector and the outputs must be taken then. `in_valid` may drop
/// between elements (the element index and the accumulators hold).
///
/// ### Inputs
///
/// * [`clock`](Self::clock) Every register and the eight weight RAMs run on its rising edge.
/// * [`w_we`](Self::w_we) Writes [`w_data`](Self::w_data) as weight [`w_index`](Self::w_index) of
///   neuron [`w_neuron`](Self::w_neuron) on the rising edge.
/// * [`w_neuron`](Self::w_neuron) 3-bit neuron (0..=7) whose weight RAM is written.
/// * [`w_index`](Self::w_index) 6-bit input index (0..=63) of the weight written.
/// * [`w_data`](Self::w_data) Signed 16-bit Q8 weight.
/// * [`in_valid`](Self::in_valid) An input element is presented this cycle; `in_last` and `in_x` are
///   ignored while low.
/// * [`in_last`](Self::in_last) Marks a vector's last element: the outputs are computed, and the
///   element index and accumulators restart for the next vector.
/// * [`in_x`](Self::in_x) Signed 16-bit input element; the element's index is its position in the
///   vector, counted by this widget.
///
/// ### Outputs
///
/// * [`out_valid`](Self::out_valid) High for one cycle per vector, two cycles after its last element.
/// * [`out_y`](Self::out_y) Neuron `j`'s output as int16 bits, 0..=32767 after ReLU; valid while
///   `out_valid` is high and held until the next vector finishes.
///
/// ### Hazards
///
/// * The element index is a 6-bit counter cleared only by `in_last`: a vector longer than 64 elements
///   wraps to index 0 and reuses the first weights, and a vector that never sends `in_last` leaves its
///   index and partial sums to the next vector.
/// * A weight RAM reads the old weight when an element reads the weight being written on the same
///   edge, so vectors streamed while the weights load (512 cycles, one weight per cycle) see a mix of
///   old and new weights: load first, then stream.
#[derive(LogicBlock, Default)]
pub struct Dense {
    /// The clock; everything is registered on its rising edge.
    pub clock: Signal<In, Clock>,
    /// Weight write enable: writes `w_data` as weight `w_index` of neuron `w_neuron` on the rising edge.
    pub w_we: Signal<In, Bit>,
    /// Neuron (0..=7) whose weight RAM `w_we` writes.
    pub w_neuron: Signal<In, Bits<3>>,
    /// Input index (0..=63) of the weight `w_we` writes.
    pub w_index: Signal<In, Bits<6>>,
    /// Signed 16-bit Q8 weight written when `w_we` is high.
    pub w_data: Signal<In, Signed<16>>,
    /// An input element is presented this cycle; `in_last` and `in_x` are ignored while low.
    pub in_valid: Signal<In, Bit>,
    /// Marks a vector's last element: outputs are computed, index and accumulators restart.
    pub in_last: Signal<In, Bit>,
    /// Signed 16-bit input element; its index is its position in the vector, counted here.
    pub in_x: Signal<In, Signed<16>>,
    /// High for one cycle per vector: cycle `t + 2` when its last element was presented in cycle `t`.
    pub out_valid: Signal<Out, Bit>,
    /// Each neuron's output as int16 bits (0..=32767 after ReLU); valid while `out_valid`, then held.
    pub out_y: [Signal<Out, Bits<16>>; 8],
    weights: [RAM<Signed<16>, 6>; 8],
    index: DFF<Bits<6>>,
    s1_valid: DFF<Bit>,
    s1_last: DFF<Bit>,
    s1_x: DFF<Signed<16>>,
    acc: [DFF<Signed<48>>; 8],
    product: [Signal<Local, Signed<32>>; 8],
    total: [Signal<Local, Signed<48>>; 8],
    total_bits: [Signal<Local, Bits<48>>; 8],
    scaled: [Signal<Local, Bits<40>>; 8],
    y: [DFF<Bits<16>>; 8],
    out_v: DFF<Bit>,
}

impl Logic for Dense {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, index, s1_valid, s1_last, s1_x, out_v);
        // Stage 0: every neuron reads its weight for this element.
        if self.in_valid.val() {
            if self.in_last.val() {
                self.index.d.next = 0.into();
            } else {
                self.index.d.next = self.index.q.val() + 1;
            }
        }
        self.s1_valid.d.next = self.in_valid.val();
        self.s1_last.d.next = self.in_last.val();
        self.s1_x.d.next = self.in_x.val();
        self.out_v.d.next = self.s1_valid.q.val() & self.s1_last.q.val();
        for j in 0..8 {
            self.weights[j].read_clock.next = self.clock.val();
            self.weights[j].write_clock.next = self.clock.val();
            self.weights[j].read_address.next = self.index.q.val();
            self.weights[j].write_address.next = self.w_index.val();
            self.weights[j].write_data.next = self.w_data.val();
            self.weights[j].write_enable.next = self.w_we.val() & (self.w_neuron.val().index() == j);
            self.acc[j].clock.next = self.clock.val();
            self.acc[j].d.next = self.acc[j].q.val();
            self.y[j].clock.next = self.clock.val();
            self.y[j].d.next = self.y[j].q.val();
            // Stage 1: multiply-accumulate; on the last element, activate into the output register.
            // The product gets its own 32-bit signal: Verilog sizes `a * b` by its context, and
            // inside `$signed(...)` that context is the operands' 16 bits.
            self.product[j].next = self.weights[j].read_data.val() * self.s1_x.q.val();
            self.total[j].next = self.acc[j].q.val() + signed_bit_cast::<48, 32>(self.product[j].val());
            self.total_bits[j].next = unsigned_cast(self.total[j].val());
            self.scaled[j].next = self.total_bits[j].val().get_bits::<40>(8);
            if self.s1_valid.q.val() {
                if self.s1_last.q.val() {
                    self.acc[j].d.next = 0.into();
                    if self.total[j].val().get_bit(47) {
                        self.y[j].d.next = 0.into();
                    } else if self.scaled[j].val() > 0x7FFF {
                        self.y[j].d.next = 0x7FFF.into();
                    } else {
                        self.y[j].d.next = self.scaled[j].val().get_bits::<16>(0);
                    }
                } else {
                    self.acc[j].d.next = self.total[j].val();
                }
            }
            self.out_y[j].next = self.y[j].q.val();
        }
        self.out_valid.next = self.out_v.q.val();
    }
}

//! A streaming dense int16 layer: one input element per cycle feeds eight multiply-accumulate units,
//! each with its neuron's weights in its own block RAM (loaded through the `w_*` port).
//!
//! Stage 0 reads every neuron's weight for the element's index; stage 1 multiplies (16x16 -> 32,
//! one DSP each) and accumulates in 48 bits. On the vector's last element the eight sums pass ReLU,
//! `>> 8` and int16 saturation into the output registers, valid for one cycle, while the
//! accumulators restart: vectors stream back to back.

use rust_hdl::prelude::*;

#[derive(LogicBlock, Default)]
pub struct Dense {
    pub clock: Signal<In, Clock>,
    pub w_we: Signal<In, Bit>,
    pub w_neuron: Signal<In, Bits<3>>,
    pub w_index: Signal<In, Bits<6>>,
    pub w_data: Signal<In, Signed<16>>,
    pub in_valid: Signal<In, Bit>,
    /// Marks a vector's last element.
    pub in_last: Signal<In, Bit>,
    pub in_x: Signal<In, Signed<16>>,
    pub out_valid: Signal<Out, Bit>,
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

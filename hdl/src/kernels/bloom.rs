//! Streaming Bloom-filter document scoring: one 32-bit term hash per cycle.
//!
//! The 1024-bit profile is held in three copies (one per bit index, so all three are read in the
//! same cycle), loaded a bit per cycle through the `load_*` port before documents stream. Stage 0
//! reads the three bits; stage 1 ANDs them and adds the hit to the document's running score; the
//! score of a document is valid the cycle after its `in_last` term leaves stage 1.

use rust_hdl::prelude::*;

#[derive(LogicBlock, Default)]
pub struct Bloom {
    pub clock: Signal<In, Clock>,
    pub load_we: Signal<In, Bit>,
    pub load_addr: Signal<In, Bits<10>>,
    pub load_bit: Signal<In, Bit>,
    pub in_valid: Signal<In, Bit>,
    /// Marks a document's last term.
    pub in_last: Signal<In, Bit>,
    pub in_hash: Signal<In, Bits<32>>,
    pub out_valid: Signal<Out, Bit>,
    pub out_score: Signal<Out, Bits<16>>,
    banks: [RAM<Bit, 10>; 3],
    s1_valid: DFF<Bit>,
    s1_last: DFF<Bit>,
    score: DFF<Bits<16>>,
    hit: Signal<Local, Bit>,
    total: Signal<Local, Bits<16>>,
    out_v: DFF<Bit>,
    out_s: DFF<Bits<16>>,
}

impl Logic for Bloom {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, s1_valid, s1_last, score, out_v, out_s);
        for i in 0..3 {
            self.banks[i].read_clock.next = self.clock.val();
            self.banks[i].write_clock.next = self.clock.val();
            self.banks[i].read_address.next = self.in_hash.val().get_bits::<10>(10 * i);
            self.banks[i].write_address.next = self.load_addr.val();
            self.banks[i].write_data.next = self.load_bit.val();
            self.banks[i].write_enable.next = self.load_we.val();
        }
        self.s1_valid.d.next = self.in_valid.val();
        self.s1_last.d.next = self.in_last.val();
        self.hit.next =
            self.banks[0].read_data.val() & self.banks[1].read_data.val() & self.banks[2].read_data.val();
        self.total.next = self.score.q.val();
        if self.hit.val() {
            self.total.next = self.score.q.val() + 1;
        }
        self.out_v.d.next = self.s1_valid.q.val() & self.s1_last.q.val();
        if self.s1_valid.q.val() {
            if self.s1_last.q.val() {
                self.score.d.next = 0.into();
                self.out_s.d.next = self.total.val();
            } else {
                self.score.d.next = self.total.val();
            }
        }
        self.out_valid.next = self.out_v.q.val();
        self.out_score.next = self.out_s.q.val();
    }
}

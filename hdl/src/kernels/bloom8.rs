//! Streaming Bloom-filter document scoring at eight terms per cycle.
//!
//! Each lane has its own three copies of the 1,024-bit profile (24 one-bit RAMs, distributed RAM on
//! an UltraScale+), so the 24 bit reads of a beat happen in one cycle; all copies load together,
//! a bit per cycle, through the `load_*` port. Stage 0 reads the bits; stage 1 ANDs each lane's
//! three, masks the lanes `in_keep` leaves unused, counts the hits with an adder tree and adds them
//! to the document's running score. A beat holds terms of one document only (every document starts
//! a beat), so a document is scored the cycle after its `in_last` beat leaves stage 1.

use rust_hdl::prelude::*;

/// Terms per beat.
pub const LANES: usize = 8;

/// Bloom-filter document scoring, eight 32-bit term hashes per cycle: each document's score is the
/// count of its terms whose three profile bits are all set (`spork_golden::bloom::Profile::score`).
///
/// Latency: two cycles. When a document's last beat is presented in cycle `t`, its score is on the
/// outputs in cycle `t + 2`. Throughput: one beat (up to eight terms) per cycle, documents back to
/// back with no gap. There is no back-pressure: `out_valid` pulses for one cycle per document.
///
/// ### Inputs
///
/// * [`clock`](Self::clock) Every register and all 24 profile RAMs run on its rising edge.
/// * [`load_we`](Self::load_we) Writes [`load_bit`](Self::load_bit) at [`load_addr`](Self::load_addr)
///   into every profile copy on the rising edge.
/// * [`load_addr`](Self::load_addr) 10-bit profile bit index to write, 0..=1023.
/// * [`load_bit`](Self::load_bit) The value written at `load_addr`.
/// * [`in_valid`](Self::in_valid) A beat is presented this cycle; the other inputs are ignored
///   while low.
/// * [`in_last`](Self::in_last) The beat ends a document: its score is output and the running score
///   restarts at 0.
/// * [`in_keep`](Self::in_keep) Lane k holds a term when bit k is set (a document's last beat may
///   hold fewer than eight); unset lanes never count.
/// * [`in_hashes`](Self::in_hashes) Eight 32-bit term hashes, lane k in bits 32k+31:32k; of each,
///   bits 9:0, 19:10 and 29:20 are its three profile bit indices, bits 31:30 are unused.
///
/// ### Outputs
///
/// * [`out_valid`](Self::out_valid) High for one cycle per document, two cycles after its last beat.
/// * [`out_score`](Self::out_score) 16-bit score (matching terms mod 2^16) of the document just
///   finished; valid while `out_valid` is high and held until the next document finishes.
///
/// ### Hazards
///
/// * As for [`Bloom`](super::Bloom): a beat streamed while the profile loads is scored against a mix
///   of the old and new profiles, and a document without `in_last` runs into the next one.
#[derive(LogicBlock, Default)]
pub struct Bloom8 {
    /// The clock; everything is registered on its rising edge.
    pub clock: Signal<In, Clock>,
    /// Profile write enable: writes `load_bit` at `load_addr` in every copy on the rising edge.
    pub load_we: Signal<In, Bit>,
    /// Profile bit index (0..=1023) written when `load_we` is high.
    pub load_addr: Signal<In, Bits<10>>,
    /// Profile bit value written when `load_we` is high.
    pub load_bit: Signal<In, Bit>,
    /// A beat is presented this cycle.
    pub in_valid: Signal<In, Bit>,
    /// The beat ends a document.
    pub in_last: Signal<In, Bit>,
    /// The lanes that hold a term, lane k at bit k.
    pub in_keep: Signal<In, Bits<8>>,
    /// Eight 32-bit term hashes, lane k in bits 32k+31:32k.
    pub in_hashes: Signal<In, Bits<256>>,
    /// High for one cycle per document: cycle `t + 2` when its last beat was presented in cycle `t`.
    pub out_valid: Signal<Out, Bit>,
    /// The finished document's score (matching terms mod 2^16); valid while `out_valid`, then held.
    pub out_score: Signal<Out, Bits<16>>,
    hash: [Signal<Local, Bits<32>>; 8],
    bank0: [RAM<Bit, 10>; 8],
    bank1: [RAM<Bit, 10>; 8],
    bank2: [RAM<Bit, 10>; 8],
    s1_valid: DFF<Bit>,
    s1_last: DFF<Bit>,
    s1_keep: DFF<Bits<8>>,
    one: [Signal<Local, Bits<4>>; 8],
    pair: [Signal<Local, Bits<4>>; 4],
    quad: [Signal<Local, Bits<4>>; 2],
    hits: Signal<Local, Bits<16>>,
    score: DFF<Bits<16>>,
    total: Signal<Local, Bits<16>>,
    out_v: DFF<Bit>,
    out_s: DFF<Bits<16>>,
}

impl Logic for Bloom8 {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, s1_valid, s1_last, s1_keep, score, out_v, out_s);
        // Stage 0: each lane's three bit reads. (Written out: rust-hdl's generator takes no loop
        // index inside get_bits.)
        self.hash[0].next = self.in_hashes.val().get_bits::<32>(0);
        self.hash[1].next = self.in_hashes.val().get_bits::<32>(32);
        self.hash[2].next = self.in_hashes.val().get_bits::<32>(64);
        self.hash[3].next = self.in_hashes.val().get_bits::<32>(96);
        self.hash[4].next = self.in_hashes.val().get_bits::<32>(128);
        self.hash[5].next = self.in_hashes.val().get_bits::<32>(160);
        self.hash[6].next = self.in_hashes.val().get_bits::<32>(192);
        self.hash[7].next = self.in_hashes.val().get_bits::<32>(224);
        for k in 0..8 {
            self.bank0[k].read_clock.next = self.clock.val();
            self.bank0[k].write_clock.next = self.clock.val();
            self.bank0[k].read_address.next = self.hash[k].val().get_bits::<10>(0);
            self.bank0[k].write_address.next = self.load_addr.val();
            self.bank0[k].write_data.next = self.load_bit.val();
            self.bank0[k].write_enable.next = self.load_we.val();
            self.bank1[k].read_clock.next = self.clock.val();
            self.bank1[k].write_clock.next = self.clock.val();
            self.bank1[k].read_address.next = self.hash[k].val().get_bits::<10>(10);
            self.bank1[k].write_address.next = self.load_addr.val();
            self.bank1[k].write_data.next = self.load_bit.val();
            self.bank1[k].write_enable.next = self.load_we.val();
            self.bank2[k].read_clock.next = self.clock.val();
            self.bank2[k].write_clock.next = self.clock.val();
            self.bank2[k].read_address.next = self.hash[k].val().get_bits::<10>(20);
            self.bank2[k].write_address.next = self.load_addr.val();
            self.bank2[k].write_data.next = self.load_bit.val();
            self.bank2[k].write_enable.next = self.load_we.val();
        }
        self.s1_valid.d.next = self.in_valid.val();
        self.s1_last.d.next = self.in_last.val();
        self.s1_keep.d.next = self.in_keep.val();
        // Stage 1: a lane hits when it is kept and all three of its bits are set; the hits summed
        // by pairs, quads and the whole.
        for k in 0..8 {
            self.one[k].next = 0.into();
            if self.s1_keep.q.val().get_bit(k)
                & self.bank0[k].read_data.val()
                & self.bank1[k].read_data.val()
                & self.bank2[k].read_data.val()
            {
                self.one[k].next = 1.into();
            }
        }
        self.pair[0].next = self.one[0].val() + self.one[1].val();
        self.pair[1].next = self.one[2].val() + self.one[3].val();
        self.pair[2].next = self.one[4].val() + self.one[5].val();
        self.pair[3].next = self.one[6].val() + self.one[7].val();
        self.quad[0].next = self.pair[0].val() + self.pair[1].val();
        self.quad[1].next = self.pair[2].val() + self.pair[3].val();
        self.hits.next = bit_cast::<16, 4>(self.quad[0].val() + self.quad[1].val());
        self.total.next = self.score.q.val() + self.hits.val();
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

//! Streaming Bloom-filter document scoring: one 32-bit term hash per cycle.
//!
//! The 1024-bit profile is held in three copies (one per bit index, so all three are read in the
//! same cycle), loaded a bit per cycle through the `load_*` port before documents stream. Stage 0
//! reads the three bits; stage 1 ANDs them and adds the hit to the document's running score; the
//! score of a document is valid the cycle after its `in_last` term leaves stage 1.

use rust_hdl::prelude::*;

/// Bloom-filter document scoring, one 32-bit term hash per cycle: each document's score is the count
/// of its terms whose three profile bits are all set (`spork_golden::bloom::Profile::score`).
///
/// Latency: two cycles. When a document's last term is presented in cycle `t` (inputs are sampled on
/// the rising edge that ends the cycle), its score is on the outputs in cycle `t + 2`. Throughput: one
/// term per cycle, documents back to back with no gap. There is no back-pressure: `out_valid` pulses
/// for one cycle per document and the score must be taken then. `in_valid` may drop between terms
/// (the running score holds).
///
/// ### Inputs
///
/// * [`clock`](Self::clock) Every register and all three profile RAMs run on its rising edge.
/// * [`load_we`](Self::load_we) Writes [`load_bit`](Self::load_bit) at [`load_addr`](Self::load_addr)
///   into all three profile copies on the rising edge.
/// * [`load_addr`](Self::load_addr) 10-bit profile bit index to write, 0..=1023.
/// * [`load_bit`](Self::load_bit) The value written at `load_addr`.
/// * [`in_valid`](Self::in_valid) A term is presented this cycle; `in_last` and `in_hash` are ignored
///   while low.
/// * [`in_last`](Self::in_last) Marks a document's last term: its score is output and the running
///   score restarts at 0.
/// * [`in_hash`](Self::in_hash) 32-bit term hash; bits 9:0, 19:10 and 29:20 are its three profile bit
///   indices, bits 31:30 are unused.
///
/// ### Outputs
///
/// * [`out_valid`](Self::out_valid) High for one cycle per document, two cycles after its last term.
/// * [`out_score`](Self::out_score) 16-bit score (matching terms mod 2^16) of the document just
///   finished; valid while `out_valid` is high and held until the next document finishes.
///
/// ### Hazards
///
/// * The profile RAMs read the old bit when a term reads the bit being written on the same edge, so a
///   document streamed while the profile loads (1024 cycles, a bit per cycle) is scored against a
///   mix of the old and new profiles: load first, then stream.
/// * There is no reset: a document that never sends `in_last` leaves its partial score to be added to
///   the next document's.
#[derive(LogicBlock, Default)]
pub struct Bloom {
    /// The clock; everything is registered on its rising edge.
    pub clock: Signal<In, Clock>,
    /// Profile write enable: writes `load_bit` at `load_addr` in all three copies on the rising edge.
    pub load_we: Signal<In, Bit>,
    /// Profile bit index (0..=1023) written when `load_we` is high.
    pub load_addr: Signal<In, Bits<10>>,
    /// Profile bit value written when `load_we` is high.
    pub load_bit: Signal<In, Bit>,
    /// A term is presented this cycle; `in_last` and `in_hash` are ignored while low.
    pub in_valid: Signal<In, Bit>,
    /// Marks a document's last term: its score is output and the running score restarts at 0.
    pub in_last: Signal<In, Bit>,
    /// 32-bit term hash: bits 9:0, 19:10 and 29:20 index the profile; bits 31:30 are unused.
    pub in_hash: Signal<In, Bits<32>>,
    /// High for one cycle per document: cycle `t + 2` when its last term was presented in cycle `t`.
    pub out_valid: Signal<Out, Bit>,
    /// The finished document's score (matching terms mod 2^16); valid while `out_valid`, then held.
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

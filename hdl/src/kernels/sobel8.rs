//! Streaming 3x3 Sobel at eight pixels per cycle, rows up to 4,096 pixels: the line buffers are two
//! 512-word x 64-bit block RAMs, a word holding eight pixels of a row.
//!
//! A beat is eight consecutive pixels of one row (lane k, bits 8k+7:8k, the pixel at column 8j + k
//! of beat j); every row starts a new beat, so a row whose width is not a multiple of eight ends in
//! a beat whose upper lanes are unused. Output beats are laid out the same way over the `(w-2) x
//! (h-2)` interior: output beat j of a row holds the magnitudes centred on columns 8j + 1 .. 8j + 8.
//!
//! Pipeline: stage 0 reads both line buffers at the beat's column and writes the beat into the
//! first; stage 1 moves the displaced row into the second buffer and shifts the three rows' beat
//! into a two-beat window (the previous beat and this one); stage 2 computes the eight magnitudes of
//! the previous beat's columns (the window's ten columns reach two into this beat) into the output
//! register. The last output beat of a row needs no next beat, only the columns its row has: after a
//! row's last input beat with three or more pixels the kernel takes one cycle with no input
//! (`in_ready` low) to shift an empty beat in and emit it.

use rust_hdl::prelude::*;

/// Pixels per beat.
pub const LANES: usize = 8;
/// The widest row: 512 beats of the line buffers.
pub const MAX_WIDTH: usize = 4096;

/// Streaming 3x3 Sobel gradient magnitude `min(255, |Gx| + |Gy|)` over 8-bit grayscale, eight pixels
/// per cycle (`spork_golden::sobel::sobel_wide`).
///
/// Latency: an input beat accepted in cycle `t` completes the output beat before it, on the outputs
/// in cycle `t + 3`; a row's final output beat (when its last input beat has three or more pixels)
/// is on the outputs in cycle `t + 4`, and `in_ready` is low in cycle `t + 1`. Throughput: eight
/// pixels per cycle, less the one idle cycle per such row. There is no output back-pressure: each
/// output beat is valid for one cycle.
///
/// ### Inputs
///
/// * [`clock`](Self::clock) Every register and both line-buffer RAMs run on its rising edge.
/// * [`width`](Self::width) 13-bit image width in pixels, 3..=4096; held steady for the whole image.
/// * [`in_valid`](Self::in_valid) A beat is presented this cycle; it moves when `in_ready` is high.
/// * [`in_first`](Self::in_first) Marks an image's first beat: it is placed at row 0, column 0.
/// * [`in_last`](Self::in_last) Marks an image's last beat: the output beat it completes last
///   carries `out_last`.
/// * [`in_pixels`](Self::in_pixels) Eight pixels, lane k in bits 8k+7:8k; lanes past the row's end
///   are ignored.
///
/// ### Outputs
///
/// * [`in_ready`](Self::in_ready) Low for the one cycle after a row's last beat of three or more
///   pixels; a beat presented then does not move.
/// * [`out_valid`](Self::out_valid) An output beat is on `out_mags` this cycle.
/// * [`out_mags`](Self::out_mags) Eight magnitudes, lane k in bits 8k+7:8k.
/// * [`out_count`](Self::out_count) Lanes of `out_mags` in use, 1..=8 (the rest are meaningless).
/// * [`out_last`](Self::out_last) This is the image's last output beat.
///
/// ### Hazards
///
/// * Changing `width` mid-image, or a width outside 3..=4096, misplaces pixels.
/// * Only `in_first` restarts the counters: an image sent without it continues the previous one.
#[derive(LogicBlock, Default)]
pub struct Sobel8 {
    /// The clock; everything is registered on its rising edge.
    pub clock: Signal<In, Clock>,
    /// Image width in pixels, 3..=4096; held steady for the whole image.
    pub width: Signal<In, Bits<13>>,
    /// A beat is presented this cycle.
    pub in_valid: Signal<In, Bit>,
    /// Marks the image's first beat: restarts the row and column counters.
    pub in_first: Signal<In, Bit>,
    /// Marks the image's last beat.
    pub in_last: Signal<In, Bit>,
    /// Eight pixels of one row, lane k in bits 8k+7:8k.
    pub in_pixels: Signal<In, Bits<64>>,
    /// The kernel takes a beat this cycle (low for one cycle after some rows' last beat).
    pub in_ready: Signal<Out, Bit>,
    /// An output beat is on `out_mags`.
    pub out_valid: Signal<Out, Bit>,
    /// Eight magnitudes, lane k in bits 8k+7:8k.
    pub out_mags: Signal<Out, Bits<64>>,
    /// Lanes of `out_mags` in use, 1..=8.
    pub out_count: Signal<Out, Bits<4>>,
    /// The image's last output beat.
    pub out_last: Signal<Out, Bit>,
    line1: RAM<Bits<64>, 9>,
    line2: RAM<Bits<64>, 9>,
    beat: DFF<Bits<10>>,
    row: DFF<Bits<16>>,
    cur_beat: Signal<Local, Bits<10>>,
    cur_row: Signal<Local, Bits<16>>,
    rem: Signal<Local, Bits<14>>,
    row_end: Signal<Local, Bit>,
    flush_next: Signal<Local, Bit>,
    accept: Signal<Local, Bit>,
    s1_valid: DFF<Bit>,
    s1_pixels: DFF<Bits<64>>,
    s1_beat: DFF<Bits<10>>,
    s1_row: DFF<Bits<16>>,
    s1_rem: DFF<Bits<14>>,
    s1_flush: DFF<Bit>,
    s1_tail: DFF<Bit>,
    s1_flush_tail: DFF<Bit>,
    flush: DFF<Bit>,
    flush_row: DFF<Bits<16>>,
    flush_rem: DFF<Bits<14>>,
    flush_tail: DFF<Bit>,
    flush_lanes: Signal<Local, Bits<4>>,
    prev_t: DFF<Bits<64>>,
    prev_m: DFF<Bits<64>>,
    prev_b: DFF<Bits<64>>,
    cur_t: DFF<Bits<64>>,
    cur_m: DFF<Bits<64>>,
    cur_b: DFF<Bits<64>>,
    s2_valid: DFF<Bit>,
    s2_count: DFF<Bits<4>>,
    s2_last: DFF<Bit>,
    col_t: [Signal<Local, Bits<12>>; 10],
    col_m: [Signal<Local, Bits<12>>; 10],
    col_b: [Signal<Local, Bits<12>>; 10],
    col_s: [Signal<Local, Bits<12>>; 10],
    gy_pos: [Signal<Local, Bits<12>>; 8],
    gy_neg: [Signal<Local, Bits<12>>; 8],
    abs_x: [Signal<Local, Bits<12>>; 8],
    abs_y: [Signal<Local, Bits<12>>; 8],
    sum: [Signal<Local, Bits<12>>; 8],
    mag: [Signal<Local, Bits<8>>; 8],
    out_v: DFF<Bit>,
    out_m: DFF<Bits<64>>,
    out_c: DFF<Bits<4>>,
    out_l: DFF<Bit>,
}

impl Logic for Sobel8 {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            beat,
            row,
            s1_valid,
            s1_pixels,
            s1_beat,
            s1_row,
            s1_rem,
            s1_flush,
            s1_tail,
            s1_flush_tail,
            flush,
            flush_row,
            flush_rem,
            flush_tail,
            prev_t,
            prev_m,
            prev_b,
            cur_t,
            cur_m,
            cur_b,
            s2_valid,
            s2_count,
            s2_last,
            out_v,
            out_m,
            out_c,
            out_l
        );
        self.line1.read_clock.next = self.clock.val();
        self.line1.write_clock.next = self.clock.val();
        self.line2.read_clock.next = self.clock.val();
        self.line2.write_clock.next = self.clock.val();
        // Stage 0: where this beat sits, both line buffers read at its column, and whether it ends
        // its row (at most eight pixels left) with an output beat of its own still to come.
        self.in_ready.next = !self.s1_flush.q.val();
        self.accept.next = self.in_valid.val() & !self.s1_flush.q.val();
        self.cur_beat.next = self.beat.q.val();
        self.cur_row.next = self.row.q.val();
        if self.in_first.val() {
            self.cur_beat.next = 0.into();
            self.cur_row.next = 0.into();
        }
        self.rem.next = bit_cast::<14, 13>(self.width.val()) - (bit_cast::<14, 10>(self.cur_beat.val()) << 3);
        self.row_end.next = self.rem.val() <= 8;
        self.flush_next.next = self.row_end.val() & (self.rem.val() >= 3);
        self.line1.read_address.next = self.cur_beat.val().get_bits::<9>(0);
        self.line2.read_address.next = self.cur_beat.val().get_bits::<9>(0);
        self.line1.write_address.next = self.cur_beat.val().get_bits::<9>(0);
        self.line1.write_data.next = self.in_pixels.val();
        self.line1.write_enable.next = self.accept.val();
        if self.accept.val() {
            if self.row_end.val() {
                self.beat.d.next = 0.into();
                if self.cur_row.val() != 0xFFFF {
                    self.row.d.next = self.cur_row.val() + 1;
                }
            } else {
                self.beat.d.next = self.cur_beat.val() + 1;
                self.row.d.next = self.cur_row.val();
            }
        }
        self.s1_valid.d.next = self.accept.val();
        self.s1_pixels.d.next = self.in_pixels.val();
        self.s1_beat.d.next = self.cur_beat.val();
        self.s1_row.d.next = self.cur_row.val();
        self.s1_rem.d.next = self.rem.val();
        self.s1_flush.d.next = self.accept.val() & self.flush_next.val();
        self.s1_tail.d.next = self.in_last.val() & !self.flush_next.val();
        self.s1_flush_tail.d.next = self.in_last.val() & self.flush_next.val();
        // Stage 1: the row leaving the first buffer enters the second; the window shifts by a beat
        // (an empty one when flushing a row's last output beat).
        self.line2.write_address.next = self.s1_beat.q.val().get_bits::<9>(0);
        self.line2.write_data.next = self.line1.read_data.val();
        self.line2.write_enable.next = self.s1_valid.q.val();
        self.flush.d.next = self.s1_flush.q.val();
        self.flush_row.d.next = self.s1_row.q.val();
        self.flush_rem.d.next = self.s1_rem.q.val();
        self.flush_tail.d.next = self.s1_flush_tail.q.val();
        if self.s1_valid.q.val() | self.flush.q.val() {
            self.prev_t.d.next = self.cur_t.q.val();
            self.prev_m.d.next = self.cur_m.q.val();
            self.prev_b.d.next = self.cur_b.q.val();
            self.cur_t.d.next = 0.into();
            self.cur_m.d.next = 0.into();
            self.cur_b.d.next = 0.into();
        }
        if self.s1_valid.q.val() {
            self.cur_t.d.next = self.line2.read_data.val();
            self.cur_m.d.next = self.line1.read_data.val();
            self.cur_b.d.next = self.s1_pixels.q.val();
        }
        // An arriving beat j >= 1 completes output beat j - 1 (seven lanes when beat j holds one
        // pixel, else eight); a flush completes the row's last, of `rem - 2` lanes.
        self.s2_valid.d.next = false;
        self.s2_count.d.next = 8.into();
        self.s2_last.d.next = false;
        if self.s1_valid.q.val() & (self.s1_beat.q.val() != 0) & (self.s1_row.q.val() >= 2) {
            self.s2_valid.d.next = true;
            self.s2_last.d.next = self.s1_tail.q.val();
            if self.s1_rem.q.val() == 1 {
                self.s2_count.d.next = 7.into();
            }
        }
        // rem is 3..=8 on a flush: its low four bits suffice.
        self.flush_lanes.next = self.flush_rem.q.val().get_bits::<4>(0) - 2;
        if self.flush.q.val() & (self.flush_row.q.val() >= 2) {
            self.s2_valid.d.next = true;
            self.s2_last.d.next = self.flush_tail.q.val();
            self.s2_count.d.next = self.flush_lanes.val();
        }
        // Stage 2: ten columns (the previous beat's eight, two of this one) of the top and bottom
        // rows and of the weighted column sum top + 2 mid + bottom.
        // (Written out: rust-hdl's generator takes no loop index inside get_bits.)
        self.col_t[0].next = bit_cast::<12, 8>(self.prev_t.q.val().get_bits::<8>(0));
        self.col_m[0].next = bit_cast::<12, 8>(self.prev_m.q.val().get_bits::<8>(0));
        self.col_b[0].next = bit_cast::<12, 8>(self.prev_b.q.val().get_bits::<8>(0));
        self.col_t[1].next = bit_cast::<12, 8>(self.prev_t.q.val().get_bits::<8>(8));
        self.col_m[1].next = bit_cast::<12, 8>(self.prev_m.q.val().get_bits::<8>(8));
        self.col_b[1].next = bit_cast::<12, 8>(self.prev_b.q.val().get_bits::<8>(8));
        self.col_t[2].next = bit_cast::<12, 8>(self.prev_t.q.val().get_bits::<8>(16));
        self.col_m[2].next = bit_cast::<12, 8>(self.prev_m.q.val().get_bits::<8>(16));
        self.col_b[2].next = bit_cast::<12, 8>(self.prev_b.q.val().get_bits::<8>(16));
        self.col_t[3].next = bit_cast::<12, 8>(self.prev_t.q.val().get_bits::<8>(24));
        self.col_m[3].next = bit_cast::<12, 8>(self.prev_m.q.val().get_bits::<8>(24));
        self.col_b[3].next = bit_cast::<12, 8>(self.prev_b.q.val().get_bits::<8>(24));
        self.col_t[4].next = bit_cast::<12, 8>(self.prev_t.q.val().get_bits::<8>(32));
        self.col_m[4].next = bit_cast::<12, 8>(self.prev_m.q.val().get_bits::<8>(32));
        self.col_b[4].next = bit_cast::<12, 8>(self.prev_b.q.val().get_bits::<8>(32));
        self.col_t[5].next = bit_cast::<12, 8>(self.prev_t.q.val().get_bits::<8>(40));
        self.col_m[5].next = bit_cast::<12, 8>(self.prev_m.q.val().get_bits::<8>(40));
        self.col_b[5].next = bit_cast::<12, 8>(self.prev_b.q.val().get_bits::<8>(40));
        self.col_t[6].next = bit_cast::<12, 8>(self.prev_t.q.val().get_bits::<8>(48));
        self.col_m[6].next = bit_cast::<12, 8>(self.prev_m.q.val().get_bits::<8>(48));
        self.col_b[6].next = bit_cast::<12, 8>(self.prev_b.q.val().get_bits::<8>(48));
        self.col_t[7].next = bit_cast::<12, 8>(self.prev_t.q.val().get_bits::<8>(56));
        self.col_m[7].next = bit_cast::<12, 8>(self.prev_m.q.val().get_bits::<8>(56));
        self.col_b[7].next = bit_cast::<12, 8>(self.prev_b.q.val().get_bits::<8>(56));
        self.col_t[8].next = bit_cast::<12, 8>(self.cur_t.q.val().get_bits::<8>(0));
        self.col_m[8].next = bit_cast::<12, 8>(self.cur_m.q.val().get_bits::<8>(0));
        self.col_b[8].next = bit_cast::<12, 8>(self.cur_b.q.val().get_bits::<8>(0));
        self.col_t[9].next = bit_cast::<12, 8>(self.cur_t.q.val().get_bits::<8>(8));
        self.col_m[9].next = bit_cast::<12, 8>(self.cur_m.q.val().get_bits::<8>(8));
        self.col_b[9].next = bit_cast::<12, 8>(self.cur_b.q.val().get_bits::<8>(8));
        for c in 0..10 {
            self.col_s[c].next =
                self.col_t[c].val() + self.col_m[c].val() + self.col_m[c].val() + self.col_b[c].val();
        }
        // Lane k's window is columns k..k+2: |Gx| from the outer column sums, |Gy| from the bottom
        // and top rows, saturated.
        for k in 0..8 {
            self.gy_pos[k].next = self.col_b[k].val()
                + self.col_b[k + 1].val()
                + self.col_b[k + 1].val()
                + self.col_b[k + 2].val();
            self.gy_neg[k].next = self.col_t[k].val()
                + self.col_t[k + 1].val()
                + self.col_t[k + 1].val()
                + self.col_t[k + 2].val();
            if self.col_s[k + 2].val() >= self.col_s[k].val() {
                self.abs_x[k].next = self.col_s[k + 2].val() - self.col_s[k].val();
            } else {
                self.abs_x[k].next = self.col_s[k].val() - self.col_s[k + 2].val();
            }
            if self.gy_pos[k].val() >= self.gy_neg[k].val() {
                self.abs_y[k].next = self.gy_pos[k].val() - self.gy_neg[k].val();
            } else {
                self.abs_y[k].next = self.gy_neg[k].val() - self.gy_pos[k].val();
            }
            self.sum[k].next = self.abs_x[k].val() + self.abs_y[k].val();
            self.mag[k].next = self.sum[k].val().get_bits::<8>(0);
            if self.sum[k].val() > 255 {
                self.mag[k].next = 255.into();
            }
        }
        self.out_v.d.next = self.s2_valid.q.val();
        self.out_c.d.next = self.s2_count.q.val();
        self.out_l.d.next = self.s2_last.q.val();
        self.out_m.d.next = bit_cast::<64, 8>(self.mag[0].val())
            | (bit_cast::<64, 8>(self.mag[1].val()) << 8)
            | (bit_cast::<64, 8>(self.mag[2].val()) << 16)
            | (bit_cast::<64, 8>(self.mag[3].val()) << 24)
            | (bit_cast::<64, 8>(self.mag[4].val()) << 32)
            | (bit_cast::<64, 8>(self.mag[5].val()) << 40)
            | (bit_cast::<64, 8>(self.mag[6].val()) << 48)
            | (bit_cast::<64, 8>(self.mag[7].val()) << 56);
        self.out_valid.next = self.out_v.q.val();
        self.out_mags.next = self.out_m.q.val();
        self.out_count.next = self.out_c.q.val();
        self.out_last.next = self.out_l.q.val();
    }
}

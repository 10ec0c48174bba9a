//! Streaming 3x3 Sobel: one 8-bit pixel per cycle in raster order, two line buffers in block RAM.
//!
//! Pipeline: stage 0 reads both line buffers at the pixel's column and writes the pixel into the
//! first; stage 1 moves the displaced row into the second buffer and shifts the new column into the
//! 3x3 window; stage 2 computes |Gx| + |Gy| saturated to 255 into the output register. An output is
//! valid for every input pixel at row >= 2 and column >= 2 (the window's bottom-right corner), so
//! the valid outputs are `spork_golden::sobel::sobel` in raster order, three cycles after the pixel.

use rust_hdl::prelude::*;

/// Streaming 3x3 Sobel gradient magnitude `min(255, |Gx| + |Gy|)` over 8-bit grayscale, one pixel per
/// cycle in raster order (`spork_golden::sobel::sobel`).
///
/// Latency: three cycles. A pixel presented in cycle `t` (inputs are sampled on the rising edge that
/// ends the cycle) at row >= 2 and column >= 2 completes the window centred one row and one column
/// before it, whose magnitude is on the outputs in cycle `t + 3`; other pixels produce no output, so an
/// image of `w x h` gives `(w-2) x (h-2)` outputs. Throughput: one pixel per cycle, images back to back
/// with no gap. There is no back-pressure: each output is valid for one cycle. `in_valid` may drop
/// between pixels (the counters and the window hold).
///
/// ### Inputs
///
/// * [`clock`](Self::clock) Every register and both line-buffer RAMs run on its rising edge.
/// * [`width`](Self::width) 9-bit image width in pixels, 3..=256; held steady for the whole image.
/// * [`in_valid`](Self::in_valid) A pixel is presented this cycle; `in_first` and `in_pixel` are
///   ignored while low.
/// * [`in_first`](Self::in_first) Marks an image's first pixel: it is placed at row 0, column 0.
/// * [`in_pixel`](Self::in_pixel) 8-bit grayscale pixel.
///
/// ### Outputs
///
/// * [`out_valid`](Self::out_valid) High in cycle `t + 3` for a pixel at row >= 2 and column >= 2
///   presented in cycle `t`.
/// * [`out_mag`](Self::out_mag) 8-bit magnitude of that window; meaningful only while `out_valid` is
///   high (it follows the window every cycle).
///
/// ### Hazards
///
/// * The column counter wraps at `width`: changing `width` mid-image, or a width outside 3..=256 (the
///   line buffers hold 256 pixels and are addressed by the column's low 8 bits), misplaces pixels and
///   corrupts or drops outputs.
/// * Only `in_first` restarts the counters: an image sent without it continues the previous image's
///   rows and columns, so its first outputs mix in the previous image's pixels.
#[derive(LogicBlock, Default)]
pub struct Sobel {
    /// The clock; everything is registered on its rising edge.
    pub clock: Signal<In, Clock>,
    /// Image width in pixels, 3..=256; held steady for the whole image.
    pub width: Signal<In, Bits<9>>,
    /// A pixel is presented this cycle; `in_first` and `in_pixel` are ignored while low.
    pub in_valid: Signal<In, Bit>,
    /// Marks the image's first pixel: restarts the row and column counters.
    pub in_first: Signal<In, Bit>,
    /// 8-bit grayscale pixel, in raster order.
    pub in_pixel: Signal<In, Bits<8>>,
    /// High in cycle `t + 3` when the pixel presented in cycle `t` completes a 3x3 window.
    pub out_valid: Signal<Out, Bit>,
    /// The completed window's magnitude, `min(255, |Gx| + |Gy|)`; meaningful only while `out_valid`.
    pub out_mag: Signal<Out, Bits<8>>,
    line1: RAM<Bits<8>, 8>,
    line2: RAM<Bits<8>, 8>,
    col: DFF<Bits<9>>,
    row: DFF<Bits<16>>,
    cur_col: Signal<Local, Bits<9>>,
    cur_row: Signal<Local, Bits<16>>,
    s1_valid: DFF<Bit>,
    s1_full: DFF<Bit>,
    s1_pixel: DFF<Bits<8>>,
    s1_col: DFF<Bits<8>>,
    win: [DFF<Bits<8>>; 9],
    s2_valid: DFF<Bit>,
    gx_pos: Signal<Local, Bits<12>>,
    gx_neg: Signal<Local, Bits<12>>,
    gy_pos: Signal<Local, Bits<12>>,
    gy_neg: Signal<Local, Bits<12>>,
    abs_x: Signal<Local, Bits<12>>,
    abs_y: Signal<Local, Bits<12>>,
    sum: Signal<Local, Bits<12>>,
    out_v: DFF<Bit>,
    out_m: DFF<Bits<8>>,
}

impl Logic for Sobel {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, col, row, s1_valid, s1_full, s1_pixel, s1_col, s2_valid, out_v, out_m);
        for i in 0..9 {
            self.win[i].clock.next = self.clock.val();
            self.win[i].d.next = self.win[i].q.val();
        }
        self.line1.read_clock.next = self.clock.val();
        self.line1.write_clock.next = self.clock.val();
        self.line2.read_clock.next = self.clock.val();
        self.line2.write_clock.next = self.clock.val();
        // Stage 0: where this pixel sits, and both line buffers read at its column.
        self.cur_col.next = self.col.q.val();
        self.cur_row.next = self.row.q.val();
        if self.in_first.val() {
            self.cur_col.next = 0.into();
            self.cur_row.next = 0.into();
        }
        self.line1.read_address.next = self.cur_col.val().get_bits::<8>(0);
        self.line2.read_address.next = self.cur_col.val().get_bits::<8>(0);
        self.line1.write_address.next = self.cur_col.val().get_bits::<8>(0);
        self.line1.write_data.next = self.in_pixel.val();
        self.line1.write_enable.next = self.in_valid.val();
        if self.in_valid.val() {
            if self.cur_col.val() == self.width.val() - 1 {
                self.col.d.next = 0.into();
                if self.cur_row.val() != 0xFFFF {
                    self.row.d.next = self.cur_row.val() + 1;
                }
            } else {
                self.col.d.next = self.cur_col.val() + 1;
                self.row.d.next = self.cur_row.val();
            }
        }
        self.s1_valid.d.next = self.in_valid.val();
        self.s1_full.d.next = (self.cur_col.val() >= 2) & (self.cur_row.val() >= 2);
        self.s1_pixel.d.next = self.in_pixel.val();
        self.s1_col.d.next = self.cur_col.val().get_bits::<8>(0);
        // Stage 1: the row leaving the first buffer enters the second; the window shifts left.
        self.line2.write_address.next = self.s1_col.q.val();
        self.line2.write_data.next = self.line1.read_data.val();
        self.line2.write_enable.next = self.s1_valid.q.val();
        if self.s1_valid.q.val() {
            for r in 0..3 {
                self.win[3 * r].d.next = self.win[3 * r + 1].q.val();
                self.win[3 * r + 1].d.next = self.win[3 * r + 2].q.val();
            }
            self.win[2].d.next = self.line2.read_data.val();
            self.win[5].d.next = self.line1.read_data.val();
            self.win[8].d.next = self.s1_pixel.q.val();
        }
        self.s2_valid.d.next = self.s1_valid.q.val() & self.s1_full.q.val();
        // Stage 2: |Gx| + |Gy| on unsigned halves, saturated.
        self.gx_pos.next = bit_cast::<12, 8>(self.win[2].q.val())
            + bit_cast::<12, 8>(self.win[5].q.val())
            + bit_cast::<12, 8>(self.win[5].q.val())
            + bit_cast::<12, 8>(self.win[8].q.val());
        self.gx_neg.next = bit_cast::<12, 8>(self.win[0].q.val())
            + bit_cast::<12, 8>(self.win[3].q.val())
            + bit_cast::<12, 8>(self.win[3].q.val())
            + bit_cast::<12, 8>(self.win[6].q.val());
        self.gy_pos.next = bit_cast::<12, 8>(self.win[6].q.val())
            + bit_cast::<12, 8>(self.win[7].q.val())
            + bit_cast::<12, 8>(self.win[7].q.val())
            + bit_cast::<12, 8>(self.win[8].q.val());
        self.gy_neg.next = bit_cast::<12, 8>(self.win[0].q.val())
            + bit_cast::<12, 8>(self.win[1].q.val())
            + bit_cast::<12, 8>(self.win[1].q.val())
            + bit_cast::<12, 8>(self.win[2].q.val());
        if self.gx_pos.val() >= self.gx_neg.val() {
            self.abs_x.next = self.gx_pos.val() - self.gx_neg.val();
        } else {
            self.abs_x.next = self.gx_neg.val() - self.gx_pos.val();
        }
        if self.gy_pos.val() >= self.gy_neg.val() {
            self.abs_y.next = self.gy_pos.val() - self.gy_neg.val();
        } else {
            self.abs_y.next = self.gy_neg.val() - self.gy_pos.val();
        }
        self.sum.next = self.abs_x.val() + self.abs_y.val();
        self.out_v.d.next = self.s2_valid.q.val();
        if self.sum.val() > 255 {
            self.out_m.d.next = 255.into();
        } else {
            self.out_m.d.next = self.sum.val().get_bits::<8>(0);
        }
        self.out_valid.next = self.out_v.q.val();
        self.out_mag.next = self.out_m.q.val();
    }
}

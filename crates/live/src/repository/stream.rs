//! A repository model's tensors as AXI4-Stream beats and back (the "zip" packing of
//! docs/model-repository.md): an element group is element i of every tensor, packed from bit 0 up
//! in model.toml's order, each at its datatype's width; a beat carries `lanes` consecutive groups of
//! one row (lane k at bit k x the group's width). Every row starts a beat, so a row whose length is
//! not a multiple of `lanes` ends in a partial beat, whose TKEEP marks the lanes in use.

use spork_sim::beats::{Beats, get_bits, put_bits};

use super::spec::Last;
use super::tensor::TensorBuf;

/// How `tensors` (which share one shape) lie in beats: the row length, the rows, the beats per row.
fn layout(tensors: &[TensorBuf], lanes: usize) -> (usize, usize, usize) {
    let Some(first) = tensors.first() else { return (1, 0, 0) };
    let n = first.elements() as usize;
    let row = (first.shape.last().copied().unwrap_or(1) as usize).max(1);
    (row, n / row, row.div_ceil(lanes.max(1)))
}

/// TKEEP of a row's beat `j` when the row has `row` groups.
fn keep(row: usize, lanes: usize, j: usize) -> u64 {
    let used = (row - j * lanes).min(lanes);
    if used >= 64 { u64::MAX } else { (1 << used) - 1 }
}

/// Bits of one element group.
fn group_bits(tensors: &[TensorBuf]) -> usize {
    tensors.iter().map(|t| t.dtype.size() * 8).sum()
}

/// The input stream for `inputs` (which share one shape), `lanes` groups and `words` 64-bit words
/// a beat; TLAST by `last`.
pub fn beats(inputs: &[TensorBuf], last: Last, lanes: usize, words: usize) -> Beats {
    let (row, rows, per_row) = layout(inputs, lanes);
    let group = group_bits(inputs);
    let mut out = Beats::new(words);
    for r in 0..rows {
        for j in 0..per_row {
            let tlast = j + 1 == per_row && (last == Last::Row || r + 1 == rows);
            let beat = out.push(keep(row, lanes, j), tlast);
            for k in 0..(row - j * lanes).min(lanes) {
                let i = r * row + j * lanes + k;
                let mut shift = k * group;
                for t in inputs {
                    let bits = t.dtype.size() * 8;
                    put_bits(beat, shift, bits, t.bits(i));
                    shift += bits;
                }
            }
        }
    }
    out
}

/// How many output beats `outputs` (which share one shape) take at `lanes` groups a beat.
pub fn expected(outputs: &[TensorBuf], lanes: usize) -> usize {
    let (_, rows, per_row) = layout(outputs, lanes);
    rows * per_row
}

/// An output beat whose TKEEP does not mark the lanes its row leaves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeepMismatch {
    /// The beat's index in the output stream.
    pub beat: usize,
    /// Its TKEEP.
    pub got: u64,
    /// The lanes its row leaves it.
    pub want: u64,
}

/// Unpacks output beats into `outputs`, checking each beat's TKEEP (a design without an output
/// TKEEP reads as keeping every lane, which passes).
pub fn unpack(beats: &Beats, outputs: &mut [TensorBuf], lanes: usize) -> Result<(), KeepMismatch> {
    let (row, _, per_row) = layout(outputs, lanes);
    let group = group_bits(outputs);
    let lane_mask = if lanes >= 64 { u64::MAX } else { (1 << lanes) - 1 };
    for b in 0..beats.len().min(expected(outputs, lanes)) {
        let (r, j) = (b / per_row, b % per_row);
        let want = keep(row, lanes, j);
        let got = beats.keep[b];
        if got != u64::MAX && got & lane_mask != want {
            return Err(KeepMismatch { beat: b, got, want });
        }
        let words = beats.beat(b);
        for k in 0..(row - j * lanes).min(lanes) {
            let i = r * row + j * lanes + k;
            let mut shift = k * group;
            for t in outputs.iter_mut() {
                let bits = t.dtype.size() * 8;
                t.set_bits(i, get_bits(words, shift, bits));
                shift += bits;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use spork_kernel::ffi::DType;

    #[test]
    fn two_int16_inputs_zip_into_one_beat_and_rows_end_with_tlast() {
        let mut a = TensorBuf::zeroed(DType::Int16, &[2, 2]).unwrap();
        let mut b = TensorBuf::zeroed(DType::Int16, &[2, 2]).unwrap();
        for i in 0..4 {
            a.set_bits(i, i as u64 + 1);
            b.set_bits(i, 0xfff0 + i as u64);
        }
        let s = beats(&[a, b], Last::Row, 1, 1);
        assert_eq!(s.data, [0xfff0_0001, 0xfff1_0002, 0xfff2_0003, 0xfff3_0004]);
        assert_eq!(s.last, [false, true, false, true]);
        let whole = beats(&[TensorBuf::zeroed(DType::Uint8, &[2, 2]).unwrap()], Last::Request, 1, 1);
        assert_eq!(whole.last.iter().filter(|&&l| l).count(), 1);
        let mut out =
            [TensorBuf::zeroed(DType::Uint8, &[2]).unwrap(), TensorBuf::zeroed(DType::Uint16, &[2]).unwrap()];
        let words = Beats::from_words(&[0x00be_ef07, 0x0012_34ff], |i| i == 1);
        unpack(&words, &mut out, 1).unwrap();
        assert_eq!(
            (out[0].bits(0), out[1].bits(0), out[0].bits(1), out[1].bits(1)),
            (7, 0xbeef, 0xff, 0x1234)
        );
    }

    #[test]
    fn lanes_pack_consecutive_groups_and_each_row_starts_a_beat() {
        // 2 rows of 5 UINT8 at 4 lanes: each row is a full beat and a beat with one lane.
        let mut t = TensorBuf::zeroed(DType::Uint8, &[2, 5]).unwrap();
        for i in 0..10 {
            t.set_bits(i, 0x10 + i as u64);
        }
        let s = beats(std::slice::from_ref(&t), Last::Request, 4, 1);
        assert_eq!(s.data, [0x1312_1110, 0x14, 0x1817_1615, 0x19]);
        assert_eq!(s.keep, [0b1111, 0b1, 0b1111, 0b1]);
        assert_eq!(s.last, [false, false, false, true], "TLAST on the request's last beat");
        assert_eq!(expected(std::slice::from_ref(&t), 4), 4);
        let mut back = TensorBuf::zeroed(DType::Uint8, &[2, 5]).unwrap();
        unpack(&s, std::slice::from_mut(&mut back), 4).unwrap();
        assert_eq!(
            (0..10).map(|i| back.bits(i)).collect::<Vec<_>>(),
            (0..10).map(|i| t.bits(i)).collect::<Vec<_>>()
        );
        let mut wrong = s.clone();
        wrong.keep[1] = 0b11;
        let e = unpack(&wrong, std::slice::from_mut(&mut back), 4).unwrap_err();
        assert_eq!(e, KeepMismatch { beat: 1, got: 0b11, want: 0b1 });
    }

    #[test]
    fn a_wide_beat_spans_words_and_groups_straddle_them() {
        // 4 lanes of (UINT32, UINT8): 40-bit groups, a 160-bit beat in three words.
        let mut a = TensorBuf::zeroed(DType::Uint32, &[1, 4]).unwrap();
        let mut b = TensorBuf::zeroed(DType::Uint8, &[1, 4]).unwrap();
        for i in 0..4 {
            a.set_bits(i, 0xdead_0000 + i as u64);
            b.set_bits(i, 0xa0 + i as u64);
        }
        let s = beats(&[a.clone(), b.clone()], Last::Row, 4, 3);
        assert_eq!(s.len(), 1);
        assert_eq!(get_bits(s.beat(0), 40, 32), 0xdead_0001, "lane 1's first tensor straddles word 0 and 1");
        assert_eq!(get_bits(s.beat(0), 152, 8), 0xa3);
        let mut out = [
            TensorBuf::zeroed(DType::Uint32, &[1, 4]).unwrap(),
            TensorBuf::zeroed(DType::Uint8, &[1, 4]).unwrap(),
        ];
        unpack(&s, &mut out, 4).unwrap();
        assert_eq!((out[0].bits(2), out[1].bits(3)), (0xdead_0002, 0xa3));
    }
}

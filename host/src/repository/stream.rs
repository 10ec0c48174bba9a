//! A repository model's tensors as AXI4-Stream beats and back (the "zip" packing of
//! docs/model-repository.md): beat i carries element i of every tensor, packed from bit 0 up in
//! model.toml's order, each at its datatype's width.

use spork_sim::axis::Beat;

use super::spec::Last;
use super::tensor::TensorBuf;

/// The input stream for `inputs` (which share one shape); TLAST by `last`.
pub fn beats(inputs: &[TensorBuf], last: Last) -> Vec<Beat> {
    let Some(first) = inputs.first() else { return Vec::new() };
    let n = first.elements() as usize;
    let row = first.shape.last().copied().unwrap_or(1).max(1) as usize;
    (0..n)
        .map(|i| {
            let mut data = 0u64;
            let mut shift = 0;
            for t in inputs {
                data |= t.bits(i) << shift;
                shift += t.dtype.size() * 8;
            }
            let last = match last {
                Last::Row => (i + 1) % row == 0,
                Last::Request => i + 1 == n,
            };
            Beat { data, last }
        })
        .collect()
}

/// How many output beats `outputs` (which share one shape) take.
pub fn expected(outputs: &[TensorBuf]) -> usize {
    outputs.first().map_or(0, |t| t.elements() as usize)
}

/// Unpacks output beats into `outputs`.
pub fn unpack(beats: &[Beat], outputs: &mut [TensorBuf]) {
    for (i, b) in beats.iter().enumerate() {
        let mut shift = 0;
        for t in outputs.iter_mut() {
            let bits = t.dtype.size() * 8;
            let mask = if bits == 64 { u64::MAX } else { (1 << bits) - 1 };
            t.set_bits(i, (b.data >> shift) & mask);
            shift += bits;
        }
    }
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
        let s = beats(&[a, b], Last::Row);
        assert_eq!(
            s.iter().map(|b| b.data).collect::<Vec<_>>(),
            [0xfff0_0001, 0xfff1_0002, 0xfff2_0003, 0xfff3_0004]
        );
        assert_eq!(s.iter().map(|b| b.last).collect::<Vec<_>>(), [false, true, false, true]);
        let whole = beats(&[TensorBuf::zeroed(DType::Uint8, &[2, 2]).unwrap()], Last::Request);
        assert_eq!(whole.iter().filter(|b| b.last).count(), 1);
        let mut out =
            [TensorBuf::zeroed(DType::Uint8, &[2]).unwrap(), TensorBuf::zeroed(DType::Uint16, &[2]).unwrap()];
        unpack(&[Beat { data: 0x00be_ef07, last: false }, Beat { data: 0x0012_34ff, last: true }], &mut out);
        assert_eq!(
            (out[0].bits(0), out[1].bits(0), out[0].bits(1), out[1].bits(1)),
            (7, 0xbeef, 0xff, 0x1234)
        );
    }
}

//! A stream's beats, flat: TDATA of any width as 64-bit words, TKEEP and TLAST per beat.
//!
//! Flat rather than one value per beat so a 512-bit stream costs eight words a beat and no more,
//! and a 64-bit one one word.

/// Beats of one AXI4-Stream: beat `b`'s TDATA is `data[b * words..(b + 1) * words]` (bit 0 in
/// the first word's bit 0), its TKEEP `keep[b]` (one bit per lane, lane 0 in bit 0), its TLAST
/// `last[b]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Beats {
    /// 64-bit words per beat.
    pub words: usize,
    pub data: Vec<u64>,
    pub keep: Vec<u64>,
    pub last: Vec<bool>,
}

impl Beats {
    /// No beats yet, `words` words each.
    pub fn new(words: usize) -> Beats {
        Beats { words: words.max(1), ..Beats::default() }
    }

    /// `n` zero beats of `words` words, every lane kept, no TLAST.
    pub fn with_len(words: usize, n: usize) -> Beats {
        let words = words.max(1);
        Beats { words, data: vec![0; words * n], keep: vec![u64::MAX; n], last: vec![false; n] }
    }

    /// One-word beats from `words` (TKEEP all, TLAST from `last`).
    pub fn from_words(words: &[u64], last: impl Fn(usize) -> bool) -> Beats {
        Beats {
            words: 1,
            data: words.to_vec(),
            keep: vec![u64::MAX; words.len()],
            last: (0..words.len()).map(last).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.last.len()
    }

    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }

    /// Appends a zero beat with `keep` and `last`; returns its words to fill.
    pub fn push(&mut self, keep: u64, last: bool) -> &mut [u64] {
        let start = self.data.len();
        self.data.resize(start + self.words, 0);
        self.keep.push(keep);
        self.last.push(last);
        &mut self.data[start..]
    }

    /// Beat `b`'s TDATA words.
    pub fn beat(&self, b: usize) -> &[u64] {
        &self.data[b * self.words..(b + 1) * self.words]
    }

    /// Keeps the first `n` beats.
    pub fn truncate(&mut self, n: usize) {
        self.data.truncate(n * self.words);
        self.keep.truncate(n);
        self.last.truncate(n);
    }
}

/// Writes the low `width` bits of `value` at bit `offset` of `words` (it may straddle two words).
pub fn put_bits(words: &mut [u64], offset: usize, width: usize, value: u64) {
    let mask = if width >= 64 { u64::MAX } else { (1 << width) - 1 };
    let (w, b) = (offset / 64, offset % 64);
    let v = value & mask;
    words[w] = (words[w] & !(mask << b)) | (v << b);
    if b + width > 64 {
        let spill = b + width - 64;
        let high = (1u64 << spill) - 1;
        words[w + 1] = (words[w + 1] & !high) | (v >> (64 - b));
    }
}

/// Reads `width` bits at bit `offset` of `words`.
pub fn get_bits(words: &[u64], offset: usize, width: usize) -> u64 {
    let mask = if width >= 64 { u64::MAX } else { (1 << width) - 1 };
    let (w, b) = (offset / 64, offset % 64);
    let mut v = words[w] >> b;
    if b + width > 64 {
        v |= words[w + 1] << (64 - b);
    }
    v & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_straddling_a_word_boundary_round_trip() {
        let mut w = [0u64; 3];
        put_bits(&mut w, 60, 8, 0xab);
        put_bits(&mut w, 120, 16, 0xbeef);
        put_bits(&mut w, 0, 4, 0xf);
        assert_eq!(get_bits(&w, 60, 8), 0xab);
        assert_eq!(get_bits(&w, 120, 16), 0xbeef);
        assert_eq!(w[0] >> 60, 0xb, "the low nibble of 0xab ends word 0");
        assert_eq!(w[1] & 0xf, 0xa, "its high nibble starts word 1");
        put_bits(&mut w, 60, 8, 0x01);
        assert_eq!(get_bits(&w, 60, 8), 0x01, "rewriting clears the old bits");
        put_bits(&mut w, 64, 64, u64::MAX);
        assert_eq!(get_bits(&w, 64, 64), u64::MAX);
        assert_eq!(get_bits(&w, 0, 4), 0xf);
    }

    #[test]
    fn beats_push_and_truncate_keep_their_fields_in_step() {
        let mut b = Beats::new(2);
        b.push(0b1, false)[1] = 7;
        b.push(0b11, true)[0] = 9;
        assert_eq!((b.len(), b.beat(0), b.beat(1)), (2, &[0, 7][..], &[9, 0][..]));
        b.truncate(1);
        assert_eq!((b.data.len(), b.keep.as_slice(), b.last.as_slice()), (2, &[1][..], &[false][..]));
    }
}

//! Bloom-filter document filtering: a term matches the profile when all its `K` bits are set; a
//! document's score is how many of its terms match.
//!
//! The profile has 1024 bits and each 32-bit term hash gives its `K = 3` bit indices directly as
//! its three low 10-bit fields, so the RTL needs no hash unit (the host hashes terms once).

/// Bits in a profile.
pub const PROFILE_BITS: usize = 1024;
/// Bit indices per term.
pub const K: usize = 3;

/// The bit indices of a 32-bit term hash.
pub fn indices(hash: u32) -> [u16; K] {
    std::array::from_fn(|i| ((hash >> (10 * i)) & 0x3ff) as u16)
}

/// A profile: the set of terms a subscriber is interested in, as a 1024-bit Bloom filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    words: [u64; PROFILE_BITS / 64],
}

impl Default for Profile {
    fn default() -> Self {
        Profile { words: [0; PROFILE_BITS / 64] }
    }
}

impl Profile {
    /// The profile holding exactly these term hashes (plus the filter's false positives).
    pub fn from_terms(terms: &[u32]) -> Profile {
        let mut p = Profile::default();
        for &t in terms {
            p.insert(t);
        }
        p
    }

    /// Adds a term: sets its three bits.
    pub fn insert(&mut self, hash: u32) {
        for i in indices(hash) {
            self.set(i as usize, true);
        }
    }

    /// Sets or clears one bit (0..1024), as the RTL's `load_*` port writes it.
    pub fn set(&mut self, bit: usize, value: bool) {
        let (w, b) = (bit / 64, bit % 64);
        self.words[w] = (self.words[w] & !(1 << b)) | (u64::from(value) << b);
    }

    /// One bit (0..1024) of the filter.
    pub fn bit(&self, bit: usize) -> bool {
        self.words[bit / 64] >> (bit % 64) & 1 == 1
    }

    /// Whether the term matches: all three of its bits are set (true for every inserted term, and for
    /// the filter's false positives).
    pub fn contains(&self, hash: u32) -> bool {
        indices(hash).iter().all(|&i| self.bit(i as usize))
    }

    /// The document's score: its matching terms, modulo 2^16 like the RTL's counter.
    pub fn score(&self, document: &[u32]) -> u16 {
        document.iter().fold(0u16, |s, &t| s.wrapping_add(u16::from(self.contains(t))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_terms_always_match() {
        let terms = [0xdead_beef, 0x0123_4567, 42];
        let p = Profile::from_terms(&terms);
        assert_eq!(p.score(&terms), 3);
        assert_eq!(p.score(&[]), 0);
    }

    #[test]
    fn empty_profile_matches_nothing() {
        assert_eq!(Profile::default().score(&[1, 2, 3, u32::MAX]), 0);
    }

    #[test]
    fn a_term_needs_all_its_bits() {
        let mut p = Profile::default();
        p.set(1, true);
        p.set(2, true);
        // hash 1 | 2<<10 | 3<<20 needs bits 1, 2 and 3.
        let h = 1 | (2 << 10) | (3 << 20);
        assert!(!p.contains(h));
        p.set(3, true);
        assert!(p.contains(h));
        // The two top bits of the hash are not used.
        assert!(p.contains(h | 0xc000_0000));
    }
}

//! A sorted vector with room at both ends: the small form of the dispatch indexes.
//!
//! Efficient-first re-keys the worker it picks from just under the deadline's limit to past every
//! full worker. In a plain vector that shifts every full worker's key down one place, on every
//! request (about as many keys as busy boards). With room at the front the same change shifts the
//! few keys below the picked one up instead and appends it: a removal, an insertion and a re-key
//! each move the keys on their shorter side.

/// Keys in `buf[start..end]`, ascending. The slots outside are room, holding stale copies that are
/// never read.
#[derive(Clone, Debug)]
pub struct Window<K> {
    buf: Vec<K>,
    start: usize,
    end: usize,
}

impl<K> Default for Window<K> {
    fn default() -> Self {
        Window { buf: Vec::new(), start: 0, end: 0 }
    }
}

impl<K: Copy> Window<K> {
    /// The window over `sorted` (ascending, no duplicates).
    pub fn from_sorted(sorted: Vec<K>) -> Self {
        let end = sorted.len();
        Window { buf: sorted, start: 0, end }
    }

    /// Its keys as a vector, ascending.
    pub fn into_sorted(mut self) -> Vec<K> {
        self.buf.truncate(self.end);
        self.buf.drain(..self.start);
        self.buf
    }

    /// Its keys, ascending.
    #[inline]
    pub fn keys(&self) -> &[K] {
        &self.buf[self.start..self.end]
    }

    /// How many keys it holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Removes the key at `i`, shifting the keys on its shorter side over it.
    #[inline]
    pub fn remove_at(&mut self, i: usize) {
        let p = self.start + i;
        if 2 * i < self.len() {
            if i > 0 {
                self.buf.copy_within(self.start..p, self.start + 1);
            }
            self.start += 1;
        } else {
            self.buf.copy_within(p + 1..self.end, p);
            self.end -= 1;
        }
    }

    /// Inserts `k` at `i` (the number of keys below it), shifting the keys on its shorter side
    /// away; with no room on that side, the window is centred in a buffer with room first.
    #[inline]
    pub fn insert_at(&mut self, i: usize, k: K) {
        // The common case first: a key that sorts last, with room after the last.
        if i == self.len() && self.end < self.buf.len() {
            self.buf[self.end] = k;
            self.end += 1;
            return;
        }
        let front = 2 * i < self.len();
        if (front && self.start == 0) || (!front && self.end == self.buf.len()) {
            self.recentre(k);
        }
        let p = self.start + i;
        if front {
            self.buf.copy_within(self.start..p, self.start - 1);
            self.start -= 1;
            self.buf[p - 1] = k;
        } else {
            self.buf.copy_within(p..self.end, p + 1);
            self.end += 1;
            self.buf[p] = k;
        }
    }

    /// Replaces the key at `from` with `new`, whose place among the keys as they are (`from`'s
    /// still among them) is `to`: one shift of the keys between, or a removal and an insertion
    /// if their shorter sides move fewer keys (a key moved from near the front to the end).
    #[inline]
    pub fn replace(&mut self, from: usize, to: usize, new: K) {
        let n = self.len();
        // After the removal, `new` goes below `to - 1` keys if it moves up, `to` if down.
        let at = if to > from { to - 1 } else { to };
        let between = from.abs_diff(at);
        let apart = from.min(n - 1 - from) + at.min(n - 1 - at);
        if apart < between {
            self.remove_at(from);
            self.insert_at(at, new);
            return;
        }
        let (from, at) = (self.start + from, self.start + at);
        if at > from {
            self.buf.copy_within(from + 1..=at, from);
        } else {
            self.buf.copy_within(at..from, at + 1);
        }
        self.buf[at] = new;
    }

    /// Moves the keys to the middle of a buffer with room for as many again on each side and a
    /// little more, so that centring again is at least that many insertions away. `fill` fills the
    /// room (any key: the room is never read).
    #[cold]
    fn recentre(&mut self, fill: K) {
        let n = self.len();
        let cap = (4 * n + 16).max(self.buf.len());
        let start = (cap - n) / 2;
        if cap > self.buf.len() {
            let mut buf = vec![fill; cap];
            buf[start..start + n].copy_from_slice(self.keys());
            self.buf = buf;
        } else {
            self.buf.copy_within(self.start..self.end, start);
        }
        (self.start, self.end) = (start, start + n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any mix of insertions, removals and replacements at valid places keeps the window
        /// equal to a plain vector given the same changes, whichever side each change moved.
        #[test]
        fn it_agrees_with_a_vector(ops in proptest::collection::vec((0..3u8, any::<u16>(), any::<u16>(), any::<u32>()), 0..2_000)) {
            let mut ours = Window::default();
            let mut plain: Vec<u32> = Vec::new();
            for (op, a, b, k) in ops {
                let n = plain.len();
                match op {
                    0 => {
                        let i = usize::from(a) % (n + 1);
                        ours.insert_at(i, k);
                        plain.insert(i, k);
                    }
                    1 if n > 0 => {
                        let i = usize::from(a) % n;
                        ours.remove_at(i);
                        plain.remove(i);
                    }
                    2 if n > 0 => {
                        let (from, to) = (usize::from(a) % n, usize::from(b) % (n + 1));
                        ours.replace(from, to, k);
                        plain.remove(from);
                        plain.insert(if to > from { to - 1 } else { to }, k);
                    }
                    _ => {}
                }
                prop_assert_eq!(ours.keys(), &plain[..]);
            }
            prop_assert_eq!(ours.into_sorted(), plain);
        }
    }

    #[test]
    fn moving_a_front_key_to_the_end_moves_the_keys_below_it() {
        let mut w = Window::from_sorted((0..100u32).collect());
        w.replace(2, 100, 1_000);
        assert_eq!(w.keys()[..3], [0, 1, 3]);
        assert_eq!(w.keys().last(), Some(&1_000));
        assert_eq!(w.len(), 100);
    }
}

//! An ordered set for the dispatch indexes: a sorted vector with room at both ends while it is small
//! (most pools the paper runs: a binary search and one short move per change), sorted blocks
//! once it is large (FPGA-static's 800 boards, 10,000 workers: a vector's moves would span every busy
//! worker). Efficient-first queries and re-keys its index on every request, which made a B-tree's
//! node walks and allocations the evaluator's largest cost.

mod blocks;
mod window;

use blocks::Blocks;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use window::Window;

/// Above this many keys the set is sorted blocks...
const GROW: usize = 512;
/// ...and back to a vector below this many (apart from `GROW`, so a set near the line does not flip
/// back and forth).
const SHRINK: usize = 256;

/// An ordered set of `K`.
#[derive(Debug)]
pub enum OrderedSet<K: Ord + Copy> {
    /// Sorted, no duplicates; and where [`Self::last_at_most`] last found its key, so that the
    /// re-key of the worker dispatch just picked starts from its place without searching for it.
    Small(Window<K>, Found),
    /// Past [`GROW`] keys.
    Large(Blocks<K>),
}

/// A position in a small set's vector, only ever a hint: checked against the key before it is used.
/// Atomic (relaxed: a plain load and store on x86) so the set stays `Sync` though a query sets it.
#[derive(Debug, Default)]
pub struct Found(AtomicUsize);

impl Found {
    #[inline]
    fn get(&self) -> usize {
        self.0.load(Relaxed)
    }

    #[inline]
    fn set(&self, i: usize) {
        self.0.store(i, Relaxed);
    }
}

impl<K: Ord + Copy> Clone for OrderedSet<K> {
    fn clone(&self) -> Self {
        match self {
            OrderedSet::Small(w, f) => OrderedSet::Small(w.clone(), Found(AtomicUsize::new(f.get()))),
            OrderedSet::Large(s) => OrderedSet::Large(s.clone()),
        }
    }
}

impl<K: Ord + Copy> Default for OrderedSet<K> {
    fn default() -> Self {
        OrderedSet::Small(Window::default(), Found::default())
    }
}

impl<K: Ord + Copy> OrderedSet<K> {
    /// How many keys it holds.
    pub fn len(&self) -> usize {
        match self {
            OrderedSet::Small(w, _) => w.len(),
            OrderedSet::Large(s) => s.len(),
        }
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `k`; false if it was there.
    pub fn insert(&mut self, k: K) -> bool {
        let added = match self {
            OrderedSet::Small(w, _) => match w.keys().binary_search(&k) {
                Ok(_) => false,
                Err(i) => {
                    w.insert_at(i, k);
                    true
                }
            },
            OrderedSet::Large(s) => s.insert(k),
        };
        self.resize();
        added
    }

    /// Removes `k`; false if it was not there.
    pub fn remove(&mut self, k: &K) -> bool {
        let removed = match self {
            OrderedSet::Small(w, _) => match w.keys().binary_search(k) {
                Ok(i) => {
                    w.remove_at(i);
                    true
                }
                Err(_) => false,
            },
            OrderedSet::Large(s) => s.remove(k),
        };
        self.resize();
        removed
    }

    /// Replaces `old` with `new` (`new` added even if `old` was not there): one move of the keys
    /// between them, or of those outside them where fewer ([`Window::replace`]). `old` is found without a
    /// search when it is the key the last query returned (dispatch re-keys the worker it picked).
    pub fn rekey(&mut self, old: &K, new: K) {
        let OrderedSet::Small(w, found) = self else {
            self.remove(old);
            self.insert(new);
            return;
        };
        let hint = found.get();
        let v = w.keys();
        let (from, to) = if v.get(hint) == Some(old) {
            // Its place is known: search for the new one on its side only, after a look at the end
            // (a worker booked up to a deadline usually drains last: requests of one size).
            let to = if v.last().is_some_and(|last| new > *last) {
                Err(v.len())
            } else if new > *old {
                place_near_end(v, hint + 1, &new)
            } else {
                v[..hint].binary_search(&new)
            };
            (Ok(hint), to)
        } else {
            (v.binary_search(old), v.binary_search(&new))
        };
        let (Ok(from), Err(to)) = (from, to) else {
            self.remove(old);
            self.insert(new);
            return;
        };
        w.replace(from, to, new);
    }

    /// The smallest key.
    pub fn first(&self) -> Option<&K> {
        match self {
            OrderedSet::Small(w, _) => w.keys().first(),
            OrderedSet::Large(s) => s.first(),
        }
    }

    /// The largest key at most `k`.
    #[inline]
    pub fn last_at_most(&self, k: &K) -> Option<&K> {
        match self {
            OrderedSet::Small(w, found) => {
                let v = w.keys();
                let i = last_at_most_near(v, k, found.get())?;
                found.set(i);
                v.get(i)
            }
            OrderedSet::Large(s) => s.last_at_most(k),
        }
    }

    /// Every key, smallest first.
    pub fn iter(&self) -> Iter<'_, K> {
        match self {
            OrderedSet::Small(w, _) => Iter::Small(w.keys().iter()),
            OrderedSet::Large(s) => Iter::Large(s.iter()),
        }
    }

    /// Becomes blocks past [`GROW`] keys, a vector again below [`SHRINK`].
    fn resize(&mut self) {
        match self {
            OrderedSet::Small(w, _) if w.len() > GROW => {
                *self = OrderedSet::Large(Blocks::from_sorted(std::mem::take(w).into_sorted()))
            }
            OrderedSet::Large(s) if s.len() < SHRINK => {
                *self =
                    OrderedSet::Small(Window::from_sorted(std::mem::take(s).into_sorted()), Found::default())
            }
            _ => {}
        }
    }
}

/// Where the largest key of `v` at most `k` is, searched outward from `near` (the last answer: the
/// next request's limit is a little later, so its answer is usually a place or two away) in steps of
/// 1, 2, 4, ... and the last step bisected.
#[inline]
fn last_at_most_near<K: Ord>(v: &[K], k: &K, near: usize) -> Option<usize> {
    let n = v.len();
    let h = near.min(n.checked_sub(1)?);
    let count_at_most = |s: &[K]| s.partition_point(|x| x <= k);
    if v[h] <= *k {
        // The answer is at `h` or above: find a key past `k`.
        let (mut lo, mut step) = (h, 1);
        loop {
            let hi = (lo + step).min(n);
            if hi == n || v[hi] > *k {
                return Some(lo + count_at_most(&v[lo + 1..hi]));
            }
            (lo, step) = (hi, step * 2);
        }
    }
    // The answer is below `h`: find a key at most `k`.
    let (mut hi, mut step) = (h, 1);
    loop {
        if hi < step {
            return count_at_most(&v[..hi]).checked_sub(1);
        }
        let lo = hi - step;
        if v[lo] <= *k {
            return Some(lo + count_at_most(&v[lo + 1..hi]));
        }
        (hi, step) = (lo, step * 2);
    }
}

/// Where `k` belongs in `v[lo..]`, as `binary_search` says it (`Ok` where it is, `Err` where it
/// would go), searched down from the end in steps of 1, 2, 4, ... and the last step bisected: a
/// re-keyed worker, booked to near its deadline, usually lands at or near the end.
#[inline]
fn place_near_end<K: Ord>(v: &[K], lo: usize, k: &K) -> Result<usize, usize> {
    let n = v.len();
    // Every key from `hi` on is at least `k`.
    let (mut hi, mut step) = (n, 1);
    loop {
        let probe = hi.saturating_sub(step).max(lo);
        if probe == lo || v[probe] < *k {
            let at = probe + v[probe..hi].partition_point(|x| x < k);
            return if v.get(at) == Some(k) { Ok(at) } else { Err(at) };
        }
        (hi, step) = (probe, step * 2);
    }
}

impl<K: Ord + Copy> Extend<K> for OrderedSet<K> {
    fn extend<I: IntoIterator<Item = K>>(&mut self, keys: I) {
        for k in keys {
            self.insert(k);
        }
    }
}

/// The keys of an [`OrderedSet`], smallest first.
pub enum Iter<'a, K> {
    /// A vector's.
    Small(std::slice::Iter<'a, K>),
    /// The blocks'.
    Large(std::iter::Flatten<std::slice::Iter<'a, Vec<K>>>),
}

impl<'a, K> Iterator for Iter<'a, K> {
    type Item = &'a K;

    fn next(&mut self) -> Option<&'a K> {
        match self {
            Iter::Small(i) => i.next(),
            Iter::Large(i) => i.next(),
        }
    }
}

impl<K> DoubleEndedIterator for Iter<'_, K> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small(i) => i.next_back(),
            Iter::Large(i) => i.next_back(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u16),
        Remove(u16),
        Rekey(u16, u16),
        /// A dispatch query, which leaves its place as the next re-key's hint.
        Probe(u16),
        /// Dispatch: a query, then the key it found re-keyed (the hint's path).
        Pick(u16, u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        // A small key space, so removes and re-keys often find their key; long runs cross GROW.
        prop_oneof![
            3 => (0..2_000u16).prop_map(Op::Insert),
            1 => (0..2_000u16).prop_map(Op::Remove),
            2 => (0..2_000u16, 0..2_000u16).prop_map(|(a, b)| Op::Rekey(a, b)),
            1 => (0..2_100u16).prop_map(Op::Probe),
            2 => (0..2_100u16, 0..2_000u16).prop_map(|(k, b)| Op::Pick(k, b)),
        ]
    }

    proptest! {
        /// Whatever the operations, it holds what a B-tree holds, in its order, and answers the
        /// dispatch query as the B-tree's range does, on both sides of the size where it changes form.
        #[test]
        fn it_agrees_with_a_btree(ops in proptest::collection::vec(op(), 0..3_000), probes in proptest::collection::vec(0..2_100u16, 8)) {
            let mut ours = OrderedSet::default();
            let mut tree = BTreeSet::new();
            for o in ops {
                match o {
                    Op::Insert(k) => prop_assert_eq!(ours.insert(k), tree.insert(k)),
                    Op::Remove(k) => prop_assert_eq!(ours.remove(&k), tree.remove(&k)),
                    Op::Rekey(a, b) => {
                        ours.rekey(&a, b);
                        tree.remove(&a);
                        tree.insert(b);
                    }
                    Op::Probe(k) => prop_assert_eq!(ours.last_at_most(&k), tree.range(..=k).next_back()),
                    Op::Pick(k, b) => {
                        let found = ours.last_at_most(&k).copied();
                        prop_assert_eq!(found.as_ref(), tree.range(..=k).next_back());
                        if let Some(a) = found {
                            ours.rekey(&a, b);
                            tree.remove(&a);
                            tree.insert(b);
                        }
                    }
                }
                prop_assert_eq!(ours.len(), tree.len());
            }
            prop_assert!(ours.iter().copied().eq(tree.iter().copied()));
            prop_assert!(ours.iter().rev().copied().eq(tree.iter().rev().copied()));
            prop_assert_eq!(ours.first(), tree.first());
            for p in probes {
                prop_assert_eq!(ours.last_at_most(&p), tree.range(..=p).next_back());
            }
        }
    }

    #[test]
    fn it_changes_form_past_its_bounds_and_back() {
        let mut s = OrderedSet::default();
        s.extend(0..=GROW as u32);
        assert!(matches!(s, OrderedSet::Large(_)), "past {GROW} keys it is blocks");
        for k in 0..(GROW - SHRINK + 2) as u32 {
            s.remove(&k);
        }
        assert!(matches!(s, OrderedSet::Small(..)), "below {SHRINK} keys it is a vector again");
        assert!(s.iter().copied().eq((GROW - SHRINK + 2) as u32..=GROW as u32));
    }
}

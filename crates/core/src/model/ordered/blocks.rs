//! A sorted sequence cut into short sorted blocks: the large form of the dispatch indexes.
//!
//! Efficient-first re-keys the worker it picks from just under the deadline's limit to past every
//! full worker, so in one sorted vector each request moves as many keys as there are busy boards
//! (hundreds under FPGA-static's pool), and a B-tree pays a pointer walk of three or four nodes, and
//! rebalancing, for each of the query, remove and insert. Blocks bound a move to one block's keys
//! and find that block with a binary search over their last keys, all in a few cache lines.

/// Keys per block at most; a block that grows past it splits in two.
const MAX: usize = 128;
/// A block below this many keys merges into a neighbour when the two fit in one.
const MIN: usize = MAX / 4;

/// Sorted blocks of sorted keys, none empty, every key of a block below every key of the next.
#[derive(Clone, Debug)]
pub struct Blocks<K> {
    blocks: Vec<Vec<K>>,
    len: usize,
}

impl<K> Default for Blocks<K> {
    fn default() -> Self {
        Blocks { blocks: Vec::new(), len: 0 }
    }
}

impl<K: Ord + Copy> Blocks<K> {
    /// The blocks of `sorted` (ascending, no duplicates).
    pub fn from_sorted(sorted: Vec<K>) -> Self {
        let len = sorted.len();
        let blocks = sorted.chunks(MAX / 2).map(<[K]>::to_vec).collect();
        Blocks { blocks, len }
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The block `k` belongs in: the first whose last key is at least `k` (the last block if none).
    fn block_of(&self, k: &K) -> usize {
        let i = self.blocks.partition_point(|b| b.last().is_some_and(|l| l < k));
        i.min(self.blocks.len().saturating_sub(1))
    }

    /// Adds `k`; false if it was there.
    pub fn insert(&mut self, k: K) -> bool {
        if self.blocks.is_empty() {
            self.blocks.push(vec![k]);
            self.len = 1;
            return true;
        }
        let b = self.block_of(&k);
        let block = &mut self.blocks[b];
        let Err(i) = block.binary_search(&k) else { return false };
        block.insert(i, k);
        self.len += 1;
        if block.len() > MAX {
            let tail = block.split_off(MAX / 2);
            self.blocks.insert(b + 1, tail);
        }
        true
    }

    /// Removes `k`; false if it was not there.
    pub fn remove(&mut self, k: &K) -> bool {
        if self.blocks.is_empty() {
            return false;
        }
        let b = self.block_of(k);
        let block = &mut self.blocks[b];
        let Ok(i) = block.binary_search(k) else { return false };
        block.remove(i);
        self.len -= 1;
        if block.len() < MIN {
            self.merge(b);
        }
        true
    }

    /// Folds the short block `b` into a neighbour that has room (or drops it if empty).
    fn merge(&mut self, b: usize) {
        if self.blocks[b].is_empty() {
            self.blocks.remove(b);
            return;
        }
        let fits = |o: usize| self.blocks[o].len() + self.blocks[b].len() <= MAX;
        let into = if b > 0 && fits(b - 1) {
            b - 1
        } else if b + 1 < self.blocks.len() && fits(b + 1) {
            b + 1
        } else {
            return;
        };
        let (lo, hi) = (into.min(b), into.max(b));
        let upper = self.blocks.remove(hi);
        self.blocks[lo].extend(upper);
    }

    /// The smallest key.
    pub fn first(&self) -> Option<&K> {
        self.blocks.first().and_then(|b| b.first())
    }

    /// The largest key at most `k`.
    #[inline]
    pub fn last_at_most(&self, k: &K) -> Option<&K> {
        // The first block whose last key exceeds `k`; the answer is in it or ends the one before.
        let b = self.blocks.partition_point(|b| b.last().is_some_and(|l| l <= k));
        if let Some(block) = self.blocks.get(b) {
            let i = block.partition_point(|x| x <= k);
            if i > 0 {
                return block.get(i - 1);
            }
        }
        b.checked_sub(1).and_then(|p| self.blocks[p].last())
    }

    /// Every key, smallest first.
    pub fn iter(&self) -> std::iter::Flatten<std::slice::Iter<'_, Vec<K>>> {
        self.blocks.iter().flatten()
    }

    /// Its keys as one sorted vector.
    pub fn into_sorted(self) -> Vec<K> {
        self.blocks.into_iter().flatten().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// From empty or from a sorted start, through inserts and removes that split blocks and
        /// merge them, it holds what a B-tree holds and answers the dispatch query as its range does;
        /// no block is empty or over `MAX`, and the blocks stay in order.
        #[test]
        fn it_agrees_with_a_btree(
            start in proptest::collection::btree_set(0..4_000u16, 0..600),
            ops in proptest::collection::vec((any::<bool>(), 0..4_000u16), 0..4_000),
            probes in proptest::collection::vec(0..4_100u16, 16),
        ) {
            let mut ours = Blocks::from_sorted(start.iter().copied().collect());
            let mut tree = start;
            for (add, k) in ops {
                if add {
                    prop_assert_eq!(ours.insert(k), tree.insert(k));
                } else {
                    prop_assert_eq!(ours.remove(&k), tree.remove(&k));
                }
                prop_assert_eq!(ours.len(), tree.len());
            }
            prop_assert!(ours.blocks.iter().all(|b| !b.is_empty() && b.len() <= MAX));
            prop_assert!(ours.blocks.windows(2).all(|w| w[0].last() < w[1].first()));
            prop_assert!(ours.iter().copied().eq(tree.iter().copied()));
            prop_assert!(ours.iter().rev().copied().eq(tree.iter().rev().copied()));
            prop_assert_eq!(ours.first(), tree.first());
            for p in probes {
                prop_assert_eq!(ours.last_at_most(&p), tree.range(..=p).next_back());
            }
            prop_assert!(ours.into_sorted().into_iter().eq(tree));
        }
    }
}

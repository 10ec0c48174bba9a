//! The finish times of booked, unfinished requests, and how many of them finish by a given time, in
//! O(log n): the brownout gate asks it once per request about the queue at the request's start.
//!
//! Exact times live in a map (to forget the finished ones); a Fenwick tree over a ring of 1 ms
//! buckets counts them per bucket, so "how many finish by `t`" is a prefix sum over the whole buckets
//! before `t`'s plus a walk of `t`'s own bucket in the map.

use crate::model::Time;
use std::collections::BTreeMap;

/// Width of a bucket, ns.
const BUCKET: Time = 1_000_000;

/// The multiset of pending finish times.
#[derive(Clone, Debug, Default)]
pub(super) struct Finishes {
    exact: BTreeMap<Time, u32>,
    len: usize,
    /// Fenwick tree (1-based) over `ring` slots; slot `b % ring` counts bucket `b`.
    tree: Vec<i64>,
    ring: usize,
}

impl Finishes {
    /// How many are pending.
    pub fn len(&self) -> usize {
        self.len
    }

    /// One more request finishes at `finish`.
    pub fn add(&mut self, finish: Time) {
        let b = finish / BUCKET;
        let floor = self.exact.first_key_value().map_or(b, |(&t, _)| (t / BUCKET).min(b));
        let top = self.exact.last_key_value().map_or(b, |(&t, _)| (t / BUCKET).max(b));
        if (top - floor) as usize >= self.ring {
            self.grow((top - floor) as usize + 1);
        }
        *self.exact.entry(finish).or_default() += 1;
        self.len += 1;
        self.bump(b, 1);
    }

    /// Forgets those finished by `now`.
    pub fn forget_until(&mut self, now: Time) {
        while let Some(entry) = self.exact.first_entry().filter(|e| *e.key() <= now) {
            let (t, n) = entry.remove_entry();
            self.len -= n as usize;
            self.bump(t / BUCKET, -i64::from(n));
        }
    }

    /// How many of those pending finish by `t`.
    pub fn finishing_by(&self, t: Time) -> usize {
        let (Some((&first, _)), Some((&last, _))) =
            (self.exact.first_key_value(), self.exact.last_key_value())
        else {
            return 0;
        };
        if t >= last {
            return self.len;
        }
        let (floor, tb) = (first / BUCKET, t / BUCKET);
        let own: usize = self.exact.range(tb * BUCKET..=t).map(|(_, &n)| n as usize).sum();
        if tb <= floor {
            return own;
        }
        own + self.ring_sum(floor, tb - 1)
    }

    /// Sum of buckets `lo..=hi` (fewer than `ring` of them).
    fn ring_sum(&self, lo: u64, hi: u64) -> usize {
        let (i, j) = (self.slot(lo), self.slot(hi));
        let sum = if i <= j {
            self.prefix(j) - if i == 0 { 0 } else { self.prefix(i - 1) }
        } else {
            self.prefix(self.ring - 1) - self.prefix(i - 1) + self.prefix(j)
        };
        sum as usize
    }

    fn slot(&self, bucket: u64) -> usize {
        (bucket % self.ring as u64) as usize
    }

    fn bump(&mut self, bucket: u64, by: i64) {
        let mut i = self.slot(bucket) + 1;
        while i <= self.ring {
            self.tree[i] += by;
            i += i & i.wrapping_neg();
        }
    }

    /// Sum of slots `0..=slot`.
    fn prefix(&self, slot: usize) -> i64 {
        let (mut i, mut sum) = (slot + 1, 0);
        while i > 0 {
            sum += self.tree[i];
            i -= i & i.wrapping_neg();
        }
        sum
    }

    /// Rebuilds the ring to span at least `span` buckets.
    fn grow(&mut self, span: usize) {
        self.ring = (span * 2).next_power_of_two().max(1024);
        self.tree = vec![0; self.ring + 1];
        let buckets: Vec<(u64, i64)> = self.exact.iter().map(|(&t, &n)| (t / BUCKET, i64::from(n))).collect();
        for (b, n) in buckets {
            self.bump(b, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever is added and forgotten, the counts are those of a plain sorted list.
        #[test]
        fn counts_match_a_sorted_list(
            adds in prop::collection::vec(0u64..5_000_000_000, 1..300),
            probes in prop::collection::vec(0u64..6_000_000_000, 1..20),
            now in 0u64..3_000_000_000,
        ) {
            let mut f = Finishes::default();
            adds.iter().for_each(|&t| f.add(t));
            f.forget_until(now);
            let live: Vec<u64> = adds.iter().copied().filter(|&t| t > now).collect();
            prop_assert_eq!(f.len(), live.len());
            for &p in &probes {
                prop_assert_eq!(f.finishing_by(p), live.iter().filter(|&&t| t <= p).count(), "probe {}", p);
            }
        }
    }

    #[test]
    fn a_late_finish_grows_the_ring_and_keeps_the_counts() {
        let mut f = Finishes::default();
        f.add(5 * BUCKET);
        f.add(3_000_000 * BUCKET); // 50 minutes later: far beyond the first ring
        f.add(5 * BUCKET + 1);
        assert_eq!(f.finishing_by(6 * BUCKET), 2);
        assert_eq!(f.finishing_by(3_000_000 * BUCKET - 1), 2);
        f.forget_until(5 * BUCKET);
        assert_eq!((f.len(), f.finishing_by(6 * BUCKET)), (2, 1));
    }
}

//! The percentile every brownout measurement and report uses: linear interpolation between the closest
//! ranks (numpy's default, "linear"; Hyndman & Fan's definition 7), as the brownout papers' percentiles are. A nearest-rank
//! percentile jumps by whole samples, which on the few responses of a 0.5 s period is a step of tens of
//! milliseconds in the controllers' input.

/// The `q`-quantile (`q` in [0, 1], clamped) of `v`, or `None` if `v` is empty. Sorts `v`.
///
/// With `v` sorted and `n` samples: position `p = q·(n − 1)`, result
/// `v[⌊p⌋] + (p − ⌊p⌋)·(v[⌈p⌉] − v[⌊p⌋])`.
pub fn percentile(v: &mut [f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    Some(v[lo] + (pos - lo as f64) * (v[hi] - v[lo]))
}

/// The 95th percentile, [`percentile`] at 0.95.
pub fn p95(v: &mut [f64]) -> Option<f64> {
    percentile(v, 0.95)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_between_the_closest_ranks_like_numpy() {
        // numpy.percentile([1, 2, 3, 4], 95) = 3.85: position 0.95·3 = 2.85, between 3 and 4.
        assert!((percentile(&mut [4.0, 1.0, 3.0, 2.0], 0.95).unwrap() - 3.85).abs() < 1e-12);
        // numpy.percentile(range(1, 21), 95) = 19.05; (range(1, 101), 99) = 99.01.
        let mut twenty: Vec<f64> = (1..=20).map(f64::from).collect();
        assert!((p95(&mut twenty).unwrap() - 19.05).abs() < 1e-12);
        let mut hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert!((percentile(&mut hundred, 0.99).unwrap() - 99.01).abs() < 1e-12);
    }

    #[test]
    fn edges() {
        assert_eq!(percentile(&mut [], 0.95), None);
        assert_eq!(p95(&mut [7.0]), Some(7.0));
        assert_eq!(percentile(&mut [1.0, 5.0], 0.0), Some(1.0));
        assert_eq!(percentile(&mut [1.0, 5.0], 1.0), Some(5.0));
    }
}

//! The b-model of self-similar traffic (Wang et al., ICDE 2002).
//!
//! A total volume is split in two, the larger share `bias` going left or right at random, and each half
//! is split again, `levels` times, giving 2^levels bins. Bias 0.5 is uniform load; 0.75 is highly
//! variable. Volumes are integers and each split gives the remainder to the other half, so the total is
//! conserved exactly.

use rand::{Rng, RngExt};

/// Splits `total` into `2^levels` bins with bias `bias` in [0.5, 1].
pub fn bmodel<R: Rng>(total: u64, bias: f64, levels: u32, rng: &mut R) -> Vec<u64> {
    debug_assert!((0.5..=1.0).contains(&bias), "bias {bias} outside [0.5, 1]");
    let mut bins = vec![total];
    for _ in 0..levels {
        let mut next = Vec::with_capacity(bins.len() * 2);
        for &x in &bins {
            let heavy = ((x as f64) * bias).round().min(x as f64) as u64;
            let light = x - heavy;
            if rng.random::<bool>() {
                next.extend([heavy, light]);
            } else {
                next.extend([light, heavy]);
            }
        }
        bins = next;
    }
    bins
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{SeedableRng, rngs::Xoshiro256PlusPlus};

    proptest! {
        #[test]
        fn conserves_total_exactly(total in 0u64..u64::MAX / 2, bias in 0.5f64..=0.75, levels in 0u32..12, seed: u64) {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let bins = bmodel(total, bias, levels, &mut rng);
            prop_assert_eq!(bins.len(), 1usize << levels);
            prop_assert_eq!(bins.iter().map(|&b| b as u128).sum::<u128>(), total as u128);
        }
    }

    #[test]
    fn higher_bias_is_burstier() {
        let cv = |bias| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
            let bins = bmodel(1 << 40, bias, 10, &mut rng);
            let mean = bins.iter().sum::<u64>() as f64 / bins.len() as f64;
            let var = bins.iter().map(|&b| (b as f64 - mean).powi(2)).sum::<f64>() / bins.len() as f64;
            var.sqrt() / mean
        };
        assert!(cv(0.5) < 1e-9);
        assert!(cv(0.6) < cv(0.75));
    }
}

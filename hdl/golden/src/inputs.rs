//! Random but realistic inputs for every kernel, from a seed: what the load generator sends with
//! each request, and what co-simulation and benchmarks feed the RTL.

use rand::{Rng, RngExt};

use crate::bloom::Profile;
use crate::dense::{Layer, MAX_INPUTS, NEURONS};
use crate::sobel::MAX_WIDTH;

/// A grayscale image with smooth regions and sharp edges (so magnitudes cover 0..=255, saturated
/// included), `width` x `height`.
pub fn image(rng: &mut impl Rng, width: usize, height: usize) -> Vec<u8> {
    let base: u8 = rng.random();
    let (edge_r, edge_c) = (rng.random_range(0..height), rng.random_range(0..width));
    let noise = rng.random_range(0..64u8);
    (0..width * height)
        .map(|i| {
            let (r, c) = (i / width, i % width);
            let step = if r >= edge_r { 90 } else { 0 } + if c >= edge_c { 60 } else { 0 };
            let jitter = if noise == 0 { 0 } else { rng.random_range(0..noise) };
            base.wrapping_add(step).wrapping_add(jitter)
        })
        .collect()
}

/// A random image shape the RTL accepts: width 3..=`MAX_WIDTH`, height 3..=`max_height`.
pub fn image_shape(rng: &mut impl Rng, max_width: usize, max_height: usize) -> (usize, usize) {
    (rng.random_range(3..=max_width.clamp(3, MAX_WIDTH)), rng.random_range(3..=max_height.max(3)))
}

/// The on-chip state a worker is configured with, drawn from `seed`: the Bloom profile of 100
/// random interests (with the interests, for [`document`]), then the dense layer. The same seed gives
/// the same state everywhere: the runtime's images, and the generated constants of Spork's own
/// model repository (seed 0, what `spork serve` loads).
pub fn state(seed: u64) -> (Profile, Vec<u32>, Layer) {
    use rand::SeedableRng;
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed);
    let (profile, interests) = profile(&mut rng, 100);
    let layer = layer(&mut rng);
    (profile, interests, layer)
}

/// A profile of `terms` random interests, with the interests' term hashes (for [`document`]).
pub fn profile(rng: &mut impl Rng, terms: usize) -> (Profile, Vec<u32>) {
    let interests: Vec<u32> = (0..terms).map(|_| rng.random()).collect();
    (Profile::from_terms(&interests), interests)
}

/// A document of `len` random term hashes, about a third of them drawn from `interests` (when it is not
/// empty).
pub fn document(rng: &mut impl Rng, interests: &[u32], len: usize) -> Vec<u32> {
    (0..len)
        .map(|_| {
            if !interests.is_empty() && rng.random_range(0..3) == 0 {
                interests[rng.random_range(0..interests.len())]
            } else {
                rng.random()
            }
        })
        .collect()
}

/// A layer with weights spread over the whole int16 range or small Q8 values (so both the
/// saturation and the exact-rescale paths are exercised).
pub fn layer(rng: &mut impl Rng) -> Layer {
    let wide = rng.random::<bool>();
    let mut l = Layer::default();
    for row in l.weights.iter_mut().take(NEURONS) {
        for w in row.iter_mut().take(MAX_INPUTS) {
            *w = if wide { rng.random() } else { rng.random_range(-512..=512) };
        }
    }
    l
}

/// An input vector of `len` elements, spread over the whole int16 range or small values
/// (-1024..=1024), chosen per vector (so both the saturation and the exact-rescale paths are exercised).
pub fn vector(rng: &mut impl Rng, len: usize) -> Vec<i16> {
    let wide = rng.random::<bool>();
    (0..len).map(|_| if wide { rng.random() } else { rng.random_range(-1024..=1024) }).collect()
}

//! Spork's own kernels by their golden models (`spork_golden`, hdl/golden): the tests' oracle for
//! the C code and RTL of Spork's own models (`models/sobel`, `bloom`, `dense`), independent of both.
//! Requests are drawn from `spork_golden::inputs` at the sizes the runtime's built-in kernels drew
//! them (realistic images, documents a third of whose terms the profile holds, vectors of 64), and
//! answered by `sobel::sobel`, `Profile::score` and `Layer::forward`.

use rand::Rng;
use spork::repository::tensor::TensorBuf;
use spork_golden::bloom::Profile;
use spork_golden::dense::{Layer, NEURONS};
use spork_golden::{inputs, sobel};
use spork_kernel::ffi::DType;

/// The kernels' on-chip state drawn from a seed ([`inputs::state`]). Spork's own models are built
/// with seed 0's ([`State::models`]): models/bloom/cpu/profile.h, models/dense/cpu/weights.h.
pub struct State {
    /// Bloom: the subscriber profile.
    pub profile: Profile,
    /// Bloom: the terms the profile holds (documents draw some of theirs from them).
    pub interests: Vec<u32>,
    /// Dense: the layer's weights.
    pub layer: Layer,
}

/// One request's input, as the golden models take it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Job {
    /// A grayscale image, `width` pixels wide (sobel).
    Image {
        /// Raster-order pixels.
        pixels: Vec<u8>,
        /// Row length.
        width: usize,
    },
    /// Documents of term hashes (bloom).
    Documents(Vec<Vec<u32>>),
    /// Input vectors (dense).
    Vectors(Vec<Vec<i16>>),
}

/// A golden model's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Sobel magnitudes of the interior pixels, in raster order.
    Magnitudes(Vec<u8>),
    /// One Bloom score per document.
    Scores(Vec<u16>),
    /// One row of dense-layer outputs per vector.
    Activations(Vec<[i16; NEURONS]>),
}

impl State {
    /// The state drawn from `seed`.
    pub fn new(seed: u64) -> State {
        let (profile, interests, layer) = inputs::state(seed);
        State { profile, interests, layer }
    }

    /// The state Spork's own models hold (seed 0).
    pub fn models() -> State {
        State::new(0)
    }

    /// A request of about `items` items for `model` (sobel, bloom or dense): an image about square
    /// (at most 256 wide), documents of 64 terms, vectors of 64.
    pub fn job(&self, model: &str, items: u64, rng: &mut impl Rng) -> Job {
        let items = items.max(1) as usize;
        match model {
            "sobel" => {
                let width = sobel::MAX_WIDTH.min(items.isqrt().max(3));
                let height = (items / width).max(3);
                Job::Image { pixels: inputs::image(rng, width, height), width }
            }
            "bloom" => Job::Documents(
                (0..items.div_ceil(64)).map(|_| inputs::document(rng, &self.interests, 64)).collect(),
            ),
            "dense" => Job::Vectors((0..items.div_ceil(64)).map(|_| inputs::vector(rng, 64)).collect()),
            other => panic!("{other} is not one of Spork's own models"),
        }
    }

    /// The golden model's answer to `job`.
    pub fn answer(&self, job: &Job) -> Answer {
        match job {
            Job::Image { pixels, width } => {
                Answer::Magnitudes(sobel::sobel(pixels, *width).expect("an image the golden Sobel takes"))
            }
            Job::Documents(docs) => Answer::Scores(docs.iter().map(|d| self.profile.score(d)).collect()),
            Job::Vectors(xs) => Answer::Activations(
                xs.iter().map(|x| self.layer.forward(x).expect("a vector the layer takes")).collect(),
            ),
        }
    }

    /// The golden answer to `job` as the model's output tensor (`magnitudes` UINT8 [H-2, W-2],
    /// `scores` UINT16 [D], `activations` INT16 [N, 8]).
    pub fn output(&self, job: &Job) -> TensorBuf {
        let (dtype, shape): (DType, Vec<u64>) = match job {
            Job::Image { pixels, width } => {
                (DType::Uint8, vec![(pixels.len() / width) as u64 - 2, *width as u64 - 2])
            }
            Job::Documents(d) => (DType::Uint16, vec![d.len() as u64]),
            Job::Vectors(x) => (DType::Int16, vec![x.len() as u64, NEURONS as u64]),
        };
        TensorBuf::from_bytes(dtype, &shape, &self.answer(job).bytes()).expect("the answer fills its shape")
    }
}

impl Job {
    /// Streamed items: pixels, terms or vector elements.
    pub fn items(&self) -> u64 {
        match self {
            Job::Image { pixels, .. } => pixels.len() as u64,
            Job::Documents(d) => d.iter().map(|d| d.len() as u64).sum(),
            Job::Vectors(v) => v.iter().map(|v| v.len() as u64).sum(),
        }
    }

    /// The model's input tensor (`image` UINT8 [H, W], `documents` UINT32 [D, T], `vectors` INT16
    /// [N, 64]); documents must be of one length.
    pub fn tensor(&self) -> TensorBuf {
        let (dtype, shape, bytes): (DType, Vec<u64>, Vec<u8>) = match self {
            Job::Image { pixels, width } => {
                (DType::Uint8, vec![(pixels.len() / width) as u64, *width as u64], pixels.clone())
            }
            Job::Documents(d) => (
                DType::Uint32,
                vec![d.len() as u64, d.first().map_or(0, Vec::len) as u64],
                d.iter().flatten().flat_map(|t| t.to_le_bytes()).collect(),
            ),
            Job::Vectors(v) => (
                DType::Int16,
                vec![v.len() as u64, v.first().map_or(0, Vec::len) as u64],
                v.iter().flatten().flat_map(|x| x.to_le_bytes()).collect(),
            ),
        };
        TensorBuf::from_bytes(dtype, &shape, &bytes).expect("rows of one length")
    }
}

impl Answer {
    /// Its values as the output tensor's little-endian bytes.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Answer::Magnitudes(m) => m.clone(),
            Answer::Scores(s) => s.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Answer::Activations(a) => a.iter().flatten().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }
}

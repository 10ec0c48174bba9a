//! Real request data: what a request of a given size carries for each kernel, the kernel's fixed
//! on-chip state (the "bitstream" contents every worker is configured with), and the reference
//! result both worker types are held to.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use spork_golden::bloom::Profile;
use spork_golden::dense::{Layer, NEURONS};
use spork_golden::{Kernel, ShapeError, inputs, sobel};

use crate::repository::kernel::{RepoKernel, TensorPayload};
use crate::repository::tensor::TensorBuf;

/// Inputs of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// A grayscale image, `width` pixels wide.
    Image {
        /// Raster-order pixels.
        pixels: Vec<u8>,
        /// Row length.
        width: usize,
    },
    /// Documents of term hashes, each scored against the profile.
    Documents(Vec<Vec<u32>>),
    /// Input vectors for the dense layer.
    Vectors(Vec<Vec<i16>>),
    /// A repository model's input tensors, checked against its spec.
    Tensors(TensorPayload),
}

impl Payload {
    /// Streamed items (one per RTL cycle).
    pub fn items(&self) -> u64 {
        match self {
            Payload::Image { pixels, .. } => pixels.len() as u64,
            Payload::Documents(d) => d.iter().map(|d| d.len() as u64).sum(),
            Payload::Vectors(v) => v.iter().map(|v| v.len() as u64).sum(),
            Payload::Tensors(t) => t.items,
        }
    }

    /// Bytes its inputs hold: what a board invocation moves to the card.
    pub fn bytes(&self) -> u64 {
        match self {
            Payload::Image { pixels, .. } => pixels.len() as u64,
            Payload::Documents(d) => d.iter().map(|d| 4 * d.len() as u64).sum(),
            Payload::Vectors(v) => v.iter().map(|v| 2 * v.len() as u64).sum(),
            Payload::Tensors(t) => t.inputs.iter().map(|t| t.len() as u64).sum(),
        }
    }

    /// The output kind its kernel gives, and how many values: the interior `(w-2) x (h-2)` pixels of a
    /// `w x h` image (what `sobel::sobel` and the RTL give), one score per document, one row per
    /// vector. An image the kernel cannot take has no answer at all.
    pub fn expected(&self) -> Result<(&'static str, usize), ShapeError> {
        Ok(match self {
            Payload::Image { pixels, width } => {
                let height = sobel::check_shape(pixels.len(), *width)?;
                ("magnitudes", (width - 2) * (height - 2))
            }
            Payload::Documents(docs) => ("scores", docs.len()),
            Payload::Vectors(xs) => ("activations", xs.len()),
            Payload::Tensors(t) => ("tensors", t.outputs.len()),
        })
    }

    /// The most bytes its answer can take in the worker API's encoding (each value at its widest
    /// varint, each tensor's shape and header, 4 KiB for the rest of the message): what a remote
    /// host may send back for it, refused before it is decoded when larger.
    pub fn answer_wire_max(&self) -> u64 {
        const VARINT: u64 = 10;
        let values = |n: usize, per: usize| (n * per) as u64 * VARINT;
        let body = match self {
            Payload::Image { .. } | Payload::Documents(_) => self.expected().map_or(0, |(_, n)| values(n, 1)),
            Payload::Vectors(v) => values(v.len(), NEURONS),
            Payload::Tensors(t) => t
                .outputs
                .iter()
                .map(|(d, shape)| {
                    let elements = shape.iter().try_fold(1u64, |a, &b| a.checked_mul(b)).unwrap_or(u64::MAX);
                    elements.saturating_mul(d.size() as u64).saturating_add(32 + VARINT * shape.len() as u64)
                })
                .fold(0u64, u64::saturating_add),
        };
        body.saturating_add(4096)
    }

    /// Whether `out` can be this payload's answer: its kind and length as [`Payload::expected`] says.
    /// The one rule every worker's answer is held to before a client sees it (a remote host's
    /// answer is not trusted to agree with its job).
    pub fn expects(&self, out: &Output) -> Result<(), OutputMismatch> {
        let (kind, want) = self.expected().map_err(OutputMismatch::Input)?;
        let got = out.len();
        if out.name() != kind {
            return Err(OutputMismatch::Kind { want: kind, got: out.name() });
        }
        if got != want {
            return Err(OutputMismatch::Length { kind, want, got });
        }
        if let (Payload::Tensors(p), Output::Tensors(ts)) = (self, out)
            && let Some((w, t)) = p.outputs.iter().zip(ts).find(|(w, t)| **w != (t.dtype, t.shape.clone()))
        {
            return Err(OutputMismatch::Shape {
                want: format!("{} {:?}", w.0.name(), w.1),
                got: format!("{} {:?}", t.dtype.name(), t.shape),
            });
        }
        Ok(())
    }
}

/// Why an output cannot be a payload's answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OutputMismatch {
    /// The output is of another kernel's kind.
    #[error("an answer of {got} where the job gives {want}")]
    Kind {
        /// What the job's kernel gives.
        want: &'static str,
        /// What came.
        got: &'static str,
    },
    /// The right kind, the wrong number of values.
    #[error("{got} {kind} where the job gives {want}")]
    Length {
        /// The output's kind.
        kind: &'static str,
        /// What the job gives.
        want: usize,
        /// What came.
        got: usize,
    },
    /// A repository model's output tensor of another type or shape than its spec gives.
    #[error("a tensor of {got} where the job gives {want}")]
    Shape {
        /// What the spec gives.
        want: String,
        /// What came.
        got: String,
    },
    /// The payload itself has no answer (a malformed image), so no output fits it.
    #[error("an answer to a job that has none: {0}")]
    Input(ShapeError),
}

/// A request's inputs: its mandatory part, and the optional part brownout may skip (more input for
/// the same kernel: a refinement image, the long tail of documents, further vectors).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Work {
    /// Always run.
    pub mandatory: Payload,
    /// Run only when the brownout gate allows it.
    pub optional: Option<Payload>,
}

/// How to build a request's inputs: their sizes and a seed. A few bytes where the inputs are many
/// kilobytes, so a board's queue can hold specs rather than inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkSpec {
    /// Mandatory items.
    pub items: u64,
    /// Optional items (0: no optional part).
    pub optional_items: u64,
    /// Seed of the input data.
    pub seed: u64,
}

impl WorkSpec {
    /// The spec of the `index`-th request of a run seeded with `run_seed`: each request's data has
    /// its own seed, so any request's inputs can be rebuilt alone, in any order.
    pub fn new(items: u64, optional_items: u64, run_seed: u64, index: u64) -> WorkSpec {
        // SplitMix64's finaliser: neighbouring indices give unrelated seeds.
        let mut z = run_seed ^ index.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        WorkSpec { items, optional_items, seed: z ^ (z >> 31) }
    }
}

/// A job's inputs as a worker receives them.
#[derive(Clone, Debug)]
pub enum Input {
    /// Built before dispatch: CPU workers, whose wall time is the request's latency.
    Built(Arc<Work>),
    /// Built by the worker when it starts the job: boards, whose latency is on their own timeline, so
    /// a simulated board that falls behind queues a few bytes per job rather than its inputs.
    Deferred(WorkSpec),
}

/// What a worker answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The mandatory part's result.
    pub mandatory: Output,
    /// The optional part's result, if it ran.
    pub optional: Option<Output>,
}

/// A kernel's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Sobel magnitudes of the interior pixels.
    Magnitudes(Vec<u8>),
    /// Bloom scores, one per document.
    Scores(Vec<u16>),
    /// Dense-layer outputs, one row per vector.
    Activations(Vec<[i16; NEURONS]>),
    /// A repository model's output tensors, in its spec's order.
    Tensors(Vec<TensorBuf>),
}

impl Output {
    /// Its kind, as [`Payload::expected`] names it.
    pub fn name(&self) -> &'static str {
        match self {
            Output::Magnitudes(_) => "magnitudes",
            Output::Scores(_) => "scores",
            Output::Activations(_) => "activations",
            Output::Tensors(_) => "tensors",
        }
    }

    /// Its values: magnitudes, scores, or rows of activations.
    pub fn len(&self) -> usize {
        match self {
            Output::Magnitudes(m) => m.len(),
            Output::Scores(s) => s.len(),
            Output::Activations(rows) => rows.len(),
            Output::Tensors(ts) => ts.len(),
        }
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes it holds: what a board invocation moves back to the host.
    pub fn bytes(&self) -> u64 {
        match self {
            Output::Magnitudes(m) => m.len() as u64,
            Output::Scores(s) => 2 * s.len() as u64,
            Output::Activations(rows) => (2 * NEURONS * rows.len()) as u64,
            Output::Tensors(ts) => ts.iter().map(|t| t.len() as u64).sum(),
        }
    }
}

/// Which kernel: one of Spork's own, or a repository model's.
#[derive(Clone, Debug)]
pub enum KernelRef {
    /// A built-in kernel (its reference in `spork_golden`, its RTL compiled into `spork_sim`).
    Builtin(Kernel),
    /// A repository model: its CPU code behind the C ABI, its RTL verilated at load.
    Repo(Arc<RepoKernel>),
}

impl KernelRef {
    /// Its name: the kernel's, or the model's.
    pub fn name(&self) -> &str {
        match self {
            KernelRef::Builtin(k) => k.name(),
            KernelRef::Repo(r) => r.name(),
        }
    }

    /// The built-in kernel, if it is one.
    pub fn builtin(&self) -> Option<Kernel> {
        match self {
            KernelRef::Builtin(k) => Some(*k),
            KernelRef::Repo(_) => None,
        }
    }

    /// The repository model, if it is one.
    pub fn repo(&self) -> Option<&Arc<RepoKernel>> {
        match self {
            KernelRef::Builtin(_) => None,
            KernelRef::Repo(r) => Some(r),
        }
    }
}

impl std::fmt::Display for KernelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why the reference gave no answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// A built-in kernel's input of a shape it cannot take.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// A repository kernel's CPU code failed, with its message; or a payload for another kernel.
    #[error("{0}")]
    Kernel(String),
}

/// A kernel with its on-chip state: what a worker is configured with.
#[derive(Clone, Debug)]
pub struct KernelImage {
    /// The kernel.
    pub kernel: KernelRef,
    /// The seed its state was drawn from: a worker host rebuilds the same image from the two.
    pub seed: u64,
    /// Bloom: the subscriber profile.
    pub profile: Profile,
    /// Bloom: the terms the profile holds (documents draw some from them).
    pub interests: Vec<u32>,
    /// Dense: the layer's weights.
    pub layer: Layer,
}

impl KernelImage {
    /// The image for `kernel`, its state drawn from `seed`.
    pub fn new(kernel: Kernel, seed: u64) -> KernelImage {
        let (profile, interests, layer) = inputs::state(seed);
        KernelImage { kernel: KernelRef::Builtin(kernel), seed, profile, interests, layer }
    }

    /// The image of a repository model (it has no on-chip state of Spork's making).
    pub fn repo(kernel: Arc<RepoKernel>) -> KernelImage {
        KernelImage { kernel: KernelRef::Repo(kernel), ..KernelImage::new(Kernel::Sobel, 0) }
    }

    /// A request's inputs of about `items` items.
    pub fn payload(&self, items: u64, rng: &mut impl Rng) -> Payload {
        let items = items.max(1) as usize;
        let kernel = match &self.kernel {
            KernelRef::Builtin(k) => *k,
            KernelRef::Repo(r) => return Payload::Tensors(r.random(items as u64, rng)),
        };
        match kernel {
            Kernel::Sobel => {
                let width = sobel::MAX_WIDTH.min(items.isqrt().max(3));
                let height = (items / width).max(3);
                Payload::Image { pixels: inputs::image(rng, width, height), width }
            }
            Kernel::Bloom => {
                let docs = items.div_ceil(64);
                Payload::Documents((0..docs).map(|_| inputs::document(rng, &self.interests, 64)).collect())
            }
            Kernel::Dense => {
                let n = items.div_ceil(64);
                Payload::Vectors((0..n).map(|_| inputs::vector(rng, 64)).collect())
            }
        }
    }

    /// The inputs `spec` describes (the same every time).
    pub fn build(&self, spec: &WorkSpec) -> Work {
        use rand::SeedableRng;
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(spec.seed);
        self.work(spec.items, spec.optional_items, &mut rng)
    }

    /// `input`'s inputs, built now if deferred.
    pub fn inputs(&self, input: &Input) -> Arc<Work> {
        match input {
            Input::Built(w) => w.clone(),
            Input::Deferred(spec) => Arc::new(self.build(spec)),
        }
    }

    /// A request of `items` mandatory and `optional_items` optional items (0: no optional part).
    pub fn work(&self, items: u64, optional_items: u64, rng: &mut impl Rng) -> Work {
        let mandatory = self.payload(items, rng);
        let optional = (optional_items > 0).then(|| self.payload(optional_items, rng));
        Work { mandatory, optional }
    }

    /// The reference answer to `work`, with or without its optional part.
    pub fn answer(&self, work: &Work, with_optional: bool) -> Result<Answer, RunError> {
        let optional = match (&work.optional, with_optional) {
            (Some(p), true) => Some(self.reference(p)?),
            _ => None,
        };
        Ok(Answer { mandatory: self.reference(&work.mandatory)?, optional })
    }

    /// The software reference: what CPU workers run and what every FPGA result must equal.
    pub fn reference(&self, p: &Payload) -> Result<Output, RunError> {
        Ok(match p {
            Payload::Tensors(t) => match &self.kernel {
                KernelRef::Repo(r) => Output::Tensors(r.reference(t).map_err(RunError::Kernel)?),
                KernelRef::Builtin(k) => {
                    return Err(RunError::Kernel(format!(
                        "the {k} kernel was given a repository model's tensors"
                    )));
                }
            },
            Payload::Image { pixels, width } => Output::Magnitudes(sobel::sobel(pixels, *width)?),
            Payload::Documents(docs) => Output::Scores(docs.iter().map(|d| self.profile.score(d)).collect()),
            Payload::Vectors(xs) => {
                Output::Activations(xs.iter().map(|x| self.layer.forward(x)).collect::<Result<_, _>>()?)
            }
        })
    }

    /// Bytes a request of about `items` items moves to the board and back, per item (its inputs and
    /// its answer): with the reference's speed, the link's bytes per CPU-second.
    pub fn bytes_per_item(&self, items: u64) -> f64 {
        self.bytes_per_item_at(self.within_measure_bytes(items))
    }

    fn bytes_per_item_at(&self, items: u64) -> f64 {
        use rand::SeedableRng;
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(99);
        let p = self.payload(items, &mut rng);
        let out = self.reference(&p).map_or(0, |o| o.bytes());
        (p.bytes() + out) as f64 / p.items().max(1) as f64
    }

    /// The reference's speed on this machine, in items per second: the fastest run of a request
    /// of `items` items over [`TIMED`] (nine runs at least), after [`WARM_UP`] of untimed runs.
    /// Converts a trace's CPU-seconds sizes into items, and is what a server states as its speed.
    /// The median of five cold runs read 455-638 M pixels/s for sobel over ten idle starts of a
    /// 2-core VM; this reads 617-639.
    /// Its request moves at most [`MEASURE_BYTES`] (inputs and answer): a model whose items are
    /// large is timed on fewer of them, so that loading it stays within memory the budget does not see.
    pub fn calibrate(&self, items: u64) -> f64 {
        use rand::SeedableRng;
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(99);
        let p = self.payload(self.within_measure_bytes(items), &mut rng);
        let warm = Instant::now();
        while warm.elapsed() < WARM_UP {
            std::hint::black_box(self.reference(&p).ok());
        }
        let timing = Instant::now();
        let mut runs = Vec::new();
        while runs.len() < 9 || timing.elapsed() < TIMED {
            let t = Instant::now();
            std::hint::black_box(self.reference(&p).ok());
            runs.push(t.elapsed());
        }
        fastest(p.items(), runs)
    }
}

/// The most bytes (inputs and answer) a request that measures a kernel may move: 16 MiB, so a
/// load's measurement costs the server at most a few times that, outside the memory budget.
pub const MEASURE_BYTES: u64 = 16 << 20;

impl KernelImage {
    /// `items`, or fewer: as many as keep a request within [`MEASURE_BYTES`] (at least one), its
    /// bytes per item read on a request of at most 64 items.
    fn within_measure_bytes(&self, items: u64) -> u64 {
        let per_item = self.bytes_per_item_at(items.min(64)).max(1.0);
        items.min((MEASURE_BYTES as f64 / per_item) as u64).max(1)
    }
}

/// How long calibration runs the reference untimed first: the core's clock and caches settle.
pub const WARM_UP: Duration = Duration::from_millis(30);
/// How long calibration times runs (nine at least): long enough to outlast a passing slowdown (the
/// server's other start-up threads on the sibling core).
pub const TIMED: Duration = Duration::from_millis(60);

/// The rate of the fastest of `runs` of `items` items each (items per second): interference only
/// ever slows a run down.
fn fastest(items: u64, runs: impl IntoIterator<Item = Duration>) -> f64 {
    let best = runs.into_iter().min().unwrap_or(Duration::ZERO);
    items as f64 / best.as_secs_f64().max(1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn payloads_have_about_the_requested_items_and_a_valid_shape() {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1);
        for kernel in Kernel::ALL {
            let img = KernelImage::new(kernel, 3);
            for items in [1u64, 50, 4096, 100_000] {
                let p = img.payload(items, &mut rng);
                assert!(img.reference(&p).is_ok(), "{kernel} {items}");
                let got = p.items();
                assert!(got >= items.min(9) && got <= items.max(9) + 2 * 256, "{kernel}: {items} -> {got}");
            }
        }
    }

    #[test]
    fn the_reference_always_has_the_expected_shape() {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(4);
        for kernel in Kernel::ALL {
            let img = KernelImage::new(kernel, 5);
            for items in [1u64, 9, 50, 4096, 70_000] {
                let p = img.payload(items, &mut rng);
                let out = img.reference(&p).unwrap();
                assert_eq!(p.expects(&out), Ok(()), "{kernel} {items}");
            }
        }
    }

    #[test]
    fn an_image_gives_its_interior_pixels() {
        // 5 wide, 4 high: (5-2) x (4-2) magnitudes, as the golden Sobel gives.
        let p = Payload::Image { pixels: vec![9; 20], width: 5 };
        assert_eq!(p.expected(), Ok(("magnitudes", 6)));
        assert_eq!(sobel::sobel(&[9; 20], 5).unwrap().len(), 6);
        let short = Output::Magnitudes(vec![0; 5]);
        assert_eq!(p.expects(&short), Err(OutputMismatch::Length { kind: "magnitudes", want: 6, got: 5 }));
        assert!(p.expects(&Output::Magnitudes(vec![0; 7])).is_err());
        let malformed = Payload::Image { pixels: vec![0; 10], width: 5 };
        assert!(matches!(malformed.expects(&Output::Magnitudes(vec![])), Err(OutputMismatch::Input(_))));
    }

    #[test]
    fn a_wrong_kind_or_count_is_refused_and_named() {
        let docs = Payload::Documents(vec![vec![1, 2], vec![3]]);
        assert_eq!(docs.expects(&Output::Scores(vec![4, 5])), Ok(()));
        assert_eq!(
            docs.expects(&Output::Scores(vec![4])),
            Err(OutputMismatch::Length { kind: "scores", want: 2, got: 1 })
        );
        let e = docs.expects(&Output::Magnitudes(vec![0, 0])).unwrap_err();
        assert_eq!(e, OutputMismatch::Kind { want: "scores", got: "magnitudes" });
        assert!(e.to_string().contains("magnitudes") && e.to_string().contains("scores"), "{e}");
        let vectors = Payload::Vectors(vec![vec![1; 4]; 3]);
        assert_eq!(vectors.expects(&Output::Activations(vec![[0; NEURONS]; 3])), Ok(()));
        let e = vectors.expects(&Output::Activations(vec![[0; NEURONS]; 4])).unwrap_err();
        assert!(e.to_string().contains('4') && e.to_string().contains('3'), "{e}");
        assert!(vectors.expects(&Output::Scores(vec![0; 3])).is_err());
    }

    #[test]
    fn calibration_gives_a_positive_rate() {
        assert!(KernelImage::new(Kernel::Sobel, 1).calibrate(10_000) > 1e5);
    }

    /// The fastest run sets the rate: slower ones (interference) do not pull it down.
    #[test]
    fn calibration_takes_the_fastest_run() {
        let ms = Duration::from_millis;
        assert_eq!(fastest(1_000, [ms(4), ms(2), ms(9)]), 500_000.0);
        assert_eq!(fastest(1_000, [ms(2)]), fastest(1_000, [ms(2), ms(3), ms(50)]));
    }
}

//! Real request data: what a request of a given size carries (a model's input tensors), the model
//! every worker is configured with, and the reference result (its CPU code's) both worker types are
//! held to. Spork's own kernels are models of its repository like any user's: the data path knows
//! no kernel by name.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;

use crate::repository::kernel::{RepoKernel, TensorPayload};
use crate::repository::tensor::TensorBuf;

/// Inputs of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// A model's input tensors, checked against its spec.
    Tensors(TensorPayload),
}

impl Payload {
    /// Streamed items (one per RTL cycle).
    pub fn items(&self) -> u64 {
        let Payload::Tensors(t) = self;
        t.items
    }

    /// Bytes its inputs hold: what a board invocation moves to the card.
    pub fn bytes(&self) -> u64 {
        let Payload::Tensors(t) = self;
        t.inputs.iter().map(|t| t.len() as u64).sum()
    }

    /// How many output tensors its model gives.
    pub fn expected(&self) -> usize {
        let Payload::Tensors(t) = self;
        t.outputs.len()
    }

    /// The most bytes its answer can take in the worker API's encoding (each value at its widest
    /// varint, each tensor's shape and header, 4 KiB for the rest of the message): what a remote
    /// host may send back for it, refused before it is decoded when larger.
    pub fn answer_wire_max(&self) -> u64 {
        const VARINT: u64 = 10;
        let Payload::Tensors(t) = self;
        let body = t
            .outputs
            .iter()
            .map(|(d, shape)| {
                let elements = shape.iter().try_fold(1u64, |a, &b| a.checked_mul(b)).unwrap_or(u64::MAX);
                elements.saturating_mul(d.size() as u64).saturating_add(32 + VARINT * shape.len() as u64)
            })
            .fold(0u64, u64::saturating_add);
        body.saturating_add(4096)
    }

    /// Whether `out` can be this payload's answer: as many tensors as [`Payload::expected`] says,
    /// each of the type and shape the model's spec gives for these inputs. The one rule every
    /// worker's answer is held to before a client sees it (a remote host's answer is not trusted to
    /// agree with its job).
    pub fn expects(&self, out: &Output) -> Result<(), OutputMismatch> {
        let (Payload::Tensors(p), Output::Tensors(ts)) = (self, out);
        let (want, got) = (self.expected(), out.len());
        if got != want {
            return Err(OutputMismatch::Length { want, got });
        }
        if let Some((w, t)) = p.outputs.iter().zip(ts).find(|(w, t)| **w != (t.dtype, t.shape.clone())) {
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
    /// The wrong number of output tensors.
    #[error("{got} tensors where the job gives {want}")]
    Length {
        /// What the job gives.
        want: usize,
        /// What came.
        got: usize,
    },
    /// An output tensor of another type or shape than the model's spec gives.
    #[error("a tensor of {got} where the job gives {want}")]
    Shape {
        /// What the spec gives.
        want: String,
        /// What came.
        got: String,
    },
}

/// A request's inputs: its mandatory part, and the optional part brownout may skip (more input for
/// the same model: its `[optional]` tensors, a refinement image or further vectors).
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

/// A model's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Its output tensors, in its spec's order.
    Tensors(Vec<TensorBuf>),
}

impl Output {
    /// Its tensors.
    pub fn len(&self) -> usize {
        let Output::Tensors(ts) = self;
        ts.len()
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes it holds: what a board invocation moves back to the host.
    pub fn bytes(&self) -> u64 {
        let Output::Tensors(ts) = self;
        ts.iter().map(|t| t.len() as u64).sum()
    }
}

/// Why the reference gave no answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The model's CPU code failed, with its message.
    #[error("{0}")]
    Kernel(String),
}

/// A model: what a worker is configured with (its state, a Bloom profile or a layer's weights, is
/// the model's own, in its C code and RTL).
#[derive(Clone, Debug)]
pub struct KernelImage {
    /// The model: its CPU code behind the C ABI, its RTL verilated at load.
    pub kernel: Arc<RepoKernel>,
}

impl KernelImage {
    /// The image of model `kernel`.
    pub fn repo(kernel: Arc<RepoKernel>) -> KernelImage {
        KernelImage { kernel }
    }

    /// A request's inputs of about `items` items.
    pub fn payload(&self, items: u64, rng: &mut impl Rng) -> Payload {
        Payload::Tensors(self.kernel.random(items.max(1), rng))
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
        let Payload::Tensors(t) = p;
        Ok(Output::Tensors(self.kernel.reference(t).map_err(RunError::Kernel)?))
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
    pub fn within_measure_bytes(&self, items: u64) -> u64 {
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

    fn own(name: &str) -> KernelImage {
        KernelImage::repo(Arc::new(crate::repository::own::load(name, false).expect("an own model")))
    }

    /// Each of Spork's own models: payloads of about the items asked (a square-ish image for sobel,
    /// whole rows for the others), each answered by the model's CPU code in the shape the job gives.
    #[test]
    fn payloads_have_about_the_requested_items_and_answers_the_expected_shape() {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1);
        for name in crate::repository::own::names() {
            let img = own(name);
            for items in [1u64, 50, 4096, 100_000] {
                let p = img.payload(items, &mut rng);
                let out = img.reference(&p).expect("the C code answers");
                assert_eq!(p.expects(&out), Ok(()), "{name} {items}");
                let got = p.items();
                assert!(got >= items.min(9) && got <= items.max(9) + 2 * 4096, "{name}: {items} -> {got}");
            }
        }
    }

    /// An answer of another count or another tensor shape than the job gives is refused and named.
    #[test]
    fn a_wrong_count_or_shape_is_refused_and_named() {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(4);
        let img = own("dense");
        let p = img.payload(3 * 64, &mut rng);
        let Output::Tensors(mut ts) = img.reference(&p).expect("runs");
        let e = p.expects(&Output::Tensors(vec![])).unwrap_err();
        assert_eq!(e, OutputMismatch::Length { want: 1, got: 0 });
        let t = &ts[0];
        let short = TensorBuf::from_bytes(t.dtype, &[2, 8], &t.bytes()[..2 * 8 * 2]).expect("two rows");
        ts[0] = short;
        let e = p.expects(&Output::Tensors(ts)).unwrap_err();
        assert!(matches!(e, OutputMismatch::Shape { .. }), "{e}");
        assert!(e.to_string().contains("[2, 8]") && e.to_string().contains("[3, 8]"), "{e}");
    }

    #[test]
    fn calibration_gives_a_positive_rate() {
        assert!(own("sobel").calibrate(10_000) > 1e5);
    }

    /// The fastest run sets the rate: slower ones (interference) do not pull it down.
    #[test]
    fn calibration_takes_the_fastest_run() {
        let ms = Duration::from_millis;
        assert_eq!(fastest(1_000, [ms(4), ms(2), ms(9)]), 500_000.0);
        assert_eq!(fastest(1_000, [ms(2)]), fastest(1_000, [ms(2), ms(3), ms(50)]));
    }
}

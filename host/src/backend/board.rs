//! A processing-element slot of the simulated board: a Verilated kernel model behind its AXI4-Stream
//! ports, driven by the generic stream driver ([`Axis`]) for every kernel. Spork's built-in kernels
//! run inside their Vitis wrappers (`scripts/vitis/<kernel>_axis.v`), fed the same words a real board's
//! data movers carry ([`stream`]), on-chip state included; a repository model runs its own RTL.
//! Configuring loads the model's shared library (measured) and instantiates it, after the board
//! profile's configured reconfiguration delay. Device time is cycles / clock.

use std::time::{Duration, Instant};

use std::sync::Arc;

use spork_golden::dense::MAX_INPUTS;
use spork_golden::{ShapeError, sobel};
use spork_sim::Model;
use spork_sim::axis::{Axis, AxisPorts, Beat};

use super::{Backend, BackendError, Configured, Executed, Power};
use crate::datapath::stream;
use crate::datapath::work::{KernelImage, KernelRef, Output, Payload};
use crate::model::{Kind, WorkerSpec};
use crate::repository::kernel::RepoKernel;

enum Loaded {
    /// A built-in kernel in its Vitis wrapper; the image supplies the state each job streams in.
    Builtin(Axis, Box<KernelImage>),
    /// A repository model's RTL.
    Repo(Axis, Arc<RepoKernel>),
}

/// One slot of the simulated board.
pub struct SimBoardSlot {
    clock_hz: f64,
    delay: Duration,
    spec: WorkerSpec,
    /// Fail this slot's configuration (fault injection).
    fail: bool,
    // The driver holds an instance of the model; the model (library) is kept after it.
    loaded: Option<Loaded>,
    model: Option<Model>,
    busy: bool,
}

impl SimBoardSlot {
    /// A slot clocked at `clock_hz`, whose reconfiguration also takes `delay`; `fail` injects a
    /// configuration failure.
    pub fn new(clock_hz: f64, delay: Duration, spec: WorkerSpec, fail: bool) -> SimBoardSlot {
        SimBoardSlot { clock_hz, delay, spec, fail, loaded: None, model: None, busy: false }
    }

    fn load(&mut self, image: &KernelImage) -> Result<(), BackendError> {
        let err = |e: spork_sim::SimError| BackendError::Configure {
            what: image.kernel.to_string(),
            reason: e.to_string(),
        };
        // Unload what was there: reconfiguration replaces the image.
        self.loaded = None;
        self.model = None;
        let kernel = match &image.kernel {
            KernelRef::Builtin(k) => *k,
            KernelRef::Repo(r) => return self.load_repo(r),
        };
        let model = Model::load(&format!("{}_axis", kernel.name())).map_err(err)?;
        let loaded =
            Loaded::Builtin(Axis::new(&model, &AxisPorts::default()).map_err(err)?, Box::new(image.clone()));
        self.model = Some(model);
        self.loaded = Some(loaded);
        Ok(())
    }

    /// A repository model's RTL: verilated when the model was loaded, instantiated and reset here.
    fn load_repo(&mut self, kernel: &Arc<RepoKernel>) -> Result<(), BackendError> {
        let configure = |reason: String| BackendError::Configure { what: kernel.name().into(), reason };
        let rtl =
            kernel.rtl.as_ref().ok_or_else(|| configure("the model was loaded without its RTL".into()))?;
        let axis = rtl.instance().map_err(|e| configure(e.to_string()))?;
        self.model = Some(rtl.model.clone());
        self.loaded = Some(Loaded::Repo(axis, kernel.clone()));
        Ok(())
    }
}

fn wrong_kernel() -> BackendError {
    BackendError::Kernel("the payload is for another kernel than the one loaded".into())
}

/// Streams `payload` through a built-in kernel's wrapper: its words as the data mover sends them
/// (TLAST on the last), the answer decoded from the words that come back, and the cycles taken.
fn builtin(axis: &mut Axis, image: &KernelImage, payload: &Payload) -> Result<(Output, u64), BackendError> {
    let kernel = image.kernel.name();
    check_shape(kernel, payload)?;
    let expected = stream::expected_words(payload);
    // A job with no item (only empty documents, or no vector) has no word to carry TLAST after the
    // state: its answer is known without the board.
    let words = if expected == 0 { Vec::new() } else { stream::encode(image, payload) };
    let beats: Vec<Beat> =
        words.iter().enumerate().map(|(i, &data)| Beat { data, last: i + 1 == words.len() }).collect();
    let (out, cycles) = if expected == 0 {
        (Vec::new(), 0)
    } else {
        let run =
            axis.run(&[], &beats, expected, |_| true).map_err(|e| BackendError::Kernel(e.to_string()))?;
        (run.beats.iter().map(|b| b.data).collect(), run.cycles)
    };
    let output = stream::decode(kernel, payload, &out).map_err(|e| BackendError::Kernel(e.to_string()))?;
    Ok((output, cycles))
}

/// The shapes the kernels' wrappers take, refused before a word is sent.
fn check_shape(kernel: &str, payload: &Payload) -> Result<(), BackendError> {
    let shape = |e: ShapeError| BackendError::Kernel(format!("{kernel}: {e}"));
    match (kernel, payload) {
        ("sobel", Payload::Image { pixels, width }) => {
            sobel::check_shape(pixels.len(), *width).map(drop).map_err(shape)
        }
        ("bloom", Payload::Documents(_)) => Ok(()),
        ("dense", Payload::Vectors(xs)) => match xs.iter().find(|x| x.is_empty() || x.len() > MAX_INPUTS) {
            Some(bad) => Err(shape(ShapeError::Inputs { len: bad.len(), max: MAX_INPUTS })),
            None => Ok(()),
        },
        _ => Err(wrong_kernel()),
    }
}

impl Backend for SimBoardSlot {
    fn kind(&self) -> Kind {
        Kind::Fpga
    }

    fn configure(&mut self, image: &KernelImage) -> Result<Configured, BackendError> {
        // The Verilated model stands in for a separate device: its simulation must not take CPU time
        // from the CPU workers, whose latency is real wall time (the board's latency is taken on its
        // own timeline, whatever Verilator's speed). So this slot's thread runs at a lower priority.
        // SAFETY: plain syscalls on the calling thread's own id; failure only leaves the priority.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 10);
        }
        std::thread::sleep(self.delay);
        let start = Instant::now();
        if self.fail {
            let reason = "injected fault: the board rejected the image".to_string();
            return Err(BackendError::Configure { what: image.kernel.to_string(), reason });
        }
        self.load(image)?;
        Ok(Configured { measured: start.elapsed(), configured_delay: self.delay })
    }

    fn submit(&mut self, payload: &Payload) -> Result<Executed, BackendError> {
        let kernel_err = |e: spork_sim::SimError| BackendError::Kernel(e.to_string());
        self.busy = true;
        let result = match (self.loaded.as_mut(), payload) {
            (Some(Loaded::Builtin(axis, image)), p) if !matches!(p, Payload::Tensors(_)) => {
                builtin(axis, image, p)
            }
            (Some(Loaded::Repo(axis, kernel)), Payload::Tensors(t)) => {
                let t = kernel.bound(t).map_err(BackendError::Kernel)?;
                let mut outputs = kernel.outputs(&t);
                let rtl = kernel.rtl.as_ref().ok_or(BackendError::NotConfigured)?;
                rtl.run(axis, &t.inputs, &t.dims, &mut outputs, |_| true)
                    .map(|c| (Output::Tensors(outputs), c))
                    .map_err(kernel_err)
            }
            (None, _) => Err(BackendError::NotConfigured),
            _ => Err(wrong_kernel()),
        };
        self.busy = false;
        let (output, cycles) = result?;
        let device = Duration::from_secs_f64(cycles as f64 / self.clock_hz);
        Ok(Executed { output, device: Some((cycles, device)) })
    }

    fn power(&self) -> Power {
        Power {
            watts: if self.busy { self.spec.busy_power_w } else { self.spec.idle_power_w },
            measured: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use spork_golden::Kernel;

    /// Each built-in kernel, in its Vitis wrapper on the generic stream driver, answers exactly as
    /// the CPU reference does: state from a seed other than the models' 0, back-to-back jobs of
    /// random and edge sizes (one item, the largest image row, empty documents), with a cycle count
    /// no smaller than the items streamed.
    #[test]
    fn built_in_kernels_in_their_stream_wrappers_answer_as_the_reference() {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(5);
        for kernel in Kernel::ALL {
            let image = KernelImage::new(kernel, 7);
            let mut slot =
                SimBoardSlot::new(250e6, Duration::ZERO, crate::model::Platform::default().fpga, false);
            slot.configure(&image).expect("configure");
            for items in [1, 9, 700, 4096, 256 * 5] {
                let payload = image.payload(items, &mut rng);
                let got = slot.submit(&payload).expect("run");
                assert_eq!(
                    got.output,
                    image.reference(&payload).expect("reference"),
                    "{kernel}, {items} items"
                );
                let (cycles, _) = got.device.expect("the board counts cycles");
                assert!(cycles >= payload.items(), "{kernel}: {cycles} cycles for {} items", payload.items());
            }
        }
        let image = KernelImage::new(Kernel::Bloom, 7);
        let mut slot =
            SimBoardSlot::new(250e6, Duration::ZERO, crate::model::Platform::default().fpga, false);
        slot.configure(&image).expect("configure");
        let docs = Payload::Documents(vec![vec![], vec![3, 4], vec![]]);
        assert_eq!(slot.submit(&docs).expect("run").output, image.reference(&docs).expect("reference"));
        let none = Payload::Documents(vec![vec![]]);
        assert_eq!(slot.submit(&none).expect("run").output, Output::Scores(vec![0]));
    }

    /// A shape the wrapper cannot take is refused before a word is sent, naming the limit.
    #[test]
    fn shapes_the_wrappers_cannot_take_are_refused() {
        let mut slot =
            SimBoardSlot::new(250e6, Duration::ZERO, crate::model::Platform::default().fpga, false);
        slot.configure(&KernelImage::new(Kernel::Sobel, 0)).expect("configure");
        let wide = Payload::Image { pixels: vec![0; 300 * 3], width: 300 };
        let err = slot.submit(&wide).expect_err("too wide").to_string();
        assert!(err.contains("300") && err.contains("256"), "{err}");
        let wrong = Payload::Vectors(vec![vec![1]]);
        assert!(slot.submit(&wrong).is_err());
    }
}

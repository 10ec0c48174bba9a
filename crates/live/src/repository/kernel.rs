//! A repository model ready to serve: its spec, its CPU library with a pool of kernel states, and
//! its RTL when the simulated board will run it. What the data path calls a repository kernel.

use std::ffi::CString;
use std::sync::{Arc, Mutex};

use rand::Rng;

use super::cpu::{AbiError, CpuKernel, CpuLibrary};
use super::isolate::{Isolated, Launch};
use super::rtl::{Rtl, RtlError};
use super::spec::{CpuSpec, Isolation, ModelSpec};
use super::tensor::TensorBuf;
use spork_kernel::ffi::DType;

/// Why a model cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// `model.toml` was refused.
    #[error(transparent)]
    Spec(#[from] spork_core::input::InputError),
    /// The model has no CPU code: every pool needs CPU workers for bursts.
    #[error("{0} has no [cpu] implementation\n  fix: add [cpu] sources or library to its model.toml")]
    NoCpu(String),
    /// The simulated board was asked for and the model has no RTL.
    #[error("{0} has no [fpga.sim] implementation for --board sim\n  fix: add [fpga.sim] to its model.toml")]
    NoSim(String),
    /// The CPU library was refused.
    #[error(transparent)]
    Abi(#[from] AbiError),
    /// The RTL was refused.
    #[error(transparent)]
    Rtl(#[from] RtlError),
    /// A file model.toml names cannot be read for the model's digest.
    #[error("{0}\n  fix: every file model.toml names must be a readable regular file within its bound")]
    Unreadable(String),
    /// Its kernel process did not start, or its library did not open or initialise there.
    #[error("{model}: {reason}")]
    Process {
        /// The model's name.
        model: String,
        /// What happened.
        reason: String,
    },
}

/// The most bytes a kernel process's shared window spans (virtual: pages exist only where a call
/// writes); a model's largest call beyond it is refused at the call.
const WINDOW_MAX: u64 = 16 << 30;

/// Where a model's CPU calls run.
enum Cpu {
    /// In this process: kernel states not in use (a CPU worker takes one per request and gives it
    /// back, so a state is never used by two threads at once and `init` runs once per concurrent
    /// worker).
    InProcess { lib: Arc<CpuLibrary>, states: Mutex<Vec<CpuKernel>> },
    /// In kernel processes of its own.
    Isolated(Box<Isolated>),
}

/// One request's inputs with what the spec makes of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorPayload {
    /// Inputs, in the spec's order.
    pub inputs: Vec<TensorBuf>,
    /// The dimensions the inputs bound.
    pub dims: Vec<u64>,
    /// Work items.
    pub items: u64,
    /// Each output's type and shape, fixed by the dimensions.
    pub outputs: Vec<(DType, Vec<u64>)>,
    /// The inputs' names, as the model names them (shared, not copied, per request).
    pub names: Arc<[String]>,
}

impl TensorPayload {
    /// Inputs not yet bound to a spec (as a worker host receives them): the kernel that runs them
    /// binds them first ([`RepoKernel::bound`]).
    pub fn unbound(inputs: Vec<TensorBuf>) -> TensorPayload {
        TensorPayload {
            inputs,
            dims: Vec::new(),
            items: 0,
            outputs: Vec::new(),
            names: Arc::from(Vec::new()),
        }
    }
}

impl Cpu {
    /// `cpu`'s code built (or found in the cache) and checked: one kernel state made now, so a
    /// library whose init fails is refused at load, not at the first request.
    fn load(spec: &ModelSpec, cpu: &CpuSpec) -> Result<Cpu, LoadError> {
        match cpu.isolation {
            Isolation::None => {
                let lib = CpuLibrary::load(spec, cpu)?;
                let first = lib.instance()?;
                Ok(Cpu::InProcess { lib, states: Mutex::new(vec![first]) })
            }
            Isolation::Process => {
                let library = CpuLibrary::build(spec, cpu)?;
                let window = spec.max_call_bytes().unwrap_or(u64::MAX).min(WINDOW_MAX) as usize;
                let names = |ts: &[super::spec::TensorSpec]| ts.iter().map(|t| t.name.clone()).collect();
                let launch = Launch {
                    library,
                    config: cpu.config.clone(),
                    names: (names(&spec.inputs), names(&spec.outputs)),
                    window,
                    memory: cpu.memory,
                };
                let iso = Isolated::start(launch, cpu.timeout)
                    .map_err(|reason| LoadError::Process { model: spec.name.clone(), reason })?;
                Ok(Cpu::Isolated(Box::new(iso)))
            }
        }
    }
}

/// A repository model ready to run.
pub struct RepoKernel {
    /// The checked spec.
    pub spec: ModelSpec,
    cpu: Cpu,
    names: (Vec<CString>, Vec<CString>),
    input_names: Arc<[String]>,
    /// Its verilated RTL, when loaded for the simulated board.
    pub rtl: Option<Rtl>,
    /// Its folder's digest ([`super::digest`]): what a worker host's lease names it by.
    pub digest: String,
}

impl std::fmt::Debug for RepoKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RepoKernel({})", self.spec.name)
    }
}

impl RepoKernel {
    /// Loads `spec`'s CPU code, and its RTL when `sim` (the simulated board will run it).
    pub fn load(spec: ModelSpec, sim: bool) -> Result<RepoKernel, LoadError> {
        let cpu_spec = spec.cpu.as_ref().ok_or_else(|| LoadError::NoCpu(spec.name.clone()))?;
        let digest = super::digest::digest(&spec).map_err(LoadError::Unreadable)?;
        let cpu = Cpu::load(&spec, cpu_spec)?;
        let rtl = if sim {
            let s = spec.sim.as_ref().ok_or_else(|| LoadError::NoSim(spec.name.clone()))?;
            Some(Rtl::load(&spec, s)?)
        } else {
            None
        };
        let names = spec.c_names();
        let input_names = spec.inputs.iter().map(|t| t.name.clone()).collect();
        Ok(RepoKernel { spec, cpu, names, input_names, rtl, digest })
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Checks `inputs` against the spec and binds its dimensions.
    pub fn payload(&self, inputs: Vec<TensorBuf>) -> Result<TensorPayload, String> {
        let dims = self.spec.bind(&inputs)?;
        Ok(self.payload_of(inputs, dims))
    }

    /// `inputs` as a payload at `dims`, which they were bound to already (the server binds a
    /// request's shapes once, before its buffers are made).
    pub fn payload_at(&self, inputs: Vec<TensorBuf>, dims: Vec<u64>) -> TensorPayload {
        self.payload_of(inputs, dims)
    }

    fn payload_of(&self, inputs: Vec<TensorBuf>, dims: Vec<u64>) -> TensorPayload {
        let outputs = self.spec.output_shapes(&dims);
        TensorPayload {
            items: self.spec.items(&dims),
            inputs,
            dims,
            outputs,
            names: self.input_names.clone(),
        }
    }

    /// `p` bound to this model's spec: as it is if it was bound here, else checked and bound now
    /// (a payload from the worker API, or one for another model, is not trusted to fit).
    pub fn bound<'p>(&self, p: &'p TensorPayload) -> Result<std::borrow::Cow<'p, TensorPayload>, String> {
        if p.dims.len() == self.spec.dims.len() && p.outputs.len() == self.spec.outputs.len() {
            return Ok(std::borrow::Cow::Borrowed(p));
        }
        self.payload(p.inputs.clone()).map(std::borrow::Cow::Owned)
    }

    /// `p` bound to this model's spec, its inputs moved (not copied) when it has to be bound now.
    pub fn bind(&self, p: TensorPayload) -> Result<TensorPayload, String> {
        if p.dims.len() == self.spec.dims.len() && p.outputs.len() == self.spec.outputs.len() {
            return Ok(p);
        }
        self.payload(p.inputs)
    }

    /// The outputs of bound payload `p`, sized, zeroed, on the heap (a board's, which runs here).
    pub fn outputs(&self, p: &TensorPayload) -> Vec<TensorBuf> {
        self.spec.outputs_for(&p.dims)
    }

    /// The outputs of bound payload `p` for its CPU code: in the model's outputs arena when that
    /// code runs isolated, so its kernel processes write them in place.
    fn cpu_outputs(&self, p: &TensorPayload) -> Vec<TensorBuf> {
        self.spec.outputs_in(self.isolated().map(|i| &i.arenas().outputs), &p.dims)
    }

    /// An input tensor holding `bytes` (exactly `shape`'s): in the model's inputs arena when its
    /// code runs isolated, so a request is decoded once, straight where its kernel processes read.
    pub fn input(&self, dtype: DType, shape: &[u64], bytes: &[u8]) -> Option<TensorBuf> {
        TensorBuf::from_bytes_in(self.isolated().map(|i| &i.arenas().inputs), dtype, shape, bytes)
    }

    /// Runs the CPU code on `p`: the answer CPU workers give and FPGA answers are held to.
    pub fn reference(&self, p: &TensorPayload) -> Result<Vec<TensorBuf>, String> {
        let p = self.bound(p).map_err(|m| format!("model '{}': {m}", self.spec.name))?;
        let mut outputs = self.cpu_outputs(&p);
        let result = match &self.cpu {
            Cpu::Isolated(iso) => iso.run(&p.inputs, &mut outputs),
            Cpu::InProcess { lib, states } => {
                let taken = states.lock().map_err(|_| "a kernel state was poisoned".to_string())?.pop();
                let mut state = match taken {
                    Some(s) => s,
                    None => lib.instance().map_err(|e| e.to_string())?,
                };
                let result = state.run((&self.names.0, &self.names.1), &p.inputs, &mut outputs);
                if let Ok(mut states) = states.lock() {
                    states.push(state);
                }
                result
            }
        };
        result.map(|()| outputs).map_err(|m| format!("model '{}': {m}", self.spec.name))
    }

    /// Its kernel processes, when its CPU code runs isolated.
    pub fn isolated(&self) -> Option<&Isolated> {
        match &self.cpu {
            Cpu::Isolated(iso) => Some(iso.as_ref()),
            Cpu::InProcess { .. } => None,
        }
    }

    /// A random request of about `items` items: dimensions grown from their minimums, the smallest
    /// first, until the items reach `items` (or every dimension its maximum).
    pub fn random(&self, items: u64, rng: &mut impl Rng) -> TensorPayload {
        let dims = self.dims_for(items);
        let inputs = self.spec.random_inputs(&dims, rng);
        self.payload_of(inputs, dims)
    }

    /// Dimensions of about `items` items: the smallest growable dimension doubles until one step
    /// more would pass `items`, then takes the size that reaches it (so requests come close to the
    /// size asked for, about square where two dimensions count items).
    pub fn dims_for(&self, items: u64) -> Vec<u64> {
        let spec = &self.spec;
        let mut dims: Vec<u64> = spec.dims.iter().map(|d| d.min).collect();
        while spec.items(&dims) < items {
            let grow = (0..dims.len()).filter(|&i| dims[i] < spec.dims[i].max).min_by_key(|&i| dims[i]);
            let Some(i) = grow else { break };
            let others = (spec.items(&dims) / dims[i].max(1)).max(1);
            let want = items.div_ceil(others);
            if want <= dims[i].saturating_mul(2) {
                dims[i] = want.clamp(spec.dims[i].min, spec.dims[i].max);
                if spec.items(&dims) >= items || dims[i] == spec.dims[i].max {
                    continue;
                }
            }
            dims[i] = dims[i].saturating_mul(2).min(spec.dims[i].max);
        }
        dims
    }
}

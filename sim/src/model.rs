//! Loading Verilated models (shared libraries built by `build.rs`) and driving their ports.

use std::ffi::{CStr, c_char, c_void};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libloading::Library;

use crate::SimError;
use crate::beats::Beats;

/// Where `build.rs` put the compiled models.
pub fn built_models_dir() -> PathBuf {
    PathBuf::from(env!("SPORK_SIM_BUILT_MODELS"))
}

/// The shared library of model `name`: under `$SPORK_SIM_MODELS` if set, else where it was built.
pub fn model_path(name: &str) -> PathBuf {
    let dir = std::env::var_os("SPORK_SIM_MODELS").map(PathBuf::from).unwrap_or_else(built_models_dir);
    dir.join(format!("libspork_model_{name}.so"))
}

/// The Verilog model `name` was built from (`build.rs` keeps a copy beside it).
pub fn model_source(name: &str) -> PathBuf {
    let dir = std::env::var_os("SPORK_SIM_MODELS").map(PathBuf::from).unwrap_or_else(built_models_dir);
    dir.join(name).join("source.v")
}

/// One port of a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    pub name: String,
    pub width: u32,
    pub input: bool,
}

/// A checked handle to a port, from [`Model::input`] or [`Model::output`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port {
    index: u32,
    mask: u64,
    /// 64-bit words the port's value takes.
    words: u32,
}

impl Port {
    /// 64-bit words the port's value takes (1 up to 64 bits).
    pub fn words(&self) -> usize {
        self.words as usize
    }
}

struct Api {
    new: unsafe extern "C" fn() -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
    eval: unsafe extern "C" fn(*mut c_void),
    set: unsafe extern "C" fn(*mut c_void, u32, u64),
    set_words: unsafe extern "C" fn(*mut c_void, u32, *const u64),
    get: unsafe extern "C" fn(*mut c_void, u32) -> u64,
    cycles: unsafe extern "C" fn(*mut c_void, u32, u64),
    stream: StreamFn,
    failed: unsafe extern "C" fn(*mut c_void) -> *const c_char,
}

/// `spork_model_stream` (see `shim.cpp`).
type StreamFn = unsafe extern "C" fn(
    *mut c_void,
    *const u32,
    u32,
    *const u64,
    *const u64,
    *const u8,
    u64,
    u32,
    *mut u64,
    *mut u64,
    *mut u8,
    u64,
    *const u8,
    u64,
    u64,
    *mut u64,
) -> u64;

/// The ports of one AXI4-Stream pair, for [`Instance::stream`].
#[derive(Clone, Copy, Debug)]
pub struct StreamPorts {
    pub s_data: Port,
    pub s_valid: Port,
    pub s_ready: Port,
    pub s_last: Port,
    pub m_data: Port,
    pub m_valid: Port,
    pub m_ready: Port,
    pub m_last: Port,
    /// TKEEP of the slave stream, if the design has one (one bit per lane).
    pub s_keep: Option<Port>,
    /// TKEEP of the master stream, if the design has one.
    pub m_keep: Option<Port>,
}

/// What [`Instance::stream`] moved: output beats (at most the expected count), input beats taken,
/// output beats seen (which may exceed the expected count), cycles run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Moved {
    pub beats: Beats,
    pub sent: usize,
    pub got: usize,
    pub cycles: u64,
}

struct Loaded {
    api: Api,
    // Declared last: the library is unloaded after the function pointers above are gone.
    _lib: Library,
}

/// A loaded model: the design's code in memory, ready to instantiate. Dropping the last handle
/// (and its instances) unloads the library.
#[derive(Clone)]
pub struct Model {
    name: String,
    path: PathBuf,
    ports: Arc<[PortInfo]>,
    state_bytes: u64,
    loaded: Arc<Loaded>,
    load_time: Duration,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("name", &self.name).field("path", &self.path).finish()
    }
}

fn symbol<T: Copy>(lib: &Library, path: &Path, name: &'static str) -> Result<T, SimError> {
    // SAFETY: the symbol is one the shim defines with this exact C signature (`T` at each call site).
    unsafe { lib.get::<T>(name.as_bytes()) }.map(|s| *s).map_err(|source| SimError::Symbol {
        path: path.to_path_buf(),
        symbol: name,
        source,
    })
}

impl Model {
    /// Loads model `name` from [`model_path`].
    pub fn load(name: &str) -> Result<Model, SimError> {
        let m = Model::load_path(&model_path(name))?;
        if m.name != name {
            return Err(SimError::WrongModel {
                model: m.path.display().to_string(),
                found: m.name,
                expected: name.into(),
            });
        }
        Ok(m)
    }

    /// Loads the model library at `path` and reads its port table; the time this takes is the
    /// simulated board's measured reconfiguration.
    pub fn load_path(path: &Path) -> Result<Model, SimError> {
        let start = Instant::now();
        if !path.is_file() {
            return Err(SimError::Missing { path: path.to_path_buf() });
        }
        // SAFETY: loading runs the library's static constructors; spork-sim models are C++
        // translation units whose constructors only initialise their own statics.
        let lib = unsafe { Library::new(path) }
            .map_err(|source| SimError::Load { path: path.to_path_buf(), source })?;
        let name_fn: unsafe extern "C" fn() -> *const c_char = symbol(&lib, path, "spork_model_name")?;
        let count_fn: unsafe extern "C" fn() -> u32 = symbol(&lib, path, "spork_model_port_count")?;
        let port_name: unsafe extern "C" fn(u32) -> *const c_char =
            symbol(&lib, path, "spork_model_port_name")?;
        let port_width: unsafe extern "C" fn(u32) -> u32 = symbol(&lib, path, "spork_model_port_width")?;
        let port_input: unsafe extern "C" fn(u32) -> i32 = symbol(&lib, path, "spork_model_port_is_input")?;
        let state_fn: unsafe extern "C" fn() -> u64 = symbol(&lib, path, "spork_model_state_bytes")?;
        let api = Api {
            new: symbol(&lib, path, "spork_model_new")?,
            free: symbol(&lib, path, "spork_model_free")?,
            eval: symbol(&lib, path, "spork_model_eval")?,
            set: symbol(&lib, path, "spork_model_set")?,
            set_words: symbol(&lib, path, "spork_model_set_words")?,
            get: symbol(&lib, path, "spork_model_get")?,
            cycles: symbol(&lib, path, "spork_model_cycles")?,
            stream: symbol(&lib, path, "spork_model_stream")?,
            failed: symbol(&lib, path, "spork_model_failed")?,
        };
        let text = |p: *const c_char| {
            // SAFETY: the shim returns pointers to static NUL-terminated strings (or null).
            if p.is_null() {
                String::new()
            } else {
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        // SAFETY: these shim functions take no pointers and return static data.
        let (name, ports, state_bytes) = unsafe {
            let ports: Vec<PortInfo> = (0..count_fn())
                .map(|i| PortInfo {
                    name: text(port_name(i)),
                    width: port_width(i),
                    input: port_input(i) != 0,
                })
                .collect();
            (text(name_fn()), ports, state_fn())
        };
        Ok(Model {
            name,
            path: path.to_path_buf(),
            ports: ports.into(),
            state_bytes,
            loaded: Arc::new(Loaded { api, _lib: lib }),
            load_time: start.elapsed(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn ports(&self) -> &[PortInfo] {
        &self.ports
    }

    /// The bytes one instance allocates (and touches) when made: the design's registers and
    /// fixed-size memories.
    pub fn state_bytes(&self) -> u64 {
        self.state_bytes
    }

    /// How long [`Model::load_path`] took (open, relocate, resolve, read ports).
    pub fn load_time(&self) -> Duration {
        self.load_time
    }

    fn port(&self, name: &str, input: bool) -> Result<Port, SimError> {
        let found = self.ports.iter().position(|p| p.name == name && p.input == input);
        match found {
            Some(i) => {
                let w = self.ports[i].width;
                let mask = if w >= 64 { u64::MAX } else { (1 << w) - 1 };
                Ok(Port { index: i as u32, mask, words: w.div_ceil(64).max(1) })
            }
            None => Err(SimError::NoPort {
                model: self.name.clone(),
                port: name.into(),
                direction: if input { "input" } else { "output" },
                known: self.ports.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", "),
            }),
        }
    }

    pub fn input(&self, name: &str) -> Result<Port, SimError> {
        self.port(name, true)
    }

    pub fn output(&self, name: &str) -> Result<Port, SimError> {
        self.port(name, false)
    }

    /// A fresh instance with all registers at zero, evaluated once with `clock` low (Verilator 5
    /// loses the first rising edge otherwise).
    pub fn instantiate(&self, clock: &str) -> Result<Instance, SimError> {
        let clock = self.input(clock)?;
        // SAFETY: `new` allocates an instance that `Instance::drop` frees exactly once.
        let handle = unsafe { (self.loaded.api.new)() };
        let mut inst = Instance { handle, clock, cycles: 0, model: self.loaded.clone() };
        inst.set(clock, 0);
        inst.eval();
        Ok(inst)
    }
}

/// One running copy of a model. It owns its Verilator context, so it may move between threads.
pub struct Instance {
    handle: *mut c_void,
    clock: Port,
    cycles: u64,
    model: Arc<Loaded>,
}

// SAFETY: an instance's C++ state (its model and VerilatedContext) is reachable only through this
// handle, and `&mut self` on every call keeps it to one thread at a time.
unsafe impl Send for Instance {}

impl Instance {
    /// Drives an input (masked to its width); takes effect at the next [`Instance::eval`] or cycle.
    pub fn set(&mut self, port: Port, value: u64) {
        // SAFETY: `handle` is live and `port` was checked against this model's table.
        unsafe { (self.model.api.set)(self.handle, port.index, value & port.mask) }
    }

    /// Drives an input of any width from `words`, low word first; missing words are zero and
    /// extra ones ignored. Takes effect as [`Instance::set`] does.
    pub fn set_words(&mut self, port: Port, words: &[u64]) {
        let mut w = vec![0u64; port.words()];
        let n = w.len().min(words.len());
        w[..n].copy_from_slice(&words[..n]);
        // SAFETY: `handle` is live, `port` was checked against this model's table and `w` holds
        // the port's whole width, which is all the shim reads.
        unsafe { (self.model.api.set_words)(self.handle, port.index, w.as_ptr()) }
    }

    pub fn get(&mut self, port: Port) -> u64 {
        // SAFETY: as in `set`.
        unsafe { (self.model.api.get)(self.handle, port.index) }
    }

    pub fn eval(&mut self) {
        // SAFETY: `handle` is live.
        unsafe { (self.model.api.eval)(self.handle) }
    }

    /// One clock period: the rising edge (registers take the inputs set before it), then the
    /// falling edge. Outputs read afterwards are the new cycle's.
    pub fn cycle(&mut self) {
        self.cycles(1);
    }

    pub fn cycles(&mut self, n: u64) {
        // SAFETY: `handle` is live and `clock` is one of its input ports.
        unsafe { (self.model.api.cycles)(self.handle, self.clock.index, n) }
        self.cycles += n;
    }

    /// Streams `input` in through `ports` until `expected` beats came out (the loop runs in the
    /// model's library: see `spork_model_stream` in `shim.cpp`). `input` carries as many words per
    /// beat as `s_data` takes; the output as many as `m_data`. TREADY follows `ready`, repeated
    /// (empty: always high); the run gives up after `patience` cycles with no beat moving.
    pub fn stream(
        &mut self,
        ports: &StreamPorts,
        input: &Beats,
        expected: usize,
        ready: &[bool],
        patience: u64,
    ) -> Moved {
        let none = Port { index: u32::MAX, mask: 0, words: 1 };
        let p = [
            self.clock,
            ports.s_data,
            ports.s_valid,
            ports.s_ready,
            ports.s_last,
            ports.m_data,
            ports.m_valid,
            ports.m_ready,
            ports.m_last,
            ports.s_keep.unwrap_or(none),
            ports.m_keep.unwrap_or(none),
        ];
        let index = p.map(|p| p.index);
        let (in_words, out_words) = (ports.s_data.words(), ports.m_data.words());
        let n_in = if input.words == in_words { input.len() } else { 0 };
        let flags: Vec<u8> = input.last.iter().map(|&l| u8::from(l)).collect();
        let ready: Vec<u8> = ready.iter().map(|&r| u8::from(r)).collect();
        let mut out = Beats::with_len(out_words, expected);
        let mut out_last = vec![0u8; expected];
        let mut moved = [0u64; 2];
        // SAFETY: `handle` is live; the port indices were checked against this model's table (or
        // are u32::MAX, which the shim reads as "none"); `input` holds `n_in` beats of `in_words`
        // words (checked above), `out` `expected` of `out_words`; every buffer outlives the call.
        let cycles = unsafe {
            (self.model.api.stream)(
                self.handle,
                index.as_ptr(),
                in_words as u32,
                input.data.as_ptr(),
                input.keep.as_ptr(),
                flags.as_ptr(),
                n_in as u64,
                out_words as u32,
                out.data.as_mut_ptr(),
                out.keep.as_mut_ptr(),
                out_last.as_mut_ptr(),
                expected as u64,
                ready.as_ptr(),
                ready.len() as u64,
                patience,
                moved.as_mut_ptr(),
            )
        };
        self.cycles += cycles;
        out.last = out_last.into_iter().map(|l| l != 0).collect();
        out.truncate((moved[1] as usize).min(expected));
        Moved { beats: out, sent: moved[0] as usize, got: moved[1] as usize, cycles }
    }

    /// Why the instance stopped for good (the design ran `$stop` or `$fatal`, or the Verilator
    /// runtime failed): every later call does nothing. `None` while it runs.
    pub fn failed(&self) -> Option<String> {
        // SAFETY: `handle` is live; the shim returns null or a NUL-terminated string the instance
        // owns, copied here before any other call.
        let p = unsafe { (self.model.api.failed)(self.handle) };
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    /// Clock periods run since instantiation.
    pub fn cycle_count(&self) -> u64 {
        self.cycles
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: `handle` came from `new` and is freed only here; the library outlives it via `model`.
        unsafe { (self.model.api.free)(self.handle) }
    }
}

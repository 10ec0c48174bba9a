//! A model's CPU code behind the C ABI (`spork_kernel.h`): C/C++ sources compiled into the cache by
//! content hash, or the user's own library; opened with libloading, its version checked, and one
//! state per worker.

use std::ffi::{CStr, CString, c_char, c_void};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use libloading::Library;
use sha2::{Digest, Sha256};
use spork_kernel::ffi::{self, DescribeFn, InitFn, ReleaseFn, RunFn};
use spork_sim::bounded::Ran;

use super::spec::{CpuCode, CpuSpec, ModelSpec};
use super::tensor::TensorBuf;

/// The header a kernel is compiled against.
pub const HEADER: &str = include_str!("../../../../kernel-abi/include/spork_kernel.h");

/// Room for a kernel's error message.
const ERR_LEN: usize = 1024;

/// Why a model's CPU code cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AbiError {
    /// The C/C++ sources did not compile.
    #[error(
        "compiling {model}'s CPU sources failed:\n{log}\n  fix: correct the sources (messages name file:line); \
         list every file they include in [cpu] headers"
    )]
    Compile {
        /// The model's name.
        model: String,
        /// The compiler's output, which names file:line.
        log: String,
    },
    /// No compiler could be run: which one, and why.
    #[error(
        "no C compiler: {0}\n  fix: install one (Debian/Ubuntu: apt-get install -y gcc g++) or set CC/CXX"
    )]
    NoCompiler(String),
    /// The library could not be opened (not a shared library for this machine).
    #[error(
        "cannot open {path}: {reason}\n  fix: build the library for this machine, or list its sources in [cpu] sources"
    )]
    Open {
        /// The library.
        path: PathBuf,
        /// The loader's message.
        reason: String,
    },
    /// The library lacks one of the ABI's four functions.
    #[error(
        "{path} does not export {symbol}\n  fix: define all four functions of spork_kernel.h (describe, init, run, \
         release) with C linkage (extern \"C\" in C++)"
    )]
    Symbol {
        /// The library.
        path: PathBuf,
        /// The missing function.
        symbol: &'static str,
    },
    /// The library was built against another ABI version.
    #[error(
        "{path} was built against ABI version {found}; this Spork takes version {expected}\n  fix: rebuild it \
         against this Spork's spork_kernel.h"
    )]
    Version {
        /// The library.
        path: PathBuf,
        /// The version it was built against (0: `spork_kernel_describe` returned null).
        found: u32,
        /// This Spork's version.
        expected: u32,
    },
    /// `spork_kernel_init` gave no state.
    #[error("{model}: spork_kernel_init failed: {message}")]
    Init {
        /// The name the library gives itself.
        model: String,
        /// The kernel's own message.
        message: String,
    },
    /// Reading a source or writing the cache failed (the path and the error).
    #[error("{0}")]
    Io(String),
}

/// An opened library with the ABI's four functions.
pub struct CpuLibrary {
    name: String,
    path: PathBuf,
    config: CString,
    init: InitFn,
    run: RunFn,
    release: ReleaseFn,
    // Last: unloaded after the function pointers above are gone.
    _lib: Library,
}

impl std::fmt::Debug for CpuLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuLibrary({}, {})", self.name, self.path.display())
    }
}

impl CpuLibrary {
    /// The library for `model`'s `[cpu]`: built (or found in the cache) and opened.
    pub fn load(model: &ModelSpec, cpu: &CpuSpec) -> Result<Arc<CpuLibrary>, AbiError> {
        CpuLibrary::open(&CpuLibrary::build(model, cpu)?, &cpu.config).map(Arc::new)
    }

    /// The library's path for `model`'s `[cpu]`: its sources compiled (or found in the cache), or
    /// the user's own library, not opened here.
    pub fn build(model: &ModelSpec, cpu: &CpuSpec) -> Result<PathBuf, AbiError> {
        match &cpu.code {
            CpuCode::Library(p) => snapshot(&model.name, p),
            CpuCode::Sources(s) => compile(&model.name, &model.dir, s, &cpu.headers),
        }
    }

    /// Opens `path` and checks it is a kernel of this ABI.
    pub fn open(path: &Path, config: &str) -> Result<CpuLibrary, AbiError> {
        // SAFETY: loading runs the library's initialisers; a model's library is code its operator
        // chose to serve, as a Triton backend is.
        let lib = unsafe { Library::new(path) }
            .map_err(|e| AbiError::Open { path: path.to_path_buf(), reason: e.to_string() })?;
        let sym = |name: &'static str| AbiError::Symbol { path: path.to_path_buf(), symbol: name };
        // SAFETY: each symbol is declared in spork_kernel.h with exactly these signatures.
        let (describe, init, run, release) = unsafe {
            (
                *lib.get::<DescribeFn>(b"spork_kernel_describe").map_err(|_| sym("spork_kernel_describe"))?,
                *lib.get::<InitFn>(b"spork_kernel_init").map_err(|_| sym("spork_kernel_init"))?,
                *lib.get::<RunFn>(b"spork_kernel_run").map_err(|_| sym("spork_kernel_run"))?,
                *lib.get::<ReleaseFn>(b"spork_kernel_release").map_err(|_| sym("spork_kernel_release"))?,
            )
        };
        // SAFETY: describe takes nothing and returns static data (or null, refused below).
        let info = unsafe { describe() };
        if info.is_null() {
            return Err(AbiError::Version {
                path: path.to_path_buf(),
                found: 0,
                expected: spork_kernel::ABI_VERSION,
            });
        }
        // SAFETY: non-null, pointing to the library's static `spork_kernel_info`.
        let info = unsafe { &*info };
        if info.abi_version != spork_kernel::ABI_VERSION {
            return Err(AbiError::Version {
                path: path.to_path_buf(),
                found: info.abi_version,
                expected: spork_kernel::ABI_VERSION,
            });
        }
        let name = if info.name.is_null() {
            String::new()
        } else {
            // SAFETY: a NUL-terminated static string.
            unsafe { CStr::from_ptr(info.name) }.to_string_lossy().into_owned()
        };
        let config = CString::new(config.replace('\0', "")).unwrap_or_default();
        Ok(CpuLibrary { name, path: path.to_path_buf(), config, init, run, release, _lib: lib })
    }

    /// The name the library gives itself.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A worker's state: `spork_kernel_init` called once.
    pub fn instance(self: &Arc<Self>) -> Result<CpuKernel, AbiError> {
        let mut err = [0 as c_char; ERR_LEN];
        // SAFETY: `config` is NUL-terminated and `err` has ERR_LEN bytes.
        let state = unsafe { (self.init)(self.config.as_ptr(), err.as_mut_ptr(), ERR_LEN) };
        if state.is_null() {
            return Err(AbiError::Init { model: self.name.clone(), message: message(&err) });
        }
        Ok(CpuKernel { lib: self.clone(), state })
    }
}

/// One worker's kernel state. Used from one thread at a time (`&mut self`), as the ABI promises.
pub struct CpuKernel {
    lib: Arc<CpuLibrary>,
    state: *mut c_void,
}

// SAFETY: the ABI lets a state move between threads as long as one call runs on it at a time, which
// `&mut self` on `run` guarantees.
unsafe impl Send for CpuKernel {}

impl CpuKernel {
    /// Runs one request: `outputs` already sized from the inputs' shapes. The kernel's own message
    /// on failure.
    pub fn run(
        &mut self,
        names: (&[CString], &[CString]),
        inputs: &[TensorBuf],
        outputs: &mut [TensorBuf],
    ) -> Result<(), String> {
        let raw = |t: &TensorBuf, name: &CString, data: *mut c_void| ffi::Tensor {
            name: name.as_ptr(),
            dtype: t.dtype as u32,
            rank: t.shape.len() as u32,
            shape: t.shape.as_ptr(),
            bytes: t.len() as u64,
            data,
        };
        // Inputs are the request's own buffers, not copies: the ABI makes them read-only (the
        // header's contract; a kernel runs in this process and could write anywhere anyway).
        let ins: Vec<ffi::Tensor> =
            inputs.iter().zip(names.0).map(|(t, n)| raw(t, n, t.as_ptr().cast_mut().cast())).collect();
        let mut outs: Vec<ffi::Tensor> = outputs
            .iter_mut()
            .zip(names.1)
            .map(|(t, n)| {
                let data = t.as_mut_ptr().cast();
                raw(t, n, data)
            })
            .collect();
        // SAFETY: every tensor points into a live, aligned, correctly sized buffer borrowed for the call.
        unsafe { self.run_raw(&ins, &mut outs) }
    }

    /// Runs one request on tensors already laid out for the ABI (a kernel process's window).
    ///
    /// # Safety
    /// Every tensor's name, shape and data point to live buffers of the sizes it states, data
    /// aligned to 8 bytes, for the whole call.
    pub unsafe fn run_raw(&mut self, ins: &[ffi::Tensor], outs: &mut [ffi::Tensor]) -> Result<(), String> {
        let mut err = [0 as c_char; ERR_LEN];
        // SAFETY: the caller's promise for the tensors; `err` has ERR_LEN bytes; `state` came from
        // this library's init.
        let rc = unsafe {
            (self.lib.run)(
                self.state,
                ins.as_ptr(),
                ins.len() as u32,
                outs.as_mut_ptr(),
                outs.len() as u32,
                err.as_mut_ptr(),
                ERR_LEN,
            )
        };
        if rc == 0 { Ok(()) } else { Err(message(&err)) }
    }
}

impl Drop for CpuKernel {
    fn drop(&mut self) {
        // SAFETY: `state` came from init and is released exactly once.
        unsafe { (self.lib.release)(self.state) }
    }
}

/// The message a kernel wrote (NUL-terminated; a missing NUL is cut at the buffer's end).
fn message(err: &[c_char]) -> String {
    let bytes: Vec<u8> = err.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    let m = String::from_utf8_lossy(&bytes).trim().to_string();
    if m.is_empty() { "the kernel failed without a message".into() } else { m }
}

/// The most bytes a user's own library may hold.
pub(crate) const LIBRARY_MAX: u64 = 256 << 20;

/// A copy of the user's own library in the cache, keyed by its content, so that what is opened is
/// what was checked: the model's file may be overwritten while it is served (a library rewritten
/// under a process that mapped it can crash that process). Read once, within [`LIBRARY_MAX`].
fn snapshot(model: &str, path: &Path) -> Result<PathBuf, AbiError> {
    let io = |e: std::io::Error| AbiError::Io(format!("{}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() || meta.len() > LIBRARY_MAX {
        return Err(AbiError::Io(format!(
            "{}: not a regular file of at most {LIBRARY_MAX} bytes ({} bytes)",
            path.display(),
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(path).and_then(|f| f.take(LIBRARY_MAX + 1).read_to_end(&mut bytes)).map_err(io)?;
    if bytes.len() as u64 > LIBRARY_MAX {
        return Err(AbiError::Io(format!("{}: grew past {LIBRARY_MAX} bytes while read", path.display())));
    }
    let key: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    let dir = spork_sim::cache::cache_dir().join("cpu-library").join(&key);
    let lib = dir.join(format!("libspork_user_{model}.so"));
    if lib.is_file() {
        return Ok(lib);
    }
    let scratch = dir.with_extension(format!("tmp-{}", spork_sim::cache::scratch_suffix()));
    let written = std::fs::create_dir_all(&scratch)
        .and_then(|()| std::fs::write(scratch.join(lib.file_name().unwrap_or_default()), &bytes));
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&scratch);
        return Err(AbiError::Io(format!("{}: {e}", scratch.display())));
    }
    if std::fs::rename(&scratch, &dir).is_err() {
        // Another load wrote the same content first.
        let _ = std::fs::remove_dir_all(&scratch);
    }
    Ok(lib)
}

/// Compiles `sources` (relative to `dir`; `headers` are the files they include) into the cache,
/// keyed by those files' content, the header and the compiler; returns the library's path. Only the
/// named files are read (each a regular file within `bounded::FILE_MAX`), copied into a scratch
/// folder and compiled there, so the compiler sees no other file of the model's folder (an include
/// of an unnamed file fails and says to name it) and runs within the build limit.
fn compile(model: &str, dir: &Path, sources: &[PathBuf], headers: &[PathBuf]) -> Result<PathBuf, AbiError> {
    let cplusplus = sources.iter().any(|s| s.extension().is_some_and(|e| e != "c"));
    let (var, default) = if cplusplus { ("CXX", "c++") } else { ("CC", "cc") };
    let compiler = std::env::var(var).unwrap_or_else(|_| default.to_string());
    let mut h = Sha256::new();
    for part in ["spork cpu kernel 2", HEADER, &compiler, model] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let mut files = Vec::new();
    for s in sources.iter().chain(headers) {
        let bytes = spork_sim::bounded::read_file(&dir.join(s))
            .map_err(|e| AbiError::Io(format!("{}: {e}", dir.join(s).display())))?;
        h.update(s.display().to_string().as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
        files.push((s, bytes));
    }
    let key: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let root = spork_sim::cache::cache_dir().join("cpu");
    let done = root.join(&key);
    let lib = done.join(format!("libspork_cpu_{model}.so"));
    if lib.is_file() {
        return Ok(lib);
    }
    let scratch = root.join(format!("{key}.tmp-{}", spork_sim::cache::scratch_suffix()));
    let result = build_in(&scratch, &compiler, model, &files, sources, &lib);
    if result.is_err() || std::fs::rename(&scratch, &done).is_err() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    result.map(|()| lib)
}

/// Writes `files` into `scratch/src`, the ABI's header into `scratch/include`, and compiles
/// `sources` there into `scratch/<lib's name>`.
fn build_in(
    scratch: &Path,
    compiler: &str,
    model: &str,
    files: &[(&PathBuf, Vec<u8>)],
    sources: &[PathBuf],
    lib: &Path,
) -> Result<(), AbiError> {
    let io = |e: std::io::Error| AbiError::Io(format!("{}: {e}", scratch.display()));
    let src = scratch.join("src");
    std::fs::create_dir_all(scratch.join("include")).map_err(io)?;
    std::fs::write(scratch.join("include/spork_kernel.h"), HEADER).map_err(io)?;
    for (rel, bytes) in files {
        let to = src.join(rel);
        std::fs::create_dir_all(to.parent().unwrap_or(&src)).map_err(io)?;
        std::fs::write(&to, bytes).map_err(io)?;
    }
    let out = scratch.join(lib.file_name().unwrap_or_default());
    let mut cmd = Command::new(compiler);
    cmd.current_dir(&src)
        .args(["-O2", "-fPIC", "-shared", "-Wall"])
        .arg(format!("-I{}", scratch.join("include").display()))
        // `./`: a source is never read as a flag, whatever its name.
        .args(sources.iter().map(|s| Path::new(".").join(s)))
        .arg("-o")
        .arg(&out);
    let limits = spork_sim::bounded::limits();
    match spork_sim::bounded::run(&mut cmd, limits.compile, limits.output) {
        Err(e) => Err(AbiError::NoCompiler(format!("{compiler}: {e}"))),
        Ok(Ran::Ended { success: true, .. }) => Ok(()),
        Ok(Ran::Ended { log, .. }) => Err(AbiError::Compile { model: model.into(), log: log.trim().into() }),
        Ok(Ran::TimedOut { log }) => Err(AbiError::Compile {
            model: model.into(),
            log: format!(
                "{}\nthe compiler was killed after {:?} (the build limit; spork serve --build-timeout sets it)",
                log.trim(),
                limits.compile
            ),
        }),
    }
}

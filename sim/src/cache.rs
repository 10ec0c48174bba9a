//! Verilated models of a model repository's RTL, built at run time and cached by content hash: the
//! same sources, top, tools and shim give the same key, so a second load (or a second process, or
//! `spork kernel build` ahead of time) reuses the library instead of verilating again.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::SimError;
use crate::verilate::{self, Design, Toolchain, VerilateError};

/// A verilated design ready to load.
#[derive(Clone, Debug)]
pub struct Built {
    /// The model library.
    pub library: PathBuf,
    /// Whether it came from the cache.
    pub cached: bool,
    /// Time spent finding or building it.
    pub took: Duration,
    /// The content hash it is filed under.
    pub key: String,
}

/// Where cached models live: `$SPORK_CACHE_DIR`, else `$XDG_CACHE_HOME/spork`, else `~/.cache/spork`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SPORK_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("spork");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".cache/spork"),
        None => std::env::temp_dir().join("spork-cache"),
    }
}

/// `design` verilated into the cache (built now unless already there).
pub fn verilated(design: &Design) -> Result<Built, SimError> {
    let start = Instant::now();
    let tools = Toolchain::find()?;
    let runtime = runtime(&tools)?;
    let key = key(design, &tools, &runtime)?;
    let root = cache_dir().join("verilated");
    let done = root.join(&key);
    let library = done.join(format!("libspork_model_{}.so", design.name));
    if library.is_file() {
        return Ok(Built { library, cached: true, took: start.elapsed(), key });
    }
    // Build beside the final place, then rename: a reader never sees half a model, and of two
    // processes building the same key, one rename wins and the other's copy is dropped.
    let scratch = root.join(format!("{key}.tmp-{}", scratch_suffix()));
    std::fs::create_dir_all(&scratch).map_err(|e| io(&scratch, e))?;
    let built = verilate::build(&tools, design, &scratch, &runtime);
    if let Err(e) = built {
        let _ = std::fs::remove_dir_all(&scratch);
        return Err(e.into());
    }
    if std::fs::rename(&scratch, &done).is_err() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    if !library.is_file() {
        return Err(io(&library, std::io::Error::other("the built model vanished from the cache")));
    }
    Ok(Built { library, cached: false, took: start.elapsed(), key })
}

/// The Verilator runtime: the one built with this crate if it is still there, else one compiled
/// into the cache (once per Verilator version and compiler).
fn runtime(tools: &Toolchain) -> Result<PathBuf, SimError> {
    let built = crate::built_models_dir().join("libspork_verilated.so");
    if built.is_file() {
        return Ok(built);
    }
    let what = [
        &tools.version,
        &tools.cxx.display().to_string(),
        verilate::FATAL,
        &verilate::PRINT_TO_STDERR.join(" "),
    ];
    let tag = hex(&Sha256::digest(what.join("\n")))[..16].to_string();
    let dir = cache_dir().join("runtime").join(tag);
    let lib = dir.join("libspork_verilated.so");
    if lib.is_file() {
        return Ok(lib);
    }
    let scratch = dir.with_extension(format!("tmp-{}", scratch_suffix()));
    std::fs::create_dir_all(&scratch).map_err(|e| io(&scratch, e))?;
    tools.build_runtime(&scratch)?;
    if std::fs::rename(&scratch, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    Ok(lib)
}

/// The content hash of everything that goes into the library.
fn key(design: &Design, tools: &Toolchain, runtime: &Path) -> Result<String, SimError> {
    let mut h = Sha256::new();
    for part in ["spork-sim model 1", &tools.version, &tools.cxx.display().to_string(), verilate::SHIM] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    for part in [&design.name, &design.top, &runtime.display().to_string()] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.update([u8::from(design.strict)]);
    for file in design.sources.iter().chain(&design.waivers) {
        let path = design.dir.join(file);
        let bytes = crate::bounded::read_file(&path).map_err(|e| io(&path, e))?;
        h.update(file.display().to_string().as_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(hex(&h.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A name no other build, in this process or another, is using for its scratch folder: the
/// process id and a per-process counter (threads of one process build at once too).
pub fn scratch_suffix() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

fn io(path: &Path, error: std::io::Error) -> SimError {
    SimError::Verilate(VerilateError::Io { path: path.to_path_buf(), error })
}

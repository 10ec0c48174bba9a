//! Spork's own model repository (`models/` in the source tree: sobel, bloom and dense), embedded in
//! the binary and written to the cache on first use, so an installed `spork` serves it with no
//! source tree at hand. It is the default of `spork serve` and `spork worker`, loaded through
//! exactly the path a user's repository takes.

use std::path::PathBuf;

use include_dir::{Dir, include_dir};

use super::kernel::RepoKernel;
use sha2::{Digest, Sha256};

static MODELS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../models");

/// The models it holds, by name.
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = MODELS
        .dirs()
        .filter(|d| d.get_file(d.path().join("model.toml")).is_some())
        .filter_map(|d| d.path().to_str())
        .collect();
    names.sort_unstable();
    names
}

/// Why one of Spork's own models did not load.
#[derive(Debug, thiserror::Error)]
pub enum OwnError {
    /// Not one of them.
    #[error(
        "unknown model '{0}': Spork's own are {names}\n  fix: use sobel, bloom or dense, or give --model-repository DIR holding a model of your own",
        names = names().join(", ")
    )]
    Unknown(String),
    /// The repository could not be written to the cache.
    #[error(
        "cannot write Spork's own model repository into the cache: {0}\n  fix: set SPORK_CACHE_DIR to a writable folder"
    )]
    Cache(#[from] std::io::Error),
    /// Its model.toml did not load (a defect of this build).
    #[error(transparent)]
    Spec(#[from] spork_core::input::InputError),
    /// Its C code or RTL did not build here.
    #[error(transparent)]
    Load(#[from] super::kernel::LoadError),
}

/// Model `name`, loaded exactly as a user's model is (its RTL verilated too when `sim`).
pub fn load(name: &str, sim: bool) -> Result<RepoKernel, OwnError> {
    if !names().contains(&name) {
        return Err(OwnError::Unknown(name.to_string()));
    }
    let spec = super::spec::load(&dir()?.join(name))?;
    Ok(RepoKernel::load(spec, sim)?)
}

/// The folder holding it, in the cache under the content hash of its files: written once (in a
/// scratch folder renamed into place, so a concurrent start never sees half of it).
pub fn dir() -> std::io::Result<PathBuf> {
    let root = spork_sim::cache::cache_dir().join("models");
    let done = root.join(hash());
    if done.is_dir() {
        return Ok(done);
    }
    let scratch = root.join(format!("scratch-{}", spork_sim::cache::scratch_suffix()));
    std::fs::create_dir_all(&scratch)?;
    MODELS.extract(&scratch)?;
    if std::fs::rename(&scratch, &done).is_err() {
        // Another process put it there first.
        let _ = std::fs::remove_dir_all(&scratch);
    }
    if done.is_dir() {
        Ok(done)
    } else {
        Err(std::io::Error::other(format!("{} was not written", done.display())))
    }
}

/// The hash of every file's path and contents.
fn hash() -> String {
    let mut files = Vec::new();
    collect(&MODELS, &mut files);
    files.sort_by_key(|f| f.path());
    let mut h = Sha256::new();
    for f in files {
        h.update(f.path().to_string_lossy().as_bytes());
        h.update((f.contents().len() as u64).to_le_bytes());
        h.update(f.contents());
    }
    h.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn collect<'a>(dir: &'a Dir<'a>, out: &mut Vec<&'a include_dir::File<'a>>) {
    out.extend(dir.files());
    for d in dir.dirs() {
        collect(d, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_holds_the_three_kernels_and_each_loads() {
        assert_eq!(names(), ["bloom", "dense", "sobel"]);
        let dir = dir().expect("written to the cache");
        for name in names() {
            let spec = super::super::spec::load(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(spec.name, name);
            assert!(spec.cpu.is_some() && spec.sim.is_some() && spec.timing.is_some(), "{name}");
        }
        assert_eq!(dir, super::dir().expect("found again"), "one folder per content");
    }
}

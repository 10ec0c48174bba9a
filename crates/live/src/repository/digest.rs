//! A model folder's identity across hosts: the SHA-256 of its `model.toml` and of every file it
//! names (sources, headers, a CPU library, RTL), each read within its bound. A scheduler leases a
//! worker host's slot for a model by this digest, not by its name alone, so a host whose folder of
//! that name holds other code (an older build, another user's model) refuses the lease instead of
//! answering with other code. Files the model names only for a board (an `.xclbin`) are not in it:
//! a worker host's board images are its own (`spork worker --xclbin`).

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::cpu::LIBRARY_MAX;
use super::spec::{CpuCode, ModelSpec};

/// The digest of `spec`'s folder, as lowercase hex; an error names the file that cannot be read.
pub fn digest(spec: &ModelSpec) -> Result<String, String> {
    let mut h = Sha256::new();
    h.update(b"spork model digest 1\0");
    let mut named: Vec<(&Path, u64)> = vec![(Path::new("model.toml"), spork_sim::bounded::FILE_MAX)];
    if let Some(cpu) = &spec.cpu {
        match &cpu.code {
            CpuCode::Sources(s) => {
                named.extend(s.iter().map(|p| (p.as_path(), spork_sim::bounded::FILE_MAX)))
            }
            CpuCode::Library(p) => named.push((p.as_path(), LIBRARY_MAX)),
        }
        named.extend(cpu.headers.iter().map(|p| (p.as_path(), spork_sim::bounded::FILE_MAX)));
    }
    if let Some(sim) = &spec.sim {
        named.extend(sim.sources.iter().map(|p| (p.as_path(), spork_sim::bounded::FILE_MAX)));
    }
    for (path, max) in named {
        let full = spec.dir.join(path);
        let fail = |e: std::io::Error| format!("{}: {e}", full.display());
        h.update(path.display().to_string().as_bytes());
        h.update([0]);
        let file = std::fs::File::open(&full).map_err(fail)?;
        let read = std::io::copy(&mut file.take(max + 1), &mut h).map_err(fail)?;
        if read > max {
            return Err(format!("{}: past the bound of {max} bytes", full.display()));
        }
        h.update(read.to_le_bytes());
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(dir: &Path, body: &str) -> ModelSpec {
        std::fs::write(dir.join("k.c"), body).expect("write");
        let toml = r#"format = 1
items = ["n"]
[dims]
n = { min = 1, max = 8 }
[[input]]
name = "x"
datatype = "UINT8"
shape = ["n"]
[[output]]
name = "y"
datatype = "UINT8"
shape = ["n"]
[cpu]
sources = ["k.c"]
"#;
        std::fs::write(dir.join("model.toml"), toml).expect("write");
        super::super::spec::load(dir).expect("a valid model")
    }

    #[test]
    fn the_digest_follows_the_named_files_and_nothing_else() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("k");
        std::fs::create_dir(&dir).expect("mkdir");
        let first = digest(&model(&dir, "int a;")).expect("digest");
        assert_eq!(first.len(), 64);
        std::fs::write(dir.join("notes.txt"), "not named").expect("write");
        assert_eq!(digest(&model(dir.as_path(), "int a;")).expect("digest"), first, "an unnamed file");
        assert_ne!(digest(&model(dir.as_path(), "int b;")).expect("digest"), first, "a named file changed");
        let spec = model(dir.as_path(), "int a;");
        std::fs::remove_file(dir.join("k.c")).expect("rm");
        assert!(digest(&spec).expect_err("missing").contains("k.c"));
    }
}

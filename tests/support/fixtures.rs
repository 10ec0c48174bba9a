//! Model folders for tests, assembled from tests/fixtures/kernels: a model may name only files
//! inside its own folder, so fixtures that share satadd's sources get copies at test time rather
//! than paths that lead out of their folders.

use std::path::{Path, PathBuf};

/// A fixture folder, by its path under tests/fixtures/kernels.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kernels").join(name)
}

/// Copies the folder `from` into `to`, recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("list").flatten() {
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).expect("copy");
        }
    }
}

/// Fixture `name` in `scratch` with satadd's folders `shares` (`cpu`, `rtl`) under its own files:
/// its model.toml names them as its own. The folder keeps the fixture's last name (the model's).
pub fn on_satadd(name: &str, shares: &[&str], scratch: &Path) -> PathBuf {
    let to = scratch.join(Path::new(name).file_name().expect("a fixture's name"));
    for dir in shares {
        copy_dir(&fixture("satadd").join(dir), &to.join(dir));
    }
    copy_dir(&fixture(name), &to);
    to
}

/// Rewrites the file at `path` as `edit` says; the edit must change it (a fixture that no longer
/// holds the text it replaces fails here, not in a test that then proves nothing).
pub fn edit_file(path: &Path, edit: impl FnOnce(&str) -> String) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let edited = edit(&text);
    assert_ne!(text, edited, "{}: the edit changed nothing", path.display());
    std::fs::write(path, edited).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

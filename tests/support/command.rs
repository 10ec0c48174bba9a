//! What the tests that run `spork` read of a finished command, and the build cache they share.

use std::path::PathBuf;
use std::process::Output;

/// A command's stdout then stderr, for assertions and failure messages.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A cache shared by the tests of one binary (`binary` names it) that do not measure it: the
/// fixtures verilate and compile once.
pub fn shared_cache(binary: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spork-{binary}-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

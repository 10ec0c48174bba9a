//! A platform file whose board costs next to nothing, for the tests that need SporkE to hold a
//! board whatever this machine's speed: the live allocator weighs the work the requests really
//! took, and at the paper's powers a light test load on a fast machine is worth no board.

use std::path::{Path, PathBuf};

/// Writes `dir/platform.toml` (FPGA idle 0.01 W, busy 1 W, and `spin_up` if given) and returns
/// its path.
pub fn cheap_board(dir: &Path, spin_up: Option<&str>) -> PathBuf {
    let spin_up = spin_up.map(|s| format!("spin_up = \"{s}\"\n")).unwrap_or_default();
    let platform = dir.join("platform.toml");
    std::fs::write(&platform, format!("[fpga]\n{spin_up}idle_power_w = 0.01\nbusy_power_w = 1.0\n"))
        .expect("write the platform file");
    platform
}

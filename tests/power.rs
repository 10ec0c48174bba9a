//! Power meters on fake sysfs trees (tests/fixtures/sysfs) and a real-format xbutil report.

use std::path::{Path, PathBuf};

use spork::backend::power::{AlveoSysfs, Modelled, PowerError, PowerMeter, Rapl, detect, parse_xbutil_power};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// A writable copy of the fake sysfs tree.
fn sysfs() -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for e in std::fs::read_dir(from).expect("read fixture dir") {
            let p = e.expect("entry").path();
            let dest = to.join(p.file_name().expect("name"));
            if p.symlink_metadata().expect("metadata").file_type().is_symlink() {
                std::os::unix::fs::symlink(std::fs::read_link(&p).expect("link"), &dest).expect("symlink");
            } else if p.is_dir() {
                copy(&p, &dest)
            } else {
                std::fs::copy(&p, &dest).map(|_| ()).expect("copy")
            }
        }
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    copy(&fixtures().join("sysfs"), tmp.path());
    tmp
}

#[test]
fn rapl_sums_packages_and_survives_counter_wraparound() {
    let sys = sysfs();
    let root = sys.path().join("class/powercap");
    let mut rapl = Rapl::open(&root).expect("rapl");
    assert!(rapl.measured());
    let name = rapl.name();
    assert!(name.contains("package-0") && name.contains("package-1") && !name.contains("core"), "{name}");
    assert_eq!(rapl.energy_j().expect("read"), 0.0);
    // Package 0 wraps (262143000000 -> 1000 over a range of 262143328850 uJ); package 1 adds 2 J.
    std::fs::write(root.join("intel-rapl:0/energy_uj"), "1000\n").expect("write");
    std::fs::write(root.join("intel-rapl:1/energy_uj"), "3000000\n").expect("write");
    let j = rapl.energy_j().expect("read");
    assert!((j - (0.329_850 + 2.0)).abs() < 1e-9, "{j}");
}

#[test]
fn rapl_errors_name_the_problem() {
    let sys = sysfs();
    assert!(matches!(Rapl::open(&sys.path().join("nowhere")), Err(PowerError::Absent { .. })));
    let root = sys.path().join("class/powercap");
    std::fs::write(root.join("intel-rapl:1/energy_uj"), "garbage").expect("write");
    let err = Rapl::open(&root).err().expect("error").to_string();
    assert!(err.contains("intel-rapl:1/energy_uj") && err.contains("garbage"), "{err}");
}

#[test]
fn alveo_reads_xmc_or_the_hwmon_total() {
    let sys = sysfs();
    let devices = sys.path().join("bus/pci/devices");
    let xmc = AlveoSysfs::open(&devices.join("0000:3b:00.1")).expect("xmc board");
    assert!((xmc.watts().expect("watts") - 23.5).abs() < 1e-9);
    let hwmon = AlveoSysfs::open(&devices.join("0000:d8:00.1")).expect("hwmon board");
    assert!((hwmon.watts().expect("watts") - 31.25).abs() < 1e-9, "the input labelled Total Power");
    assert!(AlveoSysfs::open(&devices.join("0000:00:1f.0")).is_err(), "not a board");
}

#[test]
fn alveo_integrates_power_into_energy() {
    let sys = sysfs();
    let mut m = AlveoSysfs::open(&sys.path().join("bus/pci/devices/0000:3b:00.1")).expect("board");
    assert_eq!(m.energy_j().expect("first sample"), 0.0);
    std::thread::sleep(std::time::Duration::from_millis(50));
    let j = m.energy_j().expect("second sample");
    assert!(j > 23.5 * 0.04 && j < 23.5 * 1.0, "{j}");
}

#[test]
fn detect_finds_every_sensor_in_the_tree() {
    let sys = sysfs();
    let meters = detect(sys.path());
    let names: Vec<String> = meters.iter().map(|m| m.name()).collect();
    assert_eq!(meters.len(), 3, "{names:?}");
    assert!(names[0].starts_with("RAPL"));
    assert!(meters.iter().all(|m| m.measured()));
    assert!(detect(Path::new("/nonexistent")).is_empty());
}

#[test]
fn xbutil_json_gives_the_board_power() {
    let json = std::fs::read_to_string(fixtures().join("xbutil-electrical.json")).expect("fixture");
    assert!((parse_xbutil_power(&json).expect("power") - 24.61).abs() < 1e-9);
    let na = json.replace("\"24.61\"", "\"N/A\"");
    assert!(matches!(parse_xbutil_power(&na), Err(PowerError::Unavailable(_))));
    assert!(parse_xbutil_power("{}").is_err());
    assert!(parse_xbutil_power("not json").is_err());
}

#[test]
fn the_modelled_meter_says_so() {
    let mut m = Modelled::new("CPU worker busy", 150.0);
    assert!(!m.measured());
    assert!(m.name().contains("modelled"));
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(m.energy_j().expect("model") > 150.0 * 0.015);
}

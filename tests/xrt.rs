//! The XRT binding end to end (feature `xrt`): pre-flight errors before any XRT call, and the real
//! binding code driving the loopback XRT (tests/xrt_loopback, a libxrt_coreutil.so.2 backed by the
//! Verilated kernels) in a live `spork run --board alveo`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
#[path = "support/boards.rs"]
mod boards;

/// One loopback board at a time: its kernels are Verilated, and two runs on CI's 2 cores make each
/// other's boards fall behind their bookings (the time-shared test once saw its second model never
/// get the board while the other tests' boards ran beside it).
static ONE_BOARD_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds the board for a test; a test that failed holding it does not fail the others.
fn one_board() -> std::sync::MutexGuard<'static, ()> {
    ONE_BOARD_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn sysfs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/sysfs")
}

fn loopback() -> &'static str {
    spork::XRT_LOOPBACK
}

/// `spork` with the loopback XRT in front of the real one.
fn spork(args: &[&str], xrt: bool) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_spork"));
    c.args(args).env("LD_LIBRARY_PATH", loopback()).env("SPORK_SIM_MODELS", spork_sim::built_models_dir());
    if xrt {
        c.env("XILINX_XRT", loopback());
    } else {
        c.env_remove("XILINX_XRT");
    }
    c.output().expect("spork runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A loopback xclbin: the real magic, then what the loopback reads (`extra`: more of its lines).
fn xclbin(dir: &Path, name: &str, kernel: &str, uuid: &str, extra: &str) -> String {
    let p = dir.join(name);
    let mut bytes = b"xclbin2\0".to_vec();
    bytes.extend(format!("spork-loopback\nkernel={kernel}\nuuid={uuid}\n{extra}").as_bytes());
    std::fs::write(&p, bytes).expect("write xclbin");
    p.to_string_lossy().into_owned()
}

fn run_args<'a>(xclbin: &'a str, sys: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "run",
        "--board",
        "alveo",
        "--device",
        "0000:3b:00.1",
        "--sys",
        sys,
        "--xclbin",
        xclbin,
        "--scheduler",
        "spork-e",
        "--duration",
        "3s",
        "--rate",
        "300",
        "--fpga-spinup",
        "200ms",
        "--clock-mhz",
        "250",
        "--json",
    ];
    v.extend_from_slice(extra);
    v
}

#[test]
fn preflight_refuses_before_any_xrt_call() {
    let tmp = tempfile::tempdir().expect("tmp");
    let good = xclbin(tmp.path(), "a.xclbin", "sobel", &"ab".repeat(16), "");
    let sys = sysfs();
    let sys = sys.to_str().expect("utf8");
    let cases: Vec<(Vec<&str>, bool, &str)> = vec![
        (run_args(&good, sys, &[]), false, "XILINX_XRT is not set"),
        (run_args(&good, "/nonexistent", &[]), true, "no Xilinx board bound to the XRT driver"),
        (run_args("/nonexistent.xclbin", sys, &[]), true, "cannot open"),
        (run_args(sys, sys, &[]), true, "shorter than an xclbin header"),
    ];
    for (args, xrt, needle) in cases {
        let o = spork(&args, xrt);
        assert!(!o.status.success(), "{args:?}");
        assert!(text(&o).contains(needle) && text(&o).contains("fix"), "{args:?}: {}", text(&o));
    }
    // A board bound to xocl but no device node beside the sysfs tree.
    let bare = tmp.path().join("bare/sys/bus/pci/devices/0000:3b:00.1");
    std::fs::create_dir_all(&bare).expect("mkdir");
    std::fs::write(bare.join("vendor"), "0x10ee\n").expect("vendor");
    std::os::unix::fs::symlink("../../drivers/xocl", bare.join("driver")).expect("driver link");
    let bare_sys = tmp.path().join("bare/sys");
    let o = spork(&run_args(&good, bare_sys.to_str().expect("utf8"), &[]), true);
    assert!(text(&o).contains("no XRT device node"), "{}", text(&o));
    let not_xclbin = tmp.path().join("x.xclbin");
    std::fs::write(&not_xclbin, "hello, not an image").expect("write");
    let o = spork(&run_args(not_xclbin.to_str().expect("utf8"), sys, &[]), true);
    assert!(text(&o).contains("no xclbin2 magic"), "{}", text(&o));
    let mut wrong = run_args(&good, sys, &[]);
    wrong[4] = "0000:99:00.0";
    let o = spork(&wrong, true);
    assert!(
        text(&o).contains("no Xilinx board at 0000:99:00.0") && text(&o).contains("0000:3b:00.1"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_live_run_drives_the_loopback_board_through_the_real_binding() {
    let _board = one_board();
    let tmp = tempfile::tempdir().expect("tmp");
    // Spork's own sobel (models/sobel, the default model), its verilated RTL behind the loopback.
    let library = built_library(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/sobel"));
    let extra = format!("model={library}\nscalars=width\n");
    let a = xclbin(tmp.path(), "sobel-a.xclbin", "sobel8_stream", &"0123456789abcdef".repeat(2), &extra);
    let b = xclbin(tmp.path(), "sobel-b.xclbin", "sobel8_stream", &"fedcba9876543210".repeat(2), &extra);
    let sys = sysfs();
    let o = spork(&run_args(&a, sys.to_str().expect("utf8"), &["--xclbin-alt", &b]), true);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let r = &v["runs"][0];
    assert_eq!(r["board"], "alveo 0000:3b:00.1", "{r}");
    let offered = r["offered"].as_u64().expect("offered");
    assert_eq!(r["answered"].as_u64().expect("answered"), offered, "{r}");
    assert!(r["answered_fpga"].as_u64().expect("fpga") > 0, "the board (loopback XRT) served requests: {r}");
    assert_eq!(r["mismatches"], 0, "every board result equals the reference");
    assert_eq!(r["configure_failures"], 0, "{r}");
    assert!(r["reconfig_measured_ms"]["count"].as_u64().expect("count") >= 1);
    assert!(r["reconfig_measured_ms"]["min"].as_f64().expect("load") > 0.0, "the xclbin load was timed");
    // One invocation timed at each configuration (through the real binding, on the loopback's
    // Verilated kernels), beside the link the engine booked.
    let inv = &r["invocation_measured_us"];
    assert_eq!(inv["count"], r["reconfig_measured_ms"]["count"], "one per configuration: {r}");
    assert!(inv["min"].as_f64().expect("us") > 0.0, "{r}");
    assert_eq!(r["link"]["invocation"], 50e-6, "the published figure booked: {r}");
}

#[test]
fn an_xrt_error_names_the_call_and_the_requests_move_to_cpus() {
    let tmp = tempfile::tempdir().expect("tmp");
    // The loopback has no model for this kernel: xrtDeviceLoadXclbinFile fails with ENOENT.
    let bad = xclbin(tmp.path(), "fft.xclbin", "fft", &"11".repeat(16), "");
    let sys = sysfs();
    let o = spork(&run_args(&bad, sys.to_str().expect("utf8"), &[]), true);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let r = &v["runs"][0];
    assert_eq!(r["board"], "alveo 0000:3b:00.1", "{r}");
    assert!(r["configure_failures"].as_u64().expect("failures") >= 1, "{r}");
    let faults = r["faults"].to_string();
    assert!(faults.contains("xrtDeviceLoadXclbinFile failed"), "{faults}");
    assert_eq!(r["answered"], r["offered"], "no request lost: {r}");
    assert_eq!(r["answered_fpga"], 0);
}

/// `spork serve` on the loopback board: both models' pools time-share the one board (as `--boards
/// 1`), each with its own xclbin, so the board moves from sobel to dense by a real (timed) xclbin load
/// through the real binding, and both models are served on it.
#[test]
fn a_served_board_is_time_shared_by_two_models_through_real_xclbin_loads() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let _board = one_board();
    let tmp = tempfile::tempdir().expect("tmp");
    // Each model's image is its own repository RTL (models/), as the loopback xclbin names it:
    // sobel's eight pixels a beat through 64-bit data movers, dense's 32 elements (512-bit beats)
    // through 512-bit ones.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let image = |model: &str, top: &str, extra: &str, uuid: &str| {
        let p = tmp.path().join(format!("{model}.xclbin"));
        let library = built_library(&repo.join(model));
        let mut bytes = b"xclbin2\0".to_vec();
        bytes.extend(
            format!("spork-loopback\nkernel={top}\nuuid={uuid}\nmodel={library}\n{extra}").as_bytes(),
        );
        std::fs::write(&p, bytes).expect("write xclbin");
        p.to_string_lossy().into_owned()
    };
    let sobel = image("sobel", "sobel8_stream", "scalars=width\n", &"0123456789abcdef".repeat(2));
    let dense = image("dense", "dense32_stream", "mover=512\n", &"fedcba9876543210".repeat(2));
    let platform = tmp.path().join("platform.toml");
    // CPUs at 10x the paper's power: a board pays for itself at the light load the loopback keeps up with.
    std::fs::write(&platform, "[cpu]\nbusy_power_w = 1500.0\n[fpga]\nspin_up = \"300ms\"\n")
        .expect("platform");
    let sys = sysfs();
    let mut server = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["serve", "--board", "alveo", "--device", "0000:3b:00.1", "--models", "sobel,dense"])
        .args(["--xclbin", &format!("sobel={sobel}"), "--xclbin", &format!("dense={dense}")])
        .args(["--sys", sys.to_str().expect("utf8"), "--clock-mhz", "1000", "--grace", "2s"])
        // More CPU workers than the 2 cores CI has (the default cap): while the board loads the other
        // model's xclbin, CPUs take everything, and this test is about the board, not their number.
        .args(["--max-cpu", "16"])
        .args([
            "--platform",
            platform.to_str().expect("utf8"),
            "--http",
            "127.0.0.1:0",
            "--grpc",
            "127.0.0.1:0",
        ])
        .env("LD_LIBRARY_PATH", loopback())
        .env("XILINX_XRT", loopback())
        .env("SPORK_SIM_MODELS", spork_sim::built_models_dir())
        .env("RUST_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn()
        .expect("spork serve starts");
    let mut lines = BufReader::new(server.stderr.take().expect("stderr")).lines();
    let ready =
        lines.by_ref().map_while(Result::ok).find(|l| l.contains("ready")).expect("the server is ready");
    let http =
        ready.split("HTTP on ").nth(1).and_then(|s| s.split(',').next()).expect("its address").to_string();
    let load = |model: &str, size: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_spork"))
            .args(["load", "--target", &http, "--model", model, "--duration", "6s", "--rate", "150"])
            .args(["--size", size, "--json"])
            .output()
            .expect("spork load runs");
        assert!(o.status.success(), "{}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        v
    };
    // Light enough for the loopback, whose kernels are Verilated (far slower than the board clock
    // they are booked at; see the note on real boards in ARCHITECTURE.md).
    let first = load("sobel", "500us");
    let second = load("dense", "200us");
    let interrupt = Command::new("kill").args(["-INT", &server.id().to_string()]).status().expect("kill");
    assert!(interrupt.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(server.wait().expect("the server exits").success(), "{rest:?}");
    for (model, client) in [("sobel", &first), ("dense", &second)] {
        // Every request answered, or refused at once because no worker the caps allow (CPU workers:
        // this machine's cores) could meet its deadline: nothing lost, nothing failed.
        let refused = client["errors"]["http 429"].as_u64().unwrap_or(0);
        let other = client["errors"].as_object().map_or(0, |e| e.len()) - usize::from(refused > 0);
        assert_eq!(other, 0, "{model}: no error but refusals: {client}");
        assert_eq!(
            client["sent"].as_u64(),
            Some(client["ok"].as_u64().unwrap_or(0) + refused),
            "{model}: {client}"
        );
        assert!(refused * 4 < client["sent"].as_u64().unwrap_or(0), "{model}: most answered: {client}");
        let line = rest.iter().find(|l| l.starts_with(&format!("{model}:"))).expect("its drain summary");
        let on_fpga: u64 = line
            .split('(')
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("answered on FPGAs");
        assert!(on_fpga > 0, "{model} was served on the shared board: {line}");
        assert!(
            !line.contains(" 0 FPGA configurations"),
            "{model} configured the board (a timed xclbin load): {line}"
        );
    }
    eprintln!("{rest:?}");
}

/// The verilated library of repository model `dir`, as `spork kernel build` reports it.
fn built_library(dir: &Path) -> String {
    let o =
        Command::new(env!("CARGO_BIN_EXE_spork")).arg("kernel").arg("build").arg(dir).output().expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    let path = t.rsplit_once('(').and_then(|(_, p)| p.split_once(')')).map(|(p, _)| p.to_string());
    path.unwrap_or_else(|| panic!("no library path in: {t}"))
}

/// Repository models on the loopback Alveo: each model's own verilated RTL (built by `spork kernel
/// build`) is what the loopback xclbin names, driven through its AXI4-Stream handshake behind the
/// real binding and the data movers' arguments: sobel's width travels as a leading scalar word, and
/// crc8's rows end with the data mover's TLAST. Every board answer is checked against the model's C
/// code by the run, so a framing error shows as a fault.
#[test]
fn repository_models_run_on_the_loopback_alveo_in_the_stream_convention() {
    let _board = one_board();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tmp = tempfile::tempdir().expect("tmp");
    let sys = sysfs();
    let sys = sys.to_str().expect("utf8");
    // A board that costs almost nothing idle, so the allocator holds one from the first interval.
    let platform = boards::cheap_board(tmp.path(), None);
    let platform = platform.to_str().expect("utf8");
    let cases = [
        (root.join("models"), "sobel", "sobel8_stream", "scalars=width\n"),
        (root.join("models"), "dense", "dense32_stream", "mover=512\n"),
        (root.join("tests/fixtures/kernels"), "crc8", "crc8", ""),
    ];
    for (repo, model, top, scalars) in cases {
        let library = built_library(&repo.join(model));
        let x = tmp.path().join(format!("{model}.xclbin"));
        let mut bytes = b"xclbin2\0".to_vec();
        bytes.extend(
            format!("spork-loopback\nkernel={top}\nuuid={}\nmodel={library}\n{scalars}", "ab".repeat(16))
                .as_bytes(),
        );
        std::fs::write(&x, bytes).expect("write xclbin");
        let x = x.to_str().expect("utf8");
        let repo = repo.to_str().expect("utf8");
        let o = spork(
            &run_args(
                x,
                sys,
                &["--model-repository", repo, "--kernel", model, "--size", "300us", "--config", platform],
            ),
            true,
        );
        assert!(o.status.success(), "{model}: {}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let run = &v["runs"][0];
        assert_eq!(run["answered"], run["offered"], "{model}: {run}");
        assert!(run["answered_fpga"].as_u64().is_some_and(|n| n > 0), "{model} ran on the board: {run}");
        assert_eq!(
            run["faults"],
            serde_json::json!([]),
            "{model}: every board answer equals the C code's: {run}"
        );
    }
}

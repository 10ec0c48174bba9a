//! `spork serve --model-repository` end to end: a repository of kernels no built-in code knows
//! (satadd, crc8: C compiled and RTL verilated at start) and one that fails to load (a library of ABI
//! version 99), served on the simulated board over loopback, driven by the Python `tritonclient`
//! (HTTP and gRPC, tests/python/repo_e2e.py): answers equal the references on CPU workers and on the
//! board, the index says which model is not served and why, crc8 is unloaded and loaded again while
//! satadd runs under load, bad requests get their status. Then the server drains on SIGTERM and
//! every request it took was answered or refused, once.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The virtual environment's python, made if missing.
fn python() -> PathBuf {
    let out = Command::new("bash").arg(root().join("scripts/python-env.sh")).output().expect("bash runs");
    assert!(out.status.success(), "scripts/python-env.sh failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(stdout.lines().last().expect("the venv's python on the last line").trim())
}

fn copy_dir(from: &Path, to: &Path) {
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

/// A repository: satadd and crc8 as they are, and `broken`, satadd whose library says ABI 99.
fn repository(dir: &Path) {
    let fixtures = root().join("tests/fixtures/kernels");
    copy_dir(&fixtures.join("satadd"), &dir.join("satadd"));
    copy_dir(&fixtures.join("crc8"), &dir.join("crc8"));
    copy_dir(&fixtures.join("satadd"), &dir.join("broken"));
    let c = dir.join("broken/cpu/satadd.c");
    let text = std::fs::read_to_string(&c).expect("satadd.c");
    let broken = text.replace("{SPORK_KERNEL_ABI_VERSION, \"satadd\"}", "{99, \"satadd\"}");
    assert_ne!(text, broken, "the fixture's INFO line changed");
    std::fs::write(c, broken).expect("write");
}

/// The server's stderr lines after its start-up line, as they come.
type Lines = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// Waits for the server's "HTTP on A, gRPC on B" line (on its stderr, which is passed on);
/// returns both addresses and the lines that follow.
fn addresses(child: &mut Child) -> (String, String, Lines) {
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(300) {
        let Some(Ok(line)) = lines.next() else { break };
        eprintln!("{line}");
        if let Some(rest) = line.strip_prefix("spork serve: HTTP on ") {
            let (http, rest) = rest.split_once(", gRPC on ").expect("both addresses");
            let grpc = rest.split(';').next().expect("gRPC address");
            let later = Lines::default();
            let kept = later.clone();
            std::thread::spawn(move || {
                for l in lines.map_while(Result::ok) {
                    eprintln!("{l}");
                    kept.lock().expect("lines").push(l);
                }
            });
            return (http.to_string(), grpc.to_string(), later);
        }
    }
    panic!("the server did not report its addresses");
}

#[test]
fn tritonclient_serves_repository_models_on_cpus_and_the_simulated_board_and_controls_them() {
    let python = python();
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    repository(&repo);
    // A board that costs almost nothing idle, so the allocator holds one as soon as a model has
    // work: these kernels are too cheap on a CPU for a real board to pay off.
    let platform = tmp.path().join("platform.toml");
    std::fs::write(&platform, "[fpga]\nspin_up = \"1s\"\nidle_power_w = 0.01\nbusy_power_w = 1.0\n")
        .expect("write");
    let report = tmp.path().join("report.json");
    let mut server = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["serve", "--board", "sim", "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--grace", "2s"])
        .arg("--model-repository")
        .arg(&repo)
        .arg("--platform")
        .arg(&platform)
        .arg("--report-json")
        .arg(&report)
        .env("SPORK_CACHE_DIR", tmp.path().join("cache"))
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spork serve starts");
    let (http, grpc, _) = addresses(&mut server);
    let out = Command::new(&python)
        .arg(root().join("tests/python/repo_e2e.py"))
        .args(["--http", &http, "--grpc", &grpc, "--broken", "broken", "--seconds", "20"])
        .output()
        .expect("python runs");
    // SAFETY: a plain signal to our own child.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let status = server.wait().expect("the server exits");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the client's checks failed:\n{stdout}\n{stderr}");
    eprintln!("{stdout}");
    assert!(status.success(), "the server's drain failed: {status}");
    let reports: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("the drain report")).expect("JSON");
    // satadd, crc8 as loaded again, and crc8's first pool, ended by its unload.
    for model in ["satadd", "crc8", "crc8 (unloaded)"] {
        let r = &reports[model];
        assert!(r.is_object(), "no report for {model}: {reports}");
        let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{model}.{k}: {r}"));
        assert_eq!(
            n("offered"),
            n("answered") + n("rejected") + n("rejected_at_stop"),
            "{model}: settled once"
        );
    }
    assert!(reports["satadd"]["answered_fpga"].as_u64().is_some_and(|n| n > 0), "{reports}");
}

#[test]
fn polling_loads_a_new_model_folder_and_unloads_a_removed_one_and_control_needs_the_token() {
    let python = python();
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    copy_dir(&root().join("tests/fixtures/kernels/satadd"), &repo.join("satadd"));
    let token = "poll-token-0123456789";
    std::fs::write(tmp.path().join("token"), token).expect("write");
    let mut server = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args([
            "serve",
            "--board",
            "model",
            "--http",
            "127.0.0.1:0",
            "--grpc",
            "127.0.0.1:0",
            "--grace",
            "1s",
        ])
        .args(["--model-control", "poll", "--repository-poll-secs", "0.3"])
        .arg("--model-repository")
        .arg(&repo)
        .arg("--token-file")
        .arg(tmp.path().join("token"))
        .env("SPORK_CACHE_DIR", tmp.path().join("cache"))
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spork serve starts");
    let (http, _, _) = addresses(&mut server);
    let out = Command::new(&python)
        .arg(root().join("tests/python/repo_poll.py"))
        .args(["--http", &http, "--token", token])
        .arg("--repo")
        .arg(&repo)
        .arg("--fixture")
        .arg(root().join("tests/fixtures/kernels/crc8"))
        .output()
        .expect("python runs");
    // SAFETY: a plain signal to our own child.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let status = server.wait().expect("the server exits");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the client's checks failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("poll ok"), "{stdout}");
    assert!(status.success(), "the server's drain failed: {status}");
}

#[test]
fn the_emulated_boards_answers_for_repository_models_are_crosschecked_on_their_rtl() {
    let python = python();
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    repository(&repo);
    let platform = tmp.path().join("platform.toml");
    std::fs::write(&platform, "[fpga]\nspin_up = \"1s\"\nidle_power_w = 0.01\nbusy_power_w = 1.0\n")
        .expect("write");
    let mut server = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["serve", "--board", "model", "--crosscheck", "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"])
        .args(["--grace", "2s", "--model-repository"])
        .arg(&repo)
        .arg("--platform")
        .arg(&platform)
        .env("SPORK_CACHE_DIR", tmp.path().join("cache"))
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spork serve starts");
    let (http, grpc, lines) = addresses(&mut server);
    let out = Command::new(&python)
        .arg(root().join("tests/python/repo_e2e.py"))
        .args(["--http", &http, "--grpc", &grpc, "--broken", "broken", "--seconds", "20"])
        .output()
        .expect("python runs");
    // SAFETY: a plain signal to our own child.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let status = server.wait().expect("the server exits");
    assert!(out.status.success(), "the client's checks failed:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(status.success(), "the server's drain failed: {status}");
    std::thread::sleep(Duration::from_millis(200));
    let lines = lines.lock().expect("lines").join("\n");
    let line = lines
        .lines()
        .find(|l| l.starts_with("emulated board answers checked"))
        .unwrap_or_else(|| panic!("{lines}"));
    let checked: u64 =
        line.split(": ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).expect(line);
    assert!(checked > 0 && line.contains(", 0 mismatches"), "{line}");
}

#[test]
fn a_worker_host_serves_repository_models_on_its_simulated_board() {
    let python = python();
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    repository(&repo);
    let platform = tmp.path().join("platform.toml");
    std::fs::write(&platform, "[fpga]\nspin_up = \"1s\"\nidle_power_w = 0.01\nbusy_power_w = 1.0\n")
        .expect("write");
    // The host loads the same repository (its RTL verilated for its simulated board).
    let port =
        std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("addr").port();
    let listen = format!("127.0.0.1:{port}");
    let mut worker = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["worker", "--board", "sim", "--fpga-slots", "2", "--cpu-slots", "1", "--listen", &listen])
        .arg("--model-repository")
        .arg(&repo)
        .env("SPORK_CACHE_DIR", tmp.path().join("cache"))
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spork worker starts");
    let worker_err = worker.stderr.take().expect("piped stderr");
    let mut worker_lines = BufReader::new(worker_err).lines();
    let ready = worker_lines
        .by_ref()
        .map_while(Result::ok)
        .inspect(|l| eprintln!("{l}"))
        .any(|l| l.contains("ready"));
    assert!(ready, "the worker host did not start");
    std::thread::spawn(move || worker_lines.map_while(Result::ok).for_each(|l| eprintln!("{l}")));
    let mut server = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args([
            "serve",
            "--worker",
            &listen,
            "--http",
            "127.0.0.1:0",
            "--grpc",
            "127.0.0.1:0",
            "--grace",
            "2s",
        ])
        .arg("--model-repository")
        .arg(&repo)
        .arg("--platform")
        .arg(&platform)
        .env("SPORK_CACHE_DIR", tmp.path().join("cache"))
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spork serve starts");
    let (http, grpc, _) = addresses(&mut server);
    let out = Command::new(&python)
        .arg(root().join("tests/python/repo_e2e.py"))
        .args(["--http", &http, "--grpc", &grpc, "--broken", "broken", "--seconds", "20"])
        .output()
        .expect("python runs");
    // SAFETY: plain signals to our own children.
    unsafe {
        libc::kill(server.id() as i32, libc::SIGTERM);
    }
    let status = server.wait().expect("the server exits");
    unsafe {
        libc::kill(worker.id() as i32, libc::SIGTERM);
    }
    let _ = worker.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the client's checks failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(status.success(), "the server's drain failed: {status}");
}

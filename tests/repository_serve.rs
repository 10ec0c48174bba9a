//! `spork serve --model-repository` end to end: a repository of kernels no built-in code knows
//! (satadd, crc8: C compiled and RTL verilated at start) and one that fails to load (a library of ABI
//! version 99), served on the simulated board over loopback, driven by the Python `tritonclient`
//! (HTTP and gRPC, tests/python/repo_e2e.py): answers equal the references on CPU workers and on the
//! board, the index says which model is not served and why, crc8 is unloaded and loaded again while
//! satadd runs under load, bad requests get their status. Then the server drains on SIGTERM and
//! every request it took was answered or refused, once. Model control: `explicit` on loopback,
//! `poll`, and tritonclient's load and unload with a control token of their own.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
#[path = "support/boards.rs"]
mod boards;
#[path = "support/fixtures.rs"]
#[allow(dead_code)]
mod fixtures;

use fixtures::copy_dir;

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

/// `spork serve ARGS` on loopback (ports chosen by the OS), its cache in `cache`: the child, both
/// addresses and its later stderr lines.
fn serve(args: &[&OsStr], cache: &Path) -> (Child, String, String, Lines) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["serve", "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--grace", "2s"])
        .args(args)
        .env("SPORK_CACHE_DIR", cache)
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spork serve starts");
    let (http, grpc, lines) = addresses(&mut child);
    (child, http, grpc, lines)
}

/// SIGTERM (a drain), then the exit status.
fn stop(mut child: Child) -> std::process::ExitStatus {
    // SAFETY: a plain signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().expect("the child exits")
}

/// tests/python/repo_e2e.py against the server; its stdout, or a panic with its output.
fn e2e(python: &Path, http: &str, grpc: &str) -> String {
    let out = Command::new(python)
        .arg(root().join("tests/python/repo_e2e.py"))
        .args(["--http", http, "--grpc", grpc, "--broken", "broken", "--seconds", "20"])
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the client's checks failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A temporary folder with the test repository in `repo/` and the cheap board's platform.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    repository(&repo);
    let platform = boards::cheap_board(tmp.path(), Some("1s"));
    (tmp, repo, platform)
}

#[test]
fn tritonclient_serves_repository_models_on_cpus_and_the_simulated_board_and_controls_them() {
    let python = python();
    let (tmp, repo, platform) = setup();
    let report = tmp.path().join("report.json");
    let args: [&OsStr; 10] = [
        "--board".as_ref(),
        "sim".as_ref(),
        "--model-control".as_ref(),
        "explicit".as_ref(),
        "--model-repository".as_ref(),
        repo.as_ref(),
        "--platform".as_ref(),
        platform.as_ref(),
        "--report-json".as_ref(),
        report.as_ref(),
    ];
    let (server, http, grpc, _) = serve(&args, &tmp.path().join("cache"));
    eprintln!("{}", e2e(&python, &http, &grpc));
    let status = stop(server);
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
fn a_batching_model_stacks_concurrent_tritonclient_requests_on_the_simulated_board() {
    // satadd declaring [batching] along N: requests from 16 client threads arrive close together and
    // are stacked into one verilated board job; every answer is checked by the client against the
    // reference, and the server checks each member against the CPU code.
    let python = python();
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    copy_dir(&root().join("tests/fixtures/kernels/satadd"), &repo.join("satadd"));
    let toml = repo.join("satadd/model.toml");
    let mut text = std::fs::read_to_string(&toml).expect("model.toml");
    text.push_str("\n[batching]\ndim = \"N\"\nmax_batch_size = 16\nmax_queue_delay_us = 500\n");
    std::fs::write(&toml, text).expect("write");
    let platform = boards::cheap_board(tmp.path(), Some("1s"));
    let report = tmp.path().join("report.json");
    let args: [&OsStr; 8] = [
        "--board".as_ref(),
        "sim".as_ref(),
        "--model-repository".as_ref(),
        repo.as_ref(),
        "--platform".as_ref(),
        platform.as_ref(),
        "--report-json".as_ref(),
        report.as_ref(),
    ];
    let (server, http, _, _) = serve(&args, &tmp.path().join("cache"));
    let out = Command::new(&python)
        .arg(root().join("tests/python/batch_e2e.py"))
        .args(["--http", &http, "--threads", "16", "--requests", "150", "--seconds", "60"])
        // On a fast machine the first 2,400 requests can all be answered before the board is up.
        .args(["--until-fpga", "400", "--max-requests", "2000"])
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the client's checks failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{stdout}");
    let status = stop(server);
    assert!(status.success(), "the server's drain failed: {status}");
    let reports: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("the drain report")).expect("JSON");
    let r = &reports["satadd"];
    eprintln!("satadd's batches (booked, requests): {}", r["batches"]);
    let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("satadd.{k}: {r}"));
    assert_eq!(n("offered"), n("answered") + n("rejected") + n("rejected_at_stop"), "settled once");
    assert_eq!(r["mismatches"].as_u64(), Some(0), "every member held to the reference: {r}");
    let (batches, carried) = (r["batches"][0].as_u64(), r["batches"][1].as_u64());
    let (batches, carried) = (batches.expect("batches reported"), carried.expect("requests batched"));
    assert!(batches > 0 && carried > batches, "{carried} requests in {batches} batches: {r}");
    assert!(n("answered_fpga") >= carried, "batched requests were answered by the board: {r}");
}

#[test]
fn polling_loads_a_new_model_folder_and_unloads_a_removed_one_and_control_needs_the_token() {
    let python = python();
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    copy_dir(&root().join("tests/fixtures/kernels/satadd"), &repo.join("satadd"));
    let token = "poll-token-0123456789";
    let token_file = tmp.path().join("token");
    std::fs::write(&token_file, token).expect("write");
    let args: [&OsStr; 10] = [
        "--board".as_ref(),
        "model".as_ref(),
        "--model-control".as_ref(),
        "poll".as_ref(),
        "--repository-poll-secs".as_ref(),
        "0.3".as_ref(),
        "--model-repository".as_ref(),
        repo.as_ref(),
        "--token-file".as_ref(),
        token_file.as_ref(),
    ];
    let (server, http, _, _) = serve(&args, &tmp.path().join("cache"));
    let out = Command::new(&python)
        .arg(root().join("tests/python/repo_poll.py"))
        .args(["--http", &http, "--token", token])
        .arg("--repo")
        .arg(&repo)
        .arg("--fixture")
        .arg(root().join("tests/fixtures/kernels/crc8"))
        .output()
        .expect("python runs");
    let status = stop(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the client's checks failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("poll ok"), "{stdout}");
    assert!(status.success(), "the server's drain failed: {status}");
}

#[test]
fn the_emulated_boards_answers_for_repository_models_are_crosschecked_on_their_rtl() {
    let python = python();
    let (tmp, repo, platform) = setup();
    let args: [&OsStr; 9] = [
        "--board".as_ref(),
        "model".as_ref(),
        "--crosscheck".as_ref(),
        "--model-control".as_ref(),
        "explicit".as_ref(),
        "--model-repository".as_ref(),
        repo.as_ref(),
        "--platform".as_ref(),
        platform.as_ref(),
    ];
    let (server, http, grpc, lines) = serve(&args, &tmp.path().join("cache"));
    e2e(&python, &http, &grpc);
    let status = stop(server);
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
    let (tmp, repo, platform) = setup();
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
    let args: [&OsStr; 8] = [
        "--model-control".as_ref(),
        "explicit".as_ref(),
        "--worker".as_ref(),
        listen.as_ref(),
        "--model-repository".as_ref(),
        repo.as_ref(),
        "--platform".as_ref(),
        platform.as_ref(),
    ];
    let (server, http, grpc, _) = serve(&args, &tmp.path().join("cache"));
    e2e(&python, &http, &grpc);
    let status = stop(server);
    stop(worker);
    assert!(status.success(), "the server's drain failed: {status}");
}

#[test]
fn tritonclient_loads_and_unloads_with_the_control_token_only_over_http_and_grpc() {
    let python = python();
    let tmp = tempfile::tempdir().expect("tempdir");
    let (inference, control) = ("inference-token-0123456789", "control-token-9876543210");
    let (inference_file, control_file) = (tmp.path().join("token"), tmp.path().join("control"));
    std::fs::write(&inference_file, inference).expect("write");
    std::fs::write(&control_file, control).expect("write");
    let args: [&OsStr; 10] = [
        "--models".as_ref(),
        "sobel,dense".as_ref(),
        "--scheduler".as_ref(),
        "cpu-dynamic".as_ref(),
        "--model-control".as_ref(),
        "explicit".as_ref(),
        "--token-file".as_ref(),
        inference_file.as_ref(),
        "--control-token-file".as_ref(),
        control_file.as_ref(),
    ];
    let (server, http, grpc, _) = serve(&args, &tmp.path().join("cache"));
    let out = Command::new(&python)
        .arg(root().join("tests/python/control_e2e.py"))
        .args(["--http", &http, "--grpc", &grpc, "--token", inference, "--control-token", control])
        .output()
        .expect("python runs");
    let status = stop(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the client's checks failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("control ok"), "{stdout}");
    assert!(status.success(), "the server's drain failed: {status}");
}

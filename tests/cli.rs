//! End-to-end tests of the `spork` binary on small real inputs.

use std::path::Path;
use std::process::{Command, Output};
#[path = "support/fixtures.rs"]
#[allow(dead_code)] // this binary copies a model folder only
mod fixtures;

fn spork(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spork")).args(args).output().expect("spork runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "spork failed: {}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("valid JSON")
}

#[test]
fn simulate_all_prints_nine_schedulers() {
    let o = spork(&[
        "simulate",
        "--scheduler",
        "all",
        "--duration",
        "5m",
        "--workers",
        "20",
        "--seed",
        "2",
        "--json",
    ]);
    let v = json(&o);
    let reports = v["reports"].as_array().expect("reports");
    let names: Vec<&str> = reports.iter().map(|r| r["scheduler"].as_str().unwrap_or("")).collect();
    assert_eq!(
        names,
        [
            "CPU-dynamic",
            "FPGA-static",
            "FPGA-dynamic",
            "MArk-ideal",
            "SporkC",
            "SporkB",
            "SporkE",
            "SporkC-ideal",
            "SporkE-ideal"
        ]
    );
    let requests = reports[0]["requests"].as_u64().unwrap();
    assert!(requests > 1000);
    for r in reports {
        assert_eq!(r["requests"].as_u64(), Some(requests), "every scheduler serves every request");
        let eff = r["energy_efficiency"].as_f64().unwrap();
        assert!(eff > 0.0 && eff <= 1.0, "{r}");
    }
    assert_eq!(reports[0]["cpu_share"].as_f64(), Some(1.0));
    assert_eq!(reports[1]["cpu_share"].as_f64(), Some(0.0));
    assert!(reports[1]["headroom"].as_u64().is_some() && reports[2]["headroom"].as_u64().is_some());
}

#[test]
fn table_output_is_readable() {
    let o = spork(&["simulate", "--scheduler", "spork-e,cpu-dynamic", "--duration", "3m", "--workers", "10"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for needle in
        ["SporkE", "CPU-dynamic", "energy eff.", "rel. cost", "misses", "p99 ms", "b-model burstiness 0.6"]
    {
        assert!(out.contains(needle), "missing {needle} in\n{out}");
    }
}

#[test]
fn trace_file_replays_the_generated_trace() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.toml");
    let f = file.to_str().unwrap();
    let gen_args =
        ["--burstiness", "0.7", "--duration", "4m", "--size", "medium", "--workers", "15", "--seed", "9"];
    let o = spork(&[&["trace", "gen", "-o", f][..], &gen_args[..]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let from_file = json(&spork(&["simulate", "--trace", f, "--scheduler", "spork-b", "--json"]));
    let generated =
        json(&spork(&[&["simulate", "--scheduler", "spork-b", "--json"][..], &gen_args[..]].concat()));
    assert_eq!(from_file["reports"], generated["reports"]);
    let show = spork(&["trace", "show", f]);
    assert!(stdout(&show).contains("4 minutes"), "{}", stdout(&show));
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn malformed_trace_names_file_line_field_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "bad.toml",
        "format = \"spork-trace/1\"\nsize_ms = 10\nseed = 1\nrates_per_s = [5.0, nan]\n",
    );
    let o = spork(&["simulate", "--trace", &f]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("bad.toml:4:") && e.contains("rates_per_s[1]") && e.contains("fix:"), "{e}");

    let f = write(dir.path(), "trunc.toml", "format = \"spork-trace/1\"\nsize_ms = 10\nrates_per_s = [5.0,");
    let e = stderr(&spork(&["simulate", "--trace", &f]));
    assert!(e.contains("trunc.toml:3:") && e.contains("fix:"), "{e}");

    let e = stderr(&spork(&["simulate", "--trace", "/nonexistent/t.toml"]));
    assert!(e.contains("cannot read /nonexistent/t.toml"), "{e}");
}

#[test]
fn malformed_config_names_file_line_field_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "p.toml", "[fpga]\nspin_up = \"10s\"\nidle_power_w = 80\n");
    let o = spork(&["simulate", "--config", &f, "--duration", "1m"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("p.toml:3:16: fpga.idle_power_w") && e.contains("fix:"), "{e}");

    let e = stderr(&spork(&["simulate", "--fpga-speedup", "0", "--duration", "1m"]));
    assert!(e.contains("fpga.speedup"), "{e}");
}

#[test]
fn bad_arguments_say_what_is_accepted() {
    let e = stderr(&spork(&["simulate", "--scheduler", "spork-x"]));
    assert!(e.contains("unknown scheduler 'spork-x'") && e.contains("spork-e-ideal"), "{e}");
    let e = stderr(&spork(&["simulate", "--burstiness", "0.2", "--duration", "1m"]));
    assert!(e.contains("burstiness 0.2"), "{e}");
    let e = stderr(&spork(&["simulate", "--size", "huge"]));
    assert!(e.contains("short, medium, long"), "{e}");
    let o = spork(&["simulate", "--trace", "x.toml", "--burstiness", "0.7"]);
    assert!(!o.status.success());
}

#[test]
fn config_overrides_change_the_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "fast.toml", "[fpga]\nspin_up = \"1s\"\nspeedup = 4\n");
    let base = json(&spork(&["simulate", "--duration", "3m", "--workers", "20", "--json"]));
    let fast = json(&spork(&["simulate", "--config", &f, "--duration", "3m", "--workers", "20", "--json"]));
    assert_eq!(fast["platform"]["fpga"]["spin_up"].as_f64(), Some(1.0));
    let eff = |v: &serde_json::Value| v["reports"][0]["energy_efficiency"].as_f64().unwrap();
    assert!(eff(&fast) > eff(&base), "4x faster FPGAs with 1 s spin-up must be more efficient");
}

#[test]
fn bench_reports_the_rate_of_the_run_it_timed() {
    // Bench's trace is the generator's with 100 workers (simulate's default): the same flags give
    // simulate the same trace, and the same scheduler the same run.
    let flags = ["--duration", "2m", "--size", "10ms", "--burstiness", "0.6", "--seed", "1"];
    let bench = json(&spork(&[&["bench", "--scheduler", "spork-e", "--json"][..], &flags[..]].concat()));
    let sim = json(&spork(&[&["simulate", "--scheduler", "spork-e", "--json"][..], &flags[..]].concat()));
    let rows = bench.as_array().expect("bench's JSON is an array of rows");
    assert_eq!(rows.len(), 1, "one row per scheduler: {bench}");
    let (row, report) = (&rows[0], &sim["reports"][0]);
    let field = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"));
    assert_eq!(row["scheduler"], report["scheduler"], "the same scheduler");
    let (requests, events, wall) = (field(row, "requests"), field(row, "events"), field(row, "best_wall_s"));
    assert_eq!(requests, field(report, "requests"), "bench timed the trace simulate runs: {row} {report}");
    assert_eq!(events, field(report, "events"), "and the same run, event for event: {row} {report}");
    assert!(requests > 0.0 && events >= requests, "every request is at least its arrival's event: {row}");
    assert!(wall.is_finite() && wall > 0.0, "a timed run took some time: {row}");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    assert!(close(field(row, "requests_per_s"), requests / wall), "requests over the timed wall time: {row}");
    assert!(close(field(row, "events_per_s"), events / wall), "events over the timed wall time: {row}");
}

#[test]
fn brownout_scenario_compares_controllers_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bo");
    let o =
        spork(&["brownout", "--duration", "3m", "--seeds", "2", "--json", "--out", out.to_str().unwrap()]);
    let v = json(&o);
    let rows = v.as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["controller"].as_str().unwrap()).collect();
    assert_eq!(names, ["none", "dimmer", "pi", "event", "cascaded", "cascaded-ff"]);
    let iae = |n: &str| rows.iter().find(|r| r["controller"] == n).unwrap()["iae"].as_f64().unwrap();
    assert!(iae("cascaded") < iae("dimmer") && iae("dimmer") < iae("none"));
    for f in ["brownout.png", "brownout.svg", "brownout_periods.csv", "brownout.json"] {
        assert!(out.join(f).exists(), "{f}");
    }
    let e = stderr(&spork(&["brownout", "--controller", "fuzzy"]));
    assert!(e.contains("unknown controller 'fuzzy'"), "{e}");
    for bad in ["0", "-1", "11", "nan"] {
        let e = stderr(&spork(&["brownout", &format!("--load={bad}")]));
        assert!(e.contains("--load") && e.contains("fix:"), "--load {bad}: {e}");
    }
    // 120 simulated hours at load 10 count as 1,200: past the budget, refused before any run.
    let e = stderr(&spork(&["brownout", "--seeds", "60", "--load", "10"]));
    assert!(e.contains("at load 10") && e.contains("--force"), "{e}");
}

#[test]
fn simulate_with_caps_and_brownout() {
    let args = [
        "simulate",
        "--duration",
        "20m",
        "--size",
        "10ms",
        "--workers",
        "20",
        "--max-cpu",
        "60",
        "--max-fpga",
        "20",
    ];
    let v = json(&spork(&[&args[..], &["--optional-factor", "1", "--brownout", "pi", "--json"]].concat()));
    let r = v["reports"].as_array().unwrap();
    assert_eq!(r.len(), 2, "the run with brownout is shown beside the run without");
    assert!(r[0]["brownout"].is_null() && r[1]["brownout"] == "pi");
    assert_eq!(r[0]["optional_ratio"].as_f64(), Some(1.0));
    assert!(r[1]["optional_ratio"].as_f64().unwrap() < 1.0);
    assert!(r[1]["deadline_misses"].as_u64() <= r[0]["deadline_misses"].as_u64());
    let e = stderr(&spork(&[&args[..], &["--brownout", "pi"]].concat()));
    assert!(e.contains("--optional-factor"), "{e}");
}

#[test]
fn optimal_solves_and_reports_the_gap() {
    let v = json(&spork(&[
        "optimal",
        "--fleet",
        "hybrid",
        "--objective",
        "cost",
        "--intervals",
        "300",
        "--json",
    ]));
    let s = &v["solution"];
    assert_eq!(s["status"], "Optimal");
    assert!(s["gap"].as_f64().unwrap() <= 1e-4);
    assert_eq!(s["fpgas"].as_array().unwrap().len(), 300);
    assert!(s["relative_cost"].as_f64().unwrap() >= 1.0);
    let e = stderr(&spork(&["optimal", "--fleet", "gpu-only"]));
    assert!(e.contains("unknown fleet 'gpu-only'"), "{e}");
    let e = stderr(&spork(&["optimal", "--objective", "speed"]));
    assert!(e.contains("unknown objective 'speed'"), "{e}");
}

/// A board that costs next to nothing, so SporkE holds one at 150 requests/s on any machine: the
/// live allocator weighs what the requests really took, and on a fast machine (or one shared with
/// the other tests' servers) 150 requests/s at the paper's powers were sometimes worth no board.
const CHEAP_BOARD: [&str; 4] = ["--fpga-idle-power", "0.01", "--fpga-busy-power", "1"];

#[test]
fn run_replays_a_short_trace_live_and_reports_in_json() {
    let args =
        ["run", "--scheduler", "spork-e", "--duration", "3s", "--rate", "150", "--fpga-spinup", "300ms"];
    let o = spork(&[&args[..], &CHEAP_BOARD[..], &["--json"]].concat());
    let v = json(&o);
    let r = &v["runs"][0];
    assert_eq!(r["scheduler"], "SporkE");
    let offered = r["offered"].as_u64().expect("offered");
    assert!(offered > 100, "{r}");
    assert_eq!(
        r["answered"].as_u64().expect("answered") + r["rejected"].as_u64().expect("rejected"),
        offered
    );
    assert_eq!(r["mismatches"], 0);
    assert!(r["answered_fpga"].as_u64().expect("fpga") > 0, "the simulated board served requests: {r}");
    // Board time is cycles over the clock plus the link each job pays: one invocation, and its
    // bytes (Spork's own sobel, models/sobel: eight pixels in and at most eight magnitudes out per
    // cycle) at the link's rate; Verilator's wall time is measured beside it.
    let (cycles, device_s) =
        (r["device_cycles"].as_f64().expect("cycles"), r["device_s"].as_f64().expect("s"));
    let clock_hz = r["clock_mhz"].as_f64().expect("clock") * 1e6;
    let (invocation, rate) =
        (r["link"]["invocation"].as_f64().expect("us"), r["link"]["bytes_per_s"].as_f64().expect("rate"));
    assert_eq!(invocation, 50e-6, "the manifest's published link: {r}");
    let link_s = device_s - cycles / clock_hz;
    let jobs = r["answered_fpga"].as_f64().expect("fpga");
    let eps = 1e-9 * device_s.max(1.0);
    assert!(cycles > 0.0 && link_s + eps >= jobs * invocation, "an invocation per job: {link_s} s, {r}");
    assert!(link_s <= jobs * invocation + 16.0 * cycles / rate + eps, "and the bytes: {link_s} s, {r}");
    assert!(r["verilator_s"].as_f64().expect("verilator") > 0.0, "{r}");
    assert_eq!(r["energy_source"].as_str().map(|s| s.starts_with("modelled")), Some(true));
    assert!(v["measured_speedup"].as_f64().expect("speedup") > 0.0);
}

/// `--dispatch-engine rtl`: the Verilated dispatch engine takes efficient-first's first step on a
/// live run; its decisions are counted and checked against the software rule (none differ outside
/// ties), in at least the push-to-decision cycles of the engine; the golden model decides the same.
#[test]
fn run_with_the_rtl_dispatch_engine_reports_its_decisions_checked_against_the_software() {
    // Boards of two compute units: the engine's elements are the CUs.
    for (engine, cus) in [("rtl", "1"), ("golden", "1"), ("rtl", "2")] {
        let args =
            ["run", "--scheduler", "spork-e", "--duration", "3s", "--rate", "150", "--fpga-spinup", "300ms"];
        let args = [&args[..], &CHEAP_BOARD[..]].concat();
        let more = ["--dispatch-engine", engine, "--fpga-compute-units", cus, "--json", "--no-compare"];
        let o = spork(&[&args[..], &more[..]].concat());
        let v = json(&o);
        let r = &v["runs"][0];
        let board = r["board"].as_str().expect("board");
        assert_eq!(board.contains("2 CUs per board"), cus == "2", "{board}");
        let d = &r["dispatch_engine"];
        assert_eq!(d["engine"], engine, "{r}");
        let decisions = d["decisions"].as_u64().expect("decisions");
        assert!(decisions > 100 && d["grants"].as_u64().expect("grants") > 0, "{d}");
        assert_eq!(d["disagree"], 0, "{d}");
        assert_eq!(d["agree"].as_u64().expect("agree") + d["ties"].as_u64().expect("ties"), decisions, "{d}");
        assert!(d["cycles"].as_u64().expect("cycles") >= 3 * decisions, "{d}");
        assert_eq!(
            r["answered"].as_u64().expect("answered") + r["rejected"].as_u64().expect("rejected"),
            r["offered"].as_u64().expect("offered")
        );
    }
    let e = stderr(&spork(&[
        "run",
        "--scheduler",
        "cpu-dynamic",
        "--dispatch-engine",
        "rtl",
        "--duration",
        "1s",
    ]));
    assert!(e.contains("--dispatch-engine rtl") && e.contains("has none"), "{e}");
    let e = stderr(&spork(&[
        "run",
        "--scheduler",
        "mark-ideal",
        "--dispatch-engine",
        "golden",
        "--duration",
        "1s",
    ]));
    assert!(e.contains("implements efficient-first"), "{e}");
    // The default pair: the engine where it applies (SporkE), the software rule for CPU-dynamic.
    let args = ["run", "--duration", "2s", "--rate", "100", "--fpga-spinup", "300ms"];
    let more = ["--dispatch-engine", "golden", "--json", "--no-compare"];
    let o = spork(&[&args[..], &CHEAP_BOARD[..], &more[..]].concat());
    let v = json(&o);
    assert_eq!(v["runs"][0]["dispatch_engine"]["engine"], "golden", "{v}");
    assert!(v["runs"][1].get("dispatch_engine").is_none_or(serde_json::Value::is_null), "{}", v["runs"][1]);
    assert!(stderr(&o).contains("CPU-dynamic: --dispatch-engine does not apply"), "{}", stderr(&o));
}

#[test]
fn simulate_takes_compute_units_and_refuses_impossible_ones() {
    let o = spork(&["simulate", "--scheduler", "spork-e", "--duration", "600s", "--fpga-compute-units", "4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("on each of 4 compute units per board"));
    for (n, needle) in [("0", "fpga.compute_units"), ("65", "fpga.compute_units")] {
        let e = stderr(&spork(&["simulate", "--duration", "60s", "--fpga-compute-units", n]));
        assert!(e.contains(needle) && e.contains("from 1 to 64"), "{e}");
    }
}

#[test]
fn run_rejects_bad_options_with_the_fix() {
    for (args, needle) in [
        (vec!["run", "--size", "short"], "--size must be a duration"),
        (vec!["run", "--kernel", "fft"], "use sobel, bloom or dense"),
        (vec!["run", "--inject-fault", "melt:1"], "configure:N or stall:N"),
        (vec!["run", "--fpga-speedup", "2"], "measured"),
        (vec!["run", "--rate", "0"], "positive number of requests"),
    ] {
        let o = spork(&args);
        assert!(!o.status.success(), "{args:?}");
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn record_load_writes_the_measured_reconfiguration_into_the_models_manifest() {
    let tmp = tempfile::tempdir().expect("tmp");
    let model = tmp.path().join("sobel");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/sobel");
    fixtures::copy_dir(&src, &model);
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_spork"))
            .args(["run", "--scheduler", "spork-e", "--duration", "3s", "--rate", "250"])
            .args(["--fpga-spinup", "300ms", "--record-load", "--json"])
            .args(extra)
            .output()
            .expect("spork runs")
    };
    let o = run(&["--model-repository", tmp.path().to_str().expect("utf8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let m = std::fs::read_to_string(model.join("synth.toml")).expect("manifest");
    assert!(
        m.contains("[measured]") && m.contains("load_s = ") && m.contains("spork run --board sim"),
        "{m}"
    );
    assert!(m.contains("items_per_cycle") && m.contains("[resources]"), "the rest of it kept: {m}");
    // Spork's own models run from a copy in the cache: nothing there to record into.
    let o = run(&[]);
    assert!(!o.status.success() && stderr(&o).contains("--model-repository models"), "{}", stderr(&o));
}

#[test]
fn serve_refuses_bad_settings_before_it_listens() {
    // Each is refused at start-up, with what to do instead; none gets as far as a socket.
    let cases: [(&[&str], &str); 7] = [
        (&["serve", "--board", "sim", "--crosscheck"], "needs --board model"),
        (
            &["serve", "--models", "dense", "--report-json", "/nonexistent/r.json"],
            "cannot write --report-json",
        ),
        (&["serve", "--board", "alveo", "--boards", "2"], "a real board is one board"),
        (&["serve", "--boards", "100000"], "more than a pool may hold"),
        (&["serve", "--models", "dense", "--io-threads", "0"], "io_threads 0 must be from 1 to 256"),
        (&["serve", "--models", "dense", "--size-estimate", "p200"], "invalid size estimate 'p200'"),
        (
            &["serve", "--http", "0.0.0.0:0", "--model-control", "explicit"],
            "--model-control explicit without --control-token-file on 0.0.0.0:0, which is not loopback",
        ),
    ];
    for (args, needle) in cases {
        let o = spork(args);
        assert!(!o.status.success(), "{args:?}");
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "serve.toml", "board = \"alveo\"\n[real_board]\nxclbn = \"x\"\n");
    let e = stderr(&spork(&["serve", "--config", &f]));
    assert!(e.contains("serve.toml:3") && e.contains("xclbn") && e.contains("real_board"), "{e}");
}

#[test]
fn load_sends_requests_sized_at_a_pinned_speed_and_refuses_a_bad_one() {
    let e = stderr(&spork(&["load", "--items-per-sec", "0", "--duration", "1s"]));
    assert!(e.contains("--items-per-sec 0") && e.contains("at least 1"), "{e}");
    let mut server = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["serve", "--models", "sobel", "--scheduler", "cpu-dynamic"])
        .args(["--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spork serve starts");
    use std::io::BufRead;
    let mut lines = std::io::BufReader::new(server.stderr.take().expect("stderr")).lines();
    let ready = lines.by_ref().map_while(Result::ok).find(|l| l.contains("ready")).expect("ready");
    let http = ready.split("HTTP on ").nth(1).and_then(|s| s.split(',').next()).expect("address").to_string();
    let grpc = ready.split("gRPC on ").nth(1).and_then(|s| s.split(';').next()).expect("address").to_string();
    // One second at 50 requests/s to `target`, with `extra` arguments.
    let load = |target: &str, extra: &[&str]| {
        let mut args =
            vec!["load", "--target", target, "--model", "sobel", "--rate", "50", "--duration", "1s"];
        args.extend_from_slice(extra);
        spork(&args)
    };
    let o = load(&http, &[]);
    let calibrated = json(&load(&http, &["--json"]));
    // Pinned at 2,000,000 items/s, a 1 ms request is 2,000 pixels whatever this machine's speed.
    let pinned = json(&load(&http, &["--json", "--size", "1ms", "--items-per-sec", "2e6"]));
    let over_grpc = json(&load(&grpc, &["--json", "--protocol", "grpc"]));
    let _ = server.kill();
    let _ = server.wait();
    assert!(stdout(&o).contains("items per request"), "the table says what it sent: {}", stdout(&o));
    assert!(stdout(&o).contains("p99 of the server's part"), "and where the time went: {}", stdout(&o));
    // Each latency splits into the server's part (it reports its queue and service) and the rest,
    // over both protocols.
    for r in [&pinned, &over_grpc] {
        let part = |p: &str, q: &str| r["split_ms"][p][q].as_f64().unwrap_or(-1.0);
        assert!(part("server", "p50") > 0.0 && part("outside", "p50") > 0.0, "{r}");
        // The handler's part (its handled_ms less queue and service) is inside the rest.
        assert!(part("handler", "p50") > 0.0 && part("handler", "p50") <= part("outside", "max"), "{r}");
        assert!(part("server", "max") <= r["latency_ms"]["max"].as_f64().unwrap_or(0.0) + 0.01, "{r}");
    }
    assert_eq!(pinned["items_per_sec"].as_f64(), Some(2e6), "{pinned}");
    assert_eq!(pinned["mean_items"].as_f64(), Some(2000.0), "{pinned}");
    assert!(pinned["sent"].as_u64().is_some_and(|n| n > 0), "{pinned}");
    let measured = calibrated["items_per_sec"].as_f64().expect("the calibration is reported");
    assert!(measured > 1e3 && measured != 2e6, "{calibrated}");
}

//! Bring your own kernel: `spork kernel` on fixture kernels no built-in code knows (a saturating
//! INT16 add, a CRC-8 over rows), their RTL verilated at test time and their CPU side compiled from
//! C; a wrong RTL variant; a scaffolded kernel; a Rust kernel written as one function; and bad
//! repositories, each refused with the problem and the fix named.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
#[path = "support/boards.rs"]
mod boards;
#[path = "support/builtin_words.rs"]
mod builtin_words;
#[path = "support/command.rs"]
mod command;
#[path = "support/fixtures.rs"]
mod fixtures;
#[path = "support/golden.rs"]
mod golden;

use command::{shared_cache, text};
use fixtures::{fixture, on_satadd};

use spork::repository::cpu::CpuLibrary;
use spork::repository::spec;
use spork::repository::tensor::TensorBuf;
use spork_kernel::ffi::DType;

/// The tag of this binary's shared cache.
const CACHE: &str = "kernels";

/// `spork kernel ARGS` with its cache in `cache`.
fn kernel(args: &[&str], dir: &Path, cache: &Path) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_spork"))
        .arg("kernel")
        .args(args)
        .arg(dir)
        .env("SPORK_CACHE_DIR", cache)
        .output()
        .expect("spork runs");
    eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn correct_kernels_pass_check_on_random_and_edge_shapes() {
    let cache = shared_cache(CACHE);
    for name in ["satadd", "crc8"] {
        let o = kernel(&["check", "--requests", "12"], &fixture(name), &cache);
        let t = text(&o);
        assert!(o.status.success(), "{name}: {t}");
        // Both edge cases ran at their real bounds, and every request matched.
        assert!(t.contains("min ") && t.contains("max "), "{t}");
        assert!(t.contains(&format!("{name}: 14 requests match")), "{t}");
        // One beat per cycle when nothing holds the output back.
        assert!(t.contains("1.000 cycles per item"), "{t}");
    }
    let max = text(&kernel(&["check", "--requests", "0"], &fixture("crc8"), &cache));
    assert!(max.contains("L=1024 R=4096") && max.contains("4194304 items"), "{max}");
}

#[test]
fn a_wrong_rtl_fails_check_with_the_first_mismatch_named() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let o = kernel(&["check"], &on_satadd("satadd_wraps", &["cpu"], scratch.path()), &shared_cache(CACHE));
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    // Where, and both values: the CPU side saturates to an INT16 bound where the RTL wrapped.
    assert!(t.contains("output 'sum' element") && t.contains("(position ["), "{t}");
    assert!(
        t.contains("the RTL gave") && (t.contains("the CPU code 32767") || t.contains("the CPU code -32768")),
        "{t}"
    );
}

#[test]
fn rtl_is_verilated_once_then_found_by_content_hash() {
    let cache = tempfile::tempdir().expect("temp dir");
    let model = tempfile::tempdir().expect("temp dir");
    let dir = model.path().join("satadd");
    fixtures::copy_dir(&fixture("satadd"), &dir);
    let first = text(&kernel(&["build"], &dir, cache.path()));
    assert!(first.contains("RTL verilated and compiled in"), "{first}");
    let second = text(&kernel(&["build"], &dir, cache.path()));
    assert!(second.contains("RTL cache hit in"), "{second}");
    // A changed source is a new key: verilated again.
    let v = dir.join("rtl/satadd.v");
    let src = std::fs::read_to_string(&v).expect("source") + "\n// changed\n";
    std::fs::write(&v, src).expect("write");
    let third = text(&kernel(&["build"], &dir, cache.path()));
    assert!(third.contains("RTL verilated and compiled in"), "{third}");
}

#[test]
fn bad_repositories_are_refused_naming_the_problem_and_the_fix() {
    let cache = shared_cache(CACHE);
    // Each with its one defect, and the satadd folders it shares.
    let cases: [(&str, &[&str], &[&str]); 7] = [
        ("missing_source", &["cpu"], &["model.toml:", "fpga.sim.sources", "does not exist", "fix:"]),
        ("syntax_error", &["cpu"], &["Verilator refused the design", "rtl/satadd.v:42:33", "syntax error"]),
        ("no_axis", &["cpu"], &["no input port `s_axis_tdata`", "in_a, in_b"]),
        ("no_symbol", &["rtl"], &["does not export spork_kernel_run", "fix:"]),
        ("abi_mismatch", &["rtl"], &["ABI version 99", "takes version 1", "fix: rebuild"]),
        (
            "bad_dtype",
            &["cpu", "rtl"],
            &["model.toml:", "'FP16' is not one the C ABI takes", "fix: use one of"],
        ),
        ("unknown_key", &["cpu", "rtl"], &["model.toml:13:", "unknown field `datatyp`"]),
    ];
    let scratch = tempfile::tempdir().expect("tempdir");
    for (name, shares, wanted) in cases {
        let o = kernel(&["build"], &on_satadd(&format!("bad/{name}"), shares, scratch.path()), &cache);
        let t = text(&o);
        assert!(!o.status.success(), "{name} was accepted: {t}");
        for w in wanted {
            assert!(t.contains(w), "{name}: no '{w}' in: {t}");
        }
    }
}

#[test]
fn a_new_kernel_passes_check_lint_and_synth_as_generated() {
    let repo = tempfile::tempdir().expect("temp dir");
    let cache = shared_cache(CACHE);
    let o = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["kernel", "new", "addone", "--dir"])
        .arg(repo.path())
        .output()
        .expect("spork runs");
    assert!(o.status.success(), "{}", text(&o));
    let dir = repo.path().join("addone");
    for f in
        ["model.toml", "rtl/addone.v", "cpu/addone.c", "cpu/spork_kernel.h", "rust/src/lib.rs", "README.md"]
    {
        assert!(dir.join(f).is_file(), "no {f}");
    }
    assert!(text(&kernel(&["check"], &dir, &cache)).contains("addone: 22 requests match"));
    // From inside the folder, as a kernel's author works: `.` names the folder it is.
    let here = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["kernel", "check", "."])
        .current_dir(&dir)
        .env("SPORK_CACHE_DIR", &cache)
        .output()
        .expect("spork runs");
    assert!(text(&here).contains("addone: 22 requests match"), "{}", text(&here));
    assert!(kernel(&["lint"], &dir, &cache).status.success());
    let synth = kernel(&["synth"], &dir, &cache);
    assert!(synth.status.success(), "{}", text(&synth));
    // The manifest synth wrote is one the model can time the emulated board by.
    let toml = std::fs::read_to_string(dir.join("model.toml")).expect("model.toml");
    let timed =
        toml.replace("clock_mhz = 250\nitems_per_cycle = 1\nlatency_cycles = 1", "manifest = \"synth.toml\"");
    assert_ne!(toml, timed, "the template's [fpga.model] lines changed");
    std::fs::write(dir.join("model.toml"), timed).expect("write");
    let spec = spec::load(&dir).expect("the model loads with its manifest");
    assert!(matches!(spec.timing, Some(spec::TimingSpec::Manifest(_))));
    // A second scaffold of the same name is refused rather than overwriting.
    let again = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["kernel", "new", "addone", "--dir"])
        .arg(repo.path())
        .output();
    assert!(text(&again.expect("runs")).contains("already exists"));
}

/// `spork kernel new --lanes 4`: four UINT32 elements a beat (128-bit TDATA, past the 64 bits a
/// Verilator port holds in one word), rows of every length modulo four, check, synth (items per cycle
/// near four) and the TKEEP rule: a kernel that marks every lane of a row's partial beat fails check
/// naming the beat, and a model of more lanes than its ports carry is refused at load.
#[test]
fn a_four_lane_kernel_checks_synthesises_and_is_held_to_tkeep() {
    let repo = tempfile::tempdir().expect("temp dir");
    let cache = shared_cache(CACHE);
    let o = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["kernel", "new", "wide4", "--lanes", "4", "--dir"])
        .arg(repo.path())
        .output()
        .expect("spork runs");
    assert!(o.status.success(), "{}", text(&o));
    let dir = repo.path().join("wide4");
    let spec = spec::load(&dir).expect("loads");
    assert_eq!(spec.sim.as_ref().map(|s| s.lanes), Some(4));
    let checked = text(&kernel(&["check"], &dir, &cache));
    assert!(checked.contains("wide4: 22 requests match"), "{checked}");
    let synth = kernel(&["synth"], &dir, &cache);
    assert!(synth.status.success(), "{}", text(&synth));
    let manifest = std::fs::read_to_string(dir.join("synth.toml")).expect("synth.toml");
    let ipc: f64 = manifest
        .lines()
        .find_map(|l| l.strip_prefix("items_per_cycle = "))
        .and_then(|v| v.parse().ok())
        .expect("items_per_cycle");
    assert!((3.5..=4.0).contains(&ipc), "{ipc} items per cycle at four lanes");
    // Served live on the simulated board: every request answered by the verilated four-lane RTL,
    // each answer held to the C code.
    let out = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["run", "--kernel", "wide4", "--board", "sim", "--duration", "3s", "--rate", "100"])
        .args(["--scheduler", "fpga-static", "--json", "--model-repository"])
        .arg(repo.path())
        .env("SPORK_CACHE_DIR", &cache)
        .output()
        .expect("spork runs");
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let run = &report["runs"][0];
    // Every request answered or refused at admission, once; a request that arrives while the board
    // still configures may be refused if its deadline falls before the board is ready (the
    // evaluator's replay, every request at once, refuses 50), so a few may be, never many.
    let count = |k: &str| run[k].as_u64().unwrap_or(u64::MAX);
    assert_eq!(count("answered") + count("rejected"), count("offered"), "{run}");
    assert!(count("rejected") <= 5, "{run}");
    assert_eq!(run["faults"], serde_json::json!([]), "{run}");
    assert_eq!(run["mismatches"].as_u64(), Some(0), "{run}");
    assert!(run["fpga_share"].as_f64().is_some_and(|s| s > 0.5), "the board served them: {run}");
    serve_wide4(repo.path(), &cache);
    // A kernel that keeps every lane of every beat.
    let rtl = dir.join("rtl/wide4.v");
    let v = std::fs::read_to_string(&rtl).expect("rtl");
    let lying = v.replace("out_keep <= s_axis_tkeep;", "out_keep <= {LANES{1'b1}};");
    assert_ne!(v, lying);
    std::fs::write(&rtl, lying).expect("write");
    let t = text(&kernel(&["check"], &dir, &cache));
    assert!(t.contains("keeps lanes 0b1111") && t.contains("m_axis_tkeep"), "{t}");
    // More lanes than the design's ports carry.
    std::fs::write(&rtl, &v).expect("write");
    let toml = std::fs::read_to_string(dir.join("model.toml")).expect("model.toml");
    std::fs::write(dir.join("model.toml"), toml.replace("lanes = 4", "lanes = 8")).expect("write");
    let t = text(&kernel(&["check"], &dir, &cache));
    assert!(t.contains("s_axis_tdata is 128 bits, the inputs need 256"), "{t}");
}

/// `spork serve` of the four-lane model on the simulated board, driven by `spork load` over HTTP and
/// gRPC: every request answered, each answer equal to the model's C code run by the load generator
/// (`--check`), and the board among the workers that answered. CPUs at 10x the paper's power: the
/// board (4 items a cycle, its link charged) then pays for itself, so the allocator holds it.
fn serve_wide4(repo: &Path, cache: &Path) {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().expect("tmp");
    let platform = tmp.path().join("platform.toml");
    std::fs::write(&platform, "[cpu]\nbusy_power_w = 1500.0\n[fpga]\nspin_up = \"300ms\"\n")
        .expect("platform");
    let mut server = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["serve", "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--grace", "1s", "--board", "sim"])
        .args(["--models", "wide4", "--platform"])
        .arg(&platform)
        .arg("--model-repository")
        .arg(repo)
        .env("SPORK_CACHE_DIR", cache)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spork serve starts");
    // Read to its end on a thread of its own: the server keeps writing after it is ready.
    let stderr = std::io::BufReader::new(server.stderr.take().expect("stderr"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if line.contains("HTTP on ") {
                let _ = tx.send(line);
            }
        }
    });
    let ready = rx.recv_timeout(std::time::Duration::from_secs(120)).unwrap_or_default();
    let after = |what: &str| ready.split(what).nth(1).and_then(|r| r.split([',', ' ', ';']).next());
    let targets = [("http", after("HTTP on ")), ("grpc", after("gRPC on "))];
    let mut by_board = 0;
    for (protocol, target) in targets {
        let Some(target) = target else {
            let _ = server.kill();
            panic!("no {protocol} address in: {ready}");
        };
        let out = Command::new(env!("CARGO_BIN_EXE_spork"))
            .args(["load", "--model", "wide4", "--protocol", protocol, "--target", target])
            // 6 s a protocol: SporkE holds no board until its first plan, a few intervals in (from
            // a fresh cache on an idle 2-core VM, 3 s of each had left the board unused in both).
            .args(["--duration", "6s", "--rate", "100", "--deadline-ms", "2000", "--json", "--check"])
            .arg("--model-repository")
            .arg(repo)
            .env("SPORK_CACHE_DIR", cache)
            .output()
            .expect("spork load runs");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if !out.status.success() || v["ok"] != v["sent"] || v["checks"]["right"] != v["ok"] {
            let _ = server.kill();
            panic!("{protocol}: every wide4 request answered and right: {}", text(&out));
        }
        by_board += v["by_kind"]["fpga"].as_u64().unwrap_or(0);
    }
    // Loading under --board sim (verilated, its RTL timed at load) and serving it stays bounded.
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.id())).unwrap_or_default();
    let kb = status.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1));
    let peak = kb.and_then(|k| k.parse::<u64>().ok()).unwrap_or(u64::MAX).saturating_mul(1024);
    let _ = server.kill();
    let _ = server.wait();
    assert!(by_board > 0, "the simulated board answered some of them");
    eprintln!("wide4 under --board sim: the server's peak RSS {} MiB", peak >> 20);
    assert!(peak < SIM_RSS_BOUND, "the server's peak RSS {peak} bytes");
}

/// What a server loading and serving one small model on the simulated board may hold at its peak:
/// the verilated design (bounded at 256 MiB an instance), the C code's speed measured on at most
/// 16 MiB of tensors, and its buffers.
const SIM_RSS_BOUND: u64 = 512 << 20;

#[test]
fn a_rust_kernel_written_as_one_function_passes_check_through_the_abi() {
    let repo = tempfile::tempdir().expect("temp dir");
    let o = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["kernel", "new", "rusty", "--dir"])
        .arg(repo.path())
        .output()
        .expect("spork runs");
    assert!(o.status.success(), "{}", text(&o));
    let dir = repo.path().join("rusty");
    let build = Command::new(env!("CARGO"))
        .args(["build", "--release", "--offline", "--quiet"])
        .current_dir(dir.join("rust"))
        .env("CARGO_TARGET_DIR", dir.join("rust/target"))
        .output()
        .expect("cargo runs");
    assert!(build.status.success(), "{}", text(&build));
    let toml = std::fs::read_to_string(dir.join("model.toml")).expect("model.toml");
    let rust = toml.replace("sources = [\"cpu/rusty.c\"]", "").replace(
        "# library = \"rust/target/release/librusty.so\"",
        "library = \"rust/target/release/librusty.so\"",
    );
    std::fs::write(dir.join("model.toml"), rust).expect("write");
    let t = text(&kernel(&["check"], &dir, &shared_cache(CACHE)));
    assert!(t.contains("rusty: 22 requests match"), "{t}");
}

#[test]
fn a_kernel_error_reaches_the_caller_with_its_message() {
    let spec = spec::load(&fixture("satadd")).expect("satadd loads");
    let lib = CpuLibrary::load(&spec, spec.cpu.as_ref().expect("[cpu]")).expect("library");
    let mut k = lib.instance().expect("init");
    let names = spec.c_names();
    // Right shapes, wrong element type: the C code refuses and says why.
    let inputs =
        vec![TensorBuf::zeroed(DType::Uint16, &[4]).unwrap(), TensorBuf::zeroed(DType::Int16, &[4]).unwrap()];
    let mut outputs = spec.outputs_for(&[4]);
    let e = k.run((&names.0, &names.1), &inputs, &mut outputs).unwrap_err();
    assert!(e.contains("satadd: every tensor must be INT16"), "{e}");
    // And the same state then serves a good request.
    let mut good =
        vec![TensorBuf::zeroed(DType::Int16, &[2]).unwrap(), TensorBuf::zeroed(DType::Int16, &[2]).unwrap()];
    good[0].set_bits(0, 32767);
    good[1].set_bits(0, 5);
    good[0].set_bits(1, (-7i16) as u16 as u64);
    good[1].set_bits(1, 3);
    let mut out = spec.outputs_for(&spec.bind(&good).expect("binds"));
    k.run((&names.0, &names.1), &good, &mut out).expect("runs");
    assert_eq!((out[0].show(0), out[0].show(1)), ("32767".into(), "-4".into()));
}

#[test]
fn a_repository_model_runs_live_on_the_simulated_board_checked_against_its_c_code() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // A board that costs almost nothing idle, so the allocator holds one within the short trace.
    let platform = boards::cheap_board(tmp.path(), Some("1s"));
    let out = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["run", "--kernel", "crc8", "--board", "sim", "--duration", "6s", "--rate", "100"])
        .args(["--scheduler", "spork-e", "--json", "--model-repository"])
        .arg(fixture(""))
        .arg("--config")
        .arg(&platform)
        .env("SPORK_CACHE_DIR", shared_cache(CACHE))
        .output()
        .expect("spork runs");
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let run = &report["runs"][0];
    assert_eq!(report["kernel"], "crc8");
    assert_eq!(run["answered"], run["offered"], "{run}");
    // Board answers came from the verilated RTL, each checked against the C code: no fault.
    assert!(run["answered_fpga"].as_u64().is_some_and(|n| n > 0), "{run}");
    assert_eq!(run["faults"], serde_json::json!([]), "{run}");
    let unknown = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["run", "--kernel", "nosuch", "--model-repository"])
        .arg(fixture(""))
        .output()
        .expect("spork runs");
    assert!(text(&unknown).contains("no model folder"), "{}", text(&unknown));
}

/// An RTL top with an active-high reset (`rst`): described by `reset_active = "high"`, it passes
/// check; without it the design sits in reset, and the stall says so and names the setting.
#[test]
fn an_active_high_reset_is_described_and_a_design_held_in_reset_is_named() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("crc8");
    fixtures::copy_dir(&fixture("crc8"), &dir);
    let v = dir.join("rtl/crc8.v");
    let rtl = std::fs::read_to_string(&v).expect("crc8.v");
    let high = rtl.replace("!ap_rst_n", "rst").replace("ap_rst_n &&", "!rst &&").replace("ap_rst_n,", "rst,");
    assert!(
        !high.contains("ap_rst_n") || high.matches("ap_rst_n").count() == 1,
        "only the comment may keep it"
    );
    std::fs::write(&v, high).expect("write");
    let toml = dir.join("model.toml");
    let spec = std::fs::read_to_string(&toml).expect("model.toml");
    let with =
        |extra: &str| spec.replace("top = \"crc8\"", &format!("top = \"crc8\"\nreset = \"rst\"{extra}"));
    std::fs::write(&toml, with("")).expect("write");
    let cache = shared_cache(CACHE);
    let held = kernel(&["check"], &dir, &cache);
    assert!(!held.status.success());
    assert!(text(&held).contains("reset_active = \"high\""), "{}", text(&held));
    std::fs::write(&toml, with("\nreset_active = \"medium\"")).expect("write");
    let bad = kernel(&["check"], &dir, &cache);
    let t = text(&bad);
    assert!(
        !bad.status.success() && t.contains("model.toml:") && t.contains("'medium' is not a level"),
        "{t}"
    );
    assert!(t.contains("fix: write reset_active"), "{t}");
    std::fs::write(&toml, with("\nreset_active = \"high\"")).expect("write");
    let ok = kernel(&["check"], &dir, &cache);
    assert!(ok.status.success() && text(&ok).contains("requests match"), "{}", text(&ok));
}

/// Spork's own repository (`models/`) answers as the golden models (`spork_golden`, an oracle
/// independent of both) in its C code and its RTL, at random sizes, with the on-chip state the
/// models bake in (seed 0: the bloom profile and the dense weights).
#[test]
fn spork_s_own_repository_answers_as_the_golden_models_on_cpu_and_rtl() {
    use rand::SeedableRng;
    let state = golden::State::models();
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(24);
    for k in ["sobel", "bloom", "dense"] {
        let repo = spork::repository::own::load(k, true).unwrap_or_else(|e| panic!("{k}: {e}"));
        let rtl = repo.rtl.as_ref().expect("loaded for the simulated board");
        let mut axis = rtl.instance().expect("an instance");
        for items in [9, 64, 1000, 5000, 40_000] {
            let job = state.job(k, items, &mut rng);
            let want = state.output(&job);
            let tensors = repo.payload(vec![job.tensor()]).expect("fits the model's spec");
            assert_eq!(
                tensors.outputs,
                [(want.dtype, want.shape.clone())],
                "{k}: the output's type and shape"
            );
            let cpu = repo.reference(&tensors).expect("the C code runs");
            assert_eq!(cpu.len(), 1, "{k}: one output");
            assert_eq!(cpu[0].bytes(), want.bytes(), "{k}: C code, {items} items");
            let mut rtl_out = repo.outputs(&tensors);
            rtl.run(
                &mut axis,
                &tensors.inputs,
                &tensors.dims,
                &mut rtl_out,
                &[false, true, true, true, true],
            )
            .unwrap_or_else(|e| panic!("{k}: {e}"));
            assert_eq!(rtl_out[0].bytes(), want.bytes(), "{k}: RTL, {items} items");
        }
    }
}

/// `spork kernel package`: the generated Vitis top, verilated with the model's own RTL and driven as
/// Spork's data movers drive the card (64-bit words, or 512-bit for dense's 512-bit beats: each
/// request's scalars first, then its beats, TLAST by the model's rule), answers every request as the
/// model's C code does. sobel has a scalar (its width, re-armed after each request's TLAST); dense
/// and satadd have none and end rows with TLAST.
#[test]
fn a_packaged_vitis_kernel_takes_its_scalars_in_band_and_answers_as_the_c_code() {
    use rand::SeedableRng;
    use spork::repository::kernel::RepoKernel;
    use spork::repository::spec::Last;
    use spork_sim::axis::{Axis, AxisPorts};
    use spork_sim::beats::Beats;
    let tmp = tempfile::tempdir().expect("tmp");
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(7);
    for dir in [models.join("sobel"), models.join("dense"), fixture("satadd")] {
        let out = tmp.path().join(dir.file_name().expect("a name"));
        let o = Command::new(env!("CARGO_BIN_EXE_spork"))
            .args(["kernel", "package"])
            .arg(&dir)
            .arg("--out")
            .arg(&out)
            .output()
            .expect("spork runs");
        assert!(o.status.success(), "{}", text(&o));
        let spec = spec::load(&dir).expect("loads");
        let sim = spec.sim.clone().expect("RTL");
        let sources: Vec<PathBuf> = std::fs::read_to_string(out.join("sources.txt"))
            .expect("sources.txt")
            .lines()
            .map(PathBuf::from)
            .collect();
        assert!(sources.iter().all(|s| s.is_absolute() && s.is_file()), "{sources:?}");
        let design = spork_sim::verilate::Design {
            name: format!("{}_vitis", spec.name),
            top: format!("{}_vitis", sim.top),
            sources,
            dir: out.clone(),
            waivers: Vec::new(),
            strict: false,
        };
        let built = spork_sim::cache::verilated(&design).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        let model = spork_sim::Model::load_path(&built.library).expect("loads");
        let mut axis = Axis::new(&model, &AxisPorts::default()).expect("the card's stream ports");
        let w = spec.mover_bits() / 64;
        assert_eq!(axis.widths, (64 * w as u32, 64 * w as u32), "{}: the movers' words", spec.name);
        let repo = RepoKernel::load(spec.clone(), false).expect("its C code builds");
        // Three requests back to back on one instance: the header re-arms after each.
        for items in [60, 700, 2000] {
            let p = repo.random(items, &mut rng);
            let want = repo.reference(&p).expect("the C code runs");
            let scalars: Vec<u64> = sim.scalars.iter().map(|&d| p.dims[d]).collect();
            let data = spork::repository::stream::beats(&p.inputs, sim.last, sim.lanes, w);
            let mut words = Beats::new(w);
            for &s in &scalars {
                words.push(u64::MAX, false)[0] = s;
            }
            words.data.extend(&data.data);
            words.keep.extend(&data.keep);
            words.last.extend(&data.last);
            if let (Last::Request, Some(l)) = (sim.last, words.last.last_mut()) {
                *l = true;
            }
            let mut got = repo.outputs(&p);
            let expected = spork::repository::stream::expected(&got, sim.lanes);
            let streamed = axis.run(&[], &words, expected, &[false, true, true]).expect("streams");
            spork::repository::stream::unpack(&streamed.beats, &mut got, sim.lanes)
                .expect("TKEEP as its rows");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.bytes(), w.bytes(), "{}: {items} items", spec.name);
            }
        }
    }
    // Scalars with row TLAST cannot be packaged: the request's end would be unmarked.
    let rows = tmp.path().join("rows");
    fixtures::copy_dir(&models.join("sobel"), &rows);
    let toml = std::fs::read_to_string(rows.join("model.toml")).expect("read");
    std::fs::write(rows.join("model.toml"), toml.replace("last = \"request\"", "last = \"row\""))
        .expect("write");
    let o = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["kernel", "package"])
        .arg(&rows)
        .output()
        .expect("runs");
    assert!(!o.status.success() && text(&o).contains("last = \"request\""), "{}", text(&o));
}

/// Spork's first kernels inside their Vitis stream wrappers (`scripts/vitis/<kernel>_axis.v`, the
/// RTL a real board runs), on the generic AXI4-Stream driver, fed exactly the words the data movers
/// carry to them (tests/support/builtin_words.rs, on-chip state included): answers equal the golden
/// models' for state drawn from a seed other than the models' 0, back to back, at random and edge
/// sizes (one item, the widest image row, empty documents), under backpressure too.
#[test]
fn the_kernels_in_their_vitis_wrappers_answer_as_the_golden_models() {
    use golden::{Job, State};
    use rand::SeedableRng;
    use spork_sim::axis::{Axis, AxisPorts};
    use spork_sim::beats::Beats;
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(5);
    let state = State::new(7);
    for kernel in ["sobel", "bloom", "dense"] {
        let model = spork_sim::Model::load(&format!("{kernel}_axis")).expect("built by spork-sim");
        let mut axis = Axis::new(&model, &AxisPorts::default()).expect("stream ports");
        let mut jobs: Vec<Job> =
            [1, 9, 700, 4096, 256 * 5].iter().map(|&n| state.job(kernel, n, &mut rng)).collect();
        if kernel == "bloom" {
            jobs.push(Job::Documents(vec![vec![], vec![3, 4], vec![]]));
        }
        for (i, job) in jobs.iter().enumerate() {
            let words = builtin_words::encode(&state, job);
            let beats = Beats::from_words(&words, |j| j + 1 == words.len());
            let ready: &[bool] = if i % 2 == 1 { &[true, false, true] } else { &[] };
            let out = axis.run(&[], &beats, builtin_words::expected_words(job), ready).expect("streams");
            assert!(out.beats.last.last().is_some_and(|&l| l), "{kernel}: TLAST on the job's last word");
            let got = builtin_words::decode(job, &out.beats.data).unwrap_or_else(|e| panic!("{kernel}: {e}"));
            assert_eq!(got, state.answer(job), "{kernel}, job {i}");
            assert!(out.cycles >= job.items(), "{kernel}: {} cycles for {} items", out.cycles, job.items());
        }
    }
}

/// A user's own library is opened from a copy in the cache, keyed by its content: overwriting the
/// model's file while it is served cannot change or crash the code the server mapped.
#[test]
fn a_users_library_is_opened_from_a_copy_so_overwriting_it_is_harmless() {
    let satadd = spec::load(&fixture("satadd")).expect("satadd loads");
    let built = CpuLibrary::build(&satadd, satadd.cpu.as_ref().expect("[cpu]")).expect("satadd builds");
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("mine");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::copy(&built, dir.join("libmine.so")).expect("copy the library");
    let toml = std::fs::read_to_string(fixture("satadd").join("model.toml")).expect("model.toml");
    let toml = toml.replace("sources = [\"cpu/satadd.c\"]", "library = \"libmine.so\"");
    let end = toml.find("[fpga").unwrap_or(toml.len());
    std::fs::write(dir.join("model.toml"), &toml[..end]).expect("write");
    let spec = spec::load(&dir).expect("the model loads");
    let cpu = spec.cpu.as_ref().expect("[cpu]");
    let opened = CpuLibrary::build(&spec, cpu).expect("the library is copied");
    assert!(!opened.starts_with(&dir), "{} is the model's own file", opened.display());
    assert_eq!(std::fs::read(&opened).expect("the copy"), std::fs::read(&built).expect("the original"));
    let lib = CpuLibrary::load(&spec, cpu).expect("opens");
    let mut k = lib.instance().expect("init");
    std::fs::write(dir.join("libmine.so"), vec![0xcc; 4096]).expect("overwrite the model's library");
    let names = spec.c_names();
    let mut a =
        vec![TensorBuf::zeroed(DType::Int16, &[1]).unwrap(), TensorBuf::zeroed(DType::Int16, &[1]).unwrap()];
    a[0].set_bits(0, 2);
    a[1].set_bits(0, 3);
    let mut out = spec.outputs_for(&[1]);
    k.run((&names.0, &names.1), &a, &mut out).expect("runs after the overwrite");
    assert_eq!(out[0].show(0), "5");
}

/// A design that runs `$fatal` or `$stop` (here on a trigger input) fails that run with the
/// message, instead of aborting the process that simulates it (the server under `--board sim`);
/// a fresh instance then runs the next request right.
#[test]
fn an_rtl_stop_or_fatal_fails_its_run_not_the_process() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("satadd");
    fixtures::copy_dir(&fixture("satadd"), &dir);
    let v = dir.join("rtl/satadd.v");
    let text = std::fs::read_to_string(&v).expect("satadd.v");
    let hook = "    always @(posedge ap_clk) begin\n        if (s_axis_tvalid && s_axis_tready && a == 16'd4951) \
                $fatal(1, \"hostile: trigger %0d\", b);\n        if (s_axis_tvalid && s_axis_tready && a == 16'd4952) \
                $stop;\n    end\n\nendmodule";
    let hostile = text.replacen("endmodule", hook, 1);
    assert_ne!(text, hostile);
    std::fs::write(&v, hostile).expect("write");
    let spec = spec::load(&dir).expect("the model loads");
    let kernel = spork::repository::kernel::RepoKernel::load(spec, true).expect("verilates");
    let rtl = kernel.rtl.as_ref().expect("its RTL");
    let run = |a0: i16| {
        let mut axis = rtl.instance().expect("an instance");
        let p = kernel.payload(vec![int16(&[a0, 1, 2]), int16(&[7, 1, 2])]).expect("binds");
        let mut out = kernel.outputs(&p);
        rtl.run(&mut axis, &p.inputs, &p.dims, &mut out, &[])
            .map(|_| out[0].show(0))
            .map_err(|e| e.to_string())
    };
    let fatal = run(4951).expect_err("the design ran $fatal");
    // Verilator prints $fatal's message, then stops the design at its line.
    assert!(fatal.contains("design stopped: Verilog $stop at rtl/satadd.v:"), "{fatal}");
    let stop = run(4952).expect_err("the design ran $stop");
    assert!(stop.contains("design stopped: Verilog $stop at rtl/satadd.v:"), "{stop}");
    assert_ne!(fatal, stop, "each names its own line");
    assert_eq!(run(5).expect("a plain request"), "12");
}

/// A design with a 2 GiB memory (2^28 64-bit words, read into its output so Verilator keeps it):
/// one instance would reset, and so touch, all of it in the server's process. It is refused at load,
/// naming its size, before any instance is made: this process's peak RSS grows far less.
#[test]
fn an_rtl_whose_memories_pass_the_bound_is_refused_before_an_instance_is_made() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("satadd");
    fixtures::copy_dir(&fixture("satadd"), &dir);
    fixtures::edit_file(&dir.join("rtl/satadd.v"), |rtl| {
        let hog = rtl
            .replacen("endmodule", "    reg [63:0] hog [0:(1<<28)-1];\n    always @(posedge ap_clk) hog[sum2] <= {48'd0, sum2};\n\nendmodule", 1)
            .replacen("assign m_axis_tdata = sum2;", "assign m_axis_tdata = sum2 ^ hog[sum2][15:0];", 1);
        assert_eq!(hog.matches("hog").count(), 3, "both edits landed");
        hog
    });
    let before = peak_rss();
    let spec = spec::load(&dir).expect("the model loads");
    let e = spork::repository::kernel::RepoKernel::load(spec, true).expect_err("refused").to_string();
    assert!(e.contains("one instance of its RTL takes") && e.contains("past the 268435456"), "{e}");
    let grew = peak_rss().saturating_sub(before);
    assert!(grew < 512 << 20, "the peak RSS grew {} MiB", grew >> 20);
}

/// This process's peak resident memory (VmHWM), bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let kb = status.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1));
    kb.and_then(|k| k.parse::<u64>().ok()).expect("VmHWM") * 1024
}

/// An INT16 tensor of `v`.
fn int16(v: &[i16]) -> TensorBuf {
    let mut t = TensorBuf::zeroed(DType::Int16, &[v.len() as u64]).expect("fits");
    for (i, x) in v.iter().enumerate() {
        t.set_bits(i, *x as u16 as u64);
    }
    t
}

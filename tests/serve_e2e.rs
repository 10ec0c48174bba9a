//! `spork serve` end to end over loopback with clients nobody here wrote: the Python `tritonclient`
//! (HTTP and gRPC) runs inference on every model and the results must equal the golden models'
//! (`spork_golden`, independent of the C code the server runs); bad requests (wrong datatype or
//! shape, oversized, malformed JSON, truncated binary data, unknown model, missing or wrong token, a
//! deadline of 0) must get the right status and a message while a concurrent valid stream loses
//! nothing (tests/python/oip_e2e.py). Then the server drains, and every request it took was answered
//! or refused, once.
//!
//! The client runs in a virtual environment that `scripts/python-env.sh` makes (pip, from PyPI) if
//! it is not there yet; `.ci/run` makes it before the tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use spork::backend::Board;
use spork::engine::Plan;
use spork::policy::Scheduler;
use spork::serve::{Kernelled, Limits, ServeConfig};

#[path = "support/golden.rs"]
#[allow(dead_code)]
mod golden;

const TOKEN: &str = "e2e-token-0123456789abcdef";
const MAX_BODY: usize = 1 << 20;

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

/// A tensor file and its JSON description.
fn tensor(
    dir: &Path,
    file: &str,
    name: &str,
    datatype: &str,
    shape: &[usize],
    bytes: Vec<u8>,
) -> serde_json::Value {
    std::fs::write(dir.join(file), bytes).expect("write tensor");
    serde_json::json!({ "name": name, "datatype": datatype, "shape": shape, "file": file })
}

/// One case per model (dense also with its optional part): inputs drawn from `spork_golden::inputs`
/// and the golden models' answers, an oracle independent of the C code the server runs.
fn cases(dir: &Path) {
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(7);
    let state = golden::State::models();
    let mut cases = Vec::new();
    for model in ["sobel", "bloom", "dense"] {
        let mandatory = state.job(model, 3_000, &mut rng);
        let optional = (model == "dense").then(|| state.job(model, 200, &mut rng));
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        for (i, job) in std::iter::once(&mandatory).chain(optional.as_ref()).enumerate() {
            let (in_name, out_name) = match (model, i) {
                ("sobel", 0) => ("image", "magnitudes"),
                ("sobel", _) => ("refinement", "refinement_magnitudes"),
                ("bloom", 0) => ("documents", "scores"),
                ("bloom", _) => ("more_documents", "more_scores"),
                ("dense", 0) => ("vectors", "activations"),
                _ => ("more_vectors", "more_activations"),
            };
            let f = |s: &str| format!("{model}-{i}-{s}.bin");
            let (input, output) = (job.tensor(), state.output(job));
            for (list, file, name, t) in
                [(&mut inputs, f("in"), in_name, input), (&mut outputs, f("out"), out_name, output)]
            {
                let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
                list.push(tensor(dir, &file, name, t.dtype.name(), &shape, t.bytes().to_vec()));
            }
        }
        cases.push(serde_json::json!({ "model": model, "inputs": inputs, "outputs": outputs, "parameters": { "deadline_ms": 200.0 } }));
    }
    std::fs::write(dir.join("cases.json"), serde_json::to_vec_pretty(&cases).expect("json"))
        .expect("write cases");
}

#[test]
fn tritonclient_runs_every_model_and_bad_requests_get_their_status() {
    let python = python();
    let dir = tempfile::tempdir().expect("tempdir");
    cases(dir.path());
    let kernels = ["sobel", "bloom", "dense"]
        .iter()
        .map(|k| {
            let mut k = Kernelled::own(k, None, None, false).expect("calibration");
            // Boards of two compute units: each answer below comes from one CU's own queue.
            k.platform.fpga.compute_units = 2;
            k
        })
        .collect();
    let cfg = ServeConfig {
        http: "127.0.0.1:0".parse().expect("addr"),
        grpc: "127.0.0.1:0".parse().expect("addr"),
        kernels,
        // The Verilated dispatch engine picks each request's board, checked against the software.
        plan: Plan {
            dispatch_engine: spork::engine::hardware::EngineKind::Rtl,
            ..Plan::new(Scheduler::Spork(spork::policy::Objective::ENERGY))
        },
        board: Board::Model(None),
        boards: None,
        token: Some(TOKEN.into()),
        open_health: true,
        limits: Limits { max_body: MAX_BODY, ..Limits::default() },
        grace: Duration::from_secs(5),
        io_threads: 1,
        io_priority: Default::default(),
        // Booked at the p99 of the measured sizes (the answers do not depend on it).
        size_estimate: spork::policy::estimate::Statistic::Percentile(0.99),
        kernel_timeout: Duration::from_secs(10),
        faults: Default::default(),
        repository: None,
    };
    let running = spork::serve::start(cfg).expect("the server starts");
    let out = Command::new(&python)
        .arg(root().join("tests/python/oip_e2e.py"))
        .args(["--http", &running.http.to_string(), "--grpc", &running.grpc.to_string()])
        .args([
            "--cases",
            &dir.path().to_string_lossy(),
            "--token",
            TOKEN,
            "--max-body",
            &MAX_BODY.to_string(),
        ])
        .args(["--stream-seconds", "60"])
        .output()
        .expect("python runs");
    let server = Arc::clone(&running.server);
    let metrics = server.render_metrics();
    drop(server);
    let reports = running.drain();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the client's checks failed:\n{stdout}\n{stderr}");
    eprintln!("{stdout}");
    assert!(metrics.contains("spork_requests_total{"), "{metrics}");
    let verdicts = |verdict: &str| -> u64 {
        let label = format!("verdict=\"{verdict}\"}} ");
        metrics
            .lines()
            .filter(|l| l.starts_with("spork_dispatch_engine_decisions{") && l.contains(&label))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    assert!(verdicts("agree") > 0, "the RTL dispatch engine decided: {metrics}");
    assert_eq!(verdicts("disagree"), 0, "{metrics}");
    assert!(metrics.contains("spork_fpga_compute_units{model=\"sobel\"} 2"), "{metrics}");
    for (model, report) in reports {
        let r = report.unwrap_or_else(|| panic!("{model}: the pool ended abnormally"));
        assert_eq!(
            r.offered,
            r.answered + r.rejected + r.rejected_at_stop,
            "{model}: every request settled once"
        );
        assert!(r.answered > 0, "{model} served");
        assert_eq!(r.faults.mismatches, 0);
    }
}

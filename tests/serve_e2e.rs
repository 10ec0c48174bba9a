//! `spork serve` end to end over loopback with clients nobody here wrote: the Python `tritonclient`
//! (HTTP and gRPC) runs inference on every model and the results must equal the software reference;
//! bad requests (wrong datatype or shape, oversized, malformed JSON, truncated binary data, unknown
//! model, missing or wrong token, a deadline of 0) must get the right status and a message while a
//! concurrent valid stream loses nothing (tests/python/oip_e2e.py). Then the server drains, and every
//! request it took was answered or refused, once.
//!
//! The client runs in a virtual environment that `scripts/python-env.sh` makes (pip, from PyPI) if
//! it is not there yet; `.ci/run` makes it before the tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use spork::backend::Board;
use spork::datapath::work::{KernelImage, Output, Payload, Work};
use spork::engine::Plan;
use spork::policy::Scheduler;
use spork::serve::{Kernelled, Limits, ServeConfig};
use spork_golden::Kernel;

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

fn le16(v: impl IntoIterator<Item = i16>) -> Vec<u8> {
    v.into_iter().flat_map(i16::to_le_bytes).collect()
}

/// One case per model (dense also with its optional part): inputs and the reference's outputs.
fn cases(dir: &Path) {
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(7);
    let mut cases = Vec::new();
    for kernel in Kernel::ALL {
        let image = KernelImage::new(kernel, 0);
        let optional = kernel == Kernel::Dense;
        let work = Work {
            mandatory: image.payload(3_000, &mut rng),
            optional: optional.then(|| image.payload(200, &mut rng)),
        };
        let answer = image.answer(&work, true).expect("reference");
        let k = kernel.name();
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        let parts = [
            (&work.mandatory, Some(&answer.mandatory)),
            (work.optional.as_ref().unwrap_or(&work.mandatory), answer.optional.as_ref()),
        ];
        for (i, (payload, out)) in parts.iter().enumerate() {
            let Some(out) = out else { continue };
            let (in_name, out_name) = match (kernel, i) {
                (Kernel::Sobel, 0) => ("image", "magnitudes"),
                (Kernel::Sobel, _) => ("refinement", "refinement_magnitudes"),
                (Kernel::Bloom, 0) => ("documents", "scores"),
                (Kernel::Bloom, _) => ("more_documents", "more_scores"),
                (Kernel::Dense, 0) => ("vectors", "activations"),
                (Kernel::Dense, _) => ("more_vectors", "more_activations"),
            };
            let f = |s: &str| format!("{k}-{i}-{s}.bin");
            match (payload, out) {
                (Payload::Image { pixels, width }, Output::Magnitudes(m)) => {
                    let h = pixels.len() / width;
                    inputs.push(tensor(dir, &f("in"), in_name, "UINT8", &[h, *width], pixels.clone()));
                    outputs.push(tensor(dir, &f("out"), out_name, "UINT8", &[h - 2, width - 2], m.clone()));
                }
                (Payload::Documents(d), Output::Scores(s)) => {
                    let terms: Vec<u8> = d.iter().flatten().flat_map(|t| t.to_le_bytes()).collect();
                    inputs.push(tensor(dir, &f("in"), in_name, "UINT32", &[d.len(), d[0].len()], terms));
                    let scores: Vec<u8> = s.iter().flat_map(|v| v.to_le_bytes()).collect();
                    outputs.push(tensor(dir, &f("out"), out_name, "UINT16", &[s.len()], scores));
                }
                (Payload::Vectors(x), Output::Activations(a)) => {
                    inputs.push(tensor(
                        dir,
                        &f("in"),
                        in_name,
                        "INT16",
                        &[x.len(), 64],
                        le16(x.iter().flatten().copied()),
                    ));
                    outputs.push(tensor(
                        dir,
                        &f("out"),
                        out_name,
                        "INT16",
                        &[a.len(), 8],
                        le16(a.iter().flatten().copied()),
                    ));
                }
                _ => unreachable!("a kernel's payload and output agree"),
            }
        }
        cases.push(serde_json::json!({ "model": k, "inputs": inputs, "outputs": outputs, "parameters": { "deadline_ms": 200.0 } }));
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

//! What a kernel process costs per call: Spork's own Sobel (models/sobel, its C code) called
//! through `RepoKernel::reference` in the server's process (`[cpu] isolation = "none"`) and in a
//! kernel process of its own (`"process"`, the default: the request made in the model's inputs
//! arena and its answer in the outputs arena, as the server decodes them, one message each way),
//! at 16x16, 256x256 and the largest image the model takes (16384x256).
//! Then the same calls paired: rounds of calls each way, interleaved, so that the host's drift over
//! the seconds between criterion's two measurements does not show as isolation's cost; the median
//! of the rounds' ratios is printed.
//! Run: `cargo bench -p spork --bench isolation` (`-- "/256x256"` for one size).

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use rand::SeedableRng;
use spork::repository::kernel::{RepoKernel, TensorPayload};
use spork::repository::spec::{self, Isolation};
use spork_kernel::ffi::DType;

/// models/sobel loaded with its CPU code run as `isolation` says.
fn sobel(isolation: Isolation) -> RepoKernel {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/sobel");
    let mut spec = spec::load(&dir).expect("models/sobel's model.toml");
    spec.cpu.as_mut().expect("a [cpu] table").isolation = isolation;
    RepoKernel::load(spec, false).expect("sobel's C code builds and starts")
}

const SIZES: [(usize, usize); 3] = [(16, 16), (256, 256), (16384, 256)];

/// Sobel in-process and in a kernel process, each with a request of every size made as the server
/// makes it (the kernel process's in its model's inputs arena).
struct Setup {
    kernels: [(&'static str, RepoKernel); 2],
    requests: Vec<(String, [TensorPayload; 2])>,
}

fn setup() -> Setup {
    // Kernel processes run the spork binary itself (`spork __kernel-process`).
    // SAFETY: set before any thread of this bench starts.
    unsafe { std::env::set_var("SPORK_BIN", env!("CARGO_BIN_EXE_spork")) };
    let kernels = [("in-process", sobel(Isolation::None)), ("kernel-process", sobel(Isolation::Process))];
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(7);
    let requests = SIZES
        .iter()
        .map(|&(h, w)| {
            let pixels = spork_golden::inputs::image(&mut rng, w, h);
            let request = |k: &RepoKernel| {
                let image = k.input(DType::Uint8, &[h as u64, w as u64], &pixels).expect("an image");
                k.payload(vec![image]).expect("fits sobel's spec")
            };
            (format!("{h}x{w}"), [request(&kernels[0].1), request(&kernels[1].1)])
        })
        .collect();
    Setup { kernels, requests }
}

fn bench(c: &mut Criterion, s: &Setup) {
    let mut group = c.benchmark_group("isolation/sobel");
    for (id, payloads) in &s.requests {
        let (h, w) = id.split_once('x').map(|(h, w)| (h.parse::<u64>(), w.parse::<u64>())).expect("HxW");
        group.throughput(Throughput::Elements(h.expect("H") * w.expect("W")));
        for ((name, kernel), payload) in s.kernels.iter().zip(payloads) {
            group.bench_with_input(BenchmarkId::new(*name, id), payload, |b, p| {
                b.iter(|| kernel.reference(std::hint::black_box(p)).expect("runs"))
            });
        }
    }
    group.finish();
}

/// Rounds of `calls` calls each way, interleaved (which way goes first alternates), for about two
/// seconds a size; prints the median ratio of a round's kernel-process time to its in-process time.
fn paired(s: &Setup, wanted: &dyn Fn(&str) -> bool) {
    for (id, payloads) in &s.requests {
        if !wanted(&format!("isolation/sobel/paired/{id}")) {
            continue;
        }
        let time = |k: usize, calls: u32| {
            let t = Instant::now();
            for _ in 0..calls {
                s.kernels[k].1.reference(std::hint::black_box(&payloads[k])).expect("runs");
            }
            t.elapsed()
        };
        let one = time(0, 3).max(time(1, 3)) / 3;
        let calls = (Duration::from_millis(30).as_nanos() / one.as_nanos().max(1)).clamp(1, 100_000) as u32;
        let mut rounds: Vec<(f64, Duration, Duration)> = (0..61)
            .map(|r| {
                let (a, b) = if r % 2 == 0 {
                    let a = time(0, calls);
                    (a, time(1, calls))
                } else {
                    let b = time(1, calls);
                    (time(0, calls), b)
                };
                (b.as_secs_f64() / a.as_secs_f64(), a / calls, b / calls)
            })
            .collect();
        rounds.sort_by(|x, y| x.0.total_cmp(&y.0));
        let q = |f: f64| (rounds[((rounds.len() - 1) as f64 * f).round() as usize].0 - 1.0) * 100.0;
        let (_, a, b) = rounds[rounds.len() / 2];
        println!(
            "isolation/sobel/paired/{id}: kernel process over in-process {:+.1}% (quartiles {:+.1}%, {:+.1}%; \
             median of {} interleaved rounds of {calls} calls each way); at the median round {:?} vs {:?} a call",
            q(0.5),
            q(0.25),
            q(0.75),
            rounds.len(),
            a,
            b
        );
    }
}

fn main() {
    let setup = setup();
    let mut c = Criterion::default().without_plots().configure_from_args();
    bench(&mut c, &setup);
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    paired(&setup, &|id| filters.is_empty() || filters.iter().any(|f| id.contains(f.as_str())));
    c.final_summary();
}

//! What a kernel process costs per call: Spork's own Sobel (models/sobel, its C code) called
//! through `RepoKernel::reference` in the server's process (`[cpu] isolation = "none"`) and in a
//! kernel process of its own (`"process"`, the default: the request made in the model's inputs
//! arena and its answer in the outputs arena, as the server decodes them, one message each way),
//! at 16x16, 256x256 and the largest image the model takes (16384x256).
//! Run: `cargo bench -p spork --bench isolation`.

use std::path::Path;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use spork::repository::kernel::RepoKernel;
use spork::repository::spec::{self, Isolation};
use spork_kernel::ffi::DType;

/// models/sobel loaded with its CPU code run as `isolation` says.
fn sobel(isolation: Isolation) -> RepoKernel {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/sobel");
    let mut spec = spec::load(&dir).expect("models/sobel's model.toml");
    spec.cpu.as_mut().expect("a [cpu] table").isolation = isolation;
    RepoKernel::load(spec, false).expect("sobel's C code builds and starts")
}

fn bench(c: &mut Criterion) {
    // Kernel processes run the spork binary itself (`spork __kernel-process`).
    // SAFETY: set before any thread of this bench starts.
    unsafe { std::env::set_var("SPORK_BIN", env!("CARGO_BIN_EXE_spork")) };
    let kernels = [("in-process", sobel(Isolation::None)), ("kernel-process", sobel(Isolation::Process))];
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(7);
    let mut group = c.benchmark_group("isolation/sobel");
    for (h, w) in [(16usize, 16usize), (256, 256), (16384, 256)] {
        let pixels = spork_golden::inputs::image(&mut rng, w, h);
        let id = format!("{h}x{w}");
        group.throughput(Throughput::Elements((h * w) as u64));
        for (name, kernel) in &kernels {
            let image = kernel.input(DType::Uint8, &[h as u64, w as u64], &pixels).expect("an image");
            let payload = kernel.payload(vec![image]).expect("fits sobel's spec");
            group.bench_with_input(BenchmarkId::new(*name, &id), &payload, |b, p| {
                b.iter(|| kernel.reference(std::hint::black_box(p)).expect("runs"))
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);

//! A kernel's board against one CPU core: each of Spork's own repository models' C code (compiled
//! at load as `spork serve` does, in-process) on one core, at a camera frame's size, beside the speed
//! its board's manifest states (items per cycle measured on the verilated RTL x the nominal clock).
//! Criterion reports the core's items per second; the board's figure and the ratio are printed.
//!
//! `cargo bench -p spork --bench board_vs_core`

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use spork::backend::bitstream::Manifest;
use spork::repository::kernel::RepoKernel;
use spork::repository::spec;

/// A model of the repository with the request size to time it at (its dims, in the spec's order).
/// Sobel at a 1080p frame, bloom at 4,096 documents of 256 terms, dense at 16,384 vectors.
const MODELS: [(&str, &[u64]); 3] = [("sobel", &[1080, 1920]), ("bloom", &[4096, 256]), ("dense", &[16384])];

fn bench(c: &mut Criterion) {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1);
    let mut group = c.benchmark_group("board_vs_core");
    for (name, dims) in MODELS {
        let spec = spec::load(&models.join(name)).expect("the model loads");
        let manifest = Manifest::load(&models.join(name).join("synth.toml")).expect("its synth.toml");
        let kernel = RepoKernel::load(spec.clone(), false).expect("its C code builds");
        let payload = kernel.payload_at(spec.random_inputs(dims, &mut rng), dims.to_vec());
        let items = payload.items;
        group.throughput(Throughput::Elements(items));
        group.bench_function(
            format!("{name}_cpu_core_{}", dims.iter().map(u64::to_string).collect::<Vec<_>>().join("x")),
            |b| b.iter(|| kernel.reference(&payload).expect("runs")),
        );
        let start = std::time::Instant::now();
        let runs = 20;
        for _ in 0..runs {
            kernel.reference(&payload).expect("runs");
        }
        let core = items as f64 * runs as f64 / start.elapsed().as_secs_f64();
        let board = manifest.items_per_cycle * manifest.clock_mhz * 1e6;
        println!(
            "{name}: board {board:.3e} items/s ({:.3} items/cycle at {} MHz), one core {core:.3e} items/s: board = {:.1}x a core",
            manifest.items_per_cycle,
            manifest.clock_mhz,
            board / core
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);

//! The simulated board's speed: Verilated cycles per second per design driven from Rust, the CPU
//! software reference's items per second on the same inputs, and the time to load a model (the
//! simulated reconfiguration). Items per cycle of each kernel are printed before its group.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;
use spork_golden::inputs;
use spork_sim::Model;
use spork_sim::cores::{Bloom, Dense, Sobel};
use spork_sim::measure::standard_workload;

fn verilated(c: &mut Criterion) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut g = c.benchmark_group("verilated");
    for name in ["sobel", "bloom", "dense", "dispatch"] {
        let model = Model::load(name).expect("model");
        let tp = standard_workload(&model, 1).expect("workload");
        eprintln!(
            "{name}: {:.4} {}s per cycle ({} in {} cycles)",
            tp.items_per_cycle(),
            tp.item,
            tp.items,
            tp.cycles
        );
        g.throughput(Throughput::Elements(tp.cycles));
        g.bench_function(BenchmarkId::new("cycles", name), |b| {
            b.iter(|| black_box(standard_workload(&model, 1).expect("workload").cycles))
        });
    }
    // The kernels alone, on one request-sized input each, for the side-by-side with the CPU.
    let img = inputs::image(&mut rng, 128, 128);
    let sobel = Model::load("sobel").expect("model");
    let mut k = Sobel::new(&sobel).expect("ports");
    g.throughput(Throughput::Elements(img.len() as u64));
    g.bench_function(BenchmarkId::new("items", "sobel"), |b| {
        b.iter(|| black_box(k.run(&img, 128).expect("run")))
    });
    drop(g);
    cpu_reference(c, &img);
}

fn cpu_reference(c: &mut Criterion, img: &[u8]) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(8);
    let mut g = c.benchmark_group("cpu_reference");
    g.throughput(Throughput::Elements(img.len() as u64));
    g.bench_function("sobel", |b| b.iter(|| black_box(spork_golden::sobel::sobel(black_box(img), 128))));
    let (profile, interests) = inputs::profile(&mut rng, 100);
    let docs: Vec<Vec<u32>> = (0..64).map(|_| inputs::document(&mut rng, &interests, 64)).collect();
    g.throughput(Throughput::Elements(64 * 64));
    g.bench_function("bloom", |b| b.iter(|| docs.iter().map(|d| profile.score(black_box(d))).sum::<u16>()));
    let layer = inputs::layer(&mut rng);
    let xs: Vec<Vec<i16>> = (0..64).map(|_| inputs::vector(&mut rng, 64)).collect();
    g.throughput(Throughput::Elements(64 * 64));
    g.bench_function("dense", |b| {
        b.iter(|| xs.iter().map(|x| layer.forward(black_box(x)).expect("shape")[0] as i64).sum::<i64>())
    });
    drop(g);
    let bloom = Model::load("bloom").expect("model");
    let mut k = Bloom::new(&bloom).expect("ports");
    k.load_profile(&profile);
    let dense = Model::load("dense").expect("model");
    let mut d = Dense::new(&dense).expect("ports");
    d.load(&layer);
    let mut g = c.benchmark_group("verilated");
    g.throughput(Throughput::Elements(64 * 64));
    g.bench_function(BenchmarkId::new("items", "bloom"), |b| {
        b.iter(|| black_box(k.score(&docs).expect("run")))
    });
    g.bench_function(BenchmarkId::new("items", "dense"), |b| {
        b.iter(|| black_box(d.forward(&xs).expect("run")))
    });
}

fn model_load(c: &mut Criterion) {
    let mut g = c.benchmark_group("model_load");
    for name in ["sobel", "bloom", "dense", "dispatch"] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let m = Model::load(name).expect("model");
                drop(black_box(m.instantiate("clock").expect("instance")));
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = verilated, model_load
}
criterion_main!(benches);

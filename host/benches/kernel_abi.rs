//! The in-process cost of the C ABI: the built-in Sobel reference called directly (what a CPU
//! worker runs for the built-in kernel) against the same Rust code behind `spork_kernel.h`, loaded
//! with libloading and called through `CpuKernel::run` (tensor descriptors, the error buffer and the
//! output allocation included). The ABI side is `kernel-abi/examples/golden_sobel.rs`, built here
//! into its own target folder (so this bench never waits on the lock of the build that runs it).

use std::ffi::CString;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rand::SeedableRng;
use spork::repository::cpu::CpuLibrary;
use spork::repository::tensor::TensorBuf;
use spork_kernel::ffi::DType;

fn abi_library() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = manifest.join("../target/abi-bench");
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "spork-kernel",
            "--example",
            "golden_sobel",
            "--target-dir",
        ])
        .arg(&target)
        .current_dir(&manifest)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the golden_sobel example failed");
    target.join("release/examples/libgolden_sobel.so")
}

fn bench(c: &mut Criterion) {
    let lib = Arc::new(CpuLibrary::open(&abi_library(), "").expect("the example loads"));
    let mut kernel = lib.instance().expect("init");
    let names = (vec![CString::new("image").unwrap()], vec![CString::new("magnitudes").unwrap()]);
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(7);
    let mut group = c.benchmark_group("sobel");
    for (h, w) in [(16, 16), (64, 64), (256, 256)] {
        let pixels = spork_golden::inputs::image(&mut rng, w, h);
        let id = format!("{h}x{w}");
        group.bench_with_input(BenchmarkId::new("built-in", &id), &pixels, |b, p| {
            b.iter(|| spork_golden::sobel::sobel(std::hint::black_box(p), w).expect("valid image"))
        });
        let inputs = [TensorBuf::from_bytes(DType::Uint8, &[h as u64, w as u64], &pixels).expect("image")];
        group.bench_function(BenchmarkId::new("c-abi", &id), |b| {
            b.iter(|| {
                let mut out = [TensorBuf::zeroed(DType::Uint8, &[h as u64 - 2, w as u64 - 2]).expect("fits")];
                kernel.run((&names.0, &names.1), &inputs, &mut out).expect("runs");
                out
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);

//! Evaluator throughput (simulated requests per second) and the cost of one dispatch decision.
//!
//! The full 2-hour, ~72 M-request figure comes from `spork bench`; criterion times a 5-minute slice
//! of the same trace so that its repeated sampling stays short.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use spork::evaluate::{Plan, evaluate};
use spork::model::time::from_secs;
use spork::model::{Kind, Platform, Pool};
use spork::policy::dispatch::{EfficientFirst, Fleet, Job};
use spork::policy::{Objective, Scheduler};
use spork::trace::{SizeSpec, Synthetic};
use std::hint::black_box;

fn evaluator(c: &mut Criterion) {
    let trace = Synthetic {
        duration: from_secs(300.0),
        size: SizeSpec::Fixed(from_secs(0.01)),
        ..Synthetic::paper_default(1)
    }
    .generate()
    .expect("valid trace");
    let platform = Platform::default();
    let requests = trace.requests().count() as u64;
    let mut g = c.benchmark_group("evaluator");
    g.sample_size(10);
    g.throughput(Throughput::Elements(requests));
    for s in [Scheduler::Spork(Objective::ENERGY), Scheduler::CpuDynamic] {
        g.bench_function(BenchmarkId::new("requests", s.to_string()), |b| {
            b.iter(|| evaluate(&platform, &trace, &Plan::new(s)))
        });
    }
    g.finish();
}

fn dispatch(c: &mut Criterion) {
    let mut g = c.benchmark_group("efficient_first_place");
    for n in [10u32, 100, 1000, 10_000] {
        // n FPGAs and n CPUs with staggered queues; the job fits only part of them.
        let mut pool = Pool::new();
        for i in 0..n {
            for kind in [Kind::Fpga, Kind::Cpu] {
                let w = pool.prewarm(kind, 0, 1);
                pool.assign(w, 0, 1_000 + u64::from(i) * 997 % 100_000);
            }
        }
        let job = Job { deadline: 60_000, service: [10_000, 5_000] };
        let mut d = EfficientFirst::new(Fleet::HYBRID, 10_000_000_000);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| black_box(d.place(black_box(&pool), black_box(&job), black_box(500))))
        });
    }
    g.finish();
}

criterion_group!(benches, evaluator, dispatch);
criterion_main!(benches);

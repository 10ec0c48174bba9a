//! What the server adds over an in-process call: one small `dense` request (one vector of 64) through
//! `Server::infer` directly, over loopback HTTP (binary tensors, keep-alive) and over loopback gRPC.
//! The pool and its CPU worker are the same in all three, so the differences are the transport's.
//! Also prints each path's p50 and p99 over 2,000 sequential calls (criterion reports means).

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use spork::backend::Board;
use spork::datapath::work::Payload;
use spork::engine::Plan;
use spork::load::Protocol;
use spork::load::body::tensors;
use spork::policy::Scheduler;
use spork::repository::tensor::TensorBuf;
use spork::serve::budget::Reservation;
use spork::serve::server::{InferRequest, Server};
use spork::serve::tensor::Tensor;
use spork::serve::{Kernelled, Limits, ServeConfig};
use spork_kernel::ffi::DType;

fn request(server: &Server) -> InferRequest {
    let data: Vec<u8> = (0..64i16).flat_map(i16::to_le_bytes).collect();
    let t = Tensor::new("vectors", "INT16", &[1, 64], data).expect("tensor");
    let reservation = Reservation::new(server.budget.clone());
    let bound = server.model("dense", None).expect("dense").bind(std::slice::from_ref(&t));
    InferRequest {
        reservation,
        model: "dense".into(),
        version: None,
        id: None,
        inputs: vec![t],
        bound,
        deadline_ms: Some(100.0),
    }
}

fn percentiles(name: &str, mut f: impl FnMut()) {
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("histogram");
    for _ in 0..2_000 {
        let t = Instant::now();
        f();
        h.saturating_record(t.elapsed().as_nanos() as u64);
    }
    let us = |q| h.value_at_quantile(q) as f64 / 1e3;
    eprintln!("{name}: p50 {:.1} us, p99 {:.1} us over 2000 calls", us(0.5), us(0.99));
}

fn bench(c: &mut Criterion) {
    let kernel = Kernelled::own("dense", None, None, false).expect("calibration");
    let cfg = ServeConfig {
        http: "127.0.0.1:0".parse().expect("addr"),
        grpc: "127.0.0.1:0".parse().expect("addr"),
        kernels: vec![kernel.clone()],
        plan: Plan::new(Scheduler::CpuDynamic),
        board: Board::Model(None),
        boards: None,
        token: None,
        open_health: true,
        limits: Limits::default(),
        grace: Duration::from_secs(1),
        io_threads: 1,
        io_priority: Default::default(),
        size_estimate: spork::policy::estimate::Statistic::Mean,
        kernel_timeout: Duration::from_secs(10),
        faults: Default::default(),
        repository: None,
    };
    let running = spork::serve::start(cfg).expect("server");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let server = Arc::clone(&running.server);
    // The same vector of 64 as `request`, as Spork's own dense model's input on the wire.
    let dense = spork::repository::own::load("dense", false).expect("its C code builds");
    let data: Vec<u8> = (0..64i16).flat_map(i16::to_le_bytes).collect();
    let vectors = TensorBuf::from_bytes(DType::Int16, &[1, 64], &data).expect("one vector of 64");
    let payload = Payload::Tensors(dense.payload(vec![vectors]).expect("fits dense's spec"));
    let wire = tensors(&payload);
    let http =
        rt.block_on(spork::load::client_for(Protocol::Http, running.http, "dense")).expect("http client");
    let grpc =
        rt.block_on(spork::load::client_for(Protocol::Grpc, running.grpc, "dense")).expect("grpc client");
    // The transport alone: a health check through the same kind of client (hyper, keep-alive) touches
    // no pool, so what it takes is HTTP on loopback and the server's runtime.
    let health = format!("http://{}/v2/health/live", running.http);
    let plain = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<bytes::Bytes>>();
    let get = || {
        let uri: hyper::Uri = health.parse().expect("uri");
        rt.block_on(async {
            let r = plain.get(uri).await.expect("health");
            http_body_util::BodyExt::collect(r.into_body()).await.expect("body");
        })
    };
    percentiles("http health (no pool)", get);
    percentiles("in-process", || {
        rt.block_on(server.infer(request(&server))).expect("answer");
    });
    percentiles("http", || {
        rt.block_on(http.infer(&wire, Some(100.0)));
    });
    percentiles("grpc", || {
        rt.block_on(grpc.infer(&wire, Some(100.0)));
    });
    let mut g = c.benchmark_group("serve_dense_1x64");
    g.bench_function("http_health_no_pool", |b| b.iter(get));
    g.bench_function("in_process", |b| {
        b.iter(|| rt.block_on(server.infer(request(&server))).expect("answer"))
    });
    g.bench_function("http_loopback", |b| b.iter(|| rt.block_on(http.infer(&wire, Some(100.0)))));
    g.bench_function("grpc_loopback", |b| b.iter(|| rt.block_on(grpc.infer(&wire, Some(100.0)))));
    g.finish();
    drop(server);
    running.drain();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);

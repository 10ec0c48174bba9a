//! Workers on other hosts (`spork worker`), over real loopback sockets: one job's round trip on a
//! local CPU worker against the same job on a remote CPU slot (plaintext and mutual TLS), whose
//! difference is the latency the worker API adds and whose inverse is a slot's requests per
//! second; and the scheduler's costs with 1,000 remote slots: the dispatch decision (engine arrival
//! over 1,000 FPGA workers; a remote slot is an engine worker like any other) and leasing a slot
//! among 10 hosts of 100 slots each.
//!
//! `cargo bench -p spork --bench remote`; the end-to-end comparison through `spork serve` is
//! `scripts/remote-bench.sh`.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use spork::backend::Board;
use spork::backend::calibrate::Calibration;
use spork::backend::remote::{Hosts, RemoteConfig, RemoteSlot, TlsFiles};
use spork::backend::{Backend, CpuWorker};
use spork::datapath::work::KernelImage;
use spork::engine::{Engine, Plan};
use spork::model::time::from_secs;
use spork::model::{Kind, Platform, Request, Time};
use spork::policy::Scheduler;
use spork::repository::kernel::RepoKernel;
use spork::worker_host::{self, HostConfig, Offer, RunningHost};

#[path = "../../tests/support/pki.rs"]
mod pki;

const CAL: Calibration =
    Calibration { items_per_sec: 2e8, clock_hz: 250e6, items_per_cycle: 1.0, stated_items_per_cycle: None };

/// Spork's own sobel model, as `spork serve` and `spork worker` load it.
fn own_sobel() -> Arc<RepoKernel> {
    Arc::new(spork::repository::own::load("sobel", false).expect("its C code builds"))
}

fn host(cpu: u32, fpga: u32, tls: Option<TlsFiles>) -> RunningHost {
    let sobel = own_sobel();
    let models: HashMap<String, Arc<RepoKernel>> = HashMap::from([("sobel".to_string(), sobel)]);
    let boards: HashMap<String, Board> = HashMap::from([("sobel".to_string(), Board::Model(None))]);
    worker_host::start(HostConfig {
        listen: "127.0.0.1:0".parse().expect("address"),
        probe: None,
        tls,
        insecure: false,
        offer: Offer {
            cpu,
            fpga,
            boards,
            platform: Platform::default(),
            lease_timeout: Duration::from_secs(60),
            models,
        },
        board: "model".into(),
    })
    .expect("worker host")
}

fn hosts(addrs: &[std::net::SocketAddr], tls: Option<(TlsFiles, String)>) -> Hosts {
    let sources = addrs.iter().map(|a| a.to_string().parse().expect("source")).collect();
    Hosts::start(RemoteConfig::new(sources, tls, false)).expect("hosts")
}

fn round_trip(c: &mut Criterion) {
    let image = KernelImage::repo(own_sobel());
    let payload = image.payload(16_384, &mut rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1));
    let mut local = CpuWorker::new(Platform::default().cpu, Duration::ZERO, Instant::now());
    local.configure(&image).expect("local");
    let plain = host(1, 0, None);
    let mut remote = RemoteSlot::new(Kind::Cpu, hosts(&[plain.addr], None), &CAL, Duration::ZERO);
    remote.configure(&image).expect("remote");
    let dir = tempfile::tempdir().expect("dir");
    let ca = pki::ca(dir.path(), "ca");
    let (wc, wk) = ca.leaf(dir.path(), "worker", "spork-worker");
    let (sc, sk) = ca.leaf(dir.path(), "scheduler", "scheduler");
    let tls_host = host(1, 0, Some(TlsFiles { cert: wc, key: wk, ca: ca.pem.clone() }));
    let files = TlsFiles { cert: sc, key: sk, ca: ca.pem.clone() };
    let mut secure = RemoteSlot::new(
        Kind::Cpu,
        hosts(&[tls_host.addr], Some((files, "spork-worker".into()))),
        &CAL,
        Duration::ZERO,
    );
    secure.configure(&image).expect("remote over TLS");
    let mut g = c.benchmark_group("remote/job_round_trip_sobel_16k_pixels");
    g.throughput(Throughput::Elements(1));
    g.bench_function("local_cpu", |b| b.iter(|| black_box(local.submit(&payload).expect("ok"))));
    g.bench_function("remote_cpu_plaintext", |b| b.iter(|| black_box(remote.submit(&payload).expect("ok"))));
    g.bench_function("remote_cpu_mutual_tls", |b| b.iter(|| black_box(secure.submit(&payload).expect("ok"))));
    g.finish();
    drop((remote, secure));
    plain.stop();
    tls_host.stop();
}

#[path = "support/fixed.rs"]
mod fixed;
use fixed::Fixed;

fn scheduler_with_1000_slots(c: &mut Criterion) {
    let plan = Plan::new(Scheduler::Spork(spork::policy::Objective::ENERGY));
    let mut engine = Engine::with_allocator(Platform::default(), &plan, Box::new(Fixed(1000)));
    engine.begin(Time::MAX, &mut ());
    // 1,000 FPGAs warm and about half busy: 20 ms requests (10 ms on an FPGA) every 20 us.
    let size = from_secs(0.02);
    let mut t = 0;
    for _ in 0..100_000 {
        t += 20_000;
        engine.advance(t, false, &mut ());
        engine.arrive(Request::new(t, size, 0), &mut ());
    }
    assert!(engine.pool().allocated(Kind::Fpga) >= 1000, "the pool holds 1,000 FPGAs");
    c.bench_function("remote/dispatch_decision_1000_fpga_slots", |b| {
        b.iter(|| {
            t += 20_000;
            engine.advance(t, false, &mut ());
            black_box(engine.arrive(Request::new(t, size, 0), &mut ()))
        })
    });
    let running: Vec<RunningHost> = (0..10).map(|_| host(0, 100, None)).collect();
    let addrs: Vec<_> = running.iter().map(|h| h.addr).collect();
    let fleet = hosts(&addrs, None);
    assert_eq!(fleet.capacity(), 1000);
    let image = KernelImage::repo(own_sobel());
    // Half the slots leased, so a lease looks among hosts with some free.
    let held: Vec<RemoteSlot> = (0..500)
        .map(|_| {
            let mut s = RemoteSlot::new(Kind::Fpga, fleet.clone(), &CAL, Duration::ZERO);
            s.configure(&image).expect("leased");
            s
        })
        .collect();
    c.bench_function("remote/reserve_a_slot_among_1000_on_10_hosts", |b| {
        b.iter(|| black_box(RemoteSlot::new(Kind::Fpga, fleet.clone(), &CAL, Duration::ZERO)))
    });
    drop(held);
    for h in running {
        h.stop();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots().measurement_time(Duration::from_secs(5));
    targets = round_trip, scheduler_with_1000_slots
}
criterion_main!(benches);

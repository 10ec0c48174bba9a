//! The live runtime's costs: the dispatch decision on its path (engine arrival: place + book) with
//! 100 workers, the end-to-end overhead of one request through a worker thread on an empty kernel,
//! the simulated board's measured reconfiguration with each of Spork's own models (a new instance
//! of its verilated RTL, reset: the library was opened when the model loaded), and the energy per
//! request through a criterion `Measurement` backed by a power meter (RAPL if this machine has it,
//! else the profile's model, labelled so). The kernels are Spork's own models (`models/`), as
//! `spork serve` loads them.

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hdrhistogram::Histogram;
use rand::SeedableRng;
use spork::backend::power::{Modelled, PowerMeter};
use spork::backend::{Backend, CpuWorker, SimBoardSlot};
use spork::datapath::work::{Input, KernelImage, Payload, Work};
use spork::engine::{Engine, Plan};
use spork::live::Clock;
use spork::live::worker::{Event, JobMsg, Worker};
use spork::model::time::from_secs;
use spork::model::{Platform, Request, Time, WorkerId};
use spork::policy::Scheduler;
use spork::repository::kernel::RepoKernel;
use spork::repository::tensor::TensorBuf;
use spork_kernel::ffi::DType;

#[path = "support/fixed.rs"]
mod fixed;
use fixed::Fixed;

/// Spork's own model `name`, its RTL verilated too when `sim` (the simulated board runs it).
fn own(name: &str, sim: bool) -> Arc<RepoKernel> {
    spork::repository::own::load(name, sim).expect("Spork's own model builds").into()
}

fn dispatch_decision(c: &mut Criterion) {
    let platform = Platform::default();
    let plan = Plan::new(Scheduler::Spork(spork::policy::Objective::ENERGY));
    let mut engine = Engine::with_allocator(platform, &plan, Box::new(Fixed(100)));
    engine.begin(Time::MAX, &mut ());
    // 100 FPGAs warm, kept about half busy (20 ms requests, 10 ms on an FPGA, every 200 us).
    let size = from_secs(0.02);
    let now = 0;
    // p99 of single decisions, timed one by one.
    let mut hist = Histogram::<u64>::new(3).expect("histogram");
    let mut t = now;
    for _ in 0..200_000 {
        t += 200_000;
        engine.advance(t, false, &mut ());
        let s = Instant::now();
        black_box(engine.arrive(Request::new(t, size, 0), &mut ()));
        hist.record(s.elapsed().as_nanos() as u64).expect("record");
    }
    eprintln!(
        "runtime dispatch decision (engine arrival, ~{} workers): p50 {} ns, p99 {} ns, max {} ns",
        engine.pool().allocated(spork::model::Kind::Cpu) + engine.pool().allocated(spork::model::Kind::Fpga),
        hist.value_at_quantile(0.5),
        hist.value_at_quantile(0.99),
        hist.max()
    );
    c.bench_function("runtime/dispatch_decision_100_workers", |b| {
        b.iter(|| {
            t += 200_000;
            engine.advance(t, false, &mut ());
            black_box(engine.arrive(Request::new(t, size, 0), &mut ()))
        })
    });
}

fn request_overhead(c: &mut Criterion) {
    let clock = Clock::start();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
    let sobel = own("sobel", false);
    let image = Arc::new(KernelImage::repo(sobel.clone()));
    let spec = Platform::default().cpu;
    let backend: Box<dyn spork::backend::Backend> =
        Box::new(CpuWorker::new(spec, Duration::ZERO, Instant::now()));
    let worker = Worker::spawn(WorkerId(0), 1, vec![backend], image, Default::default(), tx, clock);
    // Ready.
    let _ = rx.blocking_recv();
    // The smallest image (3x3): the kernel does next to nothing, so this is the runtime's own overhead.
    let pixels = TensorBuf::from_bytes(DType::Uint8, &[3, 3], &[0; 9]).expect("a 3x3 image");
    let tensors = sobel.payload(vec![pixels]).expect("fits sobel's spec");
    let payload = Arc::new(Work { mandatory: Payload::Tensors(tensors), optional: None });
    let mut id = 0;
    c.bench_function("runtime/request_round_trip_empty_kernel", |b| {
        b.iter(|| {
            id += 1;
            worker
                .send(
                    0,
                    JobMsg {
                        id,
                        input: Input::Built(payload.clone()),
                        optional: false,
                        dispatched: 0,
                        stall: None,
                        batch: Vec::new(),
                    },
                )
                .expect("send");
            loop {
                if let Some(Event::Done(d)) = rx.blocking_recv() {
                    break black_box(d.id);
                }
            }
        })
    });
    worker.join();
}

/// A simulated board slot's configuration with a repository model: a new instance of the RTL the
/// model verilated (and opened) when it loaded, reset. (The built-in kernels' slot opened their
/// library on each configuration: the group was `runtime/board_reconfiguration`.)
fn reconfiguration(c: &mut Criterion) {
    let mut g = c.benchmark_group("runtime/board_new_instance_and_reset");
    g.sample_size(30);
    let spec = Platform::default().fpga;
    for name in ["sobel", "bloom", "dense"] {
        let image = KernelImage::repo(own(name, true));
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let mut slot = SimBoardSlot::new(250e6, Duration::ZERO, spec, false);
                black_box(slot.configure(&image).expect("configure"));
            })
        });
    }
}

/// Energy as a criterion measurement: joules from a power meter between start and end.
struct Energy {
    meter: Mutex<Box<dyn PowerMeter>>,
}

struct Joules;

impl ValueFormatter for Joules {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (f, unit) = if typical < 1e-3 {
            (1e6, "uJ")
        } else if typical < 1.0 {
            (1e3, "mJ")
        } else {
            (1.0, "J")
        };
        values.iter_mut().for_each(|v| *v *= f);
        unit
    }
    fn scale_throughputs(&self, _typical: f64, t: &Throughput, values: &mut [f64]) -> &'static str {
        let n = match t {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => *n as f64,
            _ => 1.0,
        };
        values.iter_mut().for_each(|v| *v = n / *v);
        "items/J"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "J"
    }
}

impl Measurement for Energy {
    type Intermediate = f64;
    type Value = f64;
    fn start(&self) -> f64 {
        self.meter.lock().expect("meter").energy_j().unwrap_or(0.0)
    }
    fn end(&self, i: f64) -> f64 {
        self.meter.lock().expect("meter").energy_j().unwrap_or(i) - i
    }
    fn add(&self, a: &f64, b: &f64) -> f64 {
        a + b
    }
    fn zero(&self) -> f64 {
        0.0
    }
    fn to_f64(&self, v: &f64) -> f64 {
        *v
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &Joules
    }
}

fn energy_meter() -> Box<dyn PowerMeter> {
    let mut found = spork::backend::power::detect(std::path::Path::new("/sys"));
    if found.is_empty() {
        let busy = Platform::default().cpu.busy_power_w;
        Box::new(Modelled::new("one busy CPU worker (no sensor on this machine)", busy))
    } else {
        found.remove(0)
    }
}

fn energy_per_request(c: &mut Criterion<Energy>) {
    let sobel = own("sobel", false);
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1);
    let items = (0.001 * KernelImage::repo(sobel.clone()).calibrate(200_000)) as u64;
    let payload = sobel.random(items, &mut rng);
    eprintln!("energy meter: {}", c_meter_name());
    let mut g = c.benchmark_group("runtime/energy_per_request");
    g.throughput(Throughput::Elements(1));
    g.bench_function("cpu_sobel_1ms", |b| b.iter(|| black_box(sobel.reference(&payload).expect("ok"))));
}

fn c_meter_name() -> String {
    energy_meter().name()
}

fn energy_criterion() -> Criterion<Energy> {
    Criterion::default().without_plots().with_measurement(Energy { meter: Mutex::new(energy_meter()) })
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = dispatch_decision, request_overhead, reconfiguration
}
criterion_group! {
    name = energy;
    config = energy_criterion();
    targets = energy_per_request
}
criterion_main!(benches, energy);

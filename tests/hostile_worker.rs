//! Worker hosts are not trusted (hardening issue): a fake worker host, implementing the worker API
//! itself over loopback with Spork's own models (`models/`, their C code), answers a scheduler's
//! jobs wrongly (a row short, an output missing, another datatype, wrong values, an impossible board
//! time, or never while it answers health checks) or speaks another API version. Each gives a remote
//! slot a clean error, never the wrong answer and never a hang, and the host is quarantined (or,
//! for the version, refused), counted for metrics.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rand::SeedableRng;
use spork::backend::calibrate::Calibration;
use spork::backend::remote::{Hosts, RemoteConfig, RemoteSlot};
use spork::backend::{Backend, BackendError, Executed};
use spork::datapath::work::{KernelImage, Output, Payload};
use spork::model::Kind;
use spork::repository::kernel::{RepoKernel, TensorPayload};
use spork::repository::tensor::TensorBuf;
use spork::worker_api::wire::pb::worker_server::{Worker, WorkerServer};
use spork::worker_api::wire::{API_VERSION, SPORK_VERSION, pb};
use spork_kernel::ffi::DType;
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tonic::{Request, Response, Status, Streaming};

const CAL: Calibration =
    Calibration { items_per_sec: 2e8, clock_hz: 250e6, items_per_cycle: 1.0, stated_items_per_cycle: None };

/// The longest any step of a test may take: past it the step hung.
const LIMIT: Duration = Duration::from_secs(20);

/// Spork's own models, by name.
const MODELS: [&str; 3] = ["sobel", "bloom", "dense"];

/// Spork's own model `name` with its C code, loaded once for every test here (the scheduler's and
/// the fake hosts' copy alike: what is under test is the scheduler's checks, not the code).
fn own(name: &str) -> Arc<RepoKernel> {
    static LOADED: OnceLock<HashMap<&'static str, Arc<RepoKernel>>> = OnceLock::new();
    let loaded = LOADED.get_or_init(|| {
        MODELS
            .iter()
            .map(|&n| (n, spork::repository::own::load(n, false).expect("its C code builds").into()))
            .collect()
    });
    loaded.get(name).unwrap_or_else(|| panic!("{name} is not one of Spork's own models")).clone()
}

/// How the fake answers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Misbehaviour {
    /// The reference's answer (and, on a board, a plausible board time).
    Honest,
    /// The reference's answer, its first output a row short.
    Short,
    /// The reference's answer less its last output.
    Missing,
    /// Outputs of the right shapes, of another datatype.
    WrongKind,
    /// The right shape, one value changed.
    WrongValues,
    /// A board time of u64::MAX ns.
    HugeDeviceTime,
    /// u64::MAX cycles.
    HugeCycles,
    /// Never answers a job, while it answers health checks.
    Silent,
    /// Describes itself with another worker API version.
    OtherVersion,
    /// Says its board is an emulation (answers the reference's own), then answers wrong values.
    ClaimsReference,
    /// Answers a small job with one UINT8 tensor of 4 MiB.
    Bloated,
}

/// A lease the fake granted.
struct Granted {
    session: u64,
    fpga: bool,
    model: Arc<RepoKernel>,
}

/// A worker host that answers as `how` says.
#[derive(Clone)]
struct Fake {
    how: Misbehaviour,
    /// The models it serves, by name (Spork's own, as `spork worker` loads them by default).
    models: Arc<HashMap<String, Arc<RepoKernel>>>,
    leases: Arc<Mutex<HashMap<u64, Granted>>>,
    next: Arc<AtomicU64>,
}

impl Fake {
    fn api_version(&self) -> u32 {
        if self.how == Misbehaviour::OtherVersion { API_VERSION + 1 } else { API_VERSION }
    }

    /// Its answer to `job` (none: it stays silent).
    fn answer(&self, job: pb::Job) -> Option<pb::JobResult> {
        let leases = self.leases.lock().unwrap();
        let Some(g) = leases.get(&job.lease).filter(|g| g.session == job.session) else {
            let lost = pb::job_result::Result::Lost("not held for this session".into());
            return Some(pb::JobResult { id: job.id, result: Some(lost), ..Default::default() });
        };
        // The job's tensors, bound to the host's own copy of the model's spec (as a host binds them).
        let Payload::Tensors(inputs) = Payload::try_from(job.payload?).ok()?;
        let payload = g.model.bind(inputs).ok()?;
        let right = g.model.reference(&payload).ok()?;
        let output = Output::Tensors(match self.how {
            Misbehaviour::Short => a_row_short(right),
            Misbehaviour::Missing => right[..right.len() - 1].to_vec(),
            Misbehaviour::WrongKind => other_dtype(&right),
            Misbehaviour::WrongValues | Misbehaviour::ClaimsReference => altered(right),
            Misbehaviour::Bloated => {
                vec![TensorBuf::from_bytes(DType::Uint8, &[4 << 20], &vec![7; 4 << 20]).expect("4 MiB")]
            }
            _ => right,
        });
        let mut r = pb::JobResult {
            id: job.id,
            result: Some(pb::job_result::Result::Output((&output).into())),
            ..Default::default()
        };
        if g.fpga {
            // A plausible board time: one cycle per item at the scheduler's clock.
            let items = payload.items;
            let ns = (items as f64 / CAL.clock_hz * 1e9) as u64;
            (r.cycles, r.device_ns, r.has_device) = (items, ns, true);
        }
        match self.how {
            Misbehaviour::HugeDeviceTime => (r.cycles, r.device_ns, r.has_device) = (1, u64::MAX, true),
            Misbehaviour::HugeCycles => (r.cycles, r.device_ns, r.has_device) = (u64::MAX, 1_000, true),
            Misbehaviour::Silent => return None,
            _ => {}
        }
        Some(r)
    }
}

/// `ts` with its first tensor's last row dropped.
fn a_row_short(mut ts: Vec<TensorBuf>) -> Vec<TensorBuf> {
    let t = &ts[0];
    let mut shape = t.shape.clone();
    shape[0] -= 1;
    let row = t.len() / t.shape[0] as usize;
    ts[0] =
        TensorBuf::from_bytes(t.dtype, &shape, &t.bytes()[..row * shape[0] as usize]).expect("a row fewer");
    ts
}

/// Tensors of `ts`'s shapes, of another datatype (UINT16 for UINT8, else UINT8).
fn other_dtype(ts: &[TensorBuf]) -> Vec<TensorBuf> {
    ts.iter()
        .map(|t| {
            let other = if t.dtype == DType::Uint8 { DType::Uint16 } else { DType::Uint8 };
            TensorBuf::zeroed(other, &t.shape).expect("fits")
        })
        .collect()
}

/// `ts` with one bit of its first value flipped.
fn altered(mut ts: Vec<TensorBuf>) -> Vec<TensorBuf> {
    let first = ts[0].bits(0);
    ts[0].set_bits(0, first ^ 1);
    ts
}

type Results = Pin<Box<dyn Stream<Item = Result<pb::JobResult, Status>> + Send>>;

#[tonic::async_trait]
impl Worker for Fake {
    async fn describe(&self, _: Request<pb::DescribeRequest>) -> Result<Response<pb::HostInfo>, Status> {
        let other = self.how == Misbehaviour::OtherVersion;
        Ok(Response::new(pb::HostInfo {
            cpu_slots: 1,
            fpga_slots: 1,
            board: "fake".into(),
            lease_timeout_ms: 10_000,
            api_version: self.api_version(),
            version: if other { "99.0.0".into() } else { SPORK_VERSION.into() },
        }))
    }

    async fn configure(
        &self,
        req: Request<pb::ConfigureRequest>,
    ) -> Result<Response<pb::ConfigureReply>, Status> {
        let req = req.into_inner();
        let model = self.models.get(&req.kernel).ok_or_else(|| Status::invalid_argument("kernel"))?.clone();
        if req.model_digest != model.digest {
            return Err(Status::failed_precondition("another build of the model"));
        }
        let lease = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let fpga = req.kind == pb::SlotKind::Fpga as i32;
        self.leases.lock().unwrap().insert(lease, Granted { session: req.session, fpga, model });
        let reference = self.how == Misbehaviour::ClaimsReference;
        Ok(Response::new(pb::ConfigureReply { lease, reference, ..Default::default() }))
    }

    type RunStream = Results;

    async fn run(&self, req: Request<Streaming<pb::Job>>) -> Result<Response<Results>, Status> {
        let mut jobs = req.into_inner();
        let (tx, rx) = mpsc::channel(4);
        let fake = self.clone();
        tokio::spawn(async move {
            while let Ok(Some(job)) = jobs.message().await {
                if let Some(r) = fake.answer(job)
                    && tx.send(Ok(r)).await.is_err()
                {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn release(&self, req: Request<pb::ReleaseRequest>) -> Result<Response<pb::ReleaseReply>, Status> {
        let r = req.into_inner();
        self.leases.lock().unwrap().retain(|&id, g| !(id == r.lease && g.session == r.session));
        Ok(Response::new(pb::ReleaseReply {}))
    }

    async fn power(&self, _: Request<pb::PowerRequest>) -> Result<Response<pb::PowerReply>, Status> {
        Ok(Response::new(pb::PowerReply::default()))
    }

    async fn health(&self, req: Request<pb::HealthRequest>) -> Result<Response<pb::HealthReply>, Status> {
        let session = req.into_inner().session;
        let leases: Vec<u64> = self
            .leases
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, g)| g.session == session)
            .map(|(&id, _)| id)
            .collect();
        Ok(Response::new(pb::HealthReply {
            leases,
            free_cpu_slots: 1,
            free_fpga_slots: 1,
            api_version: self.api_version(),
        }))
    }
}

/// A fake host serving on loopback until dropped.
struct FakeHost {
    addr: SocketAddr,
    /// Dropped with the host: its server stops (the scheduler keeps its connection open, so the
    /// runtime is shut down rather than waited for).
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl FakeHost {
    fn start(how: Misbehaviour) -> FakeHost {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let models = Arc::new(MODELS.iter().map(|&n| (n.to_string(), own(n))).collect());
        let fake = Fake { how, models, leases: Arc::default(), next: Arc::default() };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            rt.block_on(async move {
                let server = tonic::transport::Server::builder()
                    .add_service(WorkerServer::new(fake))
                    .serve_with_incoming(TcpListenerStream::new(listener));
                tokio::select! {
                    r = server => if let Err(e) = r {
                        eprintln!("the fake worker host stopped: {e}");
                    },
                    _ = stopped => {}
                }
            });
            rt.shutdown_background();
        });
        FakeHost { addr, _stop: stop }
    }
}

/// A scheduler's hosts: the one at `addr`, every answer audited, jobs bounded by `job_timeout`.
fn hosts(addr: SocketAddr, job_timeout: Duration) -> Hosts {
    hosts_with(addr, job_timeout, |_| {})
}

/// As [`hosts`], with `f` changing the configuration.
fn hosts_with(addr: SocketAddr, job_timeout: Duration, f: impl FnOnce(&mut RemoteConfig)) -> Hosts {
    let mut cfg = RemoteConfig::new(vec![addr.to_string().parse().unwrap()], None, false);
    cfg.health_every = Duration::from_millis(50);
    cfg.health_timeout = Duration::from_millis(300);
    cfg.misses = 2;
    cfg.job_timeout = job_timeout;
    cfg.audit_one_in = 1;
    f(&mut cfg);
    Hosts::start(cfg).expect("hosts")
}

/// Runs `f` on a thread of its own, waiting at most [`LIMIT`]: a hang fails the test, never stalls
/// it. (A std thread, not a tokio blocking task: a runtime's drop would wait for a hung one.)
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(LIMIT) {
        Ok(t) => t,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("{what} did not return within {LIMIT:?}"),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

/// A slot of `kind` leased on `hosts` with Spork's own model `model`, and one job's payload (of
/// about 4096 items) and its outcome.
fn one_job(hosts: &Hosts, kind: Kind, model: &str) -> (TensorPayload, Result<Executed, BackendError>) {
    one_job_of(hosts, kind, model, 4096)
}

/// As [`one_job`], of about `items` items.
fn one_job_of(
    hosts: &Hosts,
    kind: Kind,
    model: &str,
    items: u64,
) -> (TensorPayload, Result<Executed, BackendError>) {
    let kernel = own(model);
    let tensors = kernel.random(items, &mut rand::rngs::Xoshiro256PlusPlus::seed_from_u64(3));
    let image = KernelImage::repo(kernel);
    let payload = Payload::Tensors(tensors.clone());
    let mut slot = RemoteSlot::new(kind, hosts.clone(), &CAL, Duration::ZERO);
    assert!(slot.is_reserved(), "the fake offers a {} slot", kind.name());
    let job = payload.clone();
    let done = within("a remote job", move || {
        slot.configure(&image).expect("the fake leases a slot");
        slot.submit(&job)
    });
    (tensors, done)
}

/// `p`'s first output as a mismatch names it: its datatype and shape.
fn first_output(p: &TensorPayload) -> (DType, Vec<u64>) {
    p.outputs[0].clone()
}

/// A tensor's type and shape as the scheduler's refusal names them.
fn named(dtype: DType, shape: &[u64]) -> String {
    format!("{} {shape:?}", dtype.name())
}

/// Whether the host at `addr` is up.
fn up(hosts: &Hosts, addr: SocketAddr) -> bool {
    hosts.snapshot().0.iter().any(|v| v.addr == addr && v.up)
}

/// Runs one job of Spork's own `model` on a `kind` slot of a fake behaving as `how`; asserts the
/// answer was refused and the host quarantined (still down after several health checks it
/// answers); returns why, with the job's payload.
fn refused(how: Misbehaviour, kind: Kind, model: &str) -> (String, TensorPayload, Hosts) {
    refused_with(how, kind, model, |_| {})
}

/// As [`refused`], the scheduler's hosts configured by `f`.
fn refused_with(
    how: Misbehaviour,
    kind: Kind,
    model: &str,
    f: impl FnOnce(&mut RemoteConfig),
) -> (String, TensorPayload, Hosts) {
    let fake = FakeHost::start(how);
    let hosts = hosts_with(fake.addr, Duration::from_secs(5), f);
    let (payload, done) = one_job(&hosts, kind, model);
    let why = match done {
        Err(BackendError::BadAnswer(why)) => why,
        Ok(e) => panic!("{how:?} on {model}: a wrong answer was accepted: {:?}", e.output),
        Err(e) => panic!("{how:?} on {model}: not refused as a bad answer: {e}"),
    };
    assert!(why.contains(&fake.addr.to_string()), "the host is named: {why}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!up(&hosts, fake.addr), "{how:?}: the host was not quarantined");
    assert!(!RemoteSlot::new(kind, hosts.clone(), &CAL, Duration::ZERO).is_reserved());
    (why, payload, hosts)
}

#[test]
fn an_honest_host_is_served_and_audited() {
    let fake = FakeHost::start(Misbehaviour::Honest);
    let hosts = hosts(fake.addr, Duration::from_secs(5));
    for kind in Kind::ALL {
        let (payload, done) = one_job(&hosts, kind, "sobel");
        let done = done.expect("an honest answer is accepted");
        assert_eq!(done.output, Output::Tensors(own("sobel").reference(&payload).unwrap()));
        assert_eq!(done.device.is_some(), kind == Kind::Fpga, "board time on boards only");
    }
    // The CPU slot's answer is audited (one in one here), the board's as every board answer is.
    assert_eq!(hosts.answers_audited(), 2);
    assert_eq!((hosts.answer_mismatches(), hosts.bad_answers(), hosts.job_timeouts()), (0, 0, 0));
    assert!(up(&hosts, fake.addr));
}

#[test]
fn an_answer_a_row_short_is_refused_naming_both_shapes() {
    for model in MODELS {
        let (why, payload, hosts) = refused(Misbehaviour::Short, Kind::Cpu, model);
        let (dtype, want) = first_output(&payload);
        let mut got = want.clone();
        got[0] -= 1;
        // OutputMismatch::Shape: "a tensor of {got} where the job gives {want}".
        let text = format!("a tensor of {} where the job gives {}", named(dtype, &got), named(dtype, &want));
        assert!(why.contains(&text), "{model}: {text} missing from: {why}");
        assert_eq!(hosts.bad_answers(), 1);
    }
}

#[test]
fn an_answer_missing_an_output_is_refused_naming_both_counts() {
    for model in MODELS {
        let (why, payload, hosts) = refused(Misbehaviour::Missing, Kind::Cpu, model);
        let want = payload.outputs.len();
        // OutputMismatch::Length: "{got} tensors where the job gives {want}".
        let text = format!("{} tensors where the job gives {want}", want - 1);
        assert!(why.contains(&text), "{model}: {text} missing from: {why}");
        assert_eq!(hosts.bad_answers(), 1);
    }
}

#[test]
fn an_answer_of_another_datatype_is_refused_naming_both() {
    for model in MODELS {
        let (why, payload, hosts) = refused(Misbehaviour::WrongKind, Kind::Cpu, model);
        let (dtype, shape) = first_output(&payload);
        let other = if dtype == DType::Uint8 { DType::Uint16 } else { DType::Uint8 };
        let text =
            format!("a tensor of {} where the job gives {}", named(other, &shape), named(dtype, &shape));
        assert!(why.contains(&text), "{model}: {text} missing from: {why}");
        assert_eq!(hosts.bad_answers(), 1);
    }
}

#[test]
fn an_answer_that_differs_from_the_reference_is_caught_by_the_audit() {
    let (why, _, hosts) = refused(Misbehaviour::WrongValues, Kind::Cpu, "dense");
    assert!(why.contains("differs from the reference"), "{why}");
    assert_eq!((hosts.answers_audited(), hosts.answer_mismatches()), (1, 1));
}

#[test]
fn a_host_that_calls_its_board_the_reference_is_still_checked_on_every_answer() {
    // No sampling at all: only the rule that every board answer is checked can catch it.
    let (why, _, hosts) =
        refused_with(Misbehaviour::ClaimsReference, Kind::Fpga, "sobel", |c| c.audit_one_in = 0);
    assert!(why.contains("differs from the reference"), "{why}");
    assert_eq!((hosts.answers_audited(), hosts.answer_mismatches()), (1, 1));
}

#[test]
fn an_answer_past_its_jobs_bound_is_refused_before_it_is_read() {
    let (why, _, hosts) = refused(Misbehaviour::Bloated, Kind::Cpu, "sobel");
    assert!(why.contains("more than its job's answer can take") && why.contains("too large"), "{why}");
    assert_eq!(hosts.bad_answers(), 1);
}

#[test]
fn a_job_whose_answer_cannot_fit_the_hosts_decode_budget_is_refused_naming_both_sizes() {
    let fake = FakeHost::start(Misbehaviour::Honest);
    let hosts = hosts_with(fake.addr, Duration::from_secs(5), |c| c.decode_per_host = 8 << 10);
    // A 128 x 128 image: its answer's 126 x 126 magnitudes cannot fit 8 KiB.
    let (payload, done) = one_job_of(&hosts, Kind::Cpu, "sobel", 128 * 128);
    let need = Payload::Tensors(payload).answer_wire_max();
    assert!(need > 8 << 10, "the job's answer may take {need} bytes");
    let why = match done {
        Err(BackendError::Kernel(why)) => why,
        other => panic!("not refused: {other:?}"),
    };
    let need = need.to_string();
    assert!(why.contains(&need) && why.contains("8192 bytes one worker host"), "{why}");
    assert!(up(&hosts, fake.addr), "our own bound, not the host's fault");
}

#[test]
fn an_impossible_board_time_is_refused() {
    for how in [Misbehaviour::HugeDeviceTime, Misbehaviour::HugeCycles] {
        let (why, _, hosts) = refused(how, Kind::Fpga, "bloom");
        assert!(why.contains("board time"), "{how:?}: {why}");
        assert_eq!(hosts.bad_answers(), 1);
    }
}

#[test]
fn a_host_that_never_answers_a_job_is_quarantined_and_the_job_lost() {
    let fake = FakeHost::start(Misbehaviour::Silent);
    let hosts = hosts(fake.addr, Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (_, done) = one_job(&hosts, Kind::Cpu, "sobel");
    match done {
        Err(BackendError::Lost(why)) => {
            assert!(why.contains("answered no job within"), "{why}");
            assert!(why.contains(&fake.addr.to_string()), "{why}");
        }
        other => panic!("a silent host's job: {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5), "the job waited {:?}", started.elapsed());
    assert_eq!(hosts.job_timeouts(), 1);
    // It still answers health checks, yet stays down: no new slot goes to it.
    std::thread::sleep(Duration::from_millis(300));
    assert!(!up(&hosts, fake.addr), "a stuck host came back up");
    assert_eq!(hosts.snapshot().1, 1, "it went down once");
    assert!(!RemoteSlot::new(Kind::Cpu, hosts.clone(), &CAL, Duration::ZERO).is_reserved());
}

#[test]
fn a_host_of_another_api_version_is_refused_with_both_versions_and_the_fix() {
    let fake = FakeHost::start(Misbehaviour::OtherVersion);
    let hosts = hosts(fake.addr, Duration::from_secs(5));
    assert!(!up(&hosts, fake.addr), "a host of another API version was taken up");
    assert_eq!(hosts.capacity(), 0);
    assert!(!RemoteSlot::new(Kind::Cpu, hosts.clone(), &CAL, Duration::ZERO).is_reserved());
    let why = hosts.refusal(fake.addr).expect("the refusal is kept");
    let (theirs, ours) = (format!("v{}", API_VERSION + 1), format!("v{API_VERSION}"));
    for part in [theirs.as_str(), ours.as_str(), "99.0.0", SPORK_VERSION, "same spork version"] {
        assert!(why.contains(part), "{part} missing from: {why}");
    }
}

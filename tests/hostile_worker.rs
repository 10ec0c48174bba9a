//! Worker hosts are not trusted (hardening issue): a fake worker host, implementing the worker API
//! itself over loopback, answers a scheduler's jobs wrongly (one value short, another kernel's
//! kind, wrong values, an impossible board time, or never while it answers health checks) or
//! speaks another API version. Each gives a remote slot a clean error, never the wrong answer and
//! never a hang, and the host is quarantined (or, for the version, refused), counted for metrics.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::SeedableRng;
use spork::backend::calibrate::Calibration;
use spork::backend::remote::{Hosts, RemoteConfig, RemoteSlot};
use spork::backend::{Backend, BackendError, Executed};
use spork::datapath::work::{KernelImage, Output, Payload};
use spork::model::Kind;
use spork::worker_api::wire::pb::worker_server::{Worker, WorkerServer};
use spork::worker_api::wire::{API_VERSION, SPORK_VERSION, pb};
use spork_golden::Kernel;
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tonic::{Request, Response, Status, Streaming};

const CAL: Calibration = Calibration { items_per_sec: 2e8, clock_hz: 250e6, items_per_cycle: 1.0 };

/// The longest any step of a test may take: past it the step hung.
const LIMIT: Duration = Duration::from_secs(20);

/// How the fake answers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Misbehaviour {
    /// The reference's answer (and, on a board, a plausible board time).
    Honest,
    /// The reference's answer less its last value.
    Short,
    /// As many values, of another kernel's kind.
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
    /// Answers a small job with 4 MiB.
    Bloated,
}

/// A lease the fake granted.
struct Granted {
    session: u64,
    fpga: bool,
    image: KernelImage,
}

/// A worker host that answers as `how` says.
#[derive(Clone)]
struct Fake {
    how: Misbehaviour,
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
        let payload = Payload::try_from(job.payload?).ok()?;
        let right = g.image.reference(&payload).ok()?;
        let output = match self.how {
            Misbehaviour::Short => shorter(right),
            Misbehaviour::WrongKind => other_kind(&right),
            Misbehaviour::WrongValues | Misbehaviour::ClaimsReference => altered(right),
            Misbehaviour::Bloated => Output::Magnitudes(vec![7; 4 << 20]),
            _ => right,
        };
        let mut r = pb::JobResult {
            id: job.id,
            result: Some(pb::job_result::Result::Output((&output).into())),
            ..Default::default()
        };
        if g.fpga {
            // A plausible board time: one cycle per item at the scheduler's clock.
            let items = payload.items();
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

fn shorter(o: Output) -> Output {
    match o {
        Output::Magnitudes(mut m) => {
            m.pop();
            Output::Magnitudes(m)
        }
        Output::Scores(mut s) => {
            s.pop();
            Output::Scores(s)
        }
        Output::Activations(mut a) => {
            a.pop();
            Output::Activations(a)
        }
        Output::Tensors(mut t) => {
            t.pop();
            Output::Tensors(t)
        }
    }
}

fn other_kind(o: &Output) -> Output {
    match o {
        Output::Scores(s) => Output::Magnitudes(vec![0; s.len()]),
        other => Output::Scores(vec![0; other.len()]),
    }
}

fn altered(o: Output) -> Output {
    match o {
        Output::Magnitudes(mut m) => {
            m[0] ^= 1;
            Output::Magnitudes(m)
        }
        Output::Scores(mut s) => {
            s[0] ^= 1;
            Output::Scores(s)
        }
        Output::Tensors(mut t) => {
            let first = t[0].bits(0);
            t[0].set_bits(0, first ^ 1);
            Output::Tensors(t)
        }
        Output::Activations(mut a) => {
            a[0][0] ^= 1;
            Output::Activations(a)
        }
    }
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
        let kernel = Kernel::from_name(&req.kernel).ok_or_else(|| Status::invalid_argument("kernel"))?;
        let lease = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let fpga = req.kind == pb::SlotKind::Fpga as i32;
        let image = KernelImage::new(kernel, req.image_seed);
        self.leases.lock().unwrap().insert(lease, Granted { session: req.session, fpga, image });
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
        let fake = Fake { how, leases: Arc::default(), next: Arc::default() };
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

/// A slot of `kind` leased on `hosts` with `kernel`, and one job's payload and its outcome.
fn one_job(hosts: &Hosts, kind: Kind, kernel: Kernel) -> (Payload, Result<Executed, BackendError>) {
    let image = KernelImage::new(kernel, 11);
    let payload = image.payload(4096, &mut rand::rngs::Xoshiro256PlusPlus::seed_from_u64(3));
    let mut slot = RemoteSlot::new(kind, hosts.clone(), &CAL, Duration::ZERO);
    assert!(slot.is_reserved(), "the fake offers a {} slot", kind.name());
    let job = payload.clone();
    let done = within("a remote job", move || {
        slot.configure(&image).expect("the fake leases a slot");
        slot.submit(&job)
    });
    (payload, done)
}

/// Whether the host at `addr` is up.
fn up(hosts: &Hosts, addr: SocketAddr) -> bool {
    hosts.snapshot().0.iter().any(|v| v.addr == addr && v.up)
}

/// Runs one job of `kernel` on a `kind` slot of a fake behaving as `how`; asserts the answer was
/// refused and the host quarantined (still down after several health checks it answers); returns
/// why, with the job's payload.
fn refused(how: Misbehaviour, kind: Kind, kernel: Kernel) -> (String, Payload, Hosts) {
    refused_with(how, kind, kernel, |_| {})
}

/// As [`refused`], the scheduler's hosts configured by `f`.
fn refused_with(
    how: Misbehaviour,
    kind: Kind,
    kernel: Kernel,
    f: impl FnOnce(&mut RemoteConfig),
) -> (String, Payload, Hosts) {
    let fake = FakeHost::start(how);
    let hosts = hosts_with(fake.addr, Duration::from_secs(5), f);
    let (payload, done) = one_job(&hosts, kind, kernel);
    let why = match done {
        Err(BackendError::BadAnswer(why)) => why,
        Ok(e) => panic!("{how:?} on {kernel}: a wrong answer was accepted: {:?}", e.output.name()),
        Err(e) => panic!("{how:?} on {kernel}: not refused as a bad answer: {e}"),
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
        let (payload, done) = one_job(&hosts, kind, Kernel::Sobel);
        let done = done.expect("an honest answer is accepted");
        let image = KernelImage::new(Kernel::Sobel, 11);
        assert_eq!(done.output, image.reference(&payload).unwrap());
        assert_eq!(done.device.is_some(), kind == Kind::Fpga, "board time on boards only");
    }
    // The CPU slot's answer is audited (one in one here), the board's as every board answer is.
    assert_eq!(hosts.answers_audited(), 2);
    assert_eq!((hosts.answer_mismatches(), hosts.bad_answers(), hosts.job_timeouts()), (0, 0, 0));
    assert!(up(&hosts, fake.addr));
}

#[test]
fn an_answer_of_the_wrong_length_is_refused_naming_both_lengths() {
    for kernel in Kernel::ALL {
        let (why, payload, hosts) = refused(Misbehaviour::Short, Kind::Cpu, kernel);
        let (_, want) = payload.expected().unwrap();
        assert!(why.contains(&format!("{} ", want - 1)) && why.contains(&want.to_string()), "{why}");
        assert_eq!(hosts.bad_answers(), 1);
    }
}

#[test]
fn an_answer_of_another_kind_is_refused() {
    for kernel in Kernel::ALL {
        let (why, payload, hosts) = refused(Misbehaviour::WrongKind, Kind::Cpu, kernel);
        let (kind, _) = payload.expected().unwrap();
        assert!(why.contains(&format!("where the job gives {kind}")), "{why}");
        assert_eq!(hosts.bad_answers(), 1);
    }
}

#[test]
fn an_answer_that_differs_from_the_reference_is_caught_by_the_audit() {
    let (why, _, hosts) = refused(Misbehaviour::WrongValues, Kind::Cpu, Kernel::Dense);
    assert!(why.contains("differs from the reference"), "{why}");
    assert_eq!((hosts.answers_audited(), hosts.answer_mismatches()), (1, 1));
}

#[test]
fn a_host_that_calls_its_board_the_reference_is_still_checked_on_every_answer() {
    // No sampling at all: only the rule that every board answer is checked can catch it.
    let (why, _, hosts) =
        refused_with(Misbehaviour::ClaimsReference, Kind::Fpga, Kernel::Sobel, |c| c.audit_one_in = 0);
    assert!(why.contains("differs from the reference"), "{why}");
    assert_eq!((hosts.answers_audited(), hosts.answer_mismatches()), (1, 1));
}

#[test]
fn an_answer_past_its_jobs_bound_is_refused_before_it_is_read() {
    let (why, _, hosts) = refused(Misbehaviour::Bloated, Kind::Cpu, Kernel::Sobel);
    assert!(why.contains("more than its job's answer can take") && why.contains("too large"), "{why}");
    assert_eq!(hosts.bad_answers(), 1);
}

#[test]
fn a_job_whose_answer_cannot_fit_the_hosts_decode_budget_is_refused_naming_both_sizes() {
    let fake = FakeHost::start(Misbehaviour::Honest);
    let hosts = hosts_with(fake.addr, Duration::from_secs(5), |c| c.decode_per_host = 8 << 10);
    let (payload, done) = one_job(&hosts, Kind::Cpu, Kernel::Sobel);
    let why = match done {
        Err(BackendError::Kernel(why)) => why,
        other => panic!("not refused: {other:?}"),
    };
    let need = payload.answer_wire_max().to_string();
    assert!(why.contains(&need) && why.contains("8192 bytes one worker host"), "{why}");
    assert!(up(&hosts, fake.addr), "our own bound, not the host's fault");
}

#[test]
fn an_impossible_board_time_is_refused() {
    for how in [Misbehaviour::HugeDeviceTime, Misbehaviour::HugeCycles] {
        let (why, _, hosts) = refused(how, Kind::Fpga, Kernel::Bloom);
        assert!(why.contains("board time"), "{how:?}: {why}");
        assert_eq!(hosts.bad_answers(), 1);
    }
}

#[test]
fn a_host_that_never_answers_a_job_is_quarantined_and_the_job_lost() {
    let fake = FakeHost::start(Misbehaviour::Silent);
    let hosts = hosts(fake.addr, Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (_, done) = one_job(&hosts, Kind::Cpu, Kernel::Sobel);
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

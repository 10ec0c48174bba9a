//! The worker API between a scheduler and `spork worker`, over real loopback sockets: a job id is
//! never run twice; a host that goes away has its leases reported lost; mutual TLS refuses a
//! scheduler or a worker without a certificate the other side's CA signed (issue: many hosts); a
//! lease is a random token a job may name only with the session that took it, and a scheduler of
//! another API version is refused (hardening issue; a hostile host: tests/hostile_worker.rs).

#[path = "support/pki.rs"]
mod pki;

#[path = "support/fixtures.rs"]
#[allow(dead_code)]
mod fixtures;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::SeedableRng;
use spork::backend::Board;
use spork::backend::calibrate::Calibration;
use spork::backend::remote::{Hosts, RemoteConfig, RemoteSlot, TlsFiles};
use spork::backend::{Backend, BackendError};
use spork::datapath::work::KernelImage;
use spork::model::{Kind, Platform};
use spork::repository::kernel::RepoKernel;
use spork::worker_api::wire::pb::worker_client::WorkerClient;
use spork::worker_api::wire::{self, API_VERSION, SPORK_VERSION, pb};
use spork::worker_host::{self, HostConfig, Offer, RunningHost};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint};

const CAL: Calibration =
    Calibration { items_per_sec: 2e8, clock_hz: 250e6, items_per_cycle: 1.0, stated_items_per_cycle: None };

/// Spork's own model `name` (the repository `spork serve` and `spork worker` load by default).
fn own(name: &str) -> Arc<RepoKernel> {
    Arc::new(spork::repository::own::load(name, false).expect("its C code builds"))
}

/// The image a scheduler configures a lease of Spork's own model `name` with.
fn own_image(name: &str) -> KernelImage {
    KernelImage::repo(own(name))
}

fn host(tls: Option<TlsFiles>) -> RunningHost {
    let names = ["sobel", "bloom", "dense"];
    let models: HashMap<String, Arc<RepoKernel>> = names.iter().map(|n| (n.to_string(), own(n))).collect();
    let boards: HashMap<String, Board> = names.iter().map(|n| (n.to_string(), Board::Model(None))).collect();
    worker_host::start(HostConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        probe: None,
        tls,
        insecure: false,
        offer: Offer {
            cpu: 2,
            fpga: 2,
            boards,
            platform: Platform::default(),
            lease_timeout: Duration::from_secs(10),
            models,
        },
        board: "model".into(),
    })
    .expect("the worker host starts")
}

/// Copies Spork's own model folder `name` to `to`, with one C comment added: the same model by its
/// name, another by its digest.
fn altered_copy(name: &str, to: &std::path::Path) {
    let from = spork::repository::own::dir().expect("written to the cache").join(name);
    fixtures::copy_dir(&from, to);
    let c = to.join("cpu").join(format!("{name}.c"));
    let text = std::fs::read_to_string(&c).expect("its C source");
    std::fs::write(&c, format!("{text}\n/* another build */\n")).expect("write");
}

#[test]
fn a_host_whose_model_of_that_name_is_other_code_refuses_the_lease_naming_both_digests() {
    let dir = tempfile::tempdir().expect("tempdir");
    altered_copy("sobel", &dir.path().join("sobel"));
    let spec = spork::repository::spec::load(&dir.path().join("sobel")).expect("loads");
    let theirs = Arc::new(RepoKernel::load(spec, false).expect("builds"));
    let ours = own("sobel");
    assert_ne!(theirs.digest, ours.digest);
    let models = HashMap::from([("sobel".to_string(), theirs.clone())]);
    let h = worker_host::start(one_cpu_host("127.0.0.1:0", models)).expect("the worker host starts");
    let hosts = hosts(h.addr, None);
    let mut slot = RemoteSlot::new(Kind::Cpu, hosts.clone(), &CAL, Duration::ZERO);
    let e = slot.configure(&KernelImage::repo(ours.clone())).expect_err("another build of sobel");
    let e = e.to_string();
    for part in [theirs.digest.as_str(), ours.digest.as_str(), "deploy the same model folder"] {
        assert!(e.contains(part), "{part} missing from: {e}");
    }
    // The host's own build is leased as usual.
    let mut slot = RemoteSlot::new(Kind::Cpu, hosts, &CAL, Duration::ZERO);
    slot.configure(&KernelImage::repo(theirs)).expect("the same digest");
    h.stop();
}

/// A worker host on `listen` with one CPU slot, no board, plaintext, serving `models`.
fn one_cpu_host(listen: &str, models: HashMap<String, Arc<RepoKernel>>) -> HostConfig {
    HostConfig {
        listen: listen.parse().unwrap(),
        probe: None,
        tls: None,
        insecure: false,
        offer: Offer {
            cpu: 1,
            fpga: 0,
            boards: HashMap::new(),
            platform: Platform::default(),
            lease_timeout: Duration::from_secs(10),
            models,
        },
        board: "model".into(),
    }
}

fn hosts(addr: std::net::SocketAddr, tls: Option<(TlsFiles, String)>) -> Hosts {
    let mut cfg = RemoteConfig::new(vec![addr.to_string().parse().unwrap()], tls, false);
    cfg.health_every = Duration::from_millis(50);
    cfg.health_timeout = Duration::from_millis(300);
    cfg.misses = 2;
    Hosts::start(cfg).expect("hosts")
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn a_retried_job_id_runs_once_and_gets_the_same_answer() {
    let h = host(None);
    let image = own_image("sobel");
    let payload = image.payload(4096, &mut rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1));
    let rt = rt();
    rt.block_on(async {
        let ch = Endpoint::from_shared(format!("http://{}", h.addr)).unwrap().connect().await.unwrap();
        let mut c = WorkerClient::new(ch);
        let req = configure_request(9);
        let lease = c.configure(req).await.expect("configured").into_inner().lease;
        let job = pb::Job { session: 9, lease, id: 7, payload: Some((&payload).into()) };
        let mut answers = Vec::new();
        // The same job on two streams, as after a broken connection: one run, two equal answers.
        for _ in 0..2 {
            let out = tokio_stream::iter(vec![job.clone()]);
            let mut replies = c.run(out).await.expect("stream").into_inner();
            answers.push(replies.message().await.expect("reply").expect("one reply"));
        }
        assert_eq!(answers[0], answers[1]);
        let want = image.reference(&payload).unwrap();
        match &answers[0].result {
            Some(pb::job_result::Result::Output(o)) => {
                assert_eq!(spork::datapath::work::Output::try_from(o.clone()).unwrap(), want)
            }
            other => panic!("not an output: {other:?}"),
        }
        // A job on a lease the host does not hold is refused as lost, not run.
        let stray = pb::Job { session: 9, lease: lease ^ 1, id: 8, payload: Some((&payload).into()) };
        let mut replies = c.run(tokio_stream::iter(vec![stray])).await.unwrap().into_inner();
        let r = replies.message().await.unwrap().unwrap();
        assert!(matches!(r.result, Some(pb::job_result::Result::Lost(_))), "{r:?}");
    });
    assert_eq!(h.runs(), 1, "the retried job ran again");
    h.stop();
}

/// A CPU slot with sobel, leased for `session`.
fn configure_request(session: u64) -> pb::ConfigureRequest {
    pb::ConfigureRequest {
        session,
        kind: pb::SlotKind::Cpu as i32,
        kernel: "sobel".into(),
        items_per_sec: CAL.items_per_sec,
        clock_hz: CAL.clock_hz,
        items_per_cycle: 1.0,
        ..Default::default()
    }
}

/// The one answer to `job` on a stream of its own.
async fn answer(c: &mut WorkerClient<tonic::transport::Channel>, job: pb::Job) -> pb::JobResult {
    let mut replies = c.run(tokio_stream::iter(vec![job])).await.expect("stream").into_inner();
    replies.message().await.expect("reply").expect("one reply")
}

#[test]
fn a_lease_answers_only_the_session_that_took_it() {
    let h = host(None);
    let image = own_image("sobel");
    let payload = image.payload(4096, &mut rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1));
    let rt = rt();
    let steps = async {
        let ch = Endpoint::from_shared(format!("http://{}", h.addr)).unwrap().connect().await.unwrap();
        let mut c = WorkerClient::new(ch);
        let lease = c.configure(configure_request(9)).await.expect("configured").into_inner().lease;
        let other = c.configure(configure_request(9)).await.expect("configured").into_inner().lease;
        // Random tokens, not a sequence another scheduler could walk.
        assert_ne!(other, lease.wrapping_add(1), "leases are sequential");
        // Another scheduler (session 10) names the lease: refused as lost, unrun.
        let stray = pb::Job { session: 10, lease, id: 1, payload: Some((&payload).into()) };
        match answer(&mut c, stray).await.result {
            Some(pb::job_result::Result::Lost(why)) => assert!(why.contains("this session"), "{why}"),
            other => panic!("another session's job on the lease: {other:?}"),
        }
        // The lease's own session then runs job 1: the stray job neither ran nor took its id.
        let own = pb::Job { session: 9, lease, id: 1, payload: Some((&payload).into()) };
        match answer(&mut c, own).await.result {
            Some(pb::job_result::Result::Output(o)) => {
                let want = image.reference(&payload).unwrap();
                assert_eq!(spork::datapath::work::Output::try_from(o).unwrap(), want);
            }
            other => panic!("the lease's own job: {other:?}"),
        }
        // Session 10 neither sees the lease nor can free it.
        let health = |session: u64| pb::HealthRequest { session };
        assert!(c.health(health(10)).await.unwrap().into_inner().leases.is_empty());
        c.release(pb::ReleaseRequest { session: 10, lease }).await.unwrap();
        assert!(c.health(health(9)).await.unwrap().into_inner().leases.contains(&lease));
    };
    rt.block_on(async { tokio::time::timeout(Duration::from_secs(20), steps).await.expect("no hang") });
    assert_eq!(h.runs(), 1, "only the lease's own job ran");
    h.stop();
}

#[test]
fn the_worker_host_refuses_a_scheduler_of_another_api_version() {
    let h = host(None);
    let rt = rt();
    let steps = async {
        let ch = Endpoint::from_shared(format!("http://{}", h.addr)).unwrap().connect().await.unwrap();
        let mut c = WorkerClient::new(ch);
        let newer = pb::DescribeRequest { api_version: API_VERSION + 1, version: "9.9.9".into() };
        let err = c.describe(newer).await.expect_err("a newer scheduler is refused");
        assert_eq!(err.code(), tonic::Code::FailedPrecondition);
        let (theirs, ours) = (format!("v{}", API_VERSION + 1), format!("v{API_VERSION}"));
        for part in [theirs.as_str(), ours.as_str(), "9.9.9", SPORK_VERSION, "same spork version"] {
            assert!(err.message().contains(part), "{part} missing from: {}", err.message());
        }
        // A scheduler older than the versioned API sends no version at all.
        let err = c.describe(pb::DescribeRequest::default()).await.expect_err("an older one too");
        assert!(err.message().contains("older than the versioned API"), "{}", err.message());
        // The same version is described, with the host's versions.
        let info = c.describe(wire::describe_request()).await.expect("described").into_inner();
        assert_eq!((info.api_version, info.version.as_str()), (API_VERSION, SPORK_VERSION));
    };
    rt.block_on(async { tokio::time::timeout(Duration::from_secs(20), steps).await.expect("no hang") });
    h.stop();
}

#[test]
fn a_remote_slot_serves_like_a_local_worker_and_is_lost_with_its_host() {
    let h = host(None);
    let hosts = hosts(h.addr, None);
    assert_eq!(hosts.capacity(), 2);
    let image = own_image("bloom");
    let mut slot = RemoteSlot::new(Kind::Fpga, hosts.clone(), &CAL, Duration::ZERO);
    let lost = Arc::new(Mutex::new(None));
    let seen = lost.clone();
    slot.on_lost(Box::new(move |why| *seen.lock().unwrap() = Some(why)));
    let configured = slot.configure(&image).expect("configured");
    assert!(configured.measured > Duration::ZERO, "the network round trip is measured");
    // The host says its board is an emulation whose answers are the reference's own; the scheduler
    // holds every board answer to the reference anyway (a host cannot opt out of checking).
    assert!(slot.checks_answers() && !slot.is_reference());
    let payload = image.payload(2000, &mut rand::rngs::Xoshiro256PlusPlus::seed_from_u64(2));
    let done = slot.submit(&payload).expect("answered");
    assert_eq!(done.output, image.reference(&payload).unwrap());
    assert!(done.device.is_some_and(|(cycles, _)| cycles > 0), "the board's cycles come back");
    assert_eq!(hosts.answers_audited(), 1, "the board answer was checked here");
    assert_eq!(hosts.snapshot().0[0].leased.fpga, 1);
    h.stop();
    // The host is gone: within a few health checks the lease is reported lost, and a job fails as
    // lost (its request re-runs elsewhere), never as a kernel error.
    for _ in 0..100 {
        if lost.lock().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let why = lost.lock().unwrap().clone().expect("the lease was reported lost");
    assert!(why.contains("down"), "{why}");
    assert!(matches!(slot.submit(&payload), Err(BackendError::Lost(_))));
    assert_eq!(hosts.capacity(), 0, "a host that is down offers nothing");
    assert_eq!(hosts.snapshot().1, 1, "one host went down");
}

#[test]
fn mutual_tls_admits_the_right_certificates_and_refuses_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ca, rogue) = (pki::ca(d, "spork-ca"), pki::ca(d, "rogue-ca"));
    let (wc, wk) = ca.leaf(d, "worker", "spork-worker");
    let (sc, sk) = ca.leaf(d, "scheduler", "spork-scheduler");
    let (rc, rk) = rogue.leaf(d, "rogue", "spork-worker");
    let worker_tls = TlsFiles { cert: wc.clone(), key: wk.clone(), ca: ca.pem.clone() };
    let good = host(Some(worker_tls));
    let files = |cert: &std::path::Path, key: &std::path::Path| TlsFiles {
        cert: cert.into(),
        key: key.into(),
        ca: ca.pem.clone(),
    };

    // Both sides signed by the CA: the host is up.
    let ok = hosts(good.addr, Some((files(&sc, &sk), "spork-worker".into())));
    assert_eq!(ok.capacity(), 2, "a trusted scheduler reaches a trusted worker");

    // A scheduler with the rogue CA's certificate is refused by the worker.
    let refused = hosts(good.addr, Some((files(&rc, &rk), "spork-worker".into())));
    assert!(!refused.snapshot().0[0].up, "the worker accepted a scheduler it does not trust");

    // A scheduler presenting no certificate at all is refused too.
    let rt = rt();
    let bare = rt.block_on(async {
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(std::fs::read(&ca.pem).unwrap()))
            .domain_name("spork-worker");
        let ch = Endpoint::from_shared(format!("https://{}", good.addr))
            .unwrap()
            .tls_config(tls)
            .unwrap()
            .connect()
            .await;
        match ch {
            Ok(ch) => WorkerClient::new(ch)
                .describe(wire::describe_request())
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    });
    assert!(bare.is_err(), "a scheduler without a certificate was served");

    // A worker presenting the rogue CA's certificate is refused by the scheduler.
    let impostor = host(Some(TlsFiles { cert: rc.clone(), key: rk.clone(), ca: ca.pem.clone() }));
    let wary = hosts(impostor.addr, Some((files(&sc, &sk), "spork-worker".into())));
    assert!(!wary.snapshot().0[0].up, "the scheduler trusted a worker the CA did not sign");
    assert_eq!(wary.capacity(), 0);

    // A worker whose certificate names someone else is refused as well.
    let (oc, ok_key) = ca.leaf(d, "other", "not-a-worker");
    let misnamed = host(Some(TlsFiles { cert: oc, key: ok_key, ca: ca.pem.clone() }));
    let wary = hosts(misnamed.addr, Some((files(&sc, &sk), "spork-worker".into())));
    assert!(!wary.snapshot().0[0].up, "the scheduler trusted a certificate for another name");

    // Plaintext to a TLS worker gets nowhere.
    let plain = hosts(good.addr, None);
    assert!(!plain.snapshot().0[0].up);
    for h in [good, impostor, misnamed] {
        h.stop();
    }
}

#[test]
fn plaintext_outside_loopback_is_refused_with_the_fix() {
    let err = worker_host::start(one_cpu_host("0.0.0.0:0", HashMap::new())).err().expect("refused");
    assert!(err.to_string().contains("mutual TLS") && err.to_string().contains("--insecure"), "{err}");
    let cfg = RemoteConfig::new(vec!["10.9.8.7:7070".parse().unwrap()], None, false);
    let err = Hosts::start(cfg).expect_err("refused").to_string();
    assert!(err.contains("10.9.8.7:7070") && err.contains("TLS"), "{err}");
}

#[test]
fn hosts_found_through_dns_join_with_their_slots() {
    let h = host(None);
    let mut cfg =
        RemoteConfig::new(vec![format!("dns:localhost:{}", h.addr.port()).parse().unwrap()], None, false);
    cfg.health_every = Duration::from_millis(50);
    let hosts = Hosts::start(cfg).expect("hosts");
    // localhost may also name ::1, where nothing listens: that address stays down.
    let (views, _) = hosts.snapshot();
    assert!(views.iter().any(|v| v.addr == h.addr && v.up), "{views:?}");
    assert_eq!(hosts.capacity(), 2);
    h.stop();
}

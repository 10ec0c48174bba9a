//! Many hosts on one machine: `spork serve` and three `spork worker` processes, each worker in a
//! network namespace of its own joined to this one by a veth pair (mutual TLS, as outside
//! loopback), under `spork load`. Mid-load the worker holding the pool's FPGA slot is killed
//! (SIGKILL), then the one its slot was replaced on is cut off (its link taken down), so the slot
//! moves to the third; the killed one comes back and the third is cut too: every request is
//! answered or refused exactly once, the lost slots are failed and replaced, re-runs are counted,
//! and the returned worker's slot is used again (issue: many hosts).
//!
//! Needs root for `ip netns`; without it (or with SPORK_MULTIHOST_LOOPBACK set) the workers listen
//! on separate loopback addresses and "cut off" is SIGSTOP (the test says which it ran).

#[path = "support/boards.rs"]
mod boards;
#[path = "support/pki.rs"]
mod pki;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SPORK: &str = env!("CARGO_BIN_EXE_spork");

/// How the workers are separated.
enum Net {
    /// Namespaces `ns[i]`, host-side links `link[i]`.
    Namespaces {
        ns: Vec<String>,
        link: Vec<String>,
    },
    Loopback,
}

impl Net {
    fn setup(tag: u32) -> Net {
        let ns: Vec<String> = (1..=3).map(|i| format!("smh{tag}n{i}")).collect();
        let link: Vec<String> = (1..=3).map(|i| format!("smh{tag}h{i}")).collect();
        // A cut link must drop packets, as a dead cable does: without its connected route, traffic
        // for the namespace would follow the default route out of the machine.
        let forced = std::env::var_os("SPORK_MULTIHOST_LOOPBACK").is_some();
        let ok = !forced
            && sh(&["ip", "route", "add", "blackhole", "10.213.0.0/16"])
            && (0..3).all(|i| {
                let peer = format!("smh{tag}p{}", i + 1);
                let net = format!("10.213.{}", i + 1);
                sh(&["ip", "netns", "add", &ns[i]])
                    && sh(&["ip", "link", "add", &link[i], "type", "veth", "peer", "name", &peer])
                    && sh(&["ip", "link", "set", &peer, "netns", &ns[i]])
                    && sh(&["ip", "addr", "add", &format!("{net}.1/24"), "dev", &link[i]])
                    && sh(&["ip", "link", "set", &link[i], "up"])
                    && sh(&["ip", "-n", &ns[i], "addr", "add", &format!("{net}.2/24"), "dev", &peer])
                    && sh(&["ip", "-n", &ns[i], "link", "set", &peer, "up"])
                    && sh(&["ip", "-n", &ns[i], "link", "set", "lo", "up"])
            });
        let net = Net::Namespaces { ns, link };
        if ok {
            eprintln!("multihost: each worker in its own network namespace (ip netns, veth pairs)");
            net
        } else {
            drop(net);
            eprintln!(
                "multihost: no network namespaces (ip netns not permitted, or SPORK_MULTIHOST_LOOPBACK set): workers on separate loopback addresses, cut off by SIGSTOP"
            );
            Net::Loopback
        }
    }

    fn addr(&self, i: usize) -> String {
        match self {
            Net::Namespaces { .. } => format!("10.213.{}.2:7070", i + 1),
            Net::Loopback => format!("127.0.13.{}:7070", i + 1),
        }
    }

    fn command(&self, i: usize) -> Command {
        match self {
            Net::Namespaces { ns, .. } => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns[i], SPORK]);
                c
            }
            Net::Loopback => Command::new(SPORK),
        }
    }

    /// Cuts worker `i` off (true) or reconnects it.
    fn cut(&self, i: usize, off: bool, worker: &Child) {
        match self {
            Net::Namespaces { link, .. } => {
                assert!(sh(&["ip", "link", "set", &link[i], if off { "down" } else { "up" }]), "ip link set");
            }
            Net::Loopback => {
                signal(worker, if off { libc::SIGSTOP } else { libc::SIGCONT });
            }
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        if let Net::Namespaces { ns, link } = self {
            let _ = Command::new("ip")
                .args(["route", "del", "blackhole", "10.213.0.0/16"])
                .stderr(Stdio::null())
                .status();
            for (n, l) in ns.iter().zip(link.iter()) {
                let _ = Command::new("ip").args(["link", "del", l]).stderr(Stdio::null()).status();
                let _ = Command::new("ip").args(["netns", "del", n]).stderr(Stdio::null()).status();
            }
        }
    }
}

fn sh(args: &[&str]) -> bool {
    Command::new(args[0]).args(&args[1..]).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
}

/// Kills the process with this pid unless disarmed (a failed assertion must not leave the server or
/// the load generator running).
struct KillOnDrop(Option<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            // SAFETY: kill(2) on our own child, not yet waited for.
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
        }
    }
}

/// Kills its processes whatever happens.
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            signal(c, libc::SIGCONT);
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn start_worker(net: &Net, i: usize, tls: &Path) -> Child {
    let d = |f: &str| tls.join(f).display().to_string();
    let child = net
        .command(i)
        .args([
            "worker",
            "--listen",
            &net.addr(i),
            "--board",
            "model",
            "--fpga-slots",
            "1",
            "--cpu-slots",
            "1",
        ])
        .args(["--tls-cert", &d("worker.pem"), "--tls-key", &d("worker.key"), "--tls-ca", &d("spork-ca.pem")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spork worker starts");
    wait_for(|| port_open(net, i), "a worker to listen");
    child
}

fn port_open(net: &Net, i: usize) -> bool {
    let addr: std::net::SocketAddr = net.addr(i).parse().unwrap();
    std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
}

fn wait_for(mut f: impl FnMut() -> bool, what: &str) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(30), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The metrics of the server at `http`, as name{labels} -> value (none while it does not listen).
fn metrics(http: &str) -> BTreeMap<String, f64> {
    let Ok(mut s) = std::net::TcpStream::connect(http) else { return BTreeMap::new() };
    use std::io::Write;
    let _ = write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.lines()
        .filter(|l| l.starts_with("spork_"))
        .filter_map(|l| l.rsplit_once(' ').and_then(|(k, v)| Some((k.to_string(), v.parse().ok()?))))
        .collect()
}

/// The metric of FPGA slots leased on worker `i`.
fn leased(net: &Net, i: usize) -> String {
    format!("spork_worker_host_slots_leased{{host=\"{}\",kind=\"fpga\"}}", net.addr(i))
}

fn get(m: &BTreeMap<String, f64>, key: &str) -> f64 {
    m.get(key).copied().unwrap_or(0.0)
}

#[test]
fn workers_killed_cut_off_and_returning_lose_no_request() {
    let tag = std::process::id() % 10_000;
    let net = Net::setup(tag);
    let dir = tempfile::tempdir().unwrap();
    let ca = pki::ca(dir.path(), "spork-ca");
    ca.leaf(dir.path(), "worker", "spork-worker");
    ca.leaf(dir.path(), "scheduler", "spork-scheduler");
    let mut workers = Procs((0..3).map(|i| start_worker(&net, i, dir.path())).collect());
    let d = |f: &str| dir.path().join(f).display().to_string();
    let http = "127.0.0.1:18400";
    let drain_report = dir.path().join("drain.json");
    // Boards that configure in 2 s, so the scheduling interval (the spin-up) is short beside the
    // test's 3-4 s steps and a lost board is replaced within a step whatever the phase of the ticks;
    // and that cost next to nothing, so the allocator holds one at this load on any machine (the
    // work it weighs is what the requests really took: on a fast machine, at the paper's powers, it
    // sometimes held none).
    let platform = boards::cheap_board(dir.path(), Some("2s"));
    let mut serve = Command::new(SPORK)
        .args(["serve", "--http", http, "--grpc", "127.0.0.1:18401", "--models", "sobel"])
        .args(["--platform", &platform.display().to_string()])
        .args(["--worker", &net.addr(0), "--worker", &net.addr(1), "--worker", &net.addr(2)])
        .args(["--worker-tls-cert", &d("scheduler.pem"), "--worker-tls-key", &d("scheduler.key")])
        .args(["--worker-tls-ca", &ca.pem.display().to_string(), "--grace", "10s"])
        .args(["--report-json", &drain_report.display().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spork serve starts");
    let mut serve_guard = KillOnDrop(Some(serve.id()));
    wait_for(|| get(&metrics(http), "spork_worker_hosts{state=\"up\"}") == 3.0, "three hosts up");
    tritonclient_is_answered(http);
    let load = Command::new(SPORK)
        .args(["load", "--target", http, "--duration", "28s", "--rate", "250", "--burstiness", "0.6"])
        .args(["--timeout", "20s", "--json", "--seed", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spork load starts");
    let mut load_guard = KillOnDrop(Some(load.id()));
    let start = Instant::now();
    let at = |s: u64| {
        let due = Duration::from_secs(s);
        std::thread::sleep(due.saturating_sub(start.elapsed()));
    };
    // Which host holds the pool's FPGA slot now (the allocator holds one at this load), among `from`.
    let holder = |from: &[usize]| -> usize {
        let t = Instant::now();
        loop {
            let m = metrics(http);
            if let Some(&i) = from.iter().find(|&&i| get(&m, &leased(&net, i)) >= 1.0) {
                return i;
            }
            assert!(t.elapsed() < Duration::from_secs(8), "no host holds an FPGA slot: {m:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    at(6);
    // SIGKILL the worker holding the FPGA slot: its connections reset at once.
    let a = holder(&[0, 1, 2]);
    let _ = workers.0[a].kill();
    let _ = workers.0[a].wait();
    at(9);
    // Cut off the worker the slot was replaced on: packets to it are dropped from here.
    let others: Vec<usize> = (0..3).filter(|&i| i != a).collect();
    let b = holder(&others);
    net.cut(b, true, &workers.0[b]);
    at(13);
    // The killed worker comes back; the slot has moved to the third.
    let c = 3 - a - b;
    holder(&[c]);
    workers.0[a] = start_worker(&net, a, dir.path());
    at(16);
    // The third cut off too: only the returned worker is left for the FPGA.
    net.cut(c, true, &workers.0[c]);
    // Until the load's last seconds: noticing the cut, the next interval's allocation and the
    // slot's configuration on the returned host take several seconds on a loaded 2-core machine
    // (a full-suite run saw none by 23 s, its 7th after the cut).
    // The cut is lifted only once it was noticed too: the returned worker may take a slot before
    // the third host's loss is seen (the allocator may hold a second board), and a cut lifted before
    // then is never noticed (a full-suite run counted 2 hosts lost so).
    let (mut used_again, mut hosts_lost) = (0.0f64, 0.0f64);
    while start.elapsed() < Duration::from_secs(26) && (used_again < 1.0 || hosts_lost < 3.0) {
        let m = metrics(http);
        used_again = used_again.max(get(&m, &leased(&net, a)));
        hosts_lost = get(&m, "spork_worker_hosts_lost");
        std::thread::sleep(Duration::from_millis(200));
    }
    let mid = metrics(http);
    net.cut(b, false, &workers.0[b]);
    net.cut(c, false, &workers.0[c]);
    let out = load.wait_with_output().expect("load ends");
    load_guard.0 = None;
    let after = metrics(http);
    signal(&serve, libc::SIGTERM);
    let mut err = String::new();
    serve.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = serve.wait().unwrap();
    serve_guard.0 = None;
    assert!(status.success(), "serve failed: {err}");

    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("load's JSON report");
    let sent = report["sent"].as_u64().unwrap();
    let ok = report["ok"].as_u64().unwrap();
    let errors = report["errors"].as_object().unwrap();
    let refused: u64 =
        errors.iter().filter(|(k, _)| k.as_str() == "http 429").map(|(_, v)| v.as_u64().unwrap()).sum();
    eprintln!("load: {report}\nserve: {err}");
    assert!(errors.keys().all(|k| k == "http 429"), "requests lost or failed: {errors:?}");
    assert_eq!(ok + refused, sent, "every request answered or refused");
    // The server's own count (its drain report, --report-json): each request answered or refused once.
    let text = std::fs::read_to_string(&drain_report).expect("serve wrote its drain report");
    let drained: serde_json::Value = serde_json::from_str(&text).expect("the drain report is JSON");
    let pool = &drained["sobel"];
    let n = |field: &str| pool[field].as_u64().unwrap_or_else(|| panic!("no count {field} in {pool}"));
    // Beyond the load's: the start-up probe and tritonclient's request.
    assert_eq!(n("answered"), ok + 2, "{pool}");
    // Refused by the pool (no worker could meet the deadline) or before it (on the memory budget, or
    // a deadline that passed on the way to the scheduler under a loaded run's waits): the metrics
    // count each refusal once, by the model or by the layer that refused it.
    assert!(n("rejected") <= refused, "{pool}");
    let counted = get(&after, "spork_requests_total{model=\"sobel\",kind=\"none\",outcome=\"rejected\"}")
        + get(&after, "spork_requests_refused_total{reason=\"rejected\"}");
    assert_eq!(counted, refused as f64, "{after:?}");
    assert_eq!(n("rejected_at_stop"), 0, "none refused at the drain: {pool}");
    assert_eq!(n("offered"), n("answered") + n("rejected"), "each request taken settled once: {pool}");
    assert_eq!(n("answered"), n("answered_cpu") + n("answered_fpga"), "each answer on one kind: {pool}");
    assert_eq!(n("mismatches"), 0, "no worker host's answer was refused: {pool}");
    // The server's report counts the re-runs and the lost workers, as its metrics do.
    let reruns = n("redispatched");
    assert!(reruns >= 1, "{pool}");
    assert_eq!(reruns as f64, get(&after, "spork_request_reruns{model=\"sobel\"}"), "{pool}");
    // Each cut-off host's FPGA worker failed through the engine: lost if it was serving when its host
    // went, a failed configuration if the cut came while it was still configuring (which of the two
    // depends on this machine's timing: a loaded 2-core run saw 1 lost and 4 failed configurations).
    let failed = n("workers_lost") + n("configure_failures");
    assert!(n("workers_lost") >= 1 && failed >= 2, "{pool}");
    // The losses were seen, failed through the engine and re-run; the hosts came back.
    assert!(get(&after, "spork_worker_hosts_lost") >= 3.0, "{after:?}");
    assert!(get(&mid, "spork_workers_lost{model=\"sobel\"}") >= 1.0, "{mid:?}");
    assert!(get(&after, "spork_request_reruns{model=\"sobel\"}") >= 1.0, "no request was re-run: {after:?}");
    assert!(used_again >= 1.0, "the returning worker's FPGA slot was not used again");
    assert_eq!(get(&after, "spork_worker_hosts{state=\"up\"}"), 3.0, "{after:?}");
    eprintln!(
        "multihost: {sent} sent, {ok} answered, {refused} refused; {} hosts lost, {} workers lost, {} re-runs",
        get(&after, "spork_worker_hosts_lost"),
        get(&after, "spork_workers_lost{model=\"sobel\"}"),
        get(&after, "spork_request_reruns{model=\"sobel\"}")
    );
    drop(workers);
}

/// The Python tritonclient (nobody here wrote it) sends one sobel request over HTTP and gets the
/// reference's answer, served by the worker hosts' slots.
fn tritonclient_is_answered(http: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("bash").arg(root.join("scripts/python-env.sh")).output().expect("bash runs");
    assert!(out.status.success(), "scripts/python-env.sh: {}", String::from_utf8_lossy(&out.stderr));
    let python =
        String::from_utf8_lossy(&out.stdout).lines().last().expect("the venv's python").trim().to_string();
    let script = r#"
import sys, numpy as np, tritonclient.http as httpclient
c = httpclient.InferenceServerClient(sys.argv[1])
assert c.is_server_ready()
image = np.random.default_rng(1).integers(0, 256, (32, 32), dtype=np.uint8)
x = httpclient.InferInput("image", [32, 32], "UINT8")
x.set_data_from_numpy(image)
r = c.infer("sobel", [x])
m = r.as_numpy("magnitudes")
assert m.shape == (30, 30), m.shape
print("tritonclient:", m.shape, r.get_response()["parameters"]["worker_kind"])
"#;
    let o = Command::new(python).args(["-c", script, http]).output().expect("python runs");
    assert!(
        o.status.success(),
        "tritonclient: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    eprint!("{}", String::from_utf8_lossy(&o.stdout));
}

//! `spork serve` against hostile clients, over real sockets to the real binary: each attack of the
//! hardening issue, asserting a clean status, a bounded peak RSS (read from /proc) and a drain that
//! ends. Every wait is bounded; the server listens on loopback only.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use spork::oip::proto;

#[path = "support/fixtures.rs"]
#[allow(dead_code)]
mod fixtures;

const TOKEN: &str = "hostile-test-token-0123456789";
const MIB: u64 = 1 << 20;
/// The server's address-space cap: far above what it needs (threads reserve their stacks and
/// allocator arenas), far below the machine.
const AS_CAP: u64 = 8 << 30;

/// A `spork serve` process on loopback ports.
struct Serve {
    child: Child,
    http: SocketAddr,
    grpc: SocketAddr,
    stderr: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl Serve {
    /// Starts the server with sobel and bloom (of [`small_models`]; dense loadable), a token, a 1 s
    /// grace and `limits` (TOML lines).
    fn start(limits: &str, extra: &[&str]) -> Serve {
        Serve::start_with(limits, extra, None)
    }

    /// [`Serve::start`] with at most `nofile` open descriptors, if given.
    fn start_with(limits: &str, extra: &[&str], nofile: Option<u64>) -> Serve {
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("token");
        std::fs::write(&token, TOKEN).expect("token");
        let config = dir.path().join("serve.toml");
        std::fs::write(&config, format!("[limits]\n{limits}\n")).expect("config");
        let models = small_models(dir.path());
        // SPORK_HOSTILE_BIN runs the attacks against another build (an older one, to see them land).
        let bin = std::env::var_os("SPORK_HOSTILE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_spork").into());
        let mut cmd = Command::new(bin);
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit(2) only, between fork and exec. The address space is capped so that an
        // attack that lands kills the server, not the machine.
        unsafe {
            cmd.pre_exec(move || {
                let cap = |what, n: u64| {
                    let lim = libc::rlimit { rlim_cur: n, rlim_max: n };
                    if libc::setrlimit(what, &lim) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                };
                cap(libc::RLIMIT_AS, AS_CAP)?;
                match nofile {
                    Some(n) => cap(libc::RLIMIT_NOFILE, n),
                    None => Ok(()),
                }
            });
        }
        let mut child = cmd
            .args(["serve", "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--models", "sobel,bloom"])
            .arg("--model-repository")
            .arg(&models)
            .args(["--grace", "1s", "--io-threads", "1", "--scheduler", "cpu-dynamic"])
            .arg("--token-file")
            .arg(&token)
            .arg("--config")
            .arg(&config)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spork serve starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let pipe = child.stderr.take().expect("stderr");
        let log = stderr.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("spork serve: HTTP on") {
                    let _ = tx.send(line.clone());
                }
                let mut l = log.lock().expect("log");
                l.push_str(&line);
                l.push('\n');
            }
        });
        let line = rx.recv_timeout(Duration::from_secs(120)).unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("the server did not start: {}", stderr.lock().expect("log"))
        });
        let addr = |after: &str| -> Option<SocketAddr> {
            let rest = &line[line.find(after)? + after.len()..];
            rest.split([',', ';']).next()?.trim().parse().ok()
        };
        match (addr("HTTP on "), addr("gRPC on ")) {
            (Some(http), Some(grpc)) => Serve { http, grpc, child, stderr, _dir: dir },
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no addresses in: {line}");
            }
        }
    }

    /// Peak resident memory so far (VmHWM), bytes.
    fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("status");
        let kb = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
        kb.split_whitespace().nth(1).expect("kB").parse::<u64>().expect("kB") * 1024
    }

    /// CPU seconds the process has used (user + system).
    fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).expect("stat");
        let fields: Vec<&str> = stat.rsplit(')').next().expect("stat").split_whitespace().collect();
        // utime and stime are fields 14 and 15; after the ')' the first field is the 3rd.
        let ticks: u64 =
            fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
        // SAFETY: sysconf has no preconditions.
        ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
    }

    fn metrics(&self) -> String {
        http1(self.http, "GET", "/metrics", &[], &[]).1
    }

    /// SIGTERM, then the time until it exits (at most `bound`; `None` if it is still alive).
    fn terminate(&mut self, bound: Duration) -> Option<Duration> {
        let t = Instant::now();
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        while t.elapsed() < bound {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Some(t.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 exchange on a new connection: (status, body as text).
fn http1(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).expect("write head");
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, text)
}

/// The head of a sobel infer request of `body_len` bytes, with the token (and the binary
/// extension's JSON length, if given), kept open for more.
fn infer_head(body_len: usize, json_len: Option<usize>) -> String {
    let binary = json_len.map_or(String::new(), |n| format!("Inference-Header-Content-Length: {n}\r\n"));
    format!(
        "POST /v2/models/sobel/infer HTTP/1.1\r\nHost: x\r\nContent-Length: {body_len}\r\nAuthorization: Bearer {TOKEN}\r\n{binary}\r\n"
    )
}

/// A repository of Spork's three models with smaller largest requests, so that they load under the
/// tests' 10 and 64 MiB memory budgets (a model whose largest request cannot fit is refused at
/// load): sobel's rows at most 256 pixels (8 MiB at 16,384 rows), bloom's documents at most 16
/// terms (4 MiB at 65,536 documents), dense at most 8,192 vectors (1 MiB in, 128 KiB out).
fn small_models(dir: &std::path::Path) -> std::path::PathBuf {
    let ours = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let repo = dir.join("models");
    for (name, from, to) in [
        ("sobel", "W = { min = 3, max = 4096 }", "W = { min = 3, max = 256 }"),
        ("bloom", "T = { min = 1, max = 1024 }", "T = { min = 1, max = 16 }"),
        ("dense", "N = { min = 1, max = 65536 }", "N = { min = 1, max = 8192 }"),
    ] {
        fixtures::copy_dir(&ours.join(name), &repo.join(name));
        let toml = repo.join(name).join("model.toml");
        let text = std::fs::read_to_string(&toml).expect("model.toml");
        assert!(text.contains(from), "{name}'s model.toml has {from}");
        std::fs::write(&toml, text.replace(from, to)).expect("write");
    }
    repo
}

fn bearer() -> (&'static str, String) {
    ("Authorization", format!("Bearer {TOKEN}"))
}

/// An HTTP infer body: JSON head for one UINT8 image sent binary, and `outputs`.
fn sobel_binary(h: usize, w: usize, outputs: &str) -> (Vec<u8>, usize) {
    let head = format!(
        r#"{{"inputs":[{{"name":"image","datatype":"UINT8","shape":[{h},{w}],"parameters":{{"binary_data_size":{}}}}}],"outputs":[{outputs}]}}"#,
        h * w
    );
    let mut body = head.clone().into_bytes();
    body.extend((0..h * w).map(|i| (i % 251) as u8));
    (body, head.len())
}

fn infer_headers(json_len: usize) -> Vec<(&'static str, String)> {
    vec![bearer(), ("Inference-Header-Content-Length", json_len.to_string())]
}

#[test]
fn repeated_outputs_cost_one_output_and_thousands_are_refused() {
    let serve = Serve::start("", &[]);
    let base = serve.peak_rss();
    let outputs = vec![r#"{"name":"magnitudes","parameters":{"binary_data":true}}"#; 20_000].join(",");
    let (body, len) = sobel_binary(64, 256, &outputs);
    let (status, text) = http1(serve.http, "POST", "/v2/models/sobel/infer", &infer_headers(len), &body);
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("more than 16"), "{text}");
    // A few repeats are one output.
    let three = [r#"{"name":"magnitudes","parameters":{"binary_data":true}}"#; 3].join(",");
    let (body, len) = sobel_binary(3, 256, &three);
    let (status, text) = http1(serve.http, "POST", "/v2/models/sobel/infer", &infer_headers(len), &body);
    assert_eq!(status, 200, "{text}");
    assert_eq!(text.matches("\"magnitudes\"").count(), 1, "{text}");
    // Before: 15.7 GB for the first request.
    let grew = serve.peak_rss().saturating_sub(base);
    assert!(grew < 64 * MIB, "peak RSS grew by {} MiB", grew / MIB);
}

#[test]
fn oversized_json_and_million_document_requests_are_refused_within_a_bounded_rss() {
    let serve = Serve::start("", &[]);
    // 16 MiB of JSON zeros: 8 Mi elements, over the 4 Mi item limit, refused while parsing.
    let n = (16 * MIB as usize - 200) / 2;
    let mut body = br#"{"inputs":[{"name":"image","datatype":"UINT8","shape":[4,4],"data":["#.to_vec();
    body.extend(std::iter::repeat_n(b"0,", n - 1).flatten());
    body.extend_from_slice(b"0]}]}");
    let (status, text) = http1(serve.http, "POST", "/v2/models/sobel/infer", &[bearer()], &body);
    assert_eq!(status, 400, "{}", &text[..text.len().min(300)]);
    assert!(text.contains("more items"), "{}", &text[..text.len().min(300)]);
    // 4 Mi one-term documents (16 MiB binary): refused by bloom's bound on documents (its
    // model.toml: D <= 65,536) from the shape alone, before anything is decoded (before the model
    // repository, by the per-request bound on decoded bytes: ~176 MB of per-row vectors).
    let docs = (4 << 20) - 1024;
    let head = format!(
        r#"{{"inputs":[{{"name":"documents","datatype":"UINT32","shape":[{docs},1],"parameters":{{"binary_data_size":{}}}}}]}}"#,
        docs * 4
    );
    let mut body = head.clone().into_bytes();
    body.resize(head.len() + docs * 4 - 64, 7);
    body.extend_from_slice(&[7; 64]);
    let (status, text) =
        http1(serve.http, "POST", "/v2/models/bloom/infer", &infer_headers(head.len()), &body);
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("D = 4193280 is outside 1..=65536"), "{text}");
    let peak = serve.peak_rss();
    // Before: the JSON alone took 20-40x its body (300-600 MB); the documents ~250 MB.
    assert!(peak < 160 * MIB, "peak RSS {} MiB", peak / MIB);
}

type Sender = h2::client::SendRequest<bytes::Bytes>;

/// A gRPC `ModelInfer` of message `msg` (with `token`) sent whole on a new stream of `client`:
/// its answer to come and the stream.
fn send_infer(
    client: &mut Sender,
    msg: &[u8],
    token: Option<&str>,
) -> (h2::client::ResponseFuture, h2::SendStream<bytes::Bytes>) {
    send_call(client, "ModelInfer", msg, token)
}

/// A call of gRPC method `method` (of `inference.GRPCInferenceService`) on an h2 stream.
fn send_call(
    client: &mut Sender,
    method: &str,
    msg: &[u8],
    token: Option<&str>,
) -> (h2::client::ResponseFuture, h2::SendStream<bytes::Bytes>) {
    let mut req = http::Request::post(format!("/inference.GRPCInferenceService/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let (resp, mut send) = client.send_request(req.body(()).expect("request"), false).expect("send");
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    framed.extend_from_slice(msg);
    send.reserve_capacity(framed.len());
    // The server may answer (and reset the stream) before taking every byte.
    let _ = send.send_data(framed.into(), true);
    (resp, send)
}

/// An HTTP/2 connection to `addr` that advertises no room for answers (and answers pings, as h2
/// does, for as long as the server keeps it); its driver runs on the current runtime.
async fn zero_window(addr: SocketAddr) -> (Sender, tokio::task::JoinHandle<Result<(), h2::Error>>) {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (client, conn) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, bytes::Bytes>(tcp)
        .await
        .expect("h2");
    (client, tokio::spawn(conn))
}

/// A gRPC `ModelInfer` as raw bytes on an h2 stream: (grpc-status, message).
async fn grpc_raw(addr: SocketAddr, msg: &[u8], token: Option<&str>) -> (String, String) {
    grpc_call(addr, "ModelInfer", msg, token).await
}

/// A call of gRPC method `method` as raw bytes on an h2 stream: (grpc-status, message).
async fn grpc_call(addr: SocketAddr, method: &str, msg: &[u8], token: Option<&str>) -> (String, String) {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (client, conn) = h2::client::handshake(tcp).await.expect("h2");
    tokio::spawn(conn);
    let mut client = client.ready().await.expect("ready");
    let (resp, _send) = send_call(&mut client, method, msg, token);
    let resp =
        tokio::time::timeout(Duration::from_secs(30), resp).await.expect("answered").expect("response");
    let status = |h: &http::HeaderMap| {
        let code = h.get("grpc-status").map(|v| v.to_str().unwrap_or("").to_string());
        let msg = h.get("grpc-message").map(|v| v.to_str().unwrap_or("").to_string()).unwrap_or_default();
        code.map(|c| (c, msg))
    };
    if let Some(s) = status(resp.headers()) {
        return s;
    }
    let mut body = resp.into_body();
    while body.data().await.is_some() {}
    let trailers = body.trailers().await.expect("trailers").expect("trailers");
    status(&trailers).expect("grpc-status")
}

#[test]
fn empty_input_floods_cost_nothing_without_a_token_and_little_with_one() {
    let serve = Serve::start("", &[]);
    let base = serve.peak_rss();
    let flood = proto::ModelInferRequest {
        model_name: "sobel".into(),
        inputs: vec![Default::default(); 4_000_000],
        ..Default::default()
    };
    let bytes = flood.encode_to_vec();
    assert!(bytes.len() > 7_000_000);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    // 16 = UNAUTHENTICATED, 8 = RESOURCE_EXHAUSTED.
    let (code, msg) = rt.block_on(grpc_raw(serve.grpc, &bytes, None));
    assert_eq!(code, "16", "{msg}");
    let (code, msg) = rt.block_on(grpc_raw(serve.grpc, &bytes, Some(TOKEN)));
    assert_eq!(code, "8", "{msg}");
    assert!(msg.contains("more%20than%2016%20inputs") || msg.contains("more than 16 inputs"), "{msg}");
    // Before: 828 MB for the unauthenticated call alone.
    let grew = serve.peak_rss().saturating_sub(base);
    assert!(grew < 64 * MIB, "peak RSS grew by {} MiB", grew / MIB);
    let m = serve.metrics();
    assert!(m.contains("spork_requests_refused_total{reason=\"unauthorized\"} 1"), "{m}");
}

/// A sobel request message for gRPC.
fn sobel_message(h: usize, w: usize) -> Vec<u8> {
    let input = proto::model_infer_request::InferInputTensor {
        name: "image".into(),
        datatype: "UINT8".into(),
        shape: vec![h as i64, w as i64],
        ..Default::default()
    };
    let r = proto::ModelInferRequest {
        model_name: "sobel".into(),
        inputs: vec![input],
        raw_input_contents: vec![vec![9; h * w].into()],
        ..Default::default()
    };
    r.encode_to_vec()
}

#[test]
fn a_zero_window_stream_cannot_hold_the_drain_open() {
    let mut serve = Serve::start("", &[]);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let addr = serve.grpc;
    // A client that advertises no room for the answer and answers pings (h2 does) for as long as
    // the server keeps the connection.
    let held = rt.spawn(async move {
        let (client, driver) = zero_window(addr).await;
        let mut client = client.ready().await.expect("ready");
        let (resp, _send) = send_infer(&mut client, &sobel_message(64, 256), Some(TOKEN));
        let _resp = resp.await;
        let _ = driver.await;
    });
    std::thread::sleep(Duration::from_secs(2));
    // Before: still alive 100 s after SIGTERM. Grace 1 s + the 2 s bound, with slack.
    let took = serve.terminate(Duration::from_secs(20));
    held.abort();
    let took = took
        .unwrap_or_else(|| panic!("still alive 20 s after SIGTERM: {}", serve.stderr.lock().expect("log")));
    eprintln!("the server exited {took:?} after SIGTERM");
    assert!(took < Duration::from_secs(10), "exited after {took:?}");
}

#[test]
fn idle_connections_at_the_limit_are_closed_and_the_limit_is_shared() {
    let serve = Serve::start("max_connections = 4\nheader_timeout = \"1s\"\n", &[]);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (http, grpc) = (serve.http, serve.grpc);
    let closed = rt.block_on(async move {
        // Two idle HTTP/2 connections on each listener take all four slots.
        let mut conns = Vec::new();
        for addr in [http, http, grpc, grpc] {
            let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
            let (_client, conn) = h2::client::handshake(tcp).await.expect("h2");
            conns.push((_client, tokio::spawn(conn)));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        // A fifth, on either protocol, is closed at once.
        let mut s = tokio::net::TcpStream::connect(http).await.expect("connect");
        let mut buf = [0u8; 16];
        let fifth =
            tokio::time::timeout(Duration::from_secs(5), tokio::io::AsyncReadExt::read(&mut s, &mut buf))
                .await;
        assert!(matches!(fifth, Ok(Ok(0)) | Ok(Err(_))), "the fifth connection was not closed: {fifth:?}");
        // The idle ones are closed by the server after the 1 s idle time (bounded wait: 10 s).
        let mut closed = 0;
        for (_client, task) in conns {
            if tokio::time::timeout(Duration::from_secs(10), task).await.is_ok() {
                closed += 1;
            }
        }
        closed
    });
    assert_eq!(closed, 4, "idle HTTP/2 connections closed by the server");
    // The server gives the slots back as its connection tasks end, just after the clients see the
    // close: a slot is free again within a bounded wait.
    let t = Instant::now();
    let status = loop {
        let (status, _) = http1(serve.http, "GET", "/v2/health/ready", &[], &[]);
        if status == 200 || t.elapsed() > Duration::from_secs(5) {
            break status;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status, 200, "a slot is free again");
}

/// The sum of a counter family's samples whose line starts with `prefix`.
fn counted(metrics: &str, prefix: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn clients_that_leave_are_counted_once_and_leave_no_queue() {
    let serve = Serve::start("", &[]);
    // Twenty large sobel requests at once, each client gone 0-19 ms after its request is sent:
    // some while the body is read, some while queued or running.
    let (body, len) = sobel_binary(4000, 256, r#"{"name":"magnitudes"}"#);
    let body = Arc::new(body);
    let senders: Vec<_> = (0..20u64)
        .map(|i| {
            let (addr, body) = (serve.http, body.clone());
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).expect("connect");
                let head = infer_head(body.len(), Some(len));
                s.write_all(head.as_bytes()).expect("head");
                s.write_all(&body).expect("body");
                std::thread::sleep(Duration::from_millis(i));
            })
        })
        .collect();
    for s in senders {
        s.join().expect("sender");
    }
    // A body cut off mid-way is a bad request, not "too large".
    let mut s = TcpStream::connect(serve.http).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let head = infer_head(body.len(), None);
    s.write_all(head.as_bytes()).expect("head");
    s.write_all(&body[..1000]).expect("part");
    s.shutdown(std::net::Shutdown::Write).expect("half-close");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    // Every request settles once, answered or counted where it was abandoned, and the queue
    // gauge comes back to 0 (bounded wait: 60 s).
    let t = Instant::now();
    loop {
        let m = serve.metrics();
        let settled = counted(&m, "spork_requests_total{model=\"sobel\"")
            + counted(&m, "spork_requests_refused_total{");
        let depth = counted(&m, "spork_queue_depth{model=\"sobel\"}");
        if settled >= 21 && depth == 0 {
            assert_eq!(settled, 21, "{m}");
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "not settled ({settled} of 21, depth {depth}): {m}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_memory_budget_refuses_bodies_beyond_it_while_they_arrive() {
    // Room for six 1.5 MB bodies in a 10 MiB budget (the least that holds sobel's largest request,
    // 8.4 MB, or the model is refused at load): the seventh is refused mid-upload.
    let serve = Serve::start("max_body = 2097152\nmemory_budget = 10485760\n", &[]);
    let (body, len) = sobel_binary(6000, 256, r#"{"name":"magnitudes"}"#);
    let mut held = Vec::new();
    for _ in 0..6 {
        let mut s = TcpStream::connect(serve.http).expect("connect");
        let head = infer_head(body.len(), Some(len));
        s.write_all(head.as_bytes()).expect("head");
        s.write_all(&body[..body.len() - 10]).expect("most of the body");
        held.push(s);
    }
    std::thread::sleep(Duration::from_millis(300));
    let (status, text) = http1(serve.http, "POST", "/v2/models/sobel/infer", &infer_headers(len), &body);
    assert_eq!(status, 429, "{text}");
    assert!(text.contains("budget"), "{text}");
    drop(held);
    let m = serve.metrics();
    assert!(m.contains("spork_requests_refused_total{reason=\"rejected\"}"), "{m}");
    // Once they are gone, the budget is free again: a request of half the size (0.8 MB of body, 2.3 MB
    // with its input decoded and its binary answer) fits now, and would not beside the 9.2 MB they held.
    let (half, half_len) =
        sobel_binary(3000, 256, r#"{"name":"magnitudes","parameters":{"binary_data":true}}"#);
    let t = Instant::now();
    loop {
        let (status, _) =
            http1(serve.http, "POST", "/v2/models/sobel/infer", &infer_headers(half_len), &half);
        if status == 200 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "the budget was not given back ({status})");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn protocol_details_hostile_clients_found() {
    let serve = Serve::start("", &[]);
    let (body, len) = sobel_binary(3, 8, r#"{"name":"magnitudes"}"#);
    // The scheme is case-insensitive.
    let lower = vec![
        ("Authorization", format!("bearer {TOKEN}")),
        ("Inference-Header-Content-Length", len.to_string()),
    ];
    let (status, text) = http1(serve.http, "POST", "/v2/models/sobel/infer", &lower, &body);
    assert_eq!(status, 200, "{text}");
    // An unknown output is refused before any work, over gRPC (INVALID_ARGUMENT = 3) as over HTTP.
    let mut r = proto::ModelInferRequest::decode(sobel_message(3, 8).as_slice()).expect("decode");
    r.outputs = vec![proto::model_infer_request::InferRequestedOutputTensor {
        name: "nope".into(),
        ..Default::default()
    }];
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (code, msg) = rt.block_on(grpc_raw(serve.grpc, &r.encode_to_vec(), Some(TOKEN)));
    assert_eq!(code, "3", "{msg}");
    let (body, len) = sobel_binary(3, 8, r#"{"name":"nope"}"#);
    let (status, text) = http1(serve.http, "POST", "/v2/models/sobel/infer", &infer_headers(len), &body);
    assert_eq!(status, 400, "{text}");
    // A deadline past a minute is refused.
    let head = r#"{"inputs":[{"name":"image","datatype":"UINT8","shape":[3,3],"data":[1,2,3,4,5,6,7,8,9]}],"parameters":{"deadline_ms":3600000}}"#;
    let (status, text) = http1(serve.http, "POST", "/v2/models/sobel/infer", &[bearer()], head.as_bytes());
    assert_eq!(status, 400, "{text}");
    // A gRPC message over the body limit is refused by its length prefix: RESOURCE_EXHAUSTED (8).
    let big = sobel_message(70_000, 256);
    let (code, msg) = rt.block_on(grpc_raw(serve.grpc, &big, Some(TOKEN)));
    assert_eq!(code, "8", "{msg}");
}

#[test]
fn out_of_descriptors_the_accept_loop_backs_off_and_recovers() {
    let serve = Serve::start_with("", &[], Some(96));
    // Hold connections until the server has no descriptor left for another (EMFILE).
    let mut held = Vec::new();
    for _ in 0..200 {
        match TcpStream::connect(serve.http) {
            Ok(s) => held.push(s),
            Err(_) => break,
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let before = serve.cpu_seconds();
    std::thread::sleep(Duration::from_secs(2));
    let spent = serve.cpu_seconds() - before;
    // Spinning on accept would burn a core: 2 s of CPU in these 2 s.
    assert!(spent < 0.5, "{spent:.2} CPU seconds in 2 s at EMFILE");
    drop(held);
    let t = Instant::now();
    loop {
        let (status, _) = http1(serve.http, "GET", "/v2/health/ready", &[], &[]);
        if status == 200 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no recovery after the descriptors came back");
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = serve.stderr.lock().expect("log");
    assert!(log.contains("backing off"), "EMFILE was never hit: {log}");
}

/// Threads the process runs now.
fn threads(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let line = status.lines().find(|l| l.starts_with("Threads:")).expect("Threads");
    line.split_whitespace().nth(1).expect("count").parse().expect("a number")
}

/// A client that loads and unloads a model as fast as it can: every call is answered (a load or
/// unload, or 503 while too many unloaded pools are still ending), and the server's memory and
/// threads stay bounded whatever the loop's length; the drain still ends promptly.
#[test]
fn a_load_unload_loop_is_bounded_in_memory_and_threads() {
    let mut serve = Serve::start("", &["--model-control", "explicit"]);
    let pid = serve.child.id();
    let (base_rss, base_threads) = (serve.peak_rss(), threads(pid));
    let mut statuses = std::collections::BTreeMap::new();
    let mut most_threads = base_threads;
    for _ in 0..30 {
        for action in ["load", "unload"] {
            let path = format!("/v2/repository/models/dense/{action}");
            let (status, text) = http1(serve.http, "POST", &path, &[bearer()], b"");
            assert!([200, 503].contains(&status), "{action}: {text}");
            *statuses.entry((action, status)).or_insert(0) += 1;
            most_threads = most_threads.max(threads(pid));
        }
    }
    // Loads and unloads happened, and the loop was held back rather than piling up pools.
    assert!(statuses.get(&("load", 200)).is_some_and(|&n| n > 0), "{statuses:?}");
    assert!(statuses.get(&("unload", 200)).is_some_and(|&n| n > 0), "{statuses:?}");
    let grew = serve.peak_rss().saturating_sub(base_rss);
    assert!(grew < 96 * MIB, "peak RSS grew by {} MiB over the loop", grew / MIB);
    // A pool is a dispatcher and its workers; at most 4 unloaded ones end at once, plus the loaded one.
    assert!(most_threads < base_threads + 120, "{most_threads} threads (from {base_threads})");
    let (status, _) = http1(serve.http, "GET", "/v2/health/ready", &[], b"");
    assert_eq!(status, 200, "sobel and bloom still serve");
    let took = serve.terminate(Duration::from_secs(30)).expect("the drain ends");
    eprintln!(
        "{statuses:?}; peak RSS +{} MiB; at most {most_threads} threads; drained in {took:?}",
        grew / MIB
    );
}

/// Waits (at most 60 s) until `n` sobel requests are settled: answered, or refused and counted.
fn settle(serve: &Serve, n: u64) -> String {
    let t = Instant::now();
    loop {
        let m = serve.metrics();
        let settled = counted(&m, "spork_requests_total{model=\"sobel\"")
            + counted(&m, "spork_requests_refused_total{");
        if settled >= n {
            assert_eq!(settled, n, "each request settles once: {m}");
            return m;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "{settled} of {n} settled: {m}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (at most 30 s) until the requests in flight hold nothing of the memory budget.
fn budget_given_back(serve: &Serve) {
    let t = Instant::now();
    while counted(&serve.metrics(), "spork_inflight_bytes") > 0 {
        assert!(t.elapsed() < Duration::from_secs(30), "the budget was not given back");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Answers whose clients never read them stay on the memory budget until they are written: forty
/// HTTP clients, one after another, each ask for a 4 Mi-pixel image's answer as JSON text (about
/// 16 MB) and read nothing. The budget refuses what it cannot hold; the rest wait, counted, until
/// their connections are closed.
#[test]
fn answers_nobody_reads_over_http_are_held_within_the_memory_budget() {
    let budget = 64 * MIB;
    let serve = Serve::start(&format!("memory_budget = {budget}\n"), &[]);
    let (small, small_len) = sobel_binary(16, 16, r#"{"name":"magnitudes"}"#);
    let (status, text) =
        http1(serve.http, "POST", "/v2/models/sobel/infer", &infer_headers(small_len), &small);
    assert_eq!(status, 200, "{text}");
    let base = serve.peak_rss();
    let (body, len) = sobel_binary(16384, 256, r#"{"name":"magnitudes"}"#);
    let head = infer_head(body.len(), Some(len));
    let mut held = Vec::new();
    for i in 0..40 {
        let mut s = receive_buffer(TcpStream::connect(serve.http).expect("connect"), 4096);
        s.set_write_timeout(Some(Duration::from_secs(20))).expect("timeout");
        // A body refused while it arrives may not be read to its end.
        let _ = s.write_all(head.as_bytes()).and_then(|_| s.write_all(&body));
        held.push(s);
        // One at a time: each is answered (or refused) before the next is sent.
        settle(&serve, i + 2);
    }
    let m = serve.metrics();
    // Refused on the budget before the pool or at its admission.
    let refused = counted(&m, "spork_requests_refused_total{reason=\"rejected\"}")
        + counted(&m, "spork_requests_total{model=\"sobel\",kind=\"none\",outcome=\"rejected\"}");
    let grew = serve.peak_rss().saturating_sub(base);
    eprintln!("peak RSS +{} MiB; {refused} of 40 refused by the budget", grew / MIB);
    // Before: +770 MiB and none refused (every answer held after the budget let it go).
    assert!(refused > 0, "the budget refused nothing: {m}");
    assert!(grew < budget + 64 * MIB, "peak RSS grew by {} MiB", grew / MIB);
    drop(held);
    budget_given_back(&serve);
}

/// One gRPC client that advertises no room for answers: on two connections, 32 requests each
/// (the streams a connection may have), one after another, each a 4 Mi-pixel image whose 4 MB
/// answer it never reads. Its answers wait in the server within the budget. Returns the
/// grpc-status of each trailers-only answer (refusals; an answer's status would follow its data).
async fn zero_window_client(
    addr: SocketAddr,
    msg: Vec<u8>,
) -> (Vec<String>, Vec<Box<dyn std::any::Any + Send>>) {
    let mut codes = Vec::new();
    let mut keep: Vec<Box<dyn std::any::Any + Send>> = Vec::new();
    for _ in 0..2 {
        let (client, driver) = zero_window(addr).await;
        keep.push(Box::new(driver));
        for _ in 0..32 {
            let mut client = client.clone().ready().await.expect("ready");
            let (resp, send) = send_infer(&mut client, &msg, Some(TOKEN));
            let resp = tokio::time::timeout(Duration::from_secs(30), resp)
                .await
                .expect("answered")
                .expect("response");
            if let Some(code) = resp.headers().get("grpc-status") {
                codes.push(code.to_str().unwrap_or("?").to_string());
            }
            keep.push(Box::new((resp, send)));
        }
        keep.push(Box::new(client));
    }
    (codes, keep)
}

#[test]
fn answers_a_zero_window_grpc_client_leaves_unread_are_held_within_the_memory_budget() {
    let budget = 64 * MIB;
    let serve = Serve::start(&format!("memory_budget = {budget}\n"), &[]);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (code, msg) = rt.block_on(grpc_raw(serve.grpc, &sobel_message(16, 16), Some(TOKEN)));
    assert_eq!(code, "0", "{msg}");
    let base = serve.peak_rss();
    let (codes, held) = rt.block_on(zero_window_client(serve.grpc, sobel_message(16384, 256)));
    let m = settle(&serve, 65);
    let grew = serve.peak_rss().saturating_sub(base);
    eprintln!("peak RSS +{} MiB; {} of 64 refused", grew / MIB, codes.len());
    // Before: +266 MiB and none refused. 8 = RESOURCE_EXHAUSTED.
    assert!(!codes.is_empty() && codes.iter().all(|c| c == "8"), "{codes:?}: {m}");
    assert!(grew < budget + 64 * MIB, "peak RSS grew by {} MiB", grew / MIB);
    drop(held);
    drop(rt);
    budget_given_back(&serve);
}

/// Sends `framed` on `send` as flow control lets it go: false once the server took none of it for
/// 3 s (it stopped reading) or the stream ended.
async fn send_as_allowed(send: &mut h2::SendStream<bytes::Bytes>, framed: &bytes::Bytes) -> bool {
    let mut at = 0;
    while at < framed.len() {
        send.reserve_capacity(framed.len() - at);
        let room = std::future::poll_fn(|cx| send.poll_capacity(cx));
        let n = match tokio::time::timeout(Duration::from_secs(3), room).await {
            Ok(Some(Ok(n))) => n.min(framed.len() - at),
            _ => return false,
        };
        if n > 0 && send.send_data(framed.slice(at..at + n), false).is_err() {
            return false;
        }
        at += n;
    }
    true
}

/// One gRPC stream (`ModelStreamInfer`) from a client that never reads its answers, sending 4 MB
/// requests (each a 4 MB answer) for as long as the server takes them: the server runs at most 32
/// of a stream's requests, stops reading it while its answers wait, and each request's bytes are on
/// the memory budget from its first byte; the process stays within the budget.
#[test]
fn a_stream_whose_answers_are_never_read_is_held_within_the_memory_budget() {
    let budget = 64 * MIB;
    let serve = Serve::start(&format!("memory_budget = {budget}\n"), &[]);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (code, msg) = rt.block_on(grpc_raw(serve.grpc, &sobel_message(16, 16), Some(TOKEN)));
    assert_eq!(code, "0", "{msg}");
    let base = serve.peak_rss();
    let addr = serve.grpc;
    let message = sobel_message(16384, 256);
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(&message);
    let framed = bytes::Bytes::from(framed);
    let (sent, held) = rt.block_on(async move {
        let (client, driver) = zero_window(addr).await;
        let mut client = client.ready().await.expect("ready");
        let req = http::Request::post("/inference.GRPCInferenceService/ModelStreamInfer")
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("authorization", format!("Bearer {TOKEN}"));
        let (resp, mut send) = client.send_request(req.body(()).expect("request"), false).expect("send");
        let mut sent = 0;
        while sent < 200 && send_as_allowed(&mut send, &framed).await {
            sent += 1;
        }
        (sent, (client, driver, resp, send))
    });
    let grew = serve.peak_rss().saturating_sub(base);
    eprintln!("{sent} requests of 4 MB taken before the stream stalled; peak RSS +{} MiB", grew / MIB);
    assert!(sent < 200, "the server read every message of a stream whose answers nobody reads");
    assert!(grew < budget + 64 * MIB, "peak RSS grew by {} MiB", grew / MIB);
    drop(held);
    drop(rt);
    budget_given_back(&serve);
}

/// A stream whose second message declares more than the body limit: the first is answered, the
/// stream ends RESOURCE_EXHAUSTED at the second's length prefix (its bytes never read), and that
/// message is counted as refused, once.
#[test]
fn a_stream_message_past_the_limit_ends_the_stream_refused_and_counted() {
    let serve = Serve::start("max_body = 1048576\n", &[]);
    let before = counted(&serve.metrics(), "spork_requests_refused_total{reason=\"rejected\"}");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let addr = serve.grpc;
    let (status, answered) = rt.block_on(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (client, conn) = h2::client::handshake(tcp).await.expect("h2");
        tokio::spawn(conn);
        let mut client = client.ready().await.expect("ready");
        let req = http::Request::post("/inference.GRPCInferenceService/ModelStreamInfer")
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("authorization", format!("Bearer {TOKEN}"));
        let (resp, mut send) = client.send_request(req.body(()).expect("request"), false).expect("send");
        let good = sobel_message(16, 16);
        let mut framed = vec![0u8];
        framed.extend_from_slice(&(good.len() as u32).to_be_bytes());
        framed.extend_from_slice(&good);
        // The next message declares 64 MiB and sends a few bytes of it.
        framed.extend_from_slice(&[0, 0x04, 0, 0, 0, 1, 2, 3]);
        send.reserve_capacity(framed.len());
        let _ = send.send_data(framed.into(), false);
        let resp =
            tokio::time::timeout(Duration::from_secs(30), resp).await.expect("answered").expect("response");
        let mut body = resp.into_body();
        let mut answered = 0usize;
        while let Some(chunk) =
            tokio::time::timeout(Duration::from_secs(30), body.data()).await.expect("data")
        {
            answered += chunk.map(|c| c.len()).unwrap_or(0);
        }
        let trailers = body.trailers().await.ok().flatten().unwrap_or_default();
        let status = trailers.get("grpc-status").map(|v| v.to_str().unwrap_or("").to_string());
        drop(send);
        (status, answered)
    });
    assert_eq!(status.as_deref(), Some("8"), "RESOURCE_EXHAUSTED at the second message's prefix");
    assert!(answered > 200, "the first message was answered ({answered} bytes of answers)");
    let after = counted(&serve.metrics(), "spork_requests_refused_total{reason=\"rejected\"}");
    assert_eq!(after, before + 1, "the message that broke the stream is counted once");
}

/// `s` with a receive buffer of `bytes`: what it does not read stays with the server, not in this
/// machine's kernel.
fn receive_buffer(s: TcpStream, bytes: libc::c_int) -> TcpStream {
    let size: libc::c_int = bytes;
    // SAFETY: setsockopt(2) on an open socket with a c_int option of its size.
    let r = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&s),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "SO_RCVBUF: {}", std::io::Error::last_os_error());
    s
}

/// Sends a 4 Mi-pixel sobel request asking for its answer as JSON text (about 16 MB) on a new
/// connection, reads its head and returns the connection and the answer's Content-Length.
fn large_json_answer(serve: &Serve) -> (TcpStream, usize) {
    let (body, len) = sobel_binary(16384, 256, r#"{"name":"magnitudes"}"#);
    let mut s = receive_buffer(TcpStream::connect(serve.http).expect("connect"), 64 << 10);
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    s.write_all(infer_head(body.len(), Some(len)).as_bytes()).expect("head");
    s.write_all(&body).expect("body");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).expect("the answer's head"), 1, "closed before its head");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no length: {head}"));
    (s, length)
}

/// Reads `s` to its end, `chunk` bytes at a time with `pause` between reads until `slow_for` has
/// passed: the bytes read.
fn read_slowly(s: &mut TcpStream, chunk: usize, pause: Duration, slow_for: Duration) -> usize {
    let (start, mut got, mut buf) = (Instant::now(), 0, vec![0u8; chunk]);
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return got,
            Ok(n) => got += n,
        }
        if start.elapsed() < slow_for {
            std::thread::sleep(pause);
        }
    }
}

/// A client that reads a large answer slowly keeps its connection past the idle timeout and gets
/// all of it; one that reads nothing is closed once the header timeout passes with no byte moved.
#[test]
fn a_slow_reader_gets_its_whole_answer_and_a_stalled_one_is_closed() {
    let serve = Serve::start("header_timeout = \"1s\"\n", &[]);
    // 64 KB every 100 ms for 4 s, past the 1 s idle timeout and the 2 s it gives to go: the
    // server's send buffer (MBs) takes more of the answer only every few seconds, the client
    // acknowledges some all the time.
    let (mut slow, length) = large_json_answer(&serve);
    let got = read_slowly(&mut slow, 64 << 10, Duration::from_millis(100), Duration::from_secs(4));
    // Before: closed at about 3 s, the rest of the answer lost.
    assert_eq!(got, length, "the slow reader got {got} of {length} bytes");
    // Reading nothing for 5 s: closed, the answer cut off.
    let (mut stalled, length) = large_json_answer(&serve);
    std::thread::sleep(Duration::from_secs(5));
    let got = read_slowly(&mut stalled, 1 << 20, Duration::ZERO, Duration::ZERO);
    assert!(got < length, "a client that read nothing for 5 s was still served ({got} bytes)");
}

/// The repository index over HTTP: each model's state and reason, by name.
fn repository_index(
    serve: &Serve,
    headers: &[(&str, String)],
) -> std::collections::BTreeMap<String, (String, String)> {
    let (status, text) = http1(serve.http, "POST", "/v2/repository/index", headers, b"");
    assert_eq!(status, 200, "{text}");
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let entries: Vec<serde_json::Value> = serde_json::from_str(body).expect("a JSON array");
    let field = |e: &serde_json::Value, k: &str| e[k].as_str().unwrap_or_default().to_string();
    entries.iter().map(|e| (field(e, "name"), (field(e, "state"), field(e, "reason")))).collect()
}

/// A sobel request over HTTP with the inference token: its status.
fn sobel_answers(serve: &Serve) -> u16 {
    let (body, len) = sobel_binary(3, 8, r#"{"name":"magnitudes"}"#);
    http1(serve.http, "POST", "/v2/models/sobel/infer", &infer_headers(len), &body).0
}

/// A plain `spork serve` (model control `none`, as Triton's default) refuses load and unload
/// whoever asks and however: the token, a JSON body, a text/plain one as a web page sends; the index
/// stays readable and the models serve on.
#[test]
fn a_plain_server_refuses_load_and_unload() {
    let serve = Serve::start("", &[]);
    let json = ("Content-Type", "application/json".to_string());
    let plain = ("Content-Type", "text/plain".to_string());
    for (path, headers, body) in [
        ("/v2/repository/models/sobel/unload", vec![bearer()], &b""[..]),
        ("/v2/repository/models/sobel/unload", vec![bearer(), json.clone()], &b"{}"[..]),
        ("/v2/repository/models/sobel/unload", vec![], &b""[..]),
        ("/v2/repository/models/dense/load", vec![bearer(), json], &b"{}"[..]),
        ("/v2/repository/models/dense/load", vec![bearer(), plain], &b"{}"[..]),
    ] {
        let (status, text) = http1(serve.http, "POST", path, &headers, body);
        assert_eq!(status, 403, "{path}: {text}");
        assert!(text.contains("model control is off on this server (--model-control none"), "{text}");
        assert!(text.contains("fix: start it with --model-control explicit"), "{text}");
    }
    let index = repository_index(&serve, &[bearer()]);
    assert_eq!(index["sobel"].0, "READY", "{index:?}");
    assert_eq!(index["dense"].0, "UNAVAILABLE", "{index:?}");
    assert_eq!(sobel_answers(&serve), 200, "sobel still serves");
    let m = serve.metrics();
    assert!(m.contains("spork_requests_refused_total{reason=\"forbidden\"} 5"), "{m}");
    // Over gRPC too (PERMISSION_DENIED = 7).
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let unload = proto::RepositoryModelUnloadRequest { model_name: "sobel".into(), ..Default::default() };
    let (code, msg) =
        rt.block_on(grpc_call(serve.grpc, "RepositoryModelUnload", &unload.encode_to_vec(), Some(TOKEN)));
    assert_eq!(code, "7", "{msg}");
    assert!(msg.contains("model control is off") || msg.contains("model%20control%20is%20off"), "{msg}");
    assert_eq!(sobel_answers(&serve), 200, "sobel still serves");
}

/// Under `--model-control explicit --control-token-file`, load and unload take the control token
/// only (not the inference token, not none), and nothing a web page could send cross-site: a
/// text/plain body, a form's, an Origin header; a JSON one, or one with no content type (what
/// tritonclient sends), passes.
#[test]
fn load_and_unload_take_the_control_token_and_refuse_cross_site_requests() {
    const CONTROL: &str = "control-test-token-9876543210";
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("control");
    std::fs::write(&file, format!("{CONTROL}\n")).expect("write");
    let file = file.to_string_lossy().into_owned();
    let serve = Serve::start("", &["--model-control", "explicit", "--control-token-file", &file]);
    let control = ("Authorization", format!("Bearer {CONTROL}"));
    let unload = "/v2/repository/models/bloom/unload";
    let (status, text) = http1(serve.http, "POST", unload, &[], b"");
    assert_eq!(status, 401, "no token: {text}");
    assert!(text.contains("missing or wrong control token"), "{text}");
    let (status, text) = http1(serve.http, "POST", unload, &[bearer()], b"");
    assert_eq!(status, 401, "the inference token: {text}");
    assert!(text.contains("the inference token does not load or unload"), "{text}");
    let (status, text) = http1(serve.http, "POST", unload, std::slice::from_ref(&control), b"");
    assert_eq!(status, 200, "the control token: {text}");
    // The index: the inference token reads it, the control token too, no token does not.
    for headers in [bearer(), control.clone()] {
        let index = repository_index(&serve, &[headers]);
        assert_eq!(index["bloom"], ("UNAVAILABLE".into(), "unloaded".into()), "{index:?}");
    }
    assert_eq!(http1(serve.http, "POST", "/v2/repository/index", &[], b"").0, 401);
    // The control token does not infer.
    let (body, len) = sobel_binary(3, 8, r#"{"name":"magnitudes"}"#);
    let headers = [control.clone(), ("Inference-Header-Content-Length", len.to_string())];
    assert_eq!(http1(serve.http, "POST", "/v2/models/sobel/infer", &headers, &body).0, 401);
    // What a web page can send cross-site, with the right token, is refused.
    let load = "/v2/repository/models/bloom/load";
    for (header, value, says) in [
        ("Content-Type", "text/plain", "Content-Type 'text/plain' is refused"),
        ("Content-Type", "text/plain;charset=UTF-8", "Content-Type 'text/plain' is refused"),
        ("Content-Type", "application/x-www-form-urlencoded", "without a preflight"),
        ("Content-Type", "multipart/form-data; boundary=x", "without a preflight"),
        ("Origin", "http://evil.example", "with an Origin header ('http://evil.example') is refused"),
        ("Origin", "http://x", "this server serves no page of its own"),
    ] {
        let headers = [control.clone(), (header, value.to_string())];
        let (status, text) = http1(serve.http, "POST", load, &headers, b"{}");
        assert_eq!(status, 403, "{header}: {value}: {text}");
        assert!(text.contains(says), "{text}");
    }
    let (status, text) = http1(serve.http, "GET", "/v2/models/bloom/ready", &[bearer()], b"");
    assert_eq!(status, 404, "no refused call loaded bloom: {text}");
    let json = [control.clone(), ("Content-Type", "application/json".to_string())];
    let (status, text) = http1(serve.http, "POST", load, &json, b"{}");
    assert_eq!(status, 200, "a JSON load: {text}");
    let (status, text) = http1(serve.http, "GET", "/v2/models/bloom/ready", &[bearer()], b"");
    assert_eq!(status, 200, "bloom is back: {text}");
    // gRPC (UNAUTHENTICATED = 16): the control token loads, the inference token does not.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let unload = proto::RepositoryModelUnloadRequest { model_name: "bloom".into(), ..Default::default() };
    let (code, msg) =
        rt.block_on(grpc_call(serve.grpc, "RepositoryModelUnload", &unload.encode_to_vec(), Some(TOKEN)));
    assert_eq!(code, "16", "{msg}");
    let (code, msg) =
        rt.block_on(grpc_call(serve.grpc, "RepositoryModelUnload", &unload.encode_to_vec(), Some(CONTROL)));
    assert_eq!(code, "0", "{msg}");
    assert_eq!(sobel_answers(&serve), 200, "sobel serves throughout");
}

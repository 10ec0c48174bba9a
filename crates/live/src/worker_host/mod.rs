//! `spork worker`: one process per host, the one owner of that host's boards and CPU worker
//! threads, serving the worker API (`proto/worker.proto`, tonic) to a scheduler (`spork serve`
//! with `--worker` / `--workers`). Mutual TLS is required outside loopback; plain HTTP probes
//! (`/livez`, `/readyz`) serve the kubelet.

mod leases;
mod service;

pub use leases::{Offer, Slots};

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::TcpListenerStream;

use crate::worker_api::tls::{TlsError, TlsFiles, plaintext_allowed};
use crate::worker_api::wire::pb::worker_server::WorkerServer;
use service::Service;

/// How long a stop lets the scheduler's streams end before their connections are cut.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// A worker host's settings.
pub struct HostConfig {
    /// The worker API's address.
    pub listen: SocketAddr,
    /// The kubelet's probes' address (none: no probes).
    pub probe: Option<SocketAddr>,
    /// Mutual TLS; `None`: plaintext, refused outside loopback unless `insecure`.
    pub tls: Option<TlsFiles>,
    /// See `tls`.
    pub insecure: bool,
    /// What the host offers.
    pub offer: Offer,
    /// How the host describes its board ("model", "alveo 0000:3b:00.1", ...).
    pub board: String,
}

/// Why a worker host cannot start.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// TLS files, or plaintext outside loopback.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// A listener could not be bound, or the threads not started.
    #[error("{what} {addr}: {source} (fix: pick a free address with --listen / --probe)")]
    Bind {
        /// Which listener.
        what: &'static str,
        /// Where.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The TLS settings were refused.
    #[error("the worker API's TLS settings: {0}")]
    Transport(String),
}

/// A running worker host.
pub struct RunningHost {
    /// Where the worker API listens.
    pub addr: SocketAddr,
    /// Where the probes listen.
    pub probe: Option<SocketAddr>,
    /// Its slots (their counts, for tests and reports).
    pub slots: Arc<Slots>,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunningHost {
    /// Job parts run so far on this host.
    pub fn runs(&self) -> u64 {
        self.slots.runs.load(Ordering::Relaxed)
    }

    /// Stops listening and waits for the server's threads (slot threads end after their job).
    pub fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the host `cfg` describes on threads of its own.
pub fn start(cfg: HostConfig) -> Result<RunningHost, HostError> {
    let tls = match &cfg.tls {
        Some(files) => Some(files.server()?),
        None => {
            plaintext_allowed(cfg.listen, cfg.insecure)?;
            None
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("spork-worker-api")
        .enable_all()
        .build()
        .map_err(|source| HostError::Bind { what: "threads for", addr: cfg.listen, source })?;
    let bind = |what, addr| {
        let l = rt.block_on(tokio::net::TcpListener::bind(addr)).map_err(|source| HostError::Bind {
            what,
            addr,
            source,
        })?;
        let local = l.local_addr().map_err(|source| HostError::Bind { what, addr, source })?;
        Ok::<_, HostError>((l, local))
    };
    let (api, addr) = bind("the worker API on", cfg.listen)?;
    let probe = cfg.probe.map(|p| bind("the probes on", p)).transpose()?;
    let slots = Slots::new(cfg.offer);
    let mut server = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .http2_keepalive_interval(Some(Duration::from_secs(1)))
        .http2_keepalive_timeout(Some(Duration::from_secs(2)));
    if let Some(tls) = tls {
        server = server.tls_config(tls).map_err(|e| HostError::Transport(e.to_string()))?;
    }
    let service = Service { slots: slots.clone(), board: cfg.board, refused: Mutex::default() };
    let service =
        WorkerServer::new(service).max_decoding_message_size(256 << 20).max_encoding_message_size(256 << 20);
    let (stop, stopped) = watch::channel(false);
    let router = server.add_service(service);
    let probe_addr = probe.as_ref().map(|p| p.1);
    let reaped = slots.clone();
    let thread = std::thread::Builder::new()
        .name("spork-worker".into())
        .spawn(move || {
            rt.block_on(async move {
                if let Some((listener, _)) = probe {
                    tokio::spawn(probes(listener, stopped.clone()));
                }
                tokio::spawn(reap(reaped, stopped.clone()));
                let (mut until, mut cut) = (stopped.clone(), stopped.clone());
                let shutdown = async move {
                    let _ = until.wait_for(|&s| s).await;
                };
                // The listener is ours, so the server's own no-delay setting does not reach its
                // connections: each is set here (with Nagle's delay, a small answer waited on the
                // scheduler's delayed acknowledgement: 2.5 ms per job instead of 0.1).
                let incoming = TcpListenerStream::new(api).map(|c| {
                    if let Ok(c) = &c {
                        let _ = c.set_nodelay(true);
                    }
                    c
                });
                let serve = router.serve_with_incoming_shutdown(incoming, shutdown);
                // A scheduler keeps its connection open: after a stop, its streams get a moment to
                // end, then the connections are cut.
                let deadline = async move {
                    let _ = cut.wait_for(|&s| s).await;
                    tokio::time::sleep(STOP_GRACE).await;
                };
                tokio::select! {
                    r = serve => if let Err(e) = r {
                        tracing::error!("the worker API stopped: {e}");
                    },
                    _ = deadline => {}
                }
            });
            rt.shutdown_background();
        })
        .map_err(|source| HostError::Bind { what: "a thread for", addr, source })?;
    Ok(RunningHost { addr, probe: probe_addr, slots, stop, thread: Some(thread) })
}

/// Frees the leases of silent schedulers, every second.
async fn reap(slots: Arc<Slots>, mut stopped: watch::Receiver<bool>) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = every.tick() => {
                let n = slots.reap(Instant::now());
                if n > 0 {
                    tracing::warn!("freed {n} leases of a scheduler not heard from");
                }
            }
            _ = stopped.wait_for(|&s| s) => return,
        }
    }
}

/// `GET /livez` (the process serves) and `GET /readyz` (it has slots to offer) for the kubelet.
async fn probes(listener: tokio::net::TcpListener, mut stopped: watch::Receiver<bool>) {
    use axum::routing::get;
    let app = axum::Router::new()
        .route("/livez", get(|| async { "ok\n" }))
        .route("/readyz", get(|| async { "ready\n" }));
    let shutdown = async move {
        let _ = stopped.wait_for(|&s| s).await;
    };
    if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
        tracing::error!("the probes stopped: {e}");
    }
}

//! The sockets, both protocols on one accept loop and one connection rule: no-delay on every
//! socket, one connection limit shared by HTTP and gRPC, a bound on HTTP/2 streams and on what a
//! connection may buffer, idle and slow connections closed (HTTP/2 like HTTP/1), every request
//! bounded in time, backoff when accepting fails (EMFILE), and a drain that ends within its grace
//! plus [`DRAIN_BOUND`] whatever the clients do.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::{JoinHandle, JoinSet};
use tower::ServiceExt;

use super::StartError;
use super::activity::{Activity, Watched};
use super::error::ServeError;
use super::server::{Limits, MAX_DEADLINE_MS, Server};

/// How long past its grace a drain may take to close connections that will not finish (a client
/// that stops reading, a stream held at a zero window), and how long an idle connection being
/// closed may take to go.
pub const DRAIN_BOUND: Duration = Duration::from_secs(2);
/// Most header bytes an HTTP/2 request may carry.
const MAX_HEADER_LIST: u32 = 64 << 10;
/// What one HTTP/2 connection may have in flight toward us before its client must wait: bounds
/// what each connection makes the server buffer (times the connection limit).
const CONNECTION_WINDOW: u32 = 1 << 20;
const STREAM_WINDOW: u32 = 256 << 10;

/// Which protocol a listener speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    Http,
    Grpc,
}

/// The running listeners.
pub struct Listeners {
    /// Bound HTTP address.
    pub http: SocketAddr,
    /// Bound gRPC address.
    pub grpc: SocketAddr,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

async fn bind(addr: SocketAddr) -> Result<TcpListener, StartError> {
    TcpListener::bind(addr).await.map_err(|source| StartError::Listen { addr, source })
}

/// Binds both addresses and starts serving; `grace` is what a drain gives requests in flight.
pub async fn start(
    server: Arc<Server>,
    http: SocketAddr,
    grpc: SocketAddr,
    grace: Duration,
) -> Result<Listeners, StartError> {
    let (h, g) = (bind(http).await?, bind(grpc).await?);
    let (http, grpc) = (h.local_addr()?, g.local_addr()?);
    let (stop, stopped) = watch::channel(false);
    let slots = Arc::new(Semaphore::new(server.limits.max_connections));
    let rules = Rules { limits: server.limits, grace, slots };
    let apps = [
        (h, super::http::router(server.clone()), Protocol::Http),
        (g, super::grpc::router(server), Protocol::Grpc),
    ];
    let tasks = apps
        .into_iter()
        .map(|(listener, app, protocol)| {
            tokio::spawn(accept(listener, app, protocol, rules.clone(), stopped.clone()))
        })
        .collect();
    tracing::info!(%http, %grpc, "listening");
    Ok(Listeners { http, grpc, stop, tasks })
}

impl Listeners {
    /// Stops accepting and waits for the connections to finish, at most the grace period plus
    /// [`DRAIN_BOUND`]; what remains then is closed.
    pub async fn shut_down(self) {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// What every connection of both listeners shares.
#[derive(Clone)]
struct Rules {
    limits: Limits,
    grace: Duration,
    slots: Arc<Semaphore>,
}

async fn accept(
    listener: TcpListener,
    app: Router,
    protocol: Protocol,
    rules: Rules,
    mut stop: watch::Receiver<bool>,
) {
    let mut conns = JoinSet::new();
    let mut backoff = Backoff::default();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => break,
        };
        while conns.try_join_next().is_some() {}
        let (stream, peer) = match accepted {
            Ok(a) => {
                backoff.reset();
                a
            }
            // Out of descriptors (EMFILE) or the like: wait, longer each time, instead of spinning.
            Err(e) => {
                backoff.wait(&e).await;
                continue;
            }
        };
        // Over the connection limit (both protocols together), a connection is closed at once.
        let Ok(permit) = rules.slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, "connection limit reached: closed");
            continue;
        };
        conns.spawn(connection(stream, app.clone(), protocol, rules.clone(), stop.clone(), permit));
    }
    // The drain: every connection was told to close; those that will not are dropped.
    let all = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(rules.grace + DRAIN_BOUND, all).await.is_err() {
        tracing::warn!(left = conns.len(), "connections still open after the drain's bound: closed");
    }
    conns.abort_all();
}

/// The accept loop's wait after a failure: 5 ms doubling to a second.
#[derive(Default)]
struct Backoff(Option<Duration>);

impl Backoff {
    fn reset(&mut self) {
        self.0 = None;
    }

    async fn wait(&mut self, e: &std::io::Error) {
        let next = self.0.map_or(Duration::from_millis(5), |d| (d * 2).min(Duration::from_secs(1)));
        if self.0.is_none() {
            tracing::warn!("accepting a connection failed: {e}; backing off");
        }
        self.0 = Some(next);
        tokio::time::sleep(next).await;
    }
}

fn builder(protocol: Protocol, limits: &Limits) -> Builder<TokioExecutor> {
    let mut b = Builder::new(TokioExecutor::new());
    if protocol == Protocol::Grpc {
        b = b.http2_only();
    }
    b.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    b.http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(limits.header_timeout))
        .keep_alive_timeout(limits.header_timeout)
        .max_concurrent_streams(limits.max_streams)
        .max_header_list_size(MAX_HEADER_LIST)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .initial_stream_window_size(STREAM_WINDOW)
        .max_pending_accept_reset_streams(Some(limits.max_streams as usize));
    b
}

/// The longest one request may take from its headers to its answer: its body, the longest
/// deadline a client may ask for, and a body's time again to write the answer.
fn request_timeout(limits: &Limits) -> Duration {
    limits.body_timeout * 2 + Duration::from_millis(MAX_DEADLINE_MS as u64)
}

/// A request that ran out of time, as its protocol says it.
fn timed_out(protocol: Protocol, after: Duration) -> Response {
    let e = ServeError::Unavailable(format!("the request did not finish within {after:?}"));
    match protocol {
        Protocol::Http => {
            (axum::http::StatusCode::REQUEST_TIMEOUT, axum::Json(serde_json::json!({"error": e.to_string()})))
                .into_response()
        }
        Protocol::Grpc => tonic::Status::deadline_exceeded(e.to_string()).into_http(),
    }
}

/// One connection: served until it ends, closes idle, or the drain closes it.
async fn connection(
    stream: TcpStream,
    app: Router,
    protocol: Protocol,
    rules: Rules,
    stop: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) {
    // Small request/response exchanges: no Nagle delay.
    let _ = stream.set_nodelay(true);
    let activity = Activity::new();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    // The socket's own writes mark the connection active, under any buffering of ours.
    let io = Watched::new(stream, activity.clone());
    match protocol {
        // Each gRPC answer's frames in one write (see `coalesce`).
        Protocol::Grpc => {
            serve(super::coalesce::Coalesced::new(io), (activity, fd), app, protocol, rules, stop).await
        }
        Protocol::Http => serve(io, (activity, fd), app, protocol, rules, stop).await,
    }
}

/// Serves the connection `io` (its socket `fd`, watched by `activity`) until it ends, closes idle,
/// or the drain closes it.
async fn serve<I>(
    io: I,
    (activity, fd): (Arc<Activity>, std::os::fd::RawFd),
    app: Router,
    protocol: Protocol,
    rules: Rules,
    mut stop: watch::Receiver<bool>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let limit = request_timeout(&rules.limits);
    let seen = activity.clone();
    let service = tower::service_fn(move |req: axum::http::Request<hyper::body::Incoming>| {
        let busy = seen.begin();
        let answer = app.clone().oneshot(req);
        let seen = seen.clone();
        async move {
            let r = tokio::time::timeout(limit, answer).await;
            let response =
                r.unwrap_or_else(|_| Ok(timed_out(protocol, limit))).unwrap_or_else(|e| match e {});
            // The answer keeps the connection active while its bytes go out (see `activity`).
            let response = super::held::keep(response, Arc::new(seen.answer()));
            drop(busy);
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let builder = builder(protocol, &rules.limits);
    let conn = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(service));
    tokio::pin!(conn);
    let idle = rules.limits.header_timeout;
    let mut tick = tokio::time::interval((idle / 4).max(Duration::from_millis(50)));
    let mut closing: Option<Instant> = None;
    loop {
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = stop.changed(), if closing.is_none() => {
                conn.as_mut().graceful_shutdown();
                closing = Some(Instant::now() + rules.grace + DRAIN_BOUND);
            }
            _ = tick.tick() => match closing {
                Some(at) if Instant::now() >= at => return,
                Some(_) => {}
                None => {
                    let now = Instant::now();
                    // The descriptor lives as long as `conn`, which owns the socket.
                    activity.observe(super::activity::unsent(fd).unwrap_or(0), now);
                    if activity.idle_for(now).is_some_and(|d| d >= idle) {
                        conn.as_mut().graceful_shutdown();
                        closing = Some(now + DRAIN_BOUND);
                    }
                }
            },
        }
    }
}

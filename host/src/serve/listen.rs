//! The sockets: HTTP served connection by connection on hyper (a header-read timeout that also ends
//! idle keep-alive connections, a connection limit, graceful shutdown), gRPC on tonic's server
//! (request and keep-alive timeouts); both stop accepting at a drain and finish what they hold.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;

use super::StartError;
use super::grpc::Service;
use super::http::router;
use super::server::Server;

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

/// Binds both addresses and starts serving.
pub async fn start(server: Arc<Server>, http: SocketAddr, grpc: SocketAddr) -> Result<Listeners, StartError> {
    let (h, g) = (bind(http).await?, bind(grpc).await?);
    let (http, grpc) = (h.local_addr()?, g.local_addr()?);
    let (stop, stopped) = watch::channel(false);
    let tasks = vec![
        tokio::spawn(serve_http(h, server.clone(), stopped.clone())),
        tokio::spawn(serve_grpc(g, server, stopped)),
    ];
    tracing::info!(%http, %grpc, "listening");
    Ok(Listeners { http, grpc, stop, tasks })
}

impl Listeners {
    /// Stops accepting and waits for the responses in progress.
    pub async fn shut_down(self) {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

async fn serve_http(listener: TcpListener, server: Arc<Server>, mut stop: watch::Receiver<bool>) {
    let limits = server.limits;
    let app = router(server);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        // Small request/response exchanges: no Nagle delay.
        let _ = stream.set_nodelay(true);
        // Over the connection limit, a connection is closed at once; its client retries.
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, "connection limit reached: closed");
            continue;
        };
        let mut builder = Builder::new(TokioExecutor::new());
        builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
        builder.http2().timer(TokioTimer::new()).keep_alive_interval(Some(limits.header_timeout));
        let service = TowerToHyperService::new(app.clone());
        let conn = builder.serve_connection(TokioIo::new(stream), service).into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    // Responses in progress finish (a drain's grace period bounds them); idle connections close.
    let _ = tokio::time::timeout(limits.body_timeout * 2, graceful.shutdown()).await;
}

async fn serve_grpc(listener: TcpListener, server: Arc<Server>, mut stop: watch::Receiver<bool>) {
    let limits = server.limits;
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    let result = tonic::transport::Server::builder()
        .timeout(limits.body_timeout * 4)
        .http2_keepalive_interval(Some(limits.header_timeout))
        .http2_keepalive_timeout(Some(limits.header_timeout))
        .concurrency_limit_per_connection(256)
        .add_service(Service::new(server))
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = stop.changed().await;
        })
        .await;
    if let Err(e) = result {
        tracing::warn!("the gRPC server ended: {e}");
    }
}

//! The two layers every request of either protocol passes before its handler, written once: the
//! token (which token a path needs, checked on its headers before a byte of its body is read), then
//! the memory budget (its body reserved as it arrives, the reservation kept with its answer until
//! written, and an inference counted once however it ends). A protocol states only what differs:
//! which paths need which token, how its bodies are framed, how it says an error.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::budget::{Abandoned, Framing, Metered, Refusal, Reservation};
use super::error::ServeError;
use super::server::Server;

/// The token a path needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Health: none when the server's health is open, else the inference token.
    Health,
    /// The inference token.
    Inference,
    /// The repository index: the inference token or the control token.
    Index,
    /// Load and unload: the control token (and model control on).
    Control,
    /// Checked by its own route (HTTP's load and unload, which also refuse cross-site requests).
    Route,
}

/// What the two protocols' layers differ in.
pub trait Protocol: Send + Sync + 'static {
    /// How its bodies are framed.
    const FRAMING: Framing;
    /// The token `path` needs.
    fn access(path: &str) -> Access;
    /// Whether `path` runs an inference (counted once however it ends, and its answer held on the
    /// budget until written).
    fn is_infer(path: &str) -> bool;
    /// `e` as the protocol answers it.
    fn error(e: ServeError) -> Response;
    /// A body cut off by the budget or the size limit, as the protocol's error.
    fn overflow(r: Refusal) -> axum::BoxError;
    /// The outcome label of an answer (for the metrics of a request refused before the server).
    fn outcome(response: &Response) -> &'static str;
    /// Whether `req` is a stream of requests each metered on its own (gRPC's `ModelStreamInfer`),
    /// its body then made to meter them.
    fn stream(_s: &Server, _req: &mut Request) -> bool {
        false
    }
}

/// The token layer: refuses a request without the token its path needs, counted, before its body.
pub async fn authorize<P: Protocol>(State(s): State<Arc<Server>>, req: Request, next: Next) -> Response {
    let given = req.headers().get("authorization").and_then(|v| v.to_str().ok());
    let checked = match P::access(req.uri().path()) {
        Access::Route => Ok(()),
        Access::Health if s.open_health => Ok(()),
        Access::Health | Access::Inference => s.authorize(given),
        Access::Index => s.authorize_index(given),
        Access::Control => s.authorize_control(given),
    };
    match checked {
        Ok(()) => next.run(req).await,
        Err(e) => {
            s.metrics.refused(e.outcome());
            P::error(e)
        }
    }
}

/// The budget layer: a request's body reserves on the memory budget as it arrives (refused past it
/// or past the body limit); the reservation goes with the request and then with its answer until
/// that is written. An inference refused before the server takes it is counted here, by its
/// answer's outcome, or as `cancelled` if its client went away first.
pub async fn meter<P: Protocol>(State(s): State<Arc<Server>>, req: Request, next: Next) -> Response {
    let mut req = req;
    if P::stream(&s, &mut req) {
        return next.run(req).await;
    }
    let infer = P::is_infer(req.uri().path());
    let reservation = Reservation::new(s.budget.clone());
    let (mut parts, body) = req.into_parts();
    parts.extensions.insert(reservation.clone());
    let metered = Metered::new(body, reservation.clone(), s.limits.max_body, P::FRAMING, P::overflow);
    let req = Request::from_parts(parts, Body::new(metered));
    if !infer {
        return next.run(req).await;
    }
    let watch = Abandoned::new(&s.metrics, reservation.clone());
    let response = next.run(req).await;
    watch.answered(P::outcome(&response));
    super::held::hold(response, reservation)
}

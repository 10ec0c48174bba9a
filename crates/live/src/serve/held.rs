//! An answer holds its request's place on the memory budget until its last byte is written. A client
//! that reads nothing (an HTTP client that never reads; an HTTP/2 client that opens no window) would
//! otherwise leave its answer in the server after the budget let it go: forty such clients of 16 MB
//! JSON answers held 770 MB beside a 64 MB budget. Each of the answer's chunks owns a share of the
//! request's [`Reservation`], so the budget is given back only when hyper or h2 drops the last
//! chunk after writing it (or the connection is dropped), and a new request is refused while
//! unread answers fill the budget. The protocol's budget layer marks the answer ([`hold`]); the
//! connection wraps its body once ([`keep`]), with what it keeps of its own (`activity::Writing`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::body::{Body, Bytes};
use axum::response::Response;
use http_body::{Frame, SizeHint};

use super::budget::Reservation;

/// What an answer's chunks keep alive until the last of them is dropped.
pub type Keep = Arc<dyn Send + Sync>;

/// `response`, marked to hold `reservation` until it is written (by [`keep`]); the reservation first
/// shrunk to the body's length when the body knows it (the request's inputs are gone by now).
pub fn hold(mut response: Response, reservation: Arc<Reservation>) -> Response {
    if let Some(n) = http_body::Body::size_hint(response.body()).exact() {
        reservation.shrink_to(usize::try_from(n).unwrap_or(usize::MAX));
    }
    response.extensions_mut().insert(reservation);
    response
}

/// `response`, its body's chunks each keeping `k` and the reservation [`hold`] marked it with, if
/// any (and the body itself keeping them, until it ends).
pub fn keep(mut response: Response, k: Keep) -> Response {
    let k: Keep = match response.extensions_mut().remove::<Arc<Reservation>>() {
        Some(reservation) => Arc::new((k, reservation)),
        None => k,
    };
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Body::new(Held { body, keep: Some(k) }))
}

/// A body whose data chunks each keep what it keeps; the body's own hold ends with it.
struct Held {
    body: Body,
    keep: Option<Keep>,
}

/// A chunk and what it keeps (read by no one: it is held, and dropped with the chunk).
struct Owned(Bytes, #[allow(dead_code)] Keep);

impl AsRef<[u8]> for Owned {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl http_body::Body for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
        match (frame, &this.keep) {
            (Some(Ok(f)), Some(r)) => Poll::Ready(Some(Ok(
                f.map_data(|b| if b.is_empty() { b } else { Bytes::from_owner(Owned(b, r.clone())) })
            ))),
            (other, _) => {
                if !matches!(other, Some(Ok(_))) {
                    this.keep = None;
                }
                Poll::Ready(other)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::budget::Budget;
    use axum::response::IntoResponse;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn the_budget_is_given_back_when_the_last_chunk_is_dropped() {
        let budget = Budget::new(1000);
        let reservation = Reservation::new(budget.clone());
        reservation.add(700).unwrap();
        let response = keep(hold(vec![7u8; 100].into_response(), reservation), Arc::new(()));
        assert_eq!(budget.used(), 100, "shrunk to the body's length");
        let mut body = response.into_body();
        let chunk = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert!(body.frame().await.is_none());
        drop(body);
        assert_eq!(budget.used(), 100, "the chunk not yet written holds it");
        assert_eq!(&chunk[..], &[7u8; 100][..]);
        drop(chunk);
        assert_eq!(budget.used(), 0);
    }

    #[tokio::test]
    async fn a_body_dropped_unread_gives_the_budget_back() {
        let budget = Budget::new(1000);
        let reservation = Reservation::new(budget.clone());
        reservation.add(500).unwrap();
        let stream = tokio_stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"abc"))]);
        let response = keep(hold(Body::from_stream(stream).into_response(), reservation), Arc::new(()));
        assert_eq!(budget.used(), 500, "a body of unknown length keeps what was reserved");
        drop(response);
        assert_eq!(budget.used(), 0);
    }
}

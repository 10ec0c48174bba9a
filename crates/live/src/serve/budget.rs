//! The memory budget of all requests in flight: bytes of bodies received and of decoded inputs
//! held, queued and running. A request reserves as its body arrives (before it is parsed) and again
//! for what it decodes to; one that would pass the budget is refused at once and counted. What a
//! request reserved is released when the pool is done with it, even if its client went away.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};

/// The bytes every request in flight may hold together.
#[derive(Debug)]
pub struct Budget {
    capacity: usize,
    used: AtomicUsize,
}

/// A request would pass the budget.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the server holds {used} bytes of requests in flight and this one needs {wanted} more (budget {capacity}): retry shortly"
)]
pub struct Exhausted {
    /// Held by all requests.
    pub used: usize,
    /// Asked for.
    pub wanted: usize,
    /// The budget.
    pub capacity: usize,
}

impl Budget {
    /// A budget of `capacity` bytes.
    pub fn new(capacity: usize) -> Arc<Budget> {
        Arc::new(Budget { capacity, used: AtomicUsize::new(0) })
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The budget.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn take(&self, n: usize) -> Result<(), Exhausted> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let next = used.checked_add(n).filter(|&u| u <= self.capacity).ok_or(Exhausted {
                used,
                wanted: n,
                capacity: self.capacity,
            })?;
            match self.used.compare_exchange_weak(used, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return Ok(()),
                Err(now) => used = now,
            }
        }
    }

    fn give(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// What one request holds of the budget, released on drop; whether the server has counted the
/// request yet (a request its client abandons before that is counted where it was accepted); and
/// when its headers were read (its deadline runs from then).
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<Budget>,
    held: AtomicUsize,
    counted: AtomicBool,
    born: std::time::Instant,
}

impl Reservation {
    /// An empty reservation on `budget`, for a request whose headers were just read.
    pub fn new(budget: Arc<Budget>) -> Arc<Reservation> {
        Arc::new(Reservation {
            budget,
            held: AtomicUsize::new(0),
            counted: AtomicBool::new(false),
            born: std::time::Instant::now(),
        })
    }

    /// How long since the request's headers were read: its body, the wait for the protocol thread.
    pub fn age(&self) -> std::time::Duration {
        self.born.elapsed()
    }

    /// Holds `n` bytes more, or refuses if the budget has not got them.
    pub fn add(&self, n: usize) -> Result<(), Exhausted> {
        self.budget.take(n)?;
        self.held.fetch_add(n, Ordering::AcqRel);
        Ok(())
    }

    /// Holds at most `n` bytes from now: what its answer still takes once the inputs are gone.
    pub fn shrink_to(&self, n: usize) {
        let mut held = self.held.load(Ordering::Acquire);
        while held > n {
            match self.held.compare_exchange_weak(held, n, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return self.budget.give(held - n),
                Err(now) => held = now,
            }
        }
    }

    /// The server has taken the request: it counts it however it ends.
    pub fn set_counted(&self) {
        self.counted.store(true, Ordering::Release);
    }

    /// Whether the server has taken the request.
    pub fn is_counted(&self) -> bool {
        self.counted.load(Ordering::Acquire)
    }

    /// Bytes this request holds.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.give(*self.held.get_mut());
    }
}

/// Counts an inference request the server did not take (counted by [`Reservation::set_counted`]):
/// refused before it reached a pool, under the outcome its answer carried, or abandoned by its client
/// while its body arrived or was parsed (`cancelled`). Dropped with the request's future.
pub struct Abandoned<'a> {
    metrics: &'a super::metrics::Metrics,
    reservation: Arc<Reservation>,
    answered: bool,
}

impl<'a> Abandoned<'a> {
    /// Watches `reservation`'s request.
    pub fn new(metrics: &'a super::metrics::Metrics, reservation: Arc<Reservation>) -> Abandoned<'a> {
        Abandoned { metrics, reservation, answered: false }
    }

    /// The request was answered: if the server did not take it, it was refused with `outcome`.
    pub fn answered(mut self, outcome: &str) {
        self.answered = true;
        if !self.reservation.is_counted() {
            self.metrics.refused(outcome);
        }
    }
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if !self.answered && !self.reservation.is_counted() {
            self.metrics.refused("cancelled");
        }
    }
}

/// Why a body was cut off.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Refusal {
    /// The memory budget has not got its bytes.
    #[error(transparent)]
    Budget(#[from] Exhausted),
    /// Over the body limit (a gRPC message as soon as its length prefix says so).
    #[error("the request is {size} bytes; this server takes at most {limit}")]
    TooLarge {
        /// Its size, or what it has sent so far.
        size: usize,
        /// The limit.
        limit: usize,
    },
}

/// How a body is framed: plain bytes, or gRPC messages (a flag byte and a 4-byte length first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// HTTP.
    Plain,
    /// gRPC: the first message's declared length is checked against the limit before its bytes come.
    Grpc,
}

/// A request body that refuses what is over `limit` and reserves each frame's bytes on the budget
/// before handing it on: a body beyond either ends in an error (made by `overflow`, so each
/// protocol can say it its own way) instead of being buffered.
pub struct Metered {
    inner: Body,
    reservation: Arc<Reservation>,
    limit: usize,
    framing: Framing,
    seen: usize,
    overflow: fn(Refusal) -> axum::BoxError,
    deferred: Option<Refusal>,
}

impl Metered {
    /// `inner`, reserving on `reservation`, at most `limit` bytes (a gRPC body: each message).
    pub fn new(
        inner: Body,
        reservation: Arc<Reservation>,
        limit: usize,
        framing: Framing,
        overflow: fn(Refusal) -> axum::BoxError,
    ) -> Metered {
        Metered { inner, reservation, limit, framing, seen: 0, overflow, deferred: None }
    }
}

impl Admit for Metered {
    fn inner(&mut self) -> &mut Body {
        &mut self.inner
    }

    fn overflow(&self) -> fn(Refusal) -> axum::BoxError {
        self.overflow
    }

    fn deferred(&mut self) -> &mut Option<Refusal> {
        &mut self.deferred
    }

    /// Checks a data frame and reserves it: one message, taken whole or not at all.
    fn admit(&mut self, data: &[u8]) -> Result<(), (usize, Refusal)> {
        self.check(data).map_err(|r| (0, r))
    }
}

impl Metered {
    fn check(&mut self, data: &[u8]) -> Result<(), Refusal> {
        const PREFIX: usize = 5;
        if self.framing == Framing::Grpc && self.seen == 0 && data.len() >= PREFIX {
            let declared = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
            if declared > self.limit {
                return Err(Refusal::TooLarge { size: declared, limit: self.limit });
            }
        }
        self.seen = self.seen.saturating_add(data.len());
        let most = match self.framing {
            Framing::Plain => self.limit,
            Framing::Grpc => self.limit.saturating_add(PREFIX),
        };
        if self.seen > most {
            return Err(Refusal::TooLarge { size: self.seen, limit: self.limit });
        }
        Ok(self.reservation.add(data.len())?)
    }
}

impl http_body::Body for Metered {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        poll_admitted(&mut *self, cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A body that passes each data frame of an inner body through a check before handing it on.
pub trait Admit {
    /// The body checked.
    fn inner(&mut self) -> &mut Body;
    /// Checks (and reserves) a data frame's bytes; refused, how many of them were taken before the
    /// refusal (handed on; the refusal ends the body after them).
    fn admit(&mut self, data: &[u8]) -> Result<(), (usize, Refusal)>;
    /// How a refusal ends the body (the protocol's error).
    fn overflow(&self) -> fn(Refusal) -> axum::BoxError;
    /// Where a refusal waits while the bytes taken before it are handed on.
    fn deferred(&mut self) -> &mut Option<Refusal>;
}

/// The next frame of `body`'s inner body, its data first passed by [`Admit::admit`]: what every
/// metered body does with a frame. A frame refused part way hands on what was taken before the
/// refusal (a gRPC stream's whole messages) and ends the body with the refusal at the next poll.
pub fn poll_admitted<A: Admit>(
    body: &mut A,
    cx: &mut Context<'_>,
) -> Poll<Option<Result<Frame<Bytes>, axum::BoxError>>> {
    use http_body::Body as _;
    if let Some(r) = body.deferred().take() {
        return Poll::Ready(Some(Err((body.overflow())(r))));
    }
    match Pin::new(body.inner()).poll_frame(cx) {
        Poll::Ready(Some(Ok(frame))) => {
            let Some(data) = frame.data_ref() else { return Poll::Ready(Some(Ok(frame))) };
            match body.admit(data) {
                Ok(()) => Poll::Ready(Some(Ok(frame))),
                Err((0, r)) => Poll::Ready(Some(Err((body.overflow())(r)))),
                Err((taken, r)) => {
                    let taken = data.slice(..taken);
                    *body.deferred() = Some(r);
                    Poll::Ready(Some(Ok(Frame::data(taken))))
                }
            }
        }
        Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
        Poll::Ready(None) => Poll::Ready(None),
        Poll::Pending => Poll::Pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_share_the_budget_and_give_it_back_when_dropped() {
        let b = Budget::new(100);
        let r1 = Reservation::new(b.clone());
        r1.add(60).unwrap();
        let r2 = Reservation::new(b.clone());
        let e = r2.add(41).unwrap_err();
        assert_eq!((e.used, e.wanted, e.capacity), (60, 41, 100));
        r2.add(40).unwrap();
        assert_eq!(b.used(), 100);
        drop(r1);
        assert_eq!(b.used(), 40);
        drop(r2);
        assert_eq!(b.used(), 0);
        assert!(Reservation::new(b).add(usize::MAX).is_err());
    }

    #[tokio::test]
    async fn a_grpc_body_over_the_limit_is_refused_by_its_length_prefix() {
        let budget = Budget::new(1 << 20);
        let mut frame = vec![0u8, 0, 0, 0x10, 0]; // declares 4096 bytes
        frame.extend_from_slice(&[0; 10]);
        let body = Body::from(frame);
        let overflow = |r: Refusal| -> axum::BoxError { Box::new(r) };
        let metered = Metered::new(body, Reservation::new(budget.clone()), 1000, Framing::Grpc, overflow);
        let e = axum::body::to_bytes(Body::new(metered), usize::MAX).await.unwrap_err();
        assert!(e.to_string().contains("4096 bytes"), "{e}");
        assert_eq!(budget.used(), 0, "nothing reserved for a refused frame");
        let plain = Metered::new(
            Body::from(vec![1u8; 2000]),
            Reservation::new(budget.clone()),
            1000,
            Framing::Plain,
            overflow,
        );
        assert!(axum::body::to_bytes(Body::new(plain), usize::MAX).await.is_err());
        let ok = Metered::new(
            Body::from(vec![1u8; 999]),
            Reservation::new(budget.clone()),
            1000,
            Framing::Plain,
            overflow,
        );
        assert_eq!(axum::body::to_bytes(Body::new(ok), usize::MAX).await.unwrap().len(), 999);
    }
}

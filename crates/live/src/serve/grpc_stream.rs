//! gRPC `ModelStreamInfer`: requests in on one stream, answers out in order of completion. Each
//! message is a request of its own on the memory budget: its bytes are reserved as they arrive on a
//! reservation of its own ([`Messages`]), which the handler takes with the decoded message and
//! which goes with its answer until tonic takes it. At most [`IN_FLIGHT`] of a stream's requests
//! run at once; past that the stream is not read (HTTP/2 flow control holds the client back).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

use super::budget::{Abandoned, Admit, Budget, Refusal, Reservation, poll_admitted};
use super::error::{ServeError, outcome_of_grpc};
use super::grpc::proto::{ModelInferRequest, ModelStreamInferResponse};
use super::grpc::{self, Service};
use super::server::Server;

/// The most requests of one stream running at once (as many as a connection's streams).
pub const IN_FLIGHT: usize = 32;

/// The method's path.
pub const PATH: &str = "/inference.GRPCInferenceService/ModelStreamInfer";

/// The answers as tonic sends them.
pub type Answers = Pin<Box<dyn tokio_stream::Stream<Item = Result<ModelStreamInferResponse, Status>> + Send>>;

/// Each message's reservation, in the order the messages arrived; the handler takes them in the
/// order tonic decodes the messages, which is the same.
#[derive(Debug, Default)]
pub struct Inbox(Mutex<VecDeque<Arc<Reservation>>>);

impl Inbox {
    fn push(&self, r: Arc<Reservation>) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push_back(r);
    }

    fn take(&self) -> Option<Arc<Reservation>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).pop_front()
    }
}

/// A stream's body, cut into its gRPC messages (a flag byte and a 4-byte length, then the
/// message): each is refused if its length is over `limit`, and reserved on a reservation of its
/// own, put in the [`Inbox`] once complete.
pub struct Messages {
    inner: Body,
    budget: Arc<Budget>,
    limit: usize,
    inbox: Arc<Inbox>,
    prefix: [u8; 5],
    /// Bytes of the current prefix seen (5: reading the message).
    have: usize,
    /// Bytes of the current message still to come.
    left: usize,
    current: Option<Arc<Reservation>>,
    /// How a refusal ends the stream (the protocol's error).
    overflow: fn(Refusal) -> axum::BoxError,
    /// A refusal waiting while the whole messages before it in its frame are handed on.
    deferred: Option<Refusal>,
}

impl Messages {
    /// `inner`, its messages put in `inbox`; a refusal ends it with the error `overflow` makes.
    pub fn new(
        inner: Body,
        budget: Arc<Budget>,
        limit: usize,
        inbox: Arc<Inbox>,
        overflow: fn(Refusal) -> axum::BoxError,
    ) -> Messages {
        Messages {
            inner,
            budget,
            limit,
            inbox,
            prefix: [0; 5],
            have: 0,
            left: 0,
            current: None,
            overflow,
            deferred: None,
        }
    }
}

impl Admit for Messages {
    fn inner(&mut self) -> &mut Body {
        &mut self.inner
    }

    fn overflow(&self) -> fn(Refusal) -> axum::BoxError {
        self.overflow
    }

    fn deferred(&mut self) -> &mut Option<Refusal> {
        &mut self.deferred
    }

    /// Walks one data frame's bytes through the messages they belong to; refused, the bytes of the
    /// whole messages before the refusal are taken (their requests are served; the one refused is
    /// the stream's end).
    fn admit(&mut self, data: &[u8]) -> Result<(), (usize, Refusal)> {
        let mut at = 0;
        let mut whole = 0;
        while at < data.len() {
            let n = match self.have < 5 {
                true => self.read_prefix(&data[at..]).map_err(|r| (whole, r))?,
                false => {
                    let n = self.left.min(data.len() - at);
                    self.reserve(n).map_err(|r| (whole, r))?;
                    self.left -= n;
                    n
                }
            };
            at += n;
            if self.have == 5 && self.left == 0 {
                self.have = 0;
                whole = at;
                if let Some(r) = self.current.take() {
                    self.inbox.push(r);
                }
            }
        }
        Ok(())
    }
}

impl Messages {
    /// Takes what `data` holds of the next message's prefix; at its end, checks the length.
    fn read_prefix(&mut self, data: &[u8]) -> Result<usize, Refusal> {
        if self.have == 0 {
            self.current = Some(Reservation::new(self.budget.clone()));
        }
        let n = (5 - self.have).min(data.len());
        self.prefix[self.have..self.have + n].copy_from_slice(&data[..n]);
        self.have += n;
        self.reserve(n)?;
        if self.have == 5 {
            let [_, a, b, c, d] = self.prefix;
            let declared = u32::from_be_bytes([a, b, c, d]) as usize;
            if declared > self.limit {
                return Err(Refusal::TooLarge { size: declared, limit: self.limit });
            }
            self.left = declared;
        }
        Ok(n)
    }

    fn reserve(&self, n: usize) -> Result<(), Refusal> {
        match &self.current {
            Some(r) => Ok(r.add(n)?),
            None => Ok(()),
        }
    }
}

impl http_body::Body for Messages {
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

/// Serves a stream: reads requests while fewer than [`IN_FLIGHT`] run, answers each as it
/// completes. A request that fails is an answer with its `error_message` (the stream goes on); a
/// stream that breaks (a message over the limit or the budget, or not a request) ends with its
/// status after the answers already due. The client going away cancels what still runs.
pub fn serve(server: Arc<Server>, inbox: Arc<Inbox>, mut incoming: Streaming<ModelInferRequest>) -> Answers {
    let (tx, rx) =
        mpsc::channel::<(Result<ModelStreamInferResponse, Status>, Option<Arc<Reservation>>)>(IN_FLIGHT);
    tokio::spawn(async move {
        let mut running = JoinSet::new();
        let mut broken = None;
        loop {
            tokio::select! {
                next = incoming.message(), if running.len() < IN_FLIGHT && broken.is_none() => match next {
                    Ok(Some(m)) => {
                        running.spawn(one(server.clone(), inbox.take(), m));
                    }
                    Ok(None) => break,
                    Err(status) => {
                        // The message that broke the stream (past the limit or the budget, or not a
                        // request) is refused by the stream's status, and counted here.
                        server.metrics.refused(outcome_of_grpc(status.code()));
                        broken = Some(status);
                    }
                },
                Some(done) = running.join_next() => {
                    let answer = done.unwrap_or_else(|e| (Ok(failed(&e.to_string(), None)), None));
                    if tx.send(answer).await.is_err() {
                        return; // the client went away: `running` is dropped, its requests cancelled
                    }
                }
                else => break,
            }
        }
        while let Some(done) = running.join_next().await {
            let answer = done.unwrap_or_else(|e| (Ok(failed(&e.to_string(), None)), None));
            if tx.send(answer).await.is_err() {
                return;
            }
        }
        if let Some(status) = broken {
            let _ = tx.send((Err(status), None)).await;
        }
    });
    // A reservation goes when tonic takes its answer to encode.
    Box::pin(ReceiverStream::new(rx).map(|(answer, _held)| answer))
}

/// One request of a stream: its answer, or its error as an answer naming its id; with what it
/// holds of the budget until sent.
async fn one(
    server: Arc<Server>,
    reservation: Option<Arc<Reservation>>,
    m: ModelInferRequest,
) -> (Result<ModelStreamInferResponse, Status>, Option<Arc<Reservation>>) {
    let id = m.id.clone();
    let Some(reservation) = reservation else {
        let why = "the request's bytes were not metered (the stream's budget layer is missing)";
        return (Ok(failed(why, Some(id))), None);
    };
    let watch = Abandoned::new(&server.metrics, reservation.clone());
    let result = answer(&server, reservation.clone(), m).await;
    let outcome = match &result {
        Ok(_) => "ok",
        Err(e) => e.outcome(),
    };
    watch.answered(outcome);
    match result {
        Ok(r) => (
            Ok(ModelStreamInferResponse { error_message: String::new(), infer_response: Some(r) }),
            Some(reservation),
        ),
        Err(e) => (Ok(failed(&e.to_string(), Some(id))), None),
    }
}

async fn answer(
    server: &Server,
    reservation: Arc<Reservation>,
    m: ModelInferRequest,
) -> Result<super::grpc::proto::ModelInferResponse, ServeError> {
    let taken = std::time::Instant::now();
    let (request, wanted) = grpc::prepare(server, reservation.clone(), m)?;
    let answer = server.infer(request).await?;
    Ok(Service::respond(&answer, &reservation, wanted.as_deref(), taken))
}

/// A failed request's answer: its error, and its id if it had one.
fn failed(why: &str, id: Option<String>) -> ModelStreamInferResponse {
    let infer_response = id
        .filter(|i| !i.is_empty())
        .map(|id| super::grpc::proto::ModelInferResponse { id, ..Default::default() });
    ModelStreamInferResponse { error_message: why.to_string(), infer_response }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of `bytes` in chunks of `cut` bytes, metered as a stream's messages.
    async fn metered(bytes: Vec<u8>, cut: usize, budget: &Arc<Budget>, limit: usize) -> (Arc<Inbox>, bool) {
        let chunks: Vec<Result<Bytes, std::io::Error>> =
            bytes.chunks(cut).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
        let inbox = Arc::new(Inbox::default());
        let overflow = |r: Refusal| -> axum::BoxError { Box::new(r) };
        let body = Messages::new(
            Body::from_stream(tokio_stream::iter(chunks)),
            budget.clone(),
            limit,
            inbox.clone(),
            overflow,
        );
        let ok = axum::body::to_bytes(Body::new(body), usize::MAX).await.is_ok();
        (inbox, ok)
    }

    fn framed(sizes: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        for &n in sizes {
            out.push(0);
            out.extend_from_slice(&(n as u32).to_be_bytes());
            out.extend(std::iter::repeat_n(7u8, n));
        }
        out
    }

    #[tokio::test]
    async fn each_message_is_reserved_on_its_own_however_the_frames_cut_it() {
        for cut in [1, 2, 3, 5, 7, 64, 10_000] {
            let budget = Budget::new(1 << 20);
            let (inbox, ok) = metered(framed(&[10, 0, 300]), cut, &budget, 1000).await;
            assert!(ok, "cut {cut}");
            let held: Vec<usize> = std::iter::from_fn(|| inbox.take()).map(|r| r.held()).collect();
            assert_eq!(held, [15, 5, 305], "cut {cut}: each message's bytes with its prefix");
            assert_eq!(budget.used(), 0, "given back with the reservations");
        }
    }

    #[tokio::test]
    async fn a_message_over_the_limit_or_the_budget_breaks_the_stream() {
        let budget = Budget::new(1 << 20);
        let (inbox, ok) = metered(framed(&[10, 2000]), 3, &budget, 1000).await;
        assert!(!ok, "a length past the limit is refused at its prefix");
        assert_eq!(inbox.take().map(|r| r.held()), Some(15), "the message before it stands");
        assert!(inbox.take().is_none());
        let small = Budget::new(100);
        let (_inbox, ok) = metered(framed(&[50, 50]), 8, &small, 1000).await;
        assert!(!ok, "the second message does not fit the budget beside the first");
    }
}

//! What a live pool is handed: a trace's request or a client's, and where a client's answer goes.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::datapath::work::{Answer, Work, WorkSpec};
use spork_core::model::{Kind, Request, Time};

/// A trace's request (`spork run`'s load generator): its size is known, its inputs built from a
/// spec, and nobody waits for its answer (the run counts it).
#[derive(Debug)]
pub struct TraceRequest {
    /// The request; its arrival is set when the pool takes it.
    pub request: Request,
    /// How its inputs are built.
    pub spec: WorkSpec,
    /// Its inputs, built ahead of its arrival (a board far behind is sent the spec alone).
    pub work: Option<Arc<Work>>,
}

/// A client's request (`spork serve`): its inputs given, its size unknown (estimated from its
/// items), its deadline its own or the profile's, and a client waiting for the answer.
#[derive(Debug)]
pub struct ClientRequest {
    /// Its inputs.
    pub work: Arc<Work>,
    /// Its deadline after arrival; `None`: the profile's deadline factor times its estimated size.
    pub deadline: Option<Time>,
    /// Where the client waits.
    pub reply: Reply,
}

/// What the pool's dispatcher is handed.
#[derive(Debug)]
pub(super) enum Arrive {
    /// A trace's request, due now.
    Trace(TraceRequest),
    /// A client's request.
    Client(ClientRequest),
    /// No more requests: the trace is over.
    End,
}

/// A request's inputs as the dispatcher holds them.
#[derive(Clone, Debug)]
pub(super) enum Inputs {
    /// A trace's: built from a spec, so a board far behind can be sent the spec alone and rebuild
    /// them (the inputs, when held, are dropped once sent that way).
    Generated(WorkSpec, Option<Arc<Work>>),
    /// A client's: held until answered; its CPU time is estimated from its items.
    Given(Arc<Work>),
}

/// Where a client's answer goes, with what the request holds until it is answered (the server's
/// memory reservation and queue place): released when the dispatcher answers or drops the request,
/// even if the client has gone away meanwhile.
pub struct Reply {
    tx: oneshot::Sender<Result<Served, Refused>>,
    _hold: Option<Box<dyn Send + Sync>>,
}

impl Reply {
    /// A reply channel: the client awaits the receiver; `hold` lives as long as the request.
    pub fn channel(
        hold: Option<Box<dyn Send + Sync>>,
    ) -> (Reply, oneshot::Receiver<Result<Served, Refused>>) {
        let (tx, rx) = oneshot::channel();
        (Reply { tx, _hold: hold }, rx)
    }

    /// Answers; the client may have gone (then the answer is dropped).
    pub fn send(self, answer: Result<Served, Refused>) -> Result<(), Result<Served, Refused>> {
        self.tx.send(answer)
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reply")
    }
}

/// A served request.
#[derive(Clone, Debug)]
pub struct Served {
    /// The kernel's results.
    pub answer: Answer,
    /// Where it ran.
    pub kind: Kind,
    /// The worker's pool slot.
    pub worker: u32,
    /// Time from arrival until its worker started it.
    pub queue: Time,
    /// Time its worker took (a board's on its own timeline).
    pub service: Time,
    /// Whether it finished after its deadline.
    pub missed: bool,
    /// Whether its optional part ran.
    pub optional: bool,
    /// How many requests shared its worker's one run (1: it ran alone).
    pub batch: u32,
}

/// Why a request was not served.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Refused {
    /// No worker the caps allow can meet its deadline (bounded admission, or a cap with no worker).
    #[error("no worker can meet the deadline now: retry after {retry_after:?} or with a longer deadline")]
    Admission {
        /// When capacity may have freed up: the deadline span it asked for.
        retry_after: Duration,
    },
    /// The server is draining: it takes no new requests.
    #[error("the server is draining and takes no new requests")]
    Draining,
    /// Stopped before it finished: the drain's grace period ran out.
    #[error("the server stopped before this request finished (its grace period ran out)")]
    Stopped,
    /// The kernel could not run on this input.
    #[error("the kernel failed on this input: {0}")]
    Failed(String),
}

//! What the dispatcher is handed: a request from a trace's load generator or from a client, and
//! where a client's answer goes.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use super::work::{Answer, Work, WorkSpec};
use crate::model::{Kind, Request, Time};

/// A request for the dispatcher.
#[derive(Debug)]
pub struct Incoming {
    /// The request; its arrival is set when the dispatcher takes it. A client's size is the estimate
    /// the dispatcher makes from its items (see [`Inputs::Given`]).
    pub request: Request,
    /// Its deadline after arrival; `None`: the profile's deadline factor times its size.
    pub deadline: Option<Time>,
    /// Its inputs.
    pub inputs: Inputs,
    /// Where a client waits for the answer (`None` for a trace's requests).
    pub reply: Option<Reply>,
}

/// A request's inputs as the dispatcher holds them.
#[derive(Clone, Debug)]
pub enum Inputs {
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

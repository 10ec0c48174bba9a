//! The worker runner, generic over what a worker does around its backend: one OS thread per worker
//! that configures its backend, then runs the jobs of its queue in order (FIFO), a panicking backend
//! failing its job, never the thread. The live pool's workers ([`super::worker`]) and a worker
//! host's leased slots (`worker_host`) both run on it, each with its own [`Jobs`].

use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;

use crate::backend::{Backend, BackendError, Configured, Executed};
use crate::datapath::work::{KernelImage, Payload};
use crate::priority::Priority;

/// What a worker does around its backend: told how configuring went, then given each job.
pub trait Jobs: Send + 'static {
    /// A job in the worker's queue.
    type Job: Send + 'static;
    /// Configuring ended with `result`; whether the worker serves (else every job is `skip`ped).
    fn configured(&mut self, backend: &dyn Backend, result: Result<Configured, BackendError>) -> bool;
    /// Runs `job` on `backend`.
    fn run(&mut self, backend: &mut dyn Backend, job: Self::Job);
    /// Hands `job` back unrun (the worker did not configure).
    fn skip(&mut self, backend: &dyn Backend, job: Self::Job);
}

/// Starts a worker thread named `name`: configures `backend` with `image`, then runs `queue`'s jobs
/// through `jobs` until every sender of the queue is gone and the queue is empty.
pub fn run_worker<J: Jobs>(
    name: String,
    mut backend: Box<dyn Backend>,
    image: Arc<KernelImage>,
    mut jobs: J,
    queue: mpsc::Receiver<J::Job>,
    priority: Priority,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name).spawn(move || {
        // Allowed: whoever asked for it checked first (`priority::check`).
        let _ = crate::priority::set(priority);
        let configured = backend.configure(&image);
        let serving = jobs.configured(backend.as_ref(), configured);
        while let Ok(job) = queue.recv() {
            if serving {
                jobs.run(backend.as_mut(), job);
            } else {
                jobs.skip(backend.as_ref(), job);
            }
        }
    })
}

/// Runs `payload` on `backend`; a backend that panics fails this job, never the worker's thread.
pub fn run_guarded(backend: &mut dyn Backend, payload: &Payload) -> Result<Executed, BackendError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| backend.submit(payload)))
        .unwrap_or_else(|_| Err(BackendError::Kernel("the backend panicked".into())))
}

//! The worker API over tonic: translates each call to the host's [`Slots`]. A scheduler of another
//! worker API version is refused at Describe; a job is run only for the session that took its lease.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::leases::{LeaseError, Slots, lost};
use crate::datapath::work::Payload;
use crate::worker_api::wire::pb::worker_server::Worker;
use crate::worker_api::wire::{self, API_VERSION, SPORK_VERSION, pb};

/// The service over a host's slots.
pub struct Service {
    /// The slots.
    pub slots: Arc<Slots>,
    /// How the host describes its board.
    pub board: String,
    /// The last version skew refused, logged once (a refused scheduler asks again every check).
    pub refused: Mutex<Option<String>>,
}

impl Service {
    /// Logs `why` unless it was the last refusal logged.
    fn log_refusal(&self, why: &str) {
        let mut last = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        if last.as_deref() != Some(why) {
            tracing::warn!("{why}");
            *last = Some(why.to_string());
        }
    }
}

impl From<LeaseError> for Status {
    fn from(e: LeaseError) -> Status {
        match e {
            LeaseError::Full(_) => Status::resource_exhausted(e.to_string()),
            LeaseError::Invalid(_) => Status::invalid_argument(e.to_string()),
            LeaseError::Backend(_) => Status::failed_precondition(e.to_string()),
        }
    }
}

type Results = Pin<Box<dyn Stream<Item = Result<pb::JobResult, Status>> + Send>>;

#[tonic::async_trait]
impl Worker for Service {
    async fn describe(&self, req: Request<pb::DescribeRequest>) -> Result<Response<pb::HostInfo>, Status> {
        let req = req.into_inner();
        let skew = wire::version_skew("the scheduler", req.api_version, &req.version, "worker host");
        if let Some(why) = skew {
            self.log_refusal(&why);
            return Err(Status::failed_precondition(why));
        }
        let o = &self.slots.offer;
        Ok(Response::new(pb::HostInfo {
            cpu_slots: o.cpu,
            fpga_slots: o.fpga,
            board: self.board.clone(),
            lease_timeout_ms: o.lease_timeout.as_millis() as u64,
            api_version: API_VERSION,
            version: SPORK_VERSION.into(),
        }))
    }

    async fn configure(
        &self,
        req: Request<pb::ConfigureRequest>,
    ) -> Result<Response<pb::ConfigureReply>, Status> {
        let req = req.into_inner();
        let slots = self.slots.clone();
        // Configuring blocks (a board's image load): off the protocol's threads.
        let granted = tokio::task::spawn_blocking(move || slots.configure(&req))
            .await
            .map_err(|e| Status::internal(format!("configuring panicked: {e}")))??;
        Ok(Response::new(pb::ConfigureReply {
            lease: granted.lease,
            measured_ns: granted.configured.measured.as_nanos() as u64,
            configured_delay_ns: granted.configured.configured_delay.as_nanos() as u64,
            reference: granted.reference,
            power: Some(granted.power.into()),
        }))
    }

    type RunStream = Results;

    async fn run(&self, req: Request<Streaming<pb::Job>>) -> Result<Response<Results>, Status> {
        let mut jobs = req.into_inner();
        let slots = self.slots.clone();
        let (tx, rx) = mpsc::channel(4);
        // One job at a time, in order: the slot is a FIFO queue anyway.
        tokio::spawn(async move {
            while let Ok(Some(job)) = jobs.message().await {
                let id = job.id;
                // Another session's lease is refused like a lease not held: unrun, its record untouched.
                let held = slots.lease(job.session, job.lease);
                let answer = match (held, job.payload.map(Payload::try_from)) {
                    (None, _) => lost(
                        id,
                        format!(
                            "lease {} is not held here for this session (released, reaped after silence, \
                             or another scheduler's)",
                            job.lease
                        ),
                    ),
                    (_, None) => lost(id, "a job without a payload".into()),
                    (_, Some(Err(e))) => pb::JobResult {
                        id,
                        result: Some(pb::job_result::Result::KernelError(e.to_string())),
                        ..Default::default()
                    },
                    (Some(lease), Some(Ok(payload))) => lease
                        .run(id, payload)
                        .await
                        .unwrap_or_else(|_| lost(id, "the slot's thread ended".into())),
                };
                if tx.send(Ok(answer)).await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn release(&self, req: Request<pb::ReleaseRequest>) -> Result<Response<pb::ReleaseReply>, Status> {
        let r = req.into_inner();
        self.slots.release(r.session, r.lease);
        Ok(Response::new(pb::ReleaseReply {}))
    }

    async fn power(&self, req: Request<pb::PowerRequest>) -> Result<Response<pb::PowerReply>, Status> {
        let leases =
            self.slots.power(req.into_inner().session).into_iter().map(|(id, p)| (id, p.into())).collect();
        Ok(Response::new(pb::PowerReply { leases }))
    }

    async fn health(&self, req: Request<pb::HealthRequest>) -> Result<Response<pb::HealthReply>, Status> {
        let leases = self.slots.heard(req.into_inner().session);
        let free = self.slots.free();
        Ok(Response::new(pb::HealthReply {
            leases,
            free_cpu_slots: free.cpu,
            free_fpga_slots: free.fpga,
            api_version: API_VERSION,
        }))
    }
}

//! The worker API over tonic: translates each call to the host's [`Slots`].

use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::leases::{LeaseError, Slots, lost};
use crate::runtime::backend::remote::wire::pb;
use crate::runtime::backend::remote::wire::pb::worker_server::Worker;
use crate::runtime::work::Payload;

/// The service over a host's slots.
pub struct Service {
    /// The slots.
    pub slots: Arc<Slots>,
    /// How the host describes its board.
    pub board: String,
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
    async fn describe(&self, _: Request<pb::DescribeRequest>) -> Result<Response<pb::HostInfo>, Status> {
        let o = &self.slots.offer;
        Ok(Response::new(pb::HostInfo {
            cpu_slots: o.cpu,
            fpga_slots: o.fpga,
            board: self.board.clone(),
            lease_timeout_ms: o.lease_timeout.as_millis() as u64,
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
                let answer = match (slots.lease(job.lease), job.payload.map(Payload::try_from)) {
                    (None, _) => lost(
                        id,
                        format!("lease {} is not held here (released, or reaped after silence)", job.lease),
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
        Ok(Response::new(pb::HealthReply { leases, free_cpu_slots: free.cpu, free_fpga_slots: free.fpga }))
    }
}

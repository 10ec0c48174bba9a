//! A slot on a worker host as one worker of the engine: configuring it leases a slot and
//! configures it with the image there (the latency measured here, network included); jobs go over
//! one stream per lease, each with its own id. A stream that breaks on a host that still answers
//! is opened again and the job re-sent under the same id, which the host never runs twice; a host
//! that does not answer is down, and the job fails as `Lost` (its request re-runs elsewhere).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};
use tonic::Streaming;
use tonic::transport::Channel;

use super::hosts::{Hosts, LostNotify, Reserved};
use super::wire::pb;
use super::wire::pb::worker_client::WorkerClient;
use crate::model::Kind;
use crate::runtime::backend::{Backend, BackendError, Configured, Executed, Power};
use crate::runtime::calibrate::Calibration;
use crate::runtime::work::{KernelImage, Output, Payload};

/// How long configuring may take beyond its configured delay (a real board's image load).
const CONFIGURE_TIMEOUT: Duration = Duration::from_secs(120);

/// A leased slot.
struct Leased {
    addr: SocketAddr,
    client: WorkerClient<Channel>,
    lease: u64,
    lost: watch::Receiver<bool>,
    stream: Option<(mpsc::Sender<pb::Job>, Streaming<pb::JobResult>)>,
}

/// A worker of `kind` on some worker host.
pub struct RemoteSlot {
    kind: Kind,
    hosts: Hosts,
    /// The host whose slot was reserved for it (none was free: configuring fails).
    reserved: Option<Reserved>,
    calibration: Calibration,
    delay: Duration,
    notify: Option<LostNotify>,
    leased: Option<Leased>,
    reference: bool,
    next_id: u64,
    power: Power,
}

impl RemoteSlot {
    /// Whether a slot was reserved for it.
    pub fn is_reserved(&self) -> bool {
        self.reserved.is_some()
    }

    /// A slot of `kind` from `hosts`, configured with `delay` on top of its measured configuration;
    /// the slot is reserved now, on the host with the most free (none free: configuring fails).
    pub fn new(kind: Kind, hosts: Hosts, calibration: &Calibration, delay: Duration) -> RemoteSlot {
        RemoteSlot {
            kind,
            reserved: hosts.reserve(kind),
            hosts,
            calibration: *calibration,
            delay,
            notify: None,
            leased: None,
            reference: false,
            next_id: 0,
            power: Power { watts: 0.0, measured: false },
        }
    }

    fn configure_request(&self, image: &KernelImage) -> pb::ConfigureRequest {
        pb::ConfigureRequest {
            session: self.hosts.inner.session,
            kind: match self.kind {
                Kind::Cpu => pb::SlotKind::Cpu,
                Kind::Fpga => pb::SlotKind::Fpga,
            } as i32,
            kernel: image.kernel.name().into(),
            image_seed: image.seed,
            delay_ns: self.delay.as_nanos() as u64,
            clock_hz: self.calibration.clock_hz,
            items_per_sec: self.calibration.items_per_sec,
            items_per_cycle: self.calibration.items_per_cycle,
        }
    }

    /// One attempt at `job` on the lease's stream (opened if it is not).
    async fn attempt(l: &mut Leased, job: pb::Job) -> Result<pb::JobResult, String> {
        if l.stream.is_none() {
            let (tx, rx) = mpsc::channel(4);
            let out = tokio_stream::wrappers::ReceiverStream::new(rx);
            let replies = l.client.run(out).await.map_err(|s| s.message().to_string())?.into_inner();
            l.stream = Some((tx, replies));
        }
        let Some((tx, replies)) = l.stream.as_mut() else { return Err("no stream".into()) };
        let id = job.id;
        tx.send(job).await.map_err(|_| "the job stream closed".to_string())?;
        let mut lost = l.lost.clone();
        loop {
            tokio::select! {
                m = replies.message() => match m {
                    Ok(Some(r)) if r.id == id => return Ok(r),
                    Ok(Some(_)) => continue, // a retried job's earlier answer
                    Ok(None) => return Err("the host ended the job stream".into()),
                    Err(s) => return Err(format!("{}: {}", s.code(), s.message())),
                },
                _ = lost.wait_for(|&l| l) => return Err("the host is down".into()),
            }
        }
    }
}

impl Backend for RemoteSlot {
    fn kind(&self) -> Kind {
        self.kind
    }

    fn configure(&mut self, image: &KernelImage) -> Result<Configured, BackendError> {
        let what = format!("a remote {} slot with {}", self.kind.name(), image.kernel.name());
        let fail = |reason: String| BackendError::Configure { what: what.clone(), reason };
        let Reserved { addr, mut client, mut downs } = self
            .reserved
            .take()
            .ok_or_else(|| fail(format!("no worker host has a free {} slot", self.kind.name())))?;
        let started = Instant::now();
        let request = self.configure_request(image);
        let limit = self.delay + CONFIGURE_TIMEOUT;
        // The timer is made inside the client's runtime (a worker's thread has none); a host that
        // goes down meanwhile ends the wait (its health checks, not the RPC's timeout, say so).
        let answer = self.hosts.block_on(async {
            tokio::select! {
                a = tokio::time::timeout(limit, client.configure(request)) => Some(a),
                _ = downs.changed() => None,
            }
        });
        let reply = match answer {
            Some(Ok(Ok(r))) => r.into_inner(),
            Some(Ok(Err(status))) => {
                self.hosts.unreserve(addr, self.kind);
                if status.code() == tonic::Code::Unavailable {
                    self.hosts.check_now(addr, "configuring a slot failed");
                }
                return Err(fail(format!("worker host {addr}: {}", status.message())));
            }
            Some(Err(_)) => {
                self.hosts.unreserve(addr, self.kind);
                return Err(fail(format!("worker host {addr} did not answer within {limit:?}")));
            }
            None => return Err(fail(format!("worker host {addr} went down while configuring"))),
        };
        let took = started.elapsed();
        let configured_delay = Duration::from_nanos(reply.configured_delay_ns);
        let notify = self.notify.take().unwrap_or_else(|| Box::new(|_| {}));
        let lost = self.hosts.register(addr, reply.lease, self.kind, notify);
        self.reference = reply.reference;
        self.power = reply.power.map(Power::from).unwrap_or(self.power);
        self.leased = Some(Leased { addr, client, lease: reply.lease, lost, stream: None });
        // What the host measured plus the network both ways: the slot's spin-up as the scheduler sees it.
        Ok(Configured { measured: took.saturating_sub(configured_delay), configured_delay })
    }

    fn submit(&mut self, payload: &Payload) -> Result<Executed, BackendError> {
        let l = self.leased.as_mut().ok_or(BackendError::NotConfigured)?;
        if *l.lost.borrow() {
            return Err(BackendError::Lost(format!("worker host {} is down", l.addr)));
        }
        self.next_id += 1;
        let job = pb::Job { lease: l.lease, id: self.next_id, payload: Some(payload.into()) };
        let hosts = self.hosts.clone();
        let mut result = hosts.block_on(Self::attempt(l, job.clone()));
        if let Err(e) = &result {
            l.stream = None;
            // The same job again on a new stream if the host still answers: it runs at most once.
            if !*l.lost.borrow() && hosts.check_now(l.addr, &format!("a job's stream broke ({e})")) {
                result = hosts.block_on(Self::attempt(l, job));
            }
        }
        let r = result.map_err(|e| BackendError::Lost(format!("worker host {}: {e}", l.addr)))?;
        self.power = r.power.map(Power::from).unwrap_or(self.power);
        let device = r.has_device.then(|| (r.cycles, Duration::from_nanos(r.device_ns)));
        match r.result {
            Some(pb::job_result::Result::Output(o)) => {
                let output = Output::try_from(o).map_err(|e| BackendError::Kernel(e.to_string()))?;
                Ok(Executed { output, device })
            }
            Some(pb::job_result::Result::KernelError(e)) => Err(BackendError::Kernel(e)),
            Some(pb::job_result::Result::Lost(e)) => {
                Err(BackendError::Lost(format!("worker host {}: {e}", l.addr)))
            }
            None => Err(BackendError::Kernel(format!("worker host {} answered without a result", l.addr))),
        }
    }

    fn power(&self) -> Power {
        self.power
    }

    fn is_reference(&self) -> bool {
        self.reference
    }

    fn on_lost(&mut self, notify: LostNotify) {
        self.notify = Some(notify);
    }
}

impl Drop for RemoteSlot {
    fn drop(&mut self) {
        if let Some(r) = self.reserved.take() {
            self.hosts.unreserve(r.addr, self.kind);
        }
        if let Some(l) = self.leased.take() {
            self.hosts.release(l.addr, l.lease);
        }
    }
}

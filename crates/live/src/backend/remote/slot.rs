//! A slot on a worker host as one worker of the engine: configuring it leases a slot and
//! configures it with the image there (the latency measured here, network included); jobs go over
//! one stream per lease, each with its own id. A stream that breaks on a host that still answers
//! is opened again and the job re-sent under the same id, which the host never runs twice; a host
//! that does not answer is down, and the job fails as `Lost` (its request re-runs elsewhere).
//!
//! A host's answer is not trusted: every job waits at most its bound (a fixed allowance plus a
//! multiple of its expected time), past which the host is quarantined as stuck and the job lost;
//! an answer must be of the job's kind and length ([`Payload::expects`]) with a board time within
//! the same bound; every board answer is held to the reference here, as a local board's is (a
//! host's claim that its board is an emulation whose answers are the reference's own does not
//! change that), and one in [`super::RemoteConfig::audit_one_in`] of a CPU slot's. An answer that
//! fails is never given to a client: the job fails as [`BackendError::BadAnswer`] (its request
//! re-runs elsewhere) and the host is quarantined.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, mpsc, watch};
use tonic::Streaming;
use tonic::transport::Channel;

use super::hosts::{Counts, Hosts, kib};
use super::leases::{LostNotify, Reserved};
use crate::backend::calibrate::Calibration;
use crate::backend::{Backend, BackendError, Configured, Executed, Power};
use crate::datapath::work::{KernelImage, Output, Payload};
use crate::worker_api::wire::pb;
use crate::worker_api::wire::pb::worker_client::WorkerClient;
use spork_core::model::Kind;

/// How long configuring may take beyond its configured delay (a real board's image load).
const CONFIGURE_TIMEOUT: Duration = Duration::from_secs(120);

/// A job's expected time (its items at the scheduler's measured speed) is multiplied by this in its
/// bound: a host more than this much slower than this machine measured is as good as stuck.
const JOB_SLACK: f64 = 4.0;

/// No remote job waits, nor reports board time, longer than this (an hour) however large it is:
/// far beyond any request a deadline allows, and far below a timeline's 584 years.
pub const MAX_JOB_TIME: Duration = Duration::from_secs(3600);

/// Why a job got no answer.
enum Unanswered {
    /// The stream broke or the host is down.
    Broke(String),
    /// No answer within the job's bound.
    TimedOut,
    /// A message past the stream's decode bound, refused before it was read.
    Oversized(String),
}

/// A leased slot.
struct Leased {
    addr: SocketAddr,
    client: WorkerClient<Channel>,
    lease: u64,
    lost: watch::Receiver<bool>,
    stream: Option<(mpsc::Sender<pb::Job>, Streaming<pb::JobResult>)>,
    /// The host's answer budget in KiB, shared by its slots.
    decode: Arc<Semaphore>,
    /// The largest message the stream decodes; a job holds this much of `decode` until answered.
    stream_limit: u64,
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
    /// The image configured: audits compute the reference with it.
    image: Option<KernelImage>,
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
            image: None,
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
            delay_ns: self.delay.as_nanos() as u64,
            clock_hz: self.calibration.clock_hz,
            items_per_sec: self.calibration.items_per_sec,
            items_per_cycle: self.calibration.items_per_cycle,
            model_digest: image.kernel.digest.clone(),
        }
    }

    /// How long a job of `payload` may take, and the most board time it may report: the fixed
    /// allowance plus [`JOB_SLACK`] times its expected time at the scheduler's measured speed (the
    /// board's for an FPGA slot), at most [`MAX_JOB_TIME`].
    fn job_limit(&self, payload: &Payload) -> Duration {
        let rate = match self.kind {
            Kind::Cpu => self.calibration.items_per_sec,
            Kind::Fpga => self.calibration.device_items_per_sec(),
        };
        let expected = payload.items() as f64 / rate * JOB_SLACK;
        // A zero or unusable rate: the job gets the longest bound rather than none.
        let expected = Duration::try_from_secs_f64(expected).unwrap_or(MAX_JOB_TIME);
        self.hosts.job_timeout().saturating_add(expected).min(MAX_JOB_TIME)
    }

    /// One attempt at `job` before `deadline`, holding the stream's decode bound from the host's
    /// budget until answered (so a host's answers in flight never pass it, whatever its slots).
    async fn attempt_until(
        l: &mut Leased,
        job: pb::Job,
        deadline: Instant,
    ) -> Result<pb::JobResult, Unanswered> {
        let decode = l.decode.clone();
        let held = kib(l.stream_limit);
        let attempt = async move {
            let _permit = decode.acquire_many(held).await.map_err(|e| Unanswered::Broke(e.to_string()))?;
            Self::attempt(l, job).await
        };
        match tokio::time::timeout_at(deadline.into(), attempt).await {
            Ok(r) => r,
            Err(_) => Err(Unanswered::TimedOut),
        }
    }

    /// Sizes the lease's stream for `payload`'s answer: a stream whose bound is below it is opened
    /// anew with the next power of two (at least 1 MiB, at most the host's budget). An answer that
    /// cannot fit the host's budget fails its job.
    fn size_stream(&mut self, payload: &Payload) -> Result<(), BackendError> {
        let budget = self.hosts.decode_per_host();
        let need = payload.answer_wire_max();
        let l = self.leased.as_mut().ok_or(BackendError::NotConfigured)?;
        if need > budget {
            return Err(BackendError::Kernel(format!(
                "its answer may take {need} bytes, past the {budget} bytes one worker host may send at once \
                 (fix: serve requests this large on local workers, or split them)"
            )));
        }
        if need > l.stream_limit {
            l.stream = None;
            l.stream_limit = need.next_power_of_two().max(1 << 20).min(budget);
        }
        Ok(())
    }

    /// One attempt at `job` on the lease's stream (opened if it is not).
    async fn attempt(l: &mut Leased, job: pb::Job) -> Result<pb::JobResult, Unanswered> {
        Self::attempt_once(l, job).await.map_err(|s| match s.code() {
            tonic::Code::OutOfRange => Unanswered::Oversized(s.message().to_string()),
            _ => Unanswered::Broke(format!("{}: {}", s.code(), s.message())),
        })
    }

    async fn attempt_once(l: &mut Leased, job: pb::Job) -> Result<pb::JobResult, tonic::Status> {
        if l.stream.is_none() {
            let (tx, rx) = mpsc::channel(4);
            let out = tokio_stream::wrappers::ReceiverStream::new(rx);
            let limit = usize::try_from(l.stream_limit).unwrap_or(usize::MAX);
            let mut client = l.client.clone().max_decoding_message_size(limit);
            let replies = client.run(out).await?.into_inner();
            l.stream = Some((tx, replies));
        }
        let Some((tx, replies)) = l.stream.as_mut() else { return Err(tonic::Status::unknown("no stream")) };
        let id = job.id;
        tx.send(job).await.map_err(|_| tonic::Status::unavailable("the job stream closed"))?;
        let mut lost = l.lost.clone();
        loop {
            tokio::select! {
                m = replies.message() => match m {
                    Ok(Some(r)) if r.id == id => return Ok(r),
                    Ok(Some(_)) => continue, // a retried job's earlier answer
                    Ok(None) => return Err(tonic::Status::unavailable("the host ended the job stream")),
                    Err(s) => return Err(s),
                },
                _ = lost.wait_for(|&l| l) => return Err(tonic::Status::unavailable("the host is down")),
            }
        }
    }
}

impl RemoteSlot {
    /// Sends `payload` as the next job and waits for its answer, at most `limit` in all. A stream
    /// that breaks on a host that still answers is opened again and the job re-sent under the same
    /// id (it runs at most once); no answer within `limit` quarantines the host as stuck.
    fn exchange(
        &mut self,
        payload: &Payload,
        limit: Duration,
    ) -> Result<(SocketAddr, pb::JobResult), BackendError> {
        self.size_stream(payload)?;
        let l = self.leased.as_mut().ok_or(BackendError::NotConfigured)?;
        if *l.lost.borrow() {
            return Err(BackendError::Lost(format!("worker host {} is down", l.addr)));
        }
        self.next_id += 1;
        let session = self.hosts.inner.session;
        let job = pb::Job { session, lease: l.lease, id: self.next_id, payload: Some(payload.into()) };
        let hosts = self.hosts.clone();
        let deadline = Instant::now() + limit;
        let mut result = hosts.block_on(Self::attempt_until(l, job.clone(), deadline));
        if let Err(Unanswered::Broke(e)) = &result {
            l.stream = None;
            // The same job again on a new stream if the host still answers: it runs at most once.
            if !*l.lost.borrow() && hosts.check_now(l.addr, &format!("a job's stream broke ({e})")) {
                result = hosts.block_on(Self::attempt_until(l, job, deadline));
            }
        }
        let addr = l.addr;
        match result {
            Ok(r) => Ok((addr, r)),
            Err(Unanswered::Broke(e)) => {
                l.stream = None;
                Err(BackendError::Lost(format!("worker host {addr}: {e}")))
            }
            Err(Unanswered::TimedOut) => {
                // The stream may yet carry the late answer: a new one is opened for the next job.
                l.stream = None;
                Counts::add(&hosts.inner.counts.timed_out);
                let why = format!(
                    "worker host {addr} answered no job within {limit:?} (a stuck host: check it; its \
                     slots re-run elsewhere)"
                );
                hosts.quarantine(addr, &why, None);
                Err(BackendError::Lost(why))
            }
            Err(Unanswered::Oversized(e)) => {
                // Refused at its length prefix, never read: the stream is unusable after it.
                l.stream = None;
                Counts::add(&hosts.inner.counts.refused);
                let why = format!("worker host {addr} sent more than its job's answer can take ({e})");
                hosts.quarantine(addr, &why, Some(l.lease));
                Err(BackendError::BadAnswer(why))
            }
        }
    }

    /// The job `r` answers, once held to what `payload` can produce ([`RemoteSlot::checked`]) and,
    /// now and then, to the reference ([`RemoteSlot::audit`]); a host's kernel error or lost lease
    /// passes through as is.
    fn accept(
        &self,
        addr: SocketAddr,
        r: pb::JobResult,
        payload: &Payload,
        limit: Duration,
    ) -> Result<Executed, BackendError> {
        let output = match r.result {
            Some(pb::job_result::Result::Output(o)) => Output::try_from(o).map_err(|e| e.to_string()),
            Some(pb::job_result::Result::KernelError(e)) => return Err(BackendError::Kernel(e)),
            Some(pb::job_result::Result::Lost(e)) => {
                return Err(BackendError::Lost(format!("worker host {addr}: {e}")));
            }
            None => Err("an answer without a result".to_string()),
        };
        let device = r.has_device.then(|| (r.cycles, Duration::from_nanos(r.device_ns)));
        let output = output.and_then(|o| self.checked(payload, o, device, limit)).map_err(|why| {
            Counts::add(&self.hosts.inner.counts.refused);
            BackendError::BadAnswer(format!("worker host {addr}: {why}"))
        })?;
        self.audit(addr, payload, &output)?;
        Ok(Executed { output, device })
    }

    /// `output` if it is of `payload`'s kind and length and its board time `device` is possible
    /// (none for a CPU slot; within `limit`, in time and in cycles at the board's clock, for a board).
    fn checked(
        &self,
        payload: &Payload,
        output: Output,
        device: Option<(u64, Duration)>,
        limit: Duration,
    ) -> Result<Output, String> {
        payload.expects(&output).map_err(|e| e.to_string())?;
        match (self.kind, device) {
            (Kind::Cpu, Some(_)) => Err("board time reported for a CPU job".into()),
            (Kind::Fpga, Some((cycles, took))) => {
                let at_clock = cycles as f64 / self.calibration.clock_hz;
                if took > limit || at_clock > limit.as_secs_f64() {
                    return Err(format!(
                        "a board time of {took:?} ({cycles} cycles) for a job bounded by {limit:?}"
                    ));
                }
                Ok(output)
            }
            _ => Ok(output),
        }
    }

    /// Whether this answer is compared with the reference: every board answer (the host's word on
    /// what its board is counts for nothing), one in `audit_one_in` of a CPU slot's.
    fn audits(&self) -> bool {
        let one_in = self.hosts.audit_one_in();
        self.kind == Kind::Fpga || (one_in > 0 && rand::random_ratio(1, one_in))
    }

    /// When audited, why `output` is not the reference's answer to `payload` (computed here).
    fn audit(&self, addr: SocketAddr, payload: &Payload, output: &Output) -> Result<(), BackendError> {
        let Some(image) = self.image.as_ref().filter(|_| self.audits()) else { return Ok(()) };
        let counts = &self.hosts.inner.counts;
        Counts::add(&counts.audited);
        match image.reference(payload) {
            Ok(want) if &want == output => Ok(()),
            answer => {
                Counts::add(&counts.mismatched);
                let why = match answer {
                    Ok(_) => "its answer differs from the reference".to_string(),
                    Err(e) => format!("it answered a job the reference has no answer to ({e})"),
                };
                Err(BackendError::BadAnswer(format!("worker host {addr}: {why}")))
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
        let Reserved { addr, mut client, mut downs, decode } = self
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
        self.image = Some(image.clone());
        self.power = reply.power.map(Power::from).unwrap_or(self.power);
        let stream_limit = 0;
        self.leased =
            Some(Leased { addr, client, lease: reply.lease, lost, stream: None, decode, stream_limit });
        // What the host measured plus the network both ways: the slot's spin-up as the scheduler sees it.
        Ok(Configured { measured: took.saturating_sub(configured_delay), configured_delay, invocation: None })
    }

    fn submit(&mut self, payload: &Payload) -> Result<Executed, BackendError> {
        let limit = self.job_limit(payload);
        let (addr, r) = self.exchange(payload, limit)?;
        self.power = r.power.map(Power::from).unwrap_or(self.power);
        self.accept(addr, r, payload, limit).inspect_err(|e| {
            if let BackendError::BadAnswer(why) = e {
                // This slot fails through its answer (the engine counts it as refused); the host's
                // other slots are lost with it.
                let own = self.leased.as_ref().map(|l| l.lease);
                self.hosts.quarantine(addr, why, own);
            }
        })
    }

    fn power(&self) -> Power {
        self.power
    }

    fn checks_answers(&self) -> bool {
        // Every board answer in `audit`; a CPU slot's are not checked by its worker anyway.
        true
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

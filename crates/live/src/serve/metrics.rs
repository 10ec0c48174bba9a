//! Prometheus metrics (`GET /metrics`, the text exposition format): what the server answered, how
//! fast and how late, per model and worker type; and each pool's state, read from what its
//! dispatcher publishes at scrape time.

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::backend::remote::Hosts;
use crate::live::status::{STATES, Status};
use spork_core::model::Kind;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    model: String,
    kind: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelKind {
    model: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelOnly {
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerdictLabels {
    model: String,
    verdict: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkerLabels {
    model: String,
    kind: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EnergyLabels {
    model: String,
    kind: String,
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Quantile {
    model: String,
    quantile: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HostLabels {
    host: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KernelEvent {
    model: String,
    event: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateOnly {
    state: String,
}

type FGauge = Gauge<f64, AtomicU64>;

/// Every outcome a request is counted under (`ServeError::outcome`, and the served and cancelled).
const OUTCOMES: [&str; 9] = [
    "ok",
    "missed",
    "cancelled",
    "invalid",
    "unauthorized",
    "forbidden",
    "rejected",
    "unavailable",
    "failed",
];

/// What a model's kernel processes go through.
const KERNEL_EVENTS: [&str; 3] = ["started", "crashed", "timed_out"];

/// The server's metrics.
pub struct Metrics {
    registry: Registry,
    requests: Family<Outcome, Counter>,
    refused: Family<Reason, Counter>,
    budget_bytes: Gauge,
    latency: Family<ModelKind, Histogram>,
    misses: Family<ModelOnly, Counter>,
    queue: Family<ModelOnly, Gauge>,
    workers: Family<WorkerLabels, Gauge>,
    configurations: Family<ModelOnly, Gauge>,
    configuration_seconds: Family<ModelOnly, FGauge>,
    energy: Family<EnergyLabels, FGauge>,
    brownout: Family<ModelOnly, FGauge>,
    estimate_error: Family<Quantile, FGauge>,
    fpga_target: Family<ModelOnly, Gauge>,
    fpga_cap: Family<ModelOnly, Gauge>,
    fpga_compute_units: Family<ModelOnly, Gauge>,
    reruns: Family<ModelOnly, Gauge>,
    workers_lost: Family<ModelOnly, Gauge>,
    kernel_processes: Family<KernelEvent, Gauge>,
    hosts: Family<StateOnly, Gauge>,
    host_slots: Family<HostLabels, Gauge>,
    host_leased: Family<HostLabels, Gauge>,
    hosts_lost: Gauge,
    host_answers: Family<StateOnly, Gauge>,
    engine_decisions: Family<VerdictLabels, Gauge>,
    engine_cycles: Family<ModelOnly, Gauge>,
    engine_wall: Family<ModelOnly, FGauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every family registered, none with values yet.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("spork");
        let requests = Family::<Outcome, Counter>::default();
        let (refused, budget_bytes) = (Family::<Reason, Counter>::default(), Gauge::default());
        registry.register(
            "requests_refused",
            "Requests refused before reaching a model's pool (token, body, limits, memory budget), by reason",
            refused.clone(),
        );
        registry.register(
            "inflight_bytes",
            "Bytes held by requests in flight (bodies and decoded inputs), within the memory budget",
            budget_bytes.clone(),
        );
        let latency = Family::<ModelKind, Histogram>::new_with_constructor(|| {
            // 50 us to about 30 s.
            Histogram::new(exponential_buckets(50e-6, 2.0, 20))
        });
        let (misses, queue) = (Family::default(), Family::default());
        let (workers, configurations, configuration_seconds) =
            (Family::default(), Family::default(), Family::default());
        let (energy, brownout, estimate_error) = (Family::default(), Family::default(), Family::default());
        let (fpga_target, fpga_cap, fpga_compute_units) =
            (Family::default(), Family::default(), Family::default());
        let (reruns, workers_lost, hosts) = (Family::default(), Family::default(), Family::default());
        let (host_slots, host_leased, hosts_lost) = (Family::default(), Family::default(), Gauge::default());
        registry.register(
            "request_reruns",
            "Requests re-run after their worker failed or was lost",
            reruns.clone(),
        );
        registry.register("workers_lost", "Workers lost with their worker host", workers_lost.clone());
        let kernel_processes = Family::default();
        registry.register(
            "kernel_processes",
            "A model's kernel processes so far: started, crashed (died by themselves), timed_out (killed past a call's timeout)",
            kernel_processes.clone(),
        );
        let (engine_decisions, engine_cycles, engine_wall) =
            (Family::default(), Family::default(), Family::default());
        registry.register(
            "dispatch_engine_wall_seconds",
            "Wall time spent simulating the dispatch engine (the hardware would take its cycles at its clock)",
            engine_wall.clone(),
        );
        registry.register(
            "dispatch_engine_decisions",
            "The hardware dispatch engine's decisions against the software rule's: agree, tie (another board \
             starting in the same cycle), disagree, or beyond the engine (decided in software)",
            engine_decisions.clone(),
        );
        registry.register(
            "dispatch_engine_cycles",
            "Engine cycles its decisions took, element writes included",
            engine_cycles.clone(),
        );
        registry.register(
            "worker_hosts",
            "Worker hosts by state (up: answering health checks)",
            hosts.clone(),
        );
        registry.register("worker_host_slots", "Slots a worker host offers, by type", host_slots.clone());
        registry.register(
            "worker_host_slots_leased",
            "Slots leased on a worker host, by type",
            host_leased.clone(),
        );
        registry.register("worker_hosts_lost", "Times a worker host went down", hosts_lost.clone());
        let host_answers = Family::<StateOnly, Gauge>::default();
        registry.register(
            "worker_host_answers",
            "Worker hosts' answers checked: audited (held to the reference: every board answer, one in 32 CPU \
             answers), mismatched (of those), bad (wrong kind or length, impossible device time, past \
             its decode bound), timed_out (never answered)",
            host_answers.clone(),
        );
        registry.register(
            "requests",
            "Inference requests by model, worker type (none if not served) and outcome",
            requests.clone(),
        );
        registry.register("request_duration_seconds", "Response time of served requests", latency.clone());
        registry.register(
            "deadline_misses",
            "Served requests that finished after their deadline",
            misses.clone(),
        );
        registry.register("queue_depth", "Requests accepted and not yet answered", queue.clone());
        registry.register("workers", "Workers by type and state", workers.clone());
        registry.register(
            "fpga_configurations",
            "FPGA configurations (reconfigurations) so far",
            configurations.clone(),
        );
        registry.register(
            "fpga_configuration_seconds_sum",
            "Measured time of all FPGA configurations so far",
            configuration_seconds.clone(),
        );
        registry.register("energy_joules", "Energy so far by worker type", energy.clone());
        registry.register(
            "brownout_setting",
            "The brownout gate's setting (queue threshold or dimmer)",
            brownout.clone(),
        );
        registry.register(
            "size_estimate_error_ratio",
            "Relative error of the online size estimate on CPU answers",
            estimate_error.clone(),
        );
        registry.register(
            "fpga_target",
            "FPGAs the pool's allocator holds for the coming interval",
            fpga_target.clone(),
        );
        registry.register(
            "fpga_cap",
            "FPGAs the pool may hold: its cap, or with shared boards its latest grant (absent: no cap)",
            fpga_cap.clone(),
        );
        registry.register(
            "fpga_compute_units",
            "Compute units per FPGA board: requests one board serves at once (the FPGA counts are boards)",
            fpga_compute_units.clone(),
        );
        Metrics {
            registry,
            engine_decisions,
            engine_cycles,
            engine_wall,
            reruns,
            workers_lost,
            kernel_processes,
            hosts,
            host_slots,
            host_leased,
            hosts_lost,
            host_answers,
            fpga_target,
            fpga_cap,
            fpga_compute_units,
            requests,
            refused,
            budget_bytes,
            latency,
            misses,
            queue,
            workers,
            configurations,
            configuration_seconds,
            energy,
            brownout,
            estimate_error,
        }
    }

    /// A request on `model` ended with `outcome`; served ones on `kind` after `seconds`.
    pub fn request(
        &self,
        model: &str,
        kind: Option<Kind>,
        outcome: &str,
        seconds: Option<f64>,
        missed: bool,
    ) {
        let kind_name = kind.map_or("none", Kind::name).to_string();
        let labels = Outcome { model: model.into(), kind: kind_name.clone(), outcome: outcome.into() };
        self.requests.get_or_create(&labels).inc();
        if let Some(s) = seconds {
            self.latency.get_or_create(&ModelKind { model: model.into(), kind: kind_name }).observe(s);
        }
        if missed {
            self.misses.get_or_create(&ModelOnly { model: model.into() }).inc();
        }
    }

    /// Removes every series of `model` (unloaded, its last request done).
    pub fn forget(&self, model: &str) {
        let m = || model.to_string();
        let mo = ModelOnly { model: m() };
        self.misses.remove(&mo);
        for f in [
            &self.queue,
            &self.reruns,
            &self.workers_lost,
            &self.configurations,
            &self.fpga_target,
            &self.fpga_cap,
            &self.fpga_compute_units,
            &self.engine_cycles,
        ] {
            f.remove(&mo);
        }
        for f in [&self.configuration_seconds, &self.brownout, &self.engine_wall] {
            f.remove(&mo);
        }
        let kinds = Kind::ALL.iter().map(|k| k.name()).chain(["none"]);
        for kind in kinds {
            for outcome in OUTCOMES {
                self.requests.remove(&Outcome { model: m(), kind: kind.into(), outcome: outcome.into() });
            }
            self.latency.remove(&ModelKind { model: m(), kind: kind.into() });
            for state in STATES {
                self.workers.remove(&WorkerLabels {
                    model: m(),
                    kind: kind.into(),
                    state: state.name().into(),
                });
            }
            self.energy.remove(&EnergyLabels { model: m(), kind: kind.into(), source: "modelled".into() });
        }
        for verdict in ["agree", "tie", "disagree", "beyond"] {
            self.engine_decisions.remove(&VerdictLabels { model: m(), verdict: verdict.into() });
        }
        for quantile in ["0.5", "0.95"] {
            self.estimate_error.remove(&Quantile { model: m(), quantile: quantile.into() });
        }
        for event in KERNEL_EVENTS {
            self.kernel_processes.remove(&KernelEvent { model: m(), event: event.into() });
        }
    }

    /// A request was refused before a pool saw it, for `reason` (an outcome label).
    pub fn refused(&self, reason: &str) {
        self.refused.get_or_create(&Reason { reason: reason.into() }).inc();
    }

    /// The bytes requests in flight hold now.
    pub fn inflight_bytes(&self, bytes: usize) {
        self.budget_bytes.set(bytes as i64);
    }

    /// A request on `model` was accepted (+1) or answered (-1).
    pub fn queue(&self, model: &str, delta: i64) {
        self.queue.get_or_create(&ModelOnly { model: model.into() }).inc_by(delta);
    }

    /// The text exposition of everything, with `pools`' published state read now.
    pub fn render<'a>(
        &self,
        pools: impl Iterator<Item = (&'a str, &'a Status)>,
        hosts: Option<&Hosts>,
    ) -> String {
        for (model, status) in pools {
            self.read(model, status);
        }
        if let Some(h) = hosts {
            self.read_hosts(h);
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }

    /// Reads model `model`'s kernel processes' counters (isolated CPU code only).
    pub fn kernel_processes(&self, model: &str, c: &crate::repository::isolate::Counters) {
        for (event, n) in KERNEL_EVENTS.into_iter().zip([&c.started, &c.crashed, &c.timed_out]) {
            let labels = KernelEvent { model: model.into(), event: event.into() };
            self.kernel_processes.get_or_create(&labels).set(n.load(Ordering::Relaxed) as i64);
        }
    }

    fn read_hosts(&self, hosts: &Hosts) {
        let (views, lost) = hosts.snapshot();
        let up = views.iter().filter(|v| v.up).count() as i64;
        self.hosts.get_or_create(&StateOnly { state: "up".into() }).set(up);
        self.hosts.get_or_create(&StateOnly { state: "down".into() }).set(views.len() as i64 - up);
        self.hosts_lost.set(lost as i64);
        let answers = [
            ("audited", hosts.answers_audited()),
            ("mismatched", hosts.answer_mismatches()),
            ("bad", hosts.bad_answers()),
            ("timed_out", hosts.job_timeouts()),
        ];
        for (state, n) in answers {
            self.host_answers.get_or_create(&StateOnly { state: state.into() }).set(n as i64);
        }
        for v in views {
            for kind in Kind::ALL {
                let labels = HostLabels { host: v.addr.to_string(), kind: kind.name().into() };
                self.host_slots.get_or_create(&labels).set(i64::from(v.slots[kind]));
                self.host_leased.get_or_create(&labels).set(i64::from(v.leased[kind]));
            }
        }
    }

    fn read(&self, model: &str, s: &Status) {
        let m = || ModelOnly { model: model.into() };
        self.reruns.get_or_create(&m()).set(s.reruns.load(Ordering::Relaxed) as i64);
        self.workers_lost.get_or_create(&m()).set(s.workers_lost.load(Ordering::Relaxed) as i64);
        let d = s.dispatch.snapshot();
        if d.decisions + d.beyond > 0 {
            for (verdict, n) in
                [("agree", d.agree), ("tie", d.ties), ("disagree", d.disagree), ("beyond", d.beyond)]
            {
                let labels = VerdictLabels { model: model.into(), verdict: verdict.into() };
                self.engine_decisions.get_or_create(&labels).set(n as i64);
            }
            self.engine_cycles.get_or_create(&m()).set(d.cycles as i64);
            self.engine_wall.get_or_create(&m()).set(d.wall_ns as f64 / 1e9);
        }
        for kind in Kind::ALL {
            for (state, n) in STATES.iter().zip(&s.workers[kind]) {
                let labels = WorkerLabels {
                    model: model.into(),
                    kind: kind.name().into(),
                    state: state.name().into(),
                };
                self.workers.get_or_create(&labels).set(n.load(Ordering::Relaxed) as i64);
            }
            let labels =
                EnergyLabels { model: model.into(), kind: kind.name().into(), source: "modelled".into() };
            self.energy.get_or_create(&labels).set(s.energy_mj[kind].load(Ordering::Relaxed) as f64 / 1e3);
        }
        self.configurations.get_or_create(&m()).set(s.reconfigurations.load(Ordering::Relaxed) as i64);
        let us = s.reconfiguration_us.load(Ordering::Relaxed) as f64;
        self.configuration_seconds.get_or_create(&m()).set(us / 1e6);
        self.fpga_target.get_or_create(&m()).set(s.fpga_target.load(Ordering::Relaxed) as i64);
        let cus = s.fpga_compute_units.load(Ordering::Relaxed);
        self.fpga_compute_units.get_or_create(&m()).set(cus as i64);
        let cap = s.fpga_cap.load(Ordering::Relaxed);
        if cap != u64::MAX {
            self.fpga_cap.get_or_create(&m()).set(cap as i64);
        }
        let b = s.brownout_milli.load(Ordering::Relaxed);
        if b != u64::MAX {
            self.brownout.get_or_create(&m()).set(b as f64 / 1e3);
        }
        for (q, v) in ["0.5", "0.95"].iter().zip(&s.estimate_error_milli) {
            let labels = Quantile { model: model.into(), quantile: (*q).into() };
            self.estimate_error.get_or_create(&labels).set(v.load(Ordering::Relaxed) as f64 / 1e3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `forget` removes the series of every outcome a request can be counted under: the list it
    /// walks holds each label the error mapping gives.
    #[test]
    fn every_outcome_label_is_one_forget_removes() {
        for status in 100..600 {
            let o = crate::serve::error::outcome_of_http(status);
            assert!(OUTCOMES.contains(&o), "HTTP {status} is counted as '{o}', not in OUTCOMES");
        }
        for code in 0..17 {
            let o = crate::serve::error::outcome_of_grpc(tonic::Code::from(code));
            assert!(OUTCOMES.contains(&o), "gRPC code {code} is counted as '{o}', not in OUTCOMES");
        }
        let m = Metrics::new();
        m.request("x", Some(Kind::Cpu), "ok", Some(0.001), true);
        m.request("x", None, "cancelled", None, false);
        m.queue("x", 1);
        let before = m.render(std::iter::empty(), None);
        assert!(before.contains("model=\"x\""), "{before}");
        m.forget("x");
        let after = m.render(std::iter::empty(), None);
        assert!(!after.contains("model=\"x\""), "{after}");
    }
}

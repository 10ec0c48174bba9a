//! The statistics extension: per model, Triton's cumulative counts and durations (success, fail,
//! queue, compute input / infer / output, per batch size), with Spork's split by worker kind as an
//! addition (how many ran on CPUs and on boards, their queue and service time, their misses). Kept
//! with the hosted model, so an unload or reload starts them afresh, as Triton's do.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::grpc::proto;
use super::models::VERSION;

use crate::live::incoming::Served;
use spork_core::model::Time;

/// A count and the nanoseconds it took together (Triton's `StatisticDuration`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timed {
    /// Occurrences.
    pub count: u64,
    /// Their total duration, nanoseconds.
    pub ns: u64,
}

impl Timed {
    fn add(&mut self, ns: u64) {
        self.count += 1;
        self.ns = self.ns.saturating_add(ns);
    }
}

/// The executions of one batch size. A batch's members each count a share of it, so a batch of
/// `b` whose members all answered counts one execution of its whole time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// Members answered.
    pub members: u64,
    /// Their inputs' decoding, nanoseconds (each member's own).
    pub input_ns: u64,
    /// The executions' time: each member adds its share (the batch's time over its size).
    pub infer_ns: u64,
    /// Their outputs' encoding, nanoseconds.
    pub output_ns: u64,
}

/// Spork's addition: the requests one kind of worker answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByKind {
    /// Time in the pool's queue.
    pub queue: Timed,
    /// Time its workers took.
    pub infer: Timed,
    /// Answers later than their deadline.
    pub missed: u64,
}

/// One model's statistics at a moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// When its last request was answered, milliseconds since the epoch (0: none yet).
    pub last_inference_ms: u64,
    /// Requests answered, from the request's head read to its answer built.
    pub success: Timed,
    /// Requests that reached the model and failed, were refused by its pool, or were abandoned.
    pub fail: Timed,
    /// Time answered requests waited in the pool's queue.
    pub queue: Timed,
    /// Decoding answered requests' inputs into the kernel's form.
    pub compute_input: Timed,
    /// Their workers' time.
    pub compute_infer: Timed,
    /// Encoding their outputs.
    pub compute_output: Timed,
    /// Per batch size (1: unbatched).
    pub batches: BTreeMap<u32, Batch>,
    /// Per worker kind's name (`cpu`, `fpga`).
    pub kinds: BTreeMap<&'static str, ByKind>,
}

impl Snapshot {
    /// Inferences answered: one per request (a request's shapes are its own: no batch dimension).
    pub fn inference_count(&self) -> u64 {
        self.success.count
    }

    /// Model executions: a batch of `b` members is one.
    pub fn execution_count(&self) -> u64 {
        batches(self).map(|(_, executions, _)| executions).sum()
    }
}

/// How one answered request went, for [`Statistics::answered`].
#[derive(Clone, Copy, Debug)]
pub struct Answered<'a> {
    /// Where and how it ran.
    pub served: &'a Served,
    /// From its head read to its answer built.
    pub total: Duration,
    /// Decoding its inputs.
    pub input: Duration,
    /// Encoding its outputs.
    pub output: Duration,
}

/// One model's statistics, updated as its requests end.
#[derive(Debug, Default)]
pub struct Statistics(Mutex<Snapshot>);

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A pool time (nanoseconds) as the protocol's count of nanoseconds.
fn time_ns(t: Time) -> u64 {
    t
}

impl Statistics {
    /// A request answered, at `now`.
    pub fn answered(&self, a: Answered<'_>, now: SystemTime) {
        let s = a.served;
        let batch = s.batch.max(1);
        let infer = time_ns(s.service);
        let mut st = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        st.last_inference_ms = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        st.success.add(nanos(a.total));
        st.queue.add(time_ns(s.queue));
        st.compute_input.add(nanos(a.input));
        st.compute_infer.add(infer);
        st.compute_output.add(nanos(a.output));
        let b = st.batches.entry(batch).or_default();
        b.members += 1;
        b.input_ns = b.input_ns.saturating_add(nanos(a.input));
        b.infer_ns = b.infer_ns.saturating_add(infer / u64::from(batch));
        b.output_ns = b.output_ns.saturating_add(nanos(a.output));
        let k = st.kinds.entry(s.kind.name()).or_default();
        k.queue.add(time_ns(s.queue));
        k.infer.add(infer);
        k.missed += u64::from(s.missed);
    }

    /// A request that reached the model and failed (or was abandoned) after `took`.
    pub fn failed(&self, took: Duration) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).fail.add(nanos(took));
    }

    /// The statistics now.
    pub fn snapshot(&self) -> Snapshot {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// Every model's statistics as Triton's HTTP JSON (`{"model_stats": [...]}`), with Spork's split as
/// `spork_worker_kinds`.
pub fn json(models: &[(String, Snapshot)]) -> Value {
    let d = |t: Timed| json!({ "count": t.count, "ns": t.ns });
    let one = |(name, s): &(String, Snapshot)| {
        json!({
            "name": name,
            "version": VERSION,
            "last_inference": s.last_inference_ms,
            "inference_count": s.inference_count(),
            "execution_count": s.execution_count(),
            "inference_stats": {
                "success": d(s.success),
                "fail": d(s.fail),
                "queue": d(s.queue),
                "compute_input": d(s.compute_input),
                "compute_infer": d(s.compute_infer),
                "compute_output": d(s.compute_output),
            },
            "batch_stats": batches(s).map(|(size, n, b)| json!({
                "batch_size": size,
                "compute_input": d(Timed { count: n, ns: b.input_ns }),
                "compute_infer": d(Timed { count: n, ns: b.infer_ns }),
                "compute_output": d(Timed { count: n, ns: b.output_ns }),
            })).collect::<Vec<_>>(),
            "spork_worker_kinds": s.kinds.iter().map(|(kind, k)| json!({
                "kind": kind,
                "queue": d(k.queue),
                "compute_infer": d(k.infer),
                "deadline_missed": k.missed,
            })).collect::<Vec<_>>(),
        })
    };
    json!({ "model_stats": models.iter().map(one).collect::<Vec<_>>() })
}

/// Every model's statistics as Triton's gRPC message.
pub fn message(models: &[(String, Snapshot)]) -> proto::ModelStatisticsResponse {
    let d = |t: Timed| Some(proto::StatisticDuration { count: t.count, ns: t.ns });
    let one = |(name, s): &(String, Snapshot)| proto::ModelStatistics {
        name: name.clone(),
        version: VERSION.into(),
        last_inference: s.last_inference_ms,
        inference_count: s.inference_count(),
        execution_count: s.execution_count(),
        inference_stats: Some(proto::InferStatistics {
            success: d(s.success),
            fail: d(s.fail),
            queue: d(s.queue),
            compute_input: d(s.compute_input),
            compute_infer: d(s.compute_infer),
            compute_output: d(s.compute_output),
        }),
        batch_stats: batches(s)
            .map(|(size, n, b)| proto::InferBatchStatistics {
                batch_size: u64::from(size),
                compute_input: d(Timed { count: n, ns: b.input_ns }),
                compute_infer: d(Timed { count: n, ns: b.infer_ns }),
                compute_output: d(Timed { count: n, ns: b.output_ns }),
            })
            .collect(),
        spork_worker_kinds: s
            .kinds
            .iter()
            .map(|(kind, k)| proto::WorkerKindStatistics {
                kind: kind.to_string(),
                queue: d(k.queue),
                compute_infer: d(k.infer),
                deadline_missed: k.missed,
            })
            .collect(),
    };
    proto::ModelStatisticsResponse { model_stats: models.iter().map(one).collect() }
}

/// Each batch size with its executions (Triton counts executions per size, not members).
fn batches(s: &Snapshot) -> impl Iterator<Item = (u32, u64, &Batch)> {
    s.batches.iter().map(|(&size, b)| (size, b.members.div_ceil(u64::from(size.max(1))), b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::work::{Answer, Output};
    use spork_core::model::Kind;

    fn served(kind: Kind, batch: u32, service: Time, missed: bool) -> Served {
        Served {
            answer: Answer { mandatory: Output::Tensors(Vec::new()), optional: None },
            kind,
            worker: 0,
            queue: 1_000,
            service,
            missed,
            optional: false,
            batch,
        }
    }

    #[test]
    fn answers_add_up_per_kind_and_a_batch_counts_one_execution() {
        let st = Statistics::default();
        let ms = Duration::from_millis;
        let at = UNIX_EPOCH + Duration::from_secs(1_000);
        st.answered(
            Answered {
                served: &served(Kind::Cpu, 1, 5_000, false),
                total: ms(2),
                input: ms(1),
                output: ms(1),
            },
            at,
        );
        for _ in 0..4 {
            let s = served(Kind::Fpga, 4, 8_000, true);
            st.answered(Answered { served: &s, total: ms(3), input: ms(0), output: ms(0) }, at);
        }
        st.failed(ms(7));
        let s = st.snapshot();
        assert_eq!(s.last_inference_ms, 1_000_000);
        assert_eq!((s.success.count, s.success.ns), (5, 14_000_000));
        assert_eq!(s.fail, Timed { count: 1, ns: 7_000_000 });
        assert_eq!(s.inference_count(), 5);
        assert_eq!(s.execution_count(), 2, "one alone and one batch of four");
        assert_eq!(s.batches[&4].infer_ns, 8_000, "the batch's time once, in four shares");
        assert_eq!(s.compute_infer, Timed { count: 5, ns: 37_000 });
        assert_eq!(s.kinds["fpga"].missed, 4);
        assert_eq!(s.kinds["cpu"].infer, Timed { count: 1, ns: 5_000 });
        assert_eq!(s.queue, Timed { count: 5, ns: 5_000 });
    }
}

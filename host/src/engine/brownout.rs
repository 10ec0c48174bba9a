//! Brownout on a pool, the engine's side: measuring what a brownout controller needs and asking its
//! gate per request. The controller, the gate and the gate's queue length are the pure policy of
//! [`crate::policy::brownout`].
//!
//! Response times are measured relative to each request's deadline (1.0 = at the deadline), so one
//! set-point serves any request size; the default set-point is the deadline itself. A request's
//! response is counted in the control period in which it completes.

use crate::model::Time;
use crate::policy::brownout::{Controller, ControllerKind, Knob, Period, pool_queue};
use rand::{RngExt, SeedableRng, rngs::Xoshiro256PlusPlus};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// Brownout settings for a pool run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoolBrownout {
    /// The controller.
    pub controller: ControllerKind,
    /// Control period.
    pub period: Time,
    /// Set-point on the p95 of response time / deadline span.
    pub setpoint: f64,
}

/// The brownout loop of one run.
pub(super) struct BrownoutLoop {
    controller: Box<dyn Controller>,
    knob: Knob,
    period: Time,
    next_tick: Time,
    outstanding: BinaryHeap<Reverse<Time>>,
    buckets: BTreeMap<u64, (Vec<f64>, Vec<f64>)>,
    arrivals: u64,
    queue_sum: f64,
    queue_n: u64,
    recent_queue: VecDeque<f64>,
    window: usize,
    rng: Xoshiro256PlusPlus,
}

fn p95(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[((0.95 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1])
}

impl BrownoutLoop {
    /// A loop for `setup`, its dimmer draws seeded with `seed`.
    pub fn new(setup: PoolBrownout, seed: u64) -> Self {
        let controller = setup.controller.build(setup.setpoint);
        let period = setup.period.max(1);
        BrownoutLoop {
            knob: controller.knob(),
            controller,
            period,
            next_tick: period,
            outstanding: BinaryHeap::new(),
            buckets: BTreeMap::new(),
            arrivals: 0,
            queue_sum: 0.0,
            queue_n: 0,
            recent_queue: VecDeque::new(),
            // Queue averaged over the last period plus the set-point (in periods, at least one).
            window: 2,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xb0_0000),
        }
    }

    /// The gate's current setting (queue threshold or dimmer value).
    pub fn setting(&self) -> f64 {
        self.knob.value()
    }

    /// When the next control period ends.
    pub fn next_tick(&self) -> Time {
        self.next_tick
    }

    /// Whether a request arriving at `now` into a pool of `workers` allocated workers gets its optional
    /// part.
    pub fn gate(&mut self, now: Time, workers: u32) -> bool {
        while self.outstanding.peek().is_some_and(|Reverse(f)| *f <= now) {
            self.outstanding.pop();
        }
        let q = pool_queue(self.outstanding.len(), workers);
        self.arrivals += 1;
        self.queue_sum += f64::from(q);
        self.queue_n += 1;
        self.knob.serve_optional(q, self.rng.random::<f64>())
    }

    /// A request dispatched now finishes at `finish` with `relative` = response / deadline span.
    pub fn dispatched(&mut self, finish: Time, relative: f64, optional: bool) {
        self.outstanding.push(Reverse(finish));
        let b = self.buckets.entry(finish / self.period).or_default();
        b.0.push(relative);
        if optional {
            b.1.push(relative);
        }
    }

    /// Ends the control period at `next_tick`: the controller sees it and sets the gate.
    pub fn tick(&mut self) {
        let k = self.next_tick / self.period - 1;
        let (mut all, mut opt) = self.buckets.remove(&k).unwrap_or_default();
        let mean = if self.queue_n > 0 { self.queue_sum / self.queue_n as f64 } else { 0.0 };
        self.recent_queue.push_back(mean);
        if self.recent_queue.len() > self.window {
            self.recent_queue.pop_front();
        }
        let period = Period {
            h: crate::model::time::to_secs(self.period),
            p95_all: p95(&mut all),
            p95_optional: p95(&mut opt),
            arrivals: self.arrivals,
            mean_queue: self.recent_queue.iter().sum::<f64>() / self.recent_queue.len() as f64,
        };
        self.knob = self.controller.update(&period);
        self.arrivals = 0;
        self.queue_sum = 0.0;
        self.queue_n = 0;
        self.next_tick += self.period;
    }
}

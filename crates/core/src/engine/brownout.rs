//! Brownout on a pool, the engine's side: measuring what a brownout controller needs and asking its
//! gate per request. The controller, the gate and the gate's queue length are the pure policy of
//! [`crate::policy::brownout`].
//!
//! Response times are measured relative to each request's deadline (1.0 = at the deadline), so one
//! set-point serves any request size; the default set-point is the deadline itself. A request's
//! response is counted in the control period in which it completes; percentiles interpolate linearly
//! between the closest ranks ([`crate::policy::brownout::percentile`]).
//!
//! The gate decides when a request is first scheduled, i.e. starts on its worker (docs/brownout.md). The
//! engine places and books a request when it arrives, and the pool books its start then
//! (`max(arrival, the worker's busy_until)`), so the gate is asked at booking about the queue the
//! request will face at that start: the requests booked so far that are still outstanding then, plus
//! those expected to arrive while it waits (the booking rate of the last control period times its
//! wait; they queue behind it, as in a FIFO). The setting it applies is the current one: the
//! controller's later settings are not known yet.

use super::finishes::Finishes;
use crate::model::Time;
use crate::model::time::to_secs;
use crate::policy::brownout::{Controller, ControllerKind, Knob, Period, p95, pool_queue};
use rand::{RngExt, SeedableRng, rngs::Xoshiro256PlusPlus};
use std::collections::{BTreeMap, VecDeque};

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
    /// Finish times of the booked requests not yet finished.
    outstanding: Finishes,
    /// Requests booked in the current period, and the booking rate of the last one (per second).
    booked: u64,
    rate: f64,
    buckets: BTreeMap<u64, (Vec<f64>, Vec<f64>)>,
    arrivals: u64,
    queue_sum: f64,
    queue_n: u64,
    recent_queue: VecDeque<f64>,
    window: usize,
    rng: Xoshiro256PlusPlus,
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
            outstanding: Finishes::default(),
            booked: 0,
            rate: 0.0,
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

    /// Whether a request booked at `now` to start at `start`, on a pool of `workers` allocated
    /// workers, gets its optional part (see the module documentation for the queue it is asked about).
    pub fn gate(&mut self, now: Time, start: Time, workers: u32) -> bool {
        self.forget_finished(now);
        let q = pool_queue(self.outstanding_at(now, start), workers);
        self.arrivals += 1;
        self.queue_sum += f64::from(q);
        self.queue_n += 1;
        self.knob.serve_optional(q, self.rng.random::<f64>())
    }

    /// Drops the requests finished by `now`.
    fn forget_finished(&mut self, now: Time) {
        self.outstanding.forget_until(now);
    }

    /// Requests outstanding at `start` as known at `now`: those booked and not finished by then, plus
    /// the arrivals expected during the wait `start − now`.
    fn outstanding_at(&self, now: Time, start: Time) -> usize {
        let finished = self.outstanding.finishing_by(start);
        let expected = (self.rate * to_secs(start.saturating_sub(now))).round() as usize;
        self.outstanding.len() - finished + expected
    }

    /// A request dispatched now finishes at `finish` with `relative` = response / deadline span.
    pub fn dispatched(&mut self, finish: Time, relative: f64, optional: bool) {
        self.outstanding.add(finish);
        self.booked += 1;
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
        self.rate = self.booked as f64 / period.h;
        self.booked = 0;
        self.arrivals = 0;
        self.queue_sum = 0.0;
        self.queue_n = 0;
        self.next_tick += self.period;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::time::NANOS_PER_SEC;

    const S: Time = NANOS_PER_SEC as Time;

    fn gate_at_one() -> BrownoutLoop {
        let setup = PoolBrownout { controller: ControllerKind::Pi, period: S / 2, setpoint: 1.0 };
        let mut b = BrownoutLoop::new(setup, 1);
        b.knob = Knob::Threshold(1.0);
        b
    }

    /// One worker with five requests booked ahead: a request placed now sees a queue of six, but it
    /// starts when they are done and is then alone, so it gets its optional part. Asked about the
    /// queue at its arrival (`start == now`), the gate refuses it.
    #[test]
    fn the_gate_sees_the_queue_at_the_booked_start_not_at_arrival() {
        let mut b = gate_at_one();
        for k in 1..=5 {
            b.dispatched(k * S, 0.5, false);
        }
        assert!(!b.gate(0, 0, 1), "six in the system at arrival");
        assert!(b.gate(0, 5 * S, 1), "alone when it starts");
        assert!(!b.gate(0, 5 * S - 1, 1), "the last one ahead still running");
    }

    /// Requests arriving while it waits join the queue it faces at its start: at 4 bookings/s, a
    /// 1 s wait adds four.
    #[test]
    fn arrivals_expected_during_the_wait_count() {
        let mut b = gate_at_one();
        for _ in 0..2 {
            b.dispatched(S / 4, 0.5, false);
        }
        b.tick(); // 2 bookings in 0.5 s
        b.knob = Knob::Threshold(1.0);
        assert_eq!(b.rate, 4.0);
        assert!(b.gate(S / 2, S / 2, 1), "no wait: alone");
        assert!(!b.gate(S / 2, 3 * S / 2, 1), "four expected behind it");
        assert!(b.gate(S / 2, 3 * S / 2, 5), "(4 + 1) over five workers is 1");
    }
}

//! The brownout reference scenario (BROWNOUT.md): one processor-sharing server with at most 10 requests
//! in service and a FIFO queue behind them, open-loop Poisson arrivals stepping 20 → 100 → 30 → 70 → 20
//! req/s every 60 s (repeated), service times max(N(0.07, 0.01), 1e-4) s with optional content and
//! max(N(0.001, 0.001), 1e-4) s without, set-point 1 s on the p95, control period 0.5 s.
//!
//! The driver measures each period and hands it to the controller (pure policy, [`crate::policy::brownout`]);
//! the gate decides per request when it first arrives (queue length includes the request itself).

use crate::policy::brownout::{Controller, ControllerKind, Knob, Period};
use rand::{RngExt, SeedableRng, rngs::Xoshiro256PlusPlus};
use rand_distr::{Distribution, Exp1, Normal};
use serde::Serialize;
use std::collections::VecDeque;

/// The scenario's parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scenario {
    /// Simulated seconds.
    pub duration_s: f64,
    /// Arrival rates (req/s), each held for `step_s`, cycled.
    pub rates: Vec<f64>,
    /// Seconds per rate step.
    pub step_s: f64,
    /// Requests served concurrently (processor sharing).
    pub max_in_service: usize,
    /// Service time with optional content: mean and standard deviation (s).
    pub optional_service: (f64, f64),
    /// Service time without: mean and standard deviation (s).
    pub mandatory_service: (f64, f64),
    /// Set-point on the p95 (s).
    pub setpoint_s: f64,
    /// Control period (s).
    pub period_s: f64,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            duration_s: 1200.0,
            rates: vec![20.0, 100.0, 30.0, 70.0, 20.0],
            step_s: 60.0,
            max_in_service: 10,
            optional_service: (0.07, 0.01),
            mandatory_service: (0.001, 0.001),
            setpoint_s: 1.0,
            period_s: 0.5,
        }
    }
}

/// One control period, for plots.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Sample {
    /// End of the period (s).
    pub t: f64,
    /// p95 of optional-served responses completed in the period (s), if any.
    pub p95_optional: Option<f64>,
    /// The gate setting chosen at the end of the period.
    pub knob: f64,
}

/// Results of one run.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// Controller name.
    pub controller: String,
    /// Seed.
    pub seed: u64,
    /// Requests that arrived.
    pub requests: u64,
    /// Requests answered (all of them: the run drains its queue).
    pub answered: u64,
    /// Σ over periods with optional completions of |p95 of optional-served − set-point| (s).
    pub iae: f64,
    /// Share of those periods whose p95 exceeded the set-point.
    pub periods_over: f64,
    /// Share of requests answered after the set-point.
    pub requests_over: f64,
    /// Share of requests served with optional content.
    pub optional_ratio: f64,
    /// Response-time percentiles over all requests (s).
    pub p95_s: f64,
    /// 99th percentile (s).
    pub p99_s: f64,
    /// Largest response time (s).
    pub max_s: f64,
    /// Per-period trace.
    #[serde(skip)]
    pub samples: Vec<Sample>,
}

#[derive(Clone, Copy, Debug)]
struct Job {
    arrival: f64,
    remaining: f64,
    optional: bool,
}

fn p95(v: &mut [f64]) -> Option<f64> {
    percentile(v, 0.95)
}

fn percentile(v: &mut [f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let idx = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    Some(v[idx])
}

/// Runs `controller` on the scenario with `seed`.
pub fn run(scenario: &Scenario, kind: ControllerKind, seed: u64) -> Outcome {
    let mut controller: Box<dyn Controller> = kind.build(scenario.setpoint_s);
    let mut knob: Knob = controller.knob();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let normal = |(m, s): (f64, f64)| {
        Normal::new(m, s.max(1e-12)).unwrap_or_else(|_| Normal::new(0.0, 1.0).expect("unit normal"))
    };
    let (opt_d, man_d) = (normal(scenario.optional_service), normal(scenario.mandatory_service));
    let h = scenario.period_s;
    let window = ((h + scenario.setpoint_s) / h).ceil().max(1.0) as usize;
    let rate_at = |t: f64| scenario.rates[((t / scenario.step_s) as usize) % scenario.rates.len()];

    let mut now = 0.0f64;
    let mut in_service: Vec<Job> = Vec::with_capacity(scenario.max_in_service);
    let mut waiting: VecDeque<Job> = VecDeque::new();
    let next_arrival = |now: f64, rng: &mut Xoshiro256PlusPlus| {
        // Piecewise-constant rate: draw in the current step, re-draw at a step boundary (memoryless).
        let mut t = now;
        loop {
            let r = rate_at(t);
            let step_end = ((t / scenario.step_s).floor() + 1.0) * scenario.step_s;
            let gap: f64 = if r > 0.0 { Distribution::<f64>::sample(&Exp1, rng) / r } else { f64::INFINITY };
            if t + gap < step_end {
                return t + gap;
            }
            t = step_end;
        }
    };
    let mut arrival_at = next_arrival(0.0, &mut rng);
    let mut tick_at = h;
    let (mut requests, mut answered, mut optional_served, mut over) = (0u64, 0u64, 0u64, 0u64);
    let mut all_responses: Vec<f64> = Vec::new();
    let (mut period_all, mut period_opt): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut period_arrivals = 0u64;
    let mut queue_integral = 0.0;
    let mut recent_queue: VecDeque<f64> = VecDeque::new();
    let (mut iae, mut periods_with, mut periods_over) = (0.0, 0u64, 0u64);
    let mut samples = Vec::new();

    loop {
        let n = in_service.len();
        let completion_at =
            in_service.iter().map(|j| j.remaining).fold(f64::INFINITY, f64::min) * n.max(1) as f64 + now;
        let arrivals_open = arrival_at < scenario.duration_s;
        let next = completion_at.min(if arrivals_open { arrival_at } else { f64::INFINITY }).min(tick_at);
        if !next.is_finite()
            || (!arrivals_open && n == 0 && waiting.is_empty() && tick_at > scenario.duration_s)
        {
            break;
        }
        // Advance processor sharing.
        let dt = next - now;
        if n > 0 {
            let share = dt / n as f64;
            in_service.iter_mut().for_each(|j| j.remaining -= share);
        }
        queue_integral += (n + waiting.len()) as f64 * dt;
        now = next;
        if next == completion_at {
            let mut i = 0;
            while i < in_service.len() {
                if in_service[i].remaining <= 1e-12 {
                    let j = in_service.swap_remove(i);
                    let rt = now - j.arrival;
                    answered += 1;
                    over += u64::from(rt > scenario.setpoint_s);
                    all_responses.push(rt);
                    period_all.push(rt);
                    if j.optional {
                        period_opt.push(rt);
                    }
                    if let Some(w) = waiting.pop_front() {
                        in_service.push(w);
                    }
                } else {
                    i += 1;
                }
            }
        } else if arrivals_open && next == arrival_at {
            requests += 1;
            period_arrivals += 1;
            let queue = (in_service.len() + waiting.len() + 1) as u32;
            let optional = knob.serve_optional(queue, rng.random::<f64>());
            optional_served += u64::from(optional);
            let d = if optional { &opt_d } else { &man_d };
            let service = d.sample(&mut rng).max(1e-4);
            let job = Job { arrival: now, remaining: service, optional };
            if in_service.len() < scenario.max_in_service {
                in_service.push(job);
            } else {
                waiting.push_back(job);
            }
            arrival_at = next_arrival(now, &mut rng);
        } else {
            // Control period.
            recent_queue.push_back(queue_integral / h);
            queue_integral = 0.0;
            if recent_queue.len() > window {
                recent_queue.pop_front();
            }
            let mean_queue = recent_queue.iter().sum::<f64>() / recent_queue.len() as f64;
            let p_opt = p95(&mut period_opt);
            // Metrics cover the scenario's periods, not the drain after its last arrival.
            if let Some(y) = p_opt.filter(|_| now <= scenario.duration_s + 1e-9) {
                iae += (y - scenario.setpoint_s).abs();
                periods_with += 1;
                periods_over += u64::from(y > scenario.setpoint_s);
            }
            let period = Period {
                h,
                p95_all: p95(&mut period_all),
                p95_optional: p_opt,
                arrivals: period_arrivals,
                mean_queue,
            };
            knob = controller.update(&period);
            samples.push(Sample { t: now, p95_optional: p_opt, knob: knob.value() });
            period_all.clear();
            period_opt.clear();
            period_arrivals = 0;
            tick_at += h;
        }
    }
    let share = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    Outcome {
        controller: kind.name().to_string(),
        seed,
        requests,
        answered,
        iae,
        periods_over: share(periods_over, periods_with),
        requests_over: share(over, answered),
        optional_ratio: share(optional_served, requests),
        p95_s: percentile(&mut all_responses, 0.95).unwrap_or(0.0),
        p99_s: percentile(&mut all_responses, 0.99).unwrap_or(0.0),
        max_s: all_responses.last().copied().unwrap_or(0.0),
        samples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short() -> Scenario {
        Scenario { duration_s: 300.0, ..Scenario::default() }
    }

    #[test]
    fn every_request_is_answered_and_runs_are_deterministic() {
        for kind in ControllerKind::ALL {
            let a = run(&short(), kind, 3);
            assert_eq!(a.requests, a.answered, "{kind:?}");
            assert!(a.requests > 10_000, "{}", a.requests);
            let b = run(&short(), kind, 3);
            assert_eq!((a.iae, a.optional_ratio, a.p99_s), (b.iae, b.optional_ratio, b.p99_s));
        }
        assert_ne!(run(&short(), ControllerKind::Pi, 3).iae, run(&short(), ControllerKind::Pi, 4).iae);
    }

    /// The bar: our best controller holds the p95 closer to the set-point (lower IAE) than the
    /// dimmer while serving at least as much optional content, over 20 minutes and 5 seeds.
    #[test]
    fn cascaded_beats_the_dimmer() {
        let s = Scenario::default();
        assert_eq!(s.duration_s, 1200.0);
        let mean =
            |kind, f: fn(&Outcome) -> f64| (1..=5).map(|seed| f(&run(&s, kind, seed))).sum::<f64>() / 5.0;
        let (iae_c, iae_d) =
            (mean(ControllerKind::Cascaded, |o| o.iae), mean(ControllerKind::Dimmer, |o| o.iae));
        let (opt_c, opt_d) = (
            mean(ControllerKind::Cascaded, |o| o.optional_ratio),
            mean(ControllerKind::Dimmer, |o| o.optional_ratio),
        );
        assert!(iae_c < iae_d, "IAE cascaded {iae_c} vs dimmer {iae_d}");
        assert!(opt_c >= opt_d, "optional ratio cascaded {opt_c} vs dimmer {opt_d}");
    }

    #[test]
    fn brownout_holds_what_no_brownout_cannot() {
        let none = run(&short(), ControllerKind::None, 1);
        assert_eq!(none.optional_ratio, 1.0);
        // 20-100 req/s of 70 ms work on one server is an overload: responses explode.
        assert!(none.p95_s > 10.0, "{}", none.p95_s);
        for kind in
            [ControllerKind::Dimmer, ControllerKind::Pi, ControllerKind::Cascaded, ControllerKind::CascadedFf]
        {
            let o = run(&short(), kind, 1);
            assert!(o.p95_s < none.p95_s / 3.0, "{kind:?}: p95 {} vs {}", o.p95_s, none.p95_s);
            assert!(o.optional_ratio > 0.1 && o.optional_ratio < 1.0, "{kind:?}: {}", o.optional_ratio);
        }
    }
}

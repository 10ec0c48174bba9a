//! Event-driven brownout's tuner (Desmeurs, Klein, Papadopoulos, Tordsson, ICCAC 2015) with its
//! published gains: the per-request gate serves the optional part iff the queue is at most ψ, and a
//! PI law tunes ψ from the p95 of optional-served responses. Its gains are the ones BrownoutCC (ACC
//! 2018) ran it with as its event-based baseline, "the same outer PI without gain scheduling or
//! feedforward" (the BrownoutCC paper (Nylander et al.), section 3):
//!
//! `e = t_sp − y`, `v = K·e + I`, `ψ = clamp[0, λ̂](v)`, `I ← I + K·h/Ti·e + (h/Tr)(ψ − v)`, with
//! `K = 4.0`, `Ti = 0.56 s`, `Tr = 1.0 s`, and the arrival-rate estimate `λ̂ ← 0.5·λ̂ + 0.5·N/h`
//! (λ̂0 = 25) bounding ψ; ψ0 = 1, I0 = 0. Like BrownoutCC's outer loop it updates only in periods
//! in which an optional-served request completed.

use super::{Controller, Knob, Period};

/// Proportional gain, requests per second of error.
pub const K: f64 = 4.0;
/// Integral time, seconds.
pub const TI: f64 = 0.56;
/// Tracking time of the anti-windup, seconds.
pub const TR: f64 = 1.0;

/// The event-based controller.
#[derive(Clone, Debug)]
pub struct EventBased {
    setpoint: f64,
    lambda: f64,
    integral: f64,
    psi: f64,
}

impl EventBased {
    /// Holding the p95 of optional-served responses at `setpoint` seconds.
    pub fn new(setpoint: f64) -> Self {
        EventBased { setpoint, lambda: 25.0, integral: 0.0, psi: 1.0 }
    }

    /// The integrator state.
    pub fn integral(&self) -> f64 {
        self.integral
    }
}

impl Controller for EventBased {
    fn knob(&self) -> Knob {
        Knob::Threshold(self.psi)
    }

    fn update(&mut self, p: &Period) -> Knob {
        let Some(y) = p.p95_optional else { return self.knob() };
        let (h, e) = (p.h, self.setpoint - y);
        self.lambda = 0.5 * self.lambda + 0.5 * p.arrivals as f64 / h;
        let v = K * e + self.integral;
        self.psi = v.clamp(0.0, self.lambda.max(0.0));
        self.integral += K * h / TI * e + (h / TR) * (self.psi - v);
        self.knob()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn period(y: f64, arrivals: u64) -> Period {
        Period { h: 0.5, p95_optional: Some(y), arrivals, ..Period::default() }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Three steps computed by hand from the law in the module documentation.
    #[test]
    fn hand_computed_steps() {
        let mut c = EventBased::new(1.0);
        assert_eq!(c.knob(), Knob::Threshold(1.0));
        // y = 2: λ̂ = 12.5 + 20 = 32.5, e = −1, v = −4, ψ = 0 (clamped),
        // I = −4·0.5/0.56 + 0.5·(0 − (−4)) = −3.571428… + 2.
        assert_eq!(c.update(&period(2.0, 20)), Knob::Threshold(0.0));
        assert!(close(c.integral(), -2.0 / 0.56 + 2.0), "{}", c.integral());
        // y = 0.5: λ̂ = 36.25, e = 0.5, v = 2 + I = 0.428571…, inside the bounds; I += 2/0.56·0.5.
        let v = 2.0 + (-2.0 / 0.56 + 2.0);
        assert!(close(c.update(&period(0.5, 20)).value(), v));
        let i2 = -2.0 / 0.56 + 2.0 + 1.0 / 0.56;
        assert!(close(c.integral(), i2), "{}", c.integral());
        // y = 0.2: λ̂ = 28.125, e = 0.8, v = 3.2 + I.
        assert!(close(c.update(&period(0.2, 10)).value(), 3.2 + i2));
        assert!(close(c.integral(), i2 + 2.0 / 0.56 * 0.8));
    }

    #[test]
    fn bounded_by_the_arrival_rate_and_idle_without_optional_completions() {
        let mut c = EventBased::new(1.0);
        for _ in 0..1000 {
            c.update(&period(0.0, 2)); // fast responses, 4 req/s
        }
        assert!(close(c.knob().value(), 4.0), "ψ ≤ λ̂: {:?}", c.knob());
        assert!(c.integral() < 10.0, "integrator ran away: {}", c.integral());
        let k = c.knob();
        assert_eq!(c.update(&Period { h: 0.5, p95_all: Some(9.0), ..Period::default() }), k);
    }
}

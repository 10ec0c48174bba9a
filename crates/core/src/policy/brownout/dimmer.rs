//! Klein et al.'s dimmer controller (ICSE 2014).
//!
//! Model `t ≈ α·θ`; α estimated by recursive least squares with forgetting λ = 0.95 (P0 = 1000,
//! α0 = 1); θ ← clamp[0,1](θ + h(1−p)/α·(t_sp − t)) with pole p = 0.9, θ0 = 0.5. The measurement t is the
//! p95 of all responses completed in the period; a period with none leaves θ unchanged.

use super::{Controller, Knob, Period};

/// The dimmer controller.
#[derive(Clone, Debug)]
pub struct Dimmer {
    setpoint: f64,
    theta: f64,
    alpha: f64,
    p: f64,
}

const LAMBDA: f64 = 0.95;
const POLE: f64 = 0.9;

impl Dimmer {
    /// Holding the p95 at `setpoint` seconds.
    pub fn new(setpoint: f64) -> Self {
        Dimmer { setpoint, theta: 0.5, alpha: 1.0, p: 1000.0 }
    }

    /// The current RLS estimate of α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl Controller for Dimmer {
    fn knob(&self) -> Knob {
        Knob::Dimmer(self.theta)
    }

    fn update(&mut self, period: &Period) -> Knob {
        let Some(t) = period.p95_all else { return self.knob() };
        // RLS on t = α θ.
        let a = self.p * self.theta;
        let g = 1.0 / (self.theta * a + LAMBDA);
        self.alpha += g * a * (t - self.theta * self.alpha);
        self.p = (self.p - g * a * a) / LAMBDA;
        // Guard the division: α is a positive gain (response time grows with optional content).
        let alpha = self.alpha.max(1e-3);
        self.theta = (self.theta + period.h * (1.0 - POLE) / alpha * (self.setpoint - t)).clamp(0.0, 1.0);
        self.knob()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn period(t: f64) -> Period {
        Period { h: 0.5, p95_all: Some(t), ..Period::default() }
    }

    #[test]
    fn step_response_lowers_then_raises_theta() {
        let mut d = Dimmer::new(1.0);
        assert_eq!(d.knob(), Knob::Dimmer(0.5));
        // Responses too slow: θ falls.
        let k1 = d.update(&period(3.0)).value();
        assert!(k1 < 0.5, "{k1}");
        for _ in 0..50 {
            d.update(&period(3.0));
        }
        assert_eq!(d.knob(), Knob::Dimmer(0.0), "clamped at 0");
        // Fast responses: θ climbs back, clamped at 1.
        for _ in 0..2000 {
            d.update(&period(0.1));
        }
        assert_eq!(d.knob(), Knob::Dimmer(1.0));
        // No completions: unchanged.
        assert_eq!(d.update(&Period { h: 0.5, ..Period::default() }), Knob::Dimmer(1.0));
    }

    #[test]
    fn rls_learns_the_gain() {
        let mut d = Dimmer::new(1.0);
        // Plant t = 2 θ: the estimate converges to 2 and θ to the set-point 0.5.
        let mut t = 2.0 * 0.5;
        for _ in 0..400 {
            let k = d.update(&period(t));
            t = 2.0 * k.value();
        }
        assert!((d.alpha() - 2.0).abs() < 0.05, "{}", d.alpha());
        assert!((d.knob().value() - 0.5).abs() < 0.02, "{:?}", d.knob());
    }
}

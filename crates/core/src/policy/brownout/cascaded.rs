//! BrownoutCC: cascaded control (Nylander, Klein, Årzén, Maggio, ACC 2018).
//!
//! The outer loop, every period in which optional content completed, sets a queue-length reference
//! `q_ref` from the p95 of optional-served responses with a gain-scheduled PI (and optionally a
//! feedforward from the estimated arrival rate); the inner loop is the threshold `max(q_ref, 0)`. Laws and
//! constants as written out in the BrownoutCC paper (Nylander et al.), section 3. Two guards we had to choose: the estimated plant
//! gain K̂ is kept at or above 1e-3 s/request (the gain schedule divides by it) and the α̂ update is
//! skipped when the mean queue is zero (it divides by it).

use super::{Controller, Knob, Period};

const K: f64 = 4.0;
const TI: f64 = 0.56;
const TR: f64 = 1.0;

/// The BrownoutCC controller.
#[derive(Clone, Debug)]
pub struct Cascaded {
    setpoint: f64,
    feedforward: bool,
    lambda: f64,
    alpha: f64,
    g: f64,
    k_hat: f64,
    integral: f64,
    q_ref: f64,
}

impl Cascaded {
    /// Holding the p95 of optional-served responses at `setpoint`, with or without feedforward.
    pub fn new(setpoint: f64, feedforward: bool) -> Self {
        let mut c = Cascaded {
            setpoint,
            feedforward,
            lambda: 25.0,
            alpha: 1.0,
            g: 1.0,
            k_hat: 0.05,
            integral: 0.0,
            q_ref: 1.0,
        };
        if feedforward {
            c.q_ref = c.ff();
        }
        c
    }

    fn ff(&self) -> f64 {
        if self.feedforward { self.setpoint * self.lambda / (self.alpha * self.g).max(1e-9) } else { 0.0 }
    }

    /// The current queue-length reference.
    pub fn q_ref(&self) -> f64 {
        self.q_ref
    }
}

impl Controller for Cascaded {
    fn knob(&self) -> Knob {
        Knob::Threshold(self.q_ref.max(0.0))
    }

    fn update(&mut self, p: &Period) -> Knob {
        let Some(y) = p.p95_optional else { return self.knob() };
        let h = p.h;
        let e = self.setpoint - y;
        self.lambda = 0.5 * self.lambda + 0.5 * p.arrivals as f64 / h;
        let q_bar = p.mean_queue;
        if self.q_ref > 0.0 {
            self.g = 0.9 * self.g + 0.1 * q_bar / self.q_ref;
            self.k_hat = (0.9 * self.k_hat + 0.1 * y / self.q_ref).max(1e-3);
        }
        if q_bar > 0.0 {
            self.alpha = 0.99 * self.alpha + 0.01 * y * self.lambda / q_bar;
        }
        let f = 0.05 / self.k_hat;
        let v = f * K * e + self.integral;
        let ff = self.ff();
        let u = v.clamp(-ff, (self.lambda - ff).max(-ff));
        self.q_ref = u + ff;
        self.integral += f * K * h / TI * e + (h / TR) * (u - v);
        self.knob()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn period(y: f64, arrivals: u64, q: f64) -> Period {
        Period { h: 0.5, p95_optional: Some(y), arrivals, mean_queue: q, ..Period::default() }
    }

    #[test]
    fn step_response_and_bounds() {
        for ff in [false, true] {
            let mut c = Cascaded::new(1.0, ff);
            let start = c.knob().value();
            // Arrivals at the initial rate estimate (12 per 0.5 s) and the queue at its reference, so
            // the feedforward barely moves and the feedback must lower the threshold.
            let slow = c.update(&period(3.0, 12, start.max(1.0))).value();
            assert!(slow <= start, "ff={ff}: {slow} > {start}");
            // q_ref stays within [0, λ̂] however long the error lasts (anti-windup via tracking).
            for _ in 0..5000 {
                c.update(&period(0.1, 50, 2.0));
                assert!((0.0..=c.lambda + 1e-9).contains(&c.q_ref()), "ff={ff}: {}", c.q_ref());
            }
            assert!(c.integral.abs() < 1e6, "ff={ff}: integrator ran away: {}", c.integral);
            // A period with no optional completion leaves it unchanged.
            let k = c.knob();
            assert_eq!(c.update(&Period { h: 0.5, ..Period::default() }), k);
        }
    }
}

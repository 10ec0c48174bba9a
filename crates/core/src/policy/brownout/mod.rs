//! Brownout: graceful degradation by skipping optional work when capacity runs short.
//!
//! Per request, a gate decides whether its optional part runs; a periodic controller tunes the gate to
//! hold a response-time percentile at a set-point. Laws: Klein et al. ICSE'14, Desmeurs et al.
//! ICCAC'15, Nylander et al. ACC'18, as docs/brownout.md and ARCHITECTURE.md (Brownout) state them.
//! Everything here is pure: the driver measures, calls [`Controller::update`] once per period with
//! what it saw, and asks the gate per request.

mod cascaded;
mod dimmer;
mod event;
mod percentile;
mod pi;

pub use cascaded::Cascaded;
pub use dimmer::Dimmer;
pub use event::EventBased;
pub use percentile::{p95, percentile};
pub use pi::EventPi;

use crate::model::Request;
use serde::Serialize;

/// What the gate is set to.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Knob {
    /// Serve the optional part iff the queue length is at most this (or the request is alone).
    Threshold(f64),
    /// Serve the optional part with this probability (the dimmer).
    Dimmer(f64),
}

impl Knob {
    /// Whether a request that finds `queue` requests in the system (itself included) gets its optional
    /// part; `uniform` is a draw from U(0, 1) that the driver supplies (used by the dimmer only).
    pub fn serve_optional(&self, queue: u32, uniform: f64) -> bool {
        match *self {
            Knob::Threshold(t) => queue <= 1 || f64::from(queue) <= t,
            Knob::Dimmer(theta) => uniform <= theta,
        }
    }

    /// The numeric setting (threshold or dimmer value).
    pub fn value(&self) -> f64 {
        match *self {
            Knob::Threshold(v) | Knob::Dimmer(v) => v,
        }
    }
}

/// What the driver saw in one control period.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Period {
    /// Period length in seconds.
    pub h: f64,
    /// 95th percentile of response times of requests completed in the period (seconds).
    pub p95_all: Option<f64>,
    /// 95th percentile of response times of requests completed with optional content (seconds).
    pub p95_optional: Option<f64>,
    /// Requests that arrived in the period.
    pub arrivals: u64,
    /// Mean queue length (in service + waiting) over the last `h + set-point` seconds.
    pub mean_queue: f64,
}

/// A brownout controller.
pub trait Controller: Send {
    /// The gate setting before any period has been observed.
    fn knob(&self) -> Knob;
    /// Updates from one period's observation and returns the new setting.
    fn update(&mut self, p: &Period) -> Knob;
}

/// No brownout: optional content is always served.
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysOptional;

impl Controller for AlwaysOptional {
    fn knob(&self) -> Knob {
        Knob::Threshold(f64::INFINITY)
    }
    fn update(&mut self, _: &Period) -> Knob {
        self.knob()
    }
}

/// The controllers by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControllerKind {
    /// No brownout.
    None,
    /// Klein et al.'s dimmer with recursive-least-squares gain estimation.
    Dimmer,
    /// Event-driven brownout with our PI law on the queue threshold.
    Pi,
    /// Event-driven brownout with the published PI tuner (BrownoutCC's event-based baseline).
    Event,
    /// BrownoutCC, feedback only.
    Cascaded,
    /// BrownoutCC with feedforward.
    CascadedFf,
}

impl ControllerKind {
    /// Every controller.
    pub const ALL: [ControllerKind; 6] = [
        ControllerKind::None,
        ControllerKind::Dimmer,
        ControllerKind::Pi,
        ControllerKind::Event,
        ControllerKind::Cascaded,
        ControllerKind::CascadedFf,
    ];

    /// A fresh controller for set-point `setpoint` (seconds).
    pub fn build(self, setpoint: f64) -> Box<dyn Controller> {
        match self {
            ControllerKind::None => Box::new(AlwaysOptional),
            ControllerKind::Dimmer => Box::new(Dimmer::new(setpoint)),
            ControllerKind::Pi => Box::new(EventPi::new(setpoint)),
            ControllerKind::Event => Box::new(EventBased::new(setpoint)),
            ControllerKind::Cascaded => Box::new(Cascaded::new(setpoint, false)),
            ControllerKind::CascadedFf => Box::new(Cascaded::new(setpoint, true)),
        }
    }

    /// Kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            ControllerKind::None => "none",
            ControllerKind::Dimmer => "dimmer",
            ControllerKind::Pi => "pi",
            ControllerKind::Event => "event",
            ControllerKind::Cascaded => "cascaded",
            ControllerKind::CascadedFf => "cascaded-ff",
        }
    }
}

/// An unknown controller name.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("unknown controller '{0}': expected none, dimmer, pi, event, cascaded or cascaded-ff")]
pub struct UnknownController(pub String);

impl std::str::FromStr for ControllerKind {
    type Err = UnknownController;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        super::by_name(&ControllerKind::ALL, ControllerKind::name, s)
            .ok_or_else(|| UnknownController(s.to_string()))
    }
}

/// The queue length the gate sees on a pool of many queues: requests outstanding (dispatched and not
/// finished, the new one included) per allocated worker, rounded up. With one worker this is the
/// single-server queue length of the brownout papers.
pub fn pool_queue(outstanding: usize, workers: u32) -> u32 {
    (outstanding as u64 + 1).div_ceil(u64::from(workers.max(1))) as u32
}

/// A request as it is to be dispatched: without brownout (`gate` is `None`) every optional part runs;
/// with it, the gate decides, asked only for requests that carry an optional part. A request whose
/// part is skipped goes on without it, also when it is re-dispatched after a failure.
pub fn admit(r: Request, gate: Option<impl FnOnce() -> bool>) -> Request {
    let serve = r.optional > 0 && gate.is_none_or(|g| g());
    if serve { r } else { Request { optional: 0, ..r } }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pool_queue_is_outstanding_per_worker_rounded_up() {
        assert_eq!(pool_queue(0, 0), 1, "a lone request on an empty pool");
        assert_eq!(pool_queue(3, 2), 2);
        assert_eq!(pool_queue(4, 2), 3);
    }

    #[test]
    fn admit_asks_the_gate_only_for_requests_with_an_optional_part() {
        let with = Request::new(0, 1, 2);
        let without = Request { optional: 0, ..with };
        assert_eq!(admit(with, None::<fn() -> bool>), with);
        assert_eq!(admit(with, Some(|| false)), without);
        assert_eq!(admit(without, Some(|| -> bool { panic!("gate asked") })), without);
    }

    #[test]
    fn controller_names_round_trip() {
        for c in ControllerKind::ALL {
            assert_eq!(c.name().parse::<ControllerKind>(), Ok(c));
        }
        assert!("cascade".parse::<ControllerKind>().is_err());
    }

    proptest! {
        /// A lower threshold never serves optional content where a higher one would not.
        #[test]
        fn gate_is_monotone_in_the_threshold(q in 0u32..1000, lo in 0.0f64..500.0, d in 0.0f64..500.0, u in 0.0f64..1.0) {
            let (low, high) = (Knob::Threshold(lo), Knob::Threshold(lo + d));
            prop_assert!(!low.serve_optional(q, u) || high.serve_optional(q, u));
            let (dl, dh) = (Knob::Dimmer(lo / 500.0), Knob::Dimmer((lo + d).min(500.0) / 500.0));
            prop_assert!(!dl.serve_optional(q, u) || dh.serve_optional(q, u));
        }
    }

    #[test]
    fn a_lone_request_always_gets_optional_content() {
        assert!(Knob::Threshold(0.0).serve_optional(1, 0.5));
        assert!(!Knob::Threshold(0.0).serve_optional(2, 0.5));
        assert!(Knob::Threshold(3.0).serve_optional(3, 0.5));
        assert!(!Knob::Threshold(3.0).serve_optional(4, 0.5));
    }
}

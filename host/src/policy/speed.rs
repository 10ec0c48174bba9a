//! The FPGA speedup S a live pool observes, kept current from its answers: a board job's CPU-seconds
//! (its request's size as booked) against the board time it took, and a CPU job's booked service
//! against what it took (the CPUs' own drift from their calibration). A board that runs slower than its manifest says, or
//! CPUs slower than their calibration, move S; the engine hands the new S to the allocator and to
//! dispatch as soon as it is believed, so a board that stops paying is no longer held and a request a slow
//! board cannot finish in time is not placed there. The evaluator never observes: its S stays the
//! profile's, and its output with it.

use crate::model::time::to_secs;
use crate::model::{Kind, PerKind, Time};

/// Jobs of a kind (decayed) before its side of S is believed: fewer, and the calibration stands.
pub const MIN_JOBS: f64 = 16.0;

/// At each tick the evidence so far is scaled by this: S follows a board or CPU that changes
/// within a few intervals, and one interval's outliers do not swing it.
pub const DECAY: f64 = 0.5;

/// An observed S differing from the one in force by less than this fraction is not applied: no
/// churn of the allocator's inputs on noise.
pub const HYSTERESIS: f64 = 0.1;

/// Booked and taken service per kind, decayed per tick.
#[derive(Clone, Debug, Default, PartialEq)]
struct Evidence {
    jobs: f64,
    /// Seconds booked: a CPU job's service, a board job's CPU-seconds (its request's size; not its
    /// booked board time, which the S in force when it was booked would skew: answers come late).
    booked: f64,
    /// Seconds taken.
    took: f64,
}

/// What a pool has seen of its workers' speed since it started.
#[derive(Clone, Debug, PartialEq)]
pub struct SpeedEstimate {
    /// The S the run started from (the calibration: manifest clock x items per cycle over the CPU
    /// code's timed speed).
    calibrated: f64,
    seen: PerKind<Evidence>,
    /// The board's speed and the CPUs' slowdown as last believed: kept when the evidence thins
    /// out (a board let go answers nothing more, and must not be taken back at its calibration).
    believed: (Option<f64>, Option<f64>),
}

impl SpeedEstimate {
    /// No evidence yet: S is `calibrated`.
    pub fn new(calibrated: f64) -> Self {
        SpeedEstimate { calibrated, seen: PerKind::default(), believed: (None, None) }
    }

    /// A `kind` job booked at `booked` for a request of `work` CPU-seconds took `took`.
    pub fn observe(&mut self, kind: Kind, booked: Time, work: Time, took: Time) {
        let e = &mut self.seen[kind];
        e.jobs += 1.0;
        e.booked += to_secs(if kind == Kind::Fpga { work } else { booked });
        e.took += to_secs(took);
    }

    /// S as observed: the board's CPU-seconds served per second of its own time, times how much
    /// slower than booked the CPUs ran; each side from its evidence when it has [`MIN_JOBS`], else
    /// as last believed, else the calibration's.
    pub fn speedup(&self) -> f64 {
        let (board, cpu_slowdown) = self.sides();
        board * cpu_slowdown
    }

    fn sides(&self) -> (f64, f64) {
        let side = |k: Kind| {
            let e = &self.seen[k];
            (e.jobs >= MIN_JOBS && e.booked > 0.0 && e.took > 0.0).then_some(e)
        };
        let board = side(Kind::Fpga).map(|e| e.booked / e.took).or(self.believed.0);
        let cpu_slowdown = side(Kind::Cpu).map(|e| e.took / e.booked).or(self.believed.1);
        (board.unwrap_or(self.calibrated), cpu_slowdown.unwrap_or(1.0))
    }

    /// The S to apply now that `current` is in force: the observed one when it differs by more
    /// than [`HYSTERESIS`] (called after each observation, so a board far slower than its
    /// calibration stops taking requests within [`MIN_JOBS`] answers, not at the next tick).
    pub fn revised(&mut self, current: f64) -> Option<f64> {
        let (board, cpu_slowdown) = self.sides();
        if self.seen[Kind::Fpga].jobs >= MIN_JOBS {
            self.believed.0 = Some(board);
        }
        if self.seen[Kind::Cpu].jobs >= MIN_JOBS {
            self.believed.1 = Some(cpu_slowdown);
        }
        let s = board * cpu_slowdown;
        ((s / current - 1.0).abs() > HYSTERESIS && s.is_finite() && s > 0.0).then_some(s)
    }

    /// At a tick: the evidence so far counts for [`DECAY`] of itself.
    pub fn decay(&mut self) {
        for k in Kind::ALL {
            let e = &mut self.seen[k];
            *e = Evidence { jobs: e.jobs * DECAY, booked: e.booked * DECAY, took: e.took * DECAY };
        }
    }

    /// [`Self::revised`], then [`Self::decay`]: a tick's view.
    pub fn tick(&mut self, current: f64) -> Option<f64> {
        let s = self.revised(current);
        self.decay();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::time::from_secs;
    use proptest::prelude::*;

    /// `n` jobs of `kind`, each of `work_s` CPU-seconds booked at S = `s`, each taking `took_s`.
    fn feed(e: &mut SpeedEstimate, kind: Kind, n: usize, work_s: f64, took_s: f64, s: f64) {
        let booked = if kind == Kind::Fpga { work_s / s } else { work_s };
        for _ in 0..n {
            e.observe(kind, from_secs(booked), from_secs(work_s), from_secs(took_s));
        }
    }

    #[test]
    fn the_calibration_stands_until_each_side_has_its_jobs() {
        let mut e = SpeedEstimate::new(2.0);
        feed(&mut e, Kind::Fpga, 15, 0.001, 0.005, 2.0);
        assert_eq!(e.speedup(), 2.0, "15 board jobs are not enough");
        feed(&mut e, Kind::Fpga, 1, 0.001, 0.005, 2.0);
        assert!((e.speedup() - 0.2).abs() < 1e-9, "a board 10x slower than booked at S = 2: {}", e.speedup());
    }

    #[test]
    fn slower_cpus_raise_s_and_a_board_on_time_keeps_it() {
        let mut e = SpeedEstimate::new(0.5);
        feed(&mut e, Kind::Fpga, 20, 0.001, 0.002, 0.5);
        feed(&mut e, Kind::Cpu, 20, 0.001, 0.0015, 0.5);
        assert!((e.speedup() - 0.75).abs() < 1e-9, "{}", e.speedup());
    }

    #[test]
    fn a_tick_applies_only_past_the_hysteresis_and_the_evidence_decays() {
        let mut e = SpeedEstimate::new(2.0);
        feed(&mut e, Kind::Fpga, 32, 0.002, 0.00105, 2.0);
        assert_eq!(e.tick(2.0), None, "5% off is noise");
        feed(&mut e, Kind::Fpga, 16, 0.002, 0.004, 2.0);
        let s = e.tick(2.0).expect("a board 4x slower than booked on half the evidence");
        assert!(s < 1.0 && s > 0.5, "{s}");
        assert_eq!(e.seen[Kind::Fpga].jobs, 16.0);
    }

    #[test]
    fn a_board_let_go_keeps_its_observed_speed_when_its_evidence_thins_out() {
        let mut e = SpeedEstimate::new(2.0);
        feed(&mut e, Kind::Fpga, 16, 0.001, 0.005, 2.0);
        assert!(e.tick(2.0).is_some_and(|s| (s - 0.2).abs() < 1e-9));
        for _ in 0..10 {
            e.tick(0.2);
        }
        assert!(e.seen[Kind::Fpga].jobs < 1.0);
        assert!((e.speedup() - 0.2).abs() < 1e-9, "back to the calibration: {}", e.speedup());
    }

    proptest! {
        /// Whatever the board's true speed, S observed at any S in force is that speed: the board
        /// takes a request's CPU-seconds over its own S, whatever S the request was booked at.
        #[test]
        fn the_observed_board_speed_does_not_depend_on_the_s_it_was_booked_at(
            truth in 0.05f64..20.0, in_force in 0.05f64..20.0, cpu_s in 0.0001f64..0.1,
        ) {
            let mut e = SpeedEstimate::new(1.0);
            feed(&mut e, Kind::Fpga, 20, cpu_s, cpu_s / truth, in_force);
            prop_assert!((e.speedup() / truth - 1.0).abs() < 1e-3, "{} vs {truth}", e.speedup());
        }
    }
}

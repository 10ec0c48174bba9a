//! The FPGA speedup S a live pool observes, kept current from its board answers: each board job's
//! booked service (at the S in force when it was booked) against the board time it took. A board
//! that runs slower than its manifest says moves S; the engine hands the new S to the allocator and
//! to dispatch as soon as it is believed, so a board that stops paying is no longer held and a
//! request a slow board cannot finish in time is not placed there. The evaluator never observes:
//! its S stays the profile's, and its output with it. CPU answers do not move S: the CPUs' speed is
//! what sizes requests (the size estimator follows it), so S is measured against it already.

use crate::model::Time;
use crate::model::time::to_secs;

/// Board answers (decayed) before they are believed: fewer, and the S in force stands.
pub const MIN_JOBS: f64 = 16.0;

/// Answers enough to believe sooner when every one of them is off by [`CLEAR_FACTOR`]: one host
/// hiccup can make a single job look slow, never all of them, and a board many times slower than
/// booked collects a queue of requests that miss their deadlines while 16 answers come back.
pub const CLEAR_JOBS: u32 = 4;

/// How far off (slower or faster) each of [`CLEAR_JOBS`] answers must be to be believed early.
pub const CLEAR_FACTOR: f64 = 4.0;

/// At each tick the evidence so far is scaled by this: S follows a board that changes within a
/// few intervals, and one interval's outliers do not swing it.
pub const DECAY: f64 = 0.5;

/// An observed S differing from the one in force by less than this fraction is not applied: no
/// churn of the allocator's inputs on noise.
pub const HYSTERESIS: f64 = 0.1;

/// What a pool has seen of its boards' speed since S last changed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpeedEstimate {
    jobs: f64,
    /// Seconds booked and taken.
    booked: f64,
    took: f64,
    /// Requests that arrived before this were booked at an earlier S: not evidence of this one.
    since: Time,
    /// Answers since S last changed (not decayed), and the least and most took/booked among them.
    answers: u32,
    least: f64,
    most: f64,
}

impl SpeedEstimate {
    /// No evidence yet.
    pub fn new() -> Self {
        SpeedEstimate::default()
    }

    /// A board job of a request that arrived at `arrival`, booked at `booked`, took `took`.
    pub fn observe(&mut self, arrival: Time, booked: Time, took: Time) {
        if arrival < self.since {
            return;
        }
        self.jobs += 1.0;
        self.booked += to_secs(booked);
        self.took += to_secs(took);
        if booked > 0 {
            let ratio = took as f64 / booked as f64;
            (self.least, self.most) = match self.answers {
                0 => (ratio, ratio),
                _ => (self.least.min(ratio), self.most.max(ratio)),
            };
            self.answers += 1;
        }
    }

    /// Whether every answer since S changed, at least [`CLEAR_JOBS`] of them, is [`CLEAR_FACTOR`]
    /// off the same way.
    fn unmistakable(&self) -> bool {
        self.answers >= CLEAR_JOBS && (self.least >= CLEAR_FACTOR || self.most <= 1.0 / CLEAR_FACTOR)
    }

    /// The S to apply now that `current` is in force: `current` scaled by how much faster than
    /// booked the boards answered, once [`MIN_JOBS`] say so by more than [`HYSTERESIS`] (or
    /// [`CLEAR_JOBS`] unmistakably). Called after each observation, so a board far slower than its
    /// calibration stops taking requests within a few answers, not at the next tick.
    pub fn revised(&self, current: f64) -> Option<f64> {
        let believed = self.jobs >= MIN_JOBS || self.unmistakable();
        if !believed || self.booked <= 0.0 || self.took <= 0.0 {
            return None;
        }
        let s = current * self.booked / self.took;
        ((s / current - 1.0).abs() > HYSTERESIS && s.is_finite() && s > 0.0).then_some(s)
    }

    /// S changed at a point where the latest request seen arrived at `latest`: the evidence so far
    /// was of the old S, and so are requests up to `latest` still on the boards.
    pub fn changed(&mut self, latest: Time) {
        *self = SpeedEstimate { since: latest.saturating_add(1), ..SpeedEstimate::default() };
    }

    /// At a tick: the evidence so far counts for [`DECAY`] of itself.
    pub fn decay(&mut self) {
        self.jobs *= DECAY;
        self.booked *= DECAY;
        self.took *= DECAY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::time::from_secs;
    use proptest::prelude::*;

    /// `n` board jobs arriving at `at`, each of `work_s` CPU-seconds booked at S = `s`, taking
    /// `work_s` over the board's true speed `truth`.
    fn feed(e: &mut SpeedEstimate, at: Time, n: usize, work_s: f64, s: f64, truth: f64) {
        for _ in 0..n {
            e.observe(at, from_secs(work_s / s), from_secs(work_s / truth));
        }
    }

    #[test]
    fn the_s_in_force_stands_until_enough_answers_say_otherwise() {
        let mut e = SpeedEstimate::new();
        feed(&mut e, 0, 15, 0.001, 2.0, 0.6);
        assert_eq!(e.revised(2.0), None, "15 board answers are not enough");
        feed(&mut e, 0, 1, 0.001, 2.0, 0.6);
        let s = e.revised(2.0).expect("a board 3.3x slower than booked");
        assert!((s - 0.6).abs() < 1e-6, "{s}");
    }

    #[test]
    fn a_few_answers_all_far_off_are_believed_early_one_outlier_is_not() {
        let mut e = SpeedEstimate::new();
        feed(&mut e, 0, 3, 0.001, 2.0, 0.2);
        assert_eq!(e.revised(2.0), None, "3 answers are not enough, however far off");
        feed(&mut e, 0, 1, 0.001, 2.0, 0.2);
        let s = e.revised(2.0).expect("4 answers, each 10x slower than booked");
        assert!((s - 0.2).abs() < 1e-6, "{s}");

        // One job stalled 100x among answers as booked: a hiccup, not the board's speed.
        let mut e = SpeedEstimate::new();
        feed(&mut e, 0, 1, 0.001, 2.0, 0.02);
        feed(&mut e, 0, 5, 0.001, 2.0, 2.0);
        assert_eq!(e.revised(2.0), None, "fewer than 16 answers, not all far off");

        // Each 3x faster: past the hysteresis, short of unmistakable; 16 answers settle it.
        let mut e = SpeedEstimate::new();
        feed(&mut e, 0, 8, 0.001, 2.0, 6.0);
        assert_eq!(e.revised(2.0), None);
        feed(&mut e, 0, 8, 0.001, 2.0, 6.0);
        assert!(e.revised(2.0).is_some_and(|s| (s / 6.0 - 1.0).abs() < 1e-3));
    }

    #[test]
    fn within_the_hysteresis_nothing_moves_and_the_evidence_decays() {
        let mut e = SpeedEstimate::new();
        feed(&mut e, 0, 32, 0.001, 2.0, 1.9);
        assert_eq!(e.revised(2.0), None, "5% off is noise");
        e.decay();
        assert_eq!(e.jobs, 16.0);
    }

    #[test]
    fn answers_booked_at_an_earlier_s_are_not_evidence_of_the_new_one() {
        let mut e = SpeedEstimate::new();
        feed(&mut e, 10, 16, 0.001, 2.0, 0.2);
        let s = e.revised(2.0).expect("slower");
        e.changed(10);
        // Requests that arrived by then were booked at 2.0: their answers, 10x late against it,
        // would drive S down again if counted.
        feed(&mut e, 10, 40, 0.001, 2.0, 0.2);
        assert_eq!(e.revised(s), None);
        feed(&mut e, 11, 16, 0.001, s, 0.2);
        assert_eq!(e.revised(s), None, "booked at the new S, they answer as booked");
    }

    proptest! {
        /// Whatever the board's true speed and the S it was booked at, the revised S is the true one.
        #[test]
        fn the_revised_s_is_the_boards_true_speed(
            truth in 0.05f64..20.0, in_force in 0.05f64..20.0, cpu_s in 0.0001f64..0.1,
        ) {
            let mut e = SpeedEstimate::new();
            feed(&mut e, 0, 20, cpu_s, in_force, truth);
            match e.revised(in_force) {
                Some(s) => prop_assert!((s / truth - 1.0).abs() < 1e-3, "{s} vs {truth}"),
                None => prop_assert!((truth / in_force - 1.0).abs() <= HYSTERESIS + 1e-6),
            }
        }
    }
}

//! The emulated board's answers checked on the Verilated RTL, off the serving path: each answer is
//! queued to a checker thread that runs the same input through the simulated board and compares. The
//! simulation is slower than the board it stands in for, so the queue is bounded: an answer that finds
//! it full is counted as skipped, not waited for (every answer of a short, light run is checked). The
//! checker runs only on otherwise idle cores (`SCHED_IDLE`), so it never slows the server it checks.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::time::Duration;

use super::{Backend, SimBoardSlot};
use crate::datapath::work::{KernelImage, Output, Payload};
use spork_core::model::WorkerSpec;

/// Answers the checkers awaited at most, per board.
const QUEUE: usize = 64;

/// What the checkers found.
#[derive(Debug, Default)]
pub struct CrossCheck {
    /// Answers checked on the RTL.
    pub checked: AtomicU64,
    /// Of those, answers the RTL disagreed with.
    pub mismatches: AtomicU64,
    /// Answers not checked: the checker was behind (or could not load the model).
    pub skipped: AtomicU64,
    /// Answers queued and not yet checked.
    pub pending: AtomicU64,
}

impl CrossCheck {
    /// (checked, mismatches, skipped).
    pub fn counts(&self) -> (u64, u64, u64) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        (get(&self.checked), get(&self.mismatches), get(&self.skipped))
    }

    /// Waits until every queued answer is checked, at most `within`; whether none is left. (The
    /// checkers outlive their boards: a stopped board's queue is still checked.)
    pub fn settle(&self, within: Duration) -> bool {
        let until = std::time::Instant::now() + within;
        while self.pending.load(Ordering::Relaxed) > 0 {
            if std::time::Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }
}

/// One board's checker: a thread with its own Verilated kernel.
pub struct Checker {
    tx: SyncSender<(Payload, Output)>,
    counts: Arc<CrossCheck>,
}

impl Checker {
    /// Starts a checker of `image`'s answers, counting into `counts`; `None` if no thread could start.
    pub fn start(
        image: &KernelImage,
        clock_hz: f64,
        spec: WorkerSpec,
        counts: Arc<CrossCheck>,
    ) -> Option<Checker> {
        let (tx, rx) = mpsc::sync_channel::<(Payload, Output)>(QUEUE);
        let (image, shared) = (image.clone(), counts.clone());
        std::thread::Builder::new()
            .name("spork-crosscheck".into())
            .spawn(move || {
                // The check must never take CPU time from the server it checks, whose latency is real.
                crate::priority::idle();
                let mut rtl = SimBoardSlot::new(clock_hz, Duration::ZERO, spec, false);
                let loaded = rtl.configure(&image).is_ok();
                for (payload, answer) in rx {
                    if loaded {
                        let same = rtl.submit(&payload).is_ok_and(|e| e.output == answer);
                        shared.checked.fetch_add(1, Ordering::Relaxed);
                        shared.mismatches.fetch_add(u64::from(!same), Ordering::Relaxed);
                    } else {
                        shared.skipped.fetch_add(1, Ordering::Relaxed);
                    }
                    shared.pending.fetch_sub(1, Ordering::Relaxed);
                }
            })
            .ok()?;
        Some(Checker { tx, counts })
    }

    /// Queues an answer for checking, or counts it skipped if the checker is behind.
    pub fn check(&self, payload: &Payload, answer: &Output) {
        // Counted before it is sent, so the checker's decrement never comes first.
        self.counts.pending.fetch_add(1, Ordering::Relaxed);
        match self.tx.try_send((payload.clone(), answer.clone())) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counts.pending.fetch_sub(1, Ordering::Relaxed);
                self.counts.skipped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

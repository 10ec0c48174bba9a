//! The progress line on a terminal.

use std::io::IsTerminal;

use std::sync::atomic::Ordering;

use crate::live::Status;
use spork_core::model::time::to_secs;
use spork_core::model::{Kind, Time};

/// A progress bar on stderr when it is a terminal and progress was asked for; otherwise nothing.
pub(super) struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    pub fn new(on: bool, total: u64) -> Progress {
        let bar = (on && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                    .expect("static template"),
            );
            b
        });
        Progress { bar }
    }

    /// Redraws the line from what the pool published last.
    pub fn update(&self, status: &Status, now: Time) {
        if let Some(b) = &self.bar {
            let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
            b.set_position(get(&status.settled));
            b.set_message(format!(
                "t={:.1}s on FPGA {} on CPU {} misses {} in flight {}",
                to_secs(now),
                get(&status.served[Kind::Fpga]),
                get(&status.served[Kind::Cpu]),
                get(&status.misses),
                get(&status.in_flight)
            ));
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

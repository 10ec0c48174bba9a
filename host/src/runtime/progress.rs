//! The progress line on a terminal.

use std::io::IsTerminal;

use super::stats::RunStats;
use crate::model::time::to_secs;
use crate::model::{Kind, Time};

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

    pub fn update(&self, st: &RunStats, now: Time, in_flight: usize) {
        if let Some(b) = &self.bar {
            b.set_position(st.settled());
            b.set_message(format!(
                "t={:.1}s on FPGA {} on CPU {} misses {} in flight {in_flight}",
                to_secs(now),
                st.answers.served[Kind::Fpga],
                st.answers.served[Kind::Cpu],
                st.answers.misses
            ));
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

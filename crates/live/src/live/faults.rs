//! Fault injection, for testing recovery: failed reconfigurations and hung kernels on the board.

use std::str::FromStr;
use std::time::Duration;

/// One fault to inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The Nth FPGA configuration (1-based, in order) fails.
    Configure(u32),
    /// The Nth FPGA job (1-based, in dispatch order) sent to a configured board stalls past the
    /// kernel timeout.
    Stall(u64),
}

/// A fault spec that is not `configure:N` or `stall:N`.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("fault '{0}': expected configure:N or stall:N with N a positive count")]
pub struct BadFault(pub String);

impl FromStr for Fault {
    type Err = BadFault;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadFault(s.to_string());
        let (what, n) = s.split_once(':').ok_or_else(bad)?;
        let n: u64 = n.parse().ok().filter(|&n| n > 0).ok_or_else(bad)?;
        match what {
            "configure" => u32::try_from(n).map(Fault::Configure).map_err(|_| bad()),
            "stall" => Ok(Fault::Stall(n)),
            _ => Err(bad()),
        }
    }
}

/// The faults of one run.
#[derive(Clone, Debug, Default)]
pub struct FaultPlan {
    /// What to inject.
    pub faults: Vec<Fault>,
    /// How long a stalled job stalls.
    pub stall: Duration,
}

impl FaultPlan {
    /// `faults`, a stalled job stalling a second past `kernel_timeout`.
    pub fn new(faults: Vec<Fault>, kernel_timeout: Duration) -> FaultPlan {
        FaultPlan { faults, stall: kernel_timeout + Duration::from_secs(1) }
    }
}

/// Counts FPGA configurations and jobs as they happen and says which to sabotage.
#[derive(Debug, Default)]
pub(super) struct Injector {
    plan: FaultPlan,
    configurations: u32,
    jobs: u64,
}

impl Injector {
    pub fn new(plan: FaultPlan) -> Injector {
        Injector { plan, configurations: 0, jobs: 0 }
    }

    /// A new FPGA configuration starts: whether it is to fail.
    pub fn configure_fails(&mut self) -> bool {
        self.configurations += 1;
        self.plan.faults.contains(&Fault::Configure(self.configurations))
    }

    /// A new FPGA job is dispatched: how long it is to stall first, if at all.
    pub fn stall(&mut self) -> Option<Duration> {
        self.jobs += 1;
        self.plan.faults.contains(&Fault::Stall(self.jobs)).then_some(self.plan.stall)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_name_the_spec() {
        assert_eq!("configure:2".parse(), Ok(Fault::Configure(2)));
        assert_eq!("stall:7".parse(), Ok(Fault::Stall(7)));
        for bad in ["stall:0", "stall", "boom:1", "configure:x", "configure:99999999999"] {
            assert_eq!(bad.parse::<Fault>(), Err(BadFault(bad.into())), "{bad}");
        }
    }

    #[test]
    fn the_injector_counts_configurations_and_jobs_separately() {
        let mut i =
            Injector::new(FaultPlan::new(vec![Fault::Configure(2), Fault::Stall(1)], Duration::from_secs(1)));
        assert!(!i.configure_fails());
        assert!(i.configure_fails());
        assert_eq!(i.stall(), Some(Duration::from_secs(2)));
        assert_eq!(i.stall(), None);
    }
}

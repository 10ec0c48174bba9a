//! The named schedulers of the paper: an allocator, a default dispatcher and a fleet each.

use super::allocator::{
    Allocator, CpuDynamic, Demand, FpgaDynamic, FpgaStatic, MarkIdeal, SporkAllocator, SporkD, SporkIdeal,
};
use super::dispatch::{DispatcherKind, Fleet};
use super::fleet::Surplus;
use super::objective::{NeverPays, Objective};
use crate::model::{Platform, platform::KeepIdle};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// A scheduler by name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scheduler {
    /// CPU-only, reactive.
    CpuDynamic,
    /// FPGA-only, sized for the peak with perfect knowledge.
    FpgaStatic,
    /// FPGA-only, reactive with the least headroom that meets deadlines.
    FpgaDynamic,
    /// FPGA-dynamic counting the current interval's known load, not the last one's work (a reading of
    /// section 5.1, beside the paper).
    FpgaDynamicNow,
    /// Cost-optimised hybrid with perfect two-interval predictions and round robin.
    MarkIdeal,
    /// Spork minimising a weighted objective (SporkE, SporkC, SporkB or any other weight).
    Spork(Objective),
    /// Spork with perfect next-interval knowledge.
    SporkIdeal(Objective),
    /// Spork counting an interval's need from its arrivals' deadlines (beyond the paper).
    SporkD(Objective),
}

impl Scheduler {
    /// The nine schedulers of the paper's evaluation, in its table order.
    pub const PAPER: [Scheduler; 9] = [
        Scheduler::CpuDynamic,
        Scheduler::FpgaStatic,
        Scheduler::FpgaDynamic,
        Scheduler::MarkIdeal,
        Scheduler::Spork(Objective::COST),
        Scheduler::Spork(Objective::BALANCED),
        Scheduler::Spork(Objective::ENERGY),
        Scheduler::SporkIdeal(Objective::COST),
        Scheduler::SporkIdeal(Objective::ENERGY),
    ];

    /// Names accepted on the command line.
    pub const NAMES: &'static str = "cpu-dynamic, fpga-static, fpga-dynamic, mark-ideal, spork-c, spork-b, \
        spork-e, spork-c-ideal, spork-e-ideal, spork:<energy weight 0..1>, spork-ideal:<weight>, \
        spork-d, spork-d:<weight> (deadline-aware, beyond the paper), fpga-dynamic-now (FPGA-dynamic \
        on the current interval's known load), all";

    /// Worker types it uses.
    pub fn fleet(&self) -> Fleet {
        match self {
            Scheduler::CpuDynamic => Fleet::CPU_ONLY,
            Scheduler::FpgaStatic | Scheduler::FpgaDynamic | Scheduler::FpgaDynamicNow => Fleet::FPGA_ONLY,
            _ => Fleet::HYBRID,
        }
    }

    /// What of `platform` its runs under `dispatcher` depend on: with no FPGAs in its fleet, not the
    /// FPGA figures (the interval they set only ticks an allocator that plans none), unless idle CPUs
    /// are kept one interval; when neither its allocator nor the dispatcher weighs power or price
    /// ([`Self::weighs_rates`]; the wait rule prices a spin-up), not the powers and prices, which
    /// only its report reads. Runs that differ in nothing else have one outcome, each reported on its
    /// platform.
    pub fn outcome_platform(&self, platform: &Platform, dispatcher: DispatcherKind) -> Platform {
        let mut p = *platform;
        let default = Platform::default();
        if !self.fleet().fpga && p.keep_idle == KeepIdle::SpinUp {
            p.fpga = default.fpga;
        }
        if !self.weighs_rates() && dispatcher != DispatcherKind::EfficientFirstWait {
            for (spec, d) in [(&mut p.cpu, default.cpu), (&mut p.fpga, default.fpga)] {
                (spec.busy_power_w, spec.idle_power_w) = (d.busy_power_w, d.idle_power_w);
                spec.price_per_hour = d.price_per_hour;
            }
        }
        p
    }

    /// Whether its allocator weighs powers or prices (Spork's objective, MArk-ideal's cost, the
    /// ideal variants' breakeven): the baselines size their pools by load and deadlines alone.
    pub fn weighs_rates(&self) -> bool {
        !matches!(
            self,
            Scheduler::CpuDynamic
                | Scheduler::FpgaStatic
                | Scheduler::FpgaDynamic
                | Scheduler::FpgaDynamicNow
        )
    }

    /// The dispatcher the paper pairs it with.
    pub fn default_dispatcher(&self) -> DispatcherKind {
        match self {
            Scheduler::MarkIdeal => MarkIdeal::DISPATCHER,
            Scheduler::SporkD(_) => DispatcherKind::EfficientFirstWait,
            _ => DispatcherKind::EfficientFirst,
        }
    }

    /// What its allocator minimises (the baselines are judged by energy, MArk-ideal by cost): what
    /// a board saves it when boards are arbitrated.
    pub fn objective(&self) -> Objective {
        match *self {
            Scheduler::Spork(o) | Scheduler::SporkIdeal(o) | Scheduler::SporkD(o) => o,
            Scheduler::MarkIdeal => Objective::COST,
            _ => Objective::ENERGY,
        }
    }

    /// `Some` when it would hold boards beside CPUs (a hybrid fleet) but none pays on `platform` at
    /// its objective, even fully used: it holds none, and the run report says why with these figures.
    pub fn fpga_never_pays(&self, platform: &Platform) -> Option<NeverPays> {
        let fleet = self.fleet();
        if !(fleet.cpu && fleet.fpga) {
            return None;
        }
        self.objective().never_pays(platform)
    }

    /// Whether it needs the trace's per-interval demand in advance.
    pub fn needs_demand(&self) -> bool {
        !matches!(self, Scheduler::CpuDynamic | Scheduler::Spork(_) | Scheduler::SporkD(_))
    }

    /// What happens to busy FPGAs above the allocator's target (MArk-ideal terminates surplus
    /// instances; the others let them idle out under their dispatcher).
    pub fn surplus(&self) -> Surplus {
        match self {
            Scheduler::MarkIdeal => MarkIdeal::SURPLUS,
            _ => Surplus::IdleOut,
        }
    }

    /// Whether the evaluator must search its headroom.
    pub fn searches_headroom(&self) -> bool {
        matches!(self, Scheduler::FpgaDynamic | Scheduler::FpgaDynamicNow | Scheduler::FpgaStatic)
    }

    /// Whether its headroom sizes a pool held from the start (FPGA-static): a larger pool's run then
    /// shows the least one, as the boards it ever used ([`crate::engine::search_headroom`]).
    pub fn holds_a_static_pool(&self) -> bool {
        matches!(self, Scheduler::FpgaStatic)
    }

    /// The FPGAs `headroom` comes to on `demand`: FPGA-static's pool (the busiest interval's need
    /// plus the headroom), FPGA-dynamic's FPGAs above the last interval's need (the headroom times
    /// the largest step).
    pub fn headroom_fpgas(&self, demand: &Demand, headroom: u32) -> u32 {
        match self {
            Scheduler::FpgaStatic => FpgaStatic::new(demand, headroom).initial(),
            _ => headroom.saturating_mul(FpgaDynamic::max_step(demand).max(1)),
        }
    }

    /// Where to start the headroom search on `demand`, given a like run's (the same trace at another
    /// spin-up, speedup or power): its `headroom` and the `fpgas` that came to here. What holds
    /// across such runs: FPGA-static's pool (the burst's need does, the peak interval's does not),
    /// FPGA-dynamic's multiple of the largest step (both scale with the interval).
    pub fn headroom_near(&self, demand: &Demand, headroom: u32, fpgas: u32) -> u32 {
        match self {
            Scheduler::FpgaStatic => fpgas.saturating_sub(FpgaStatic::new(demand, 0).initial()),
            _ => headroom,
        }
    }

    /// A fresh allocator. `demand` is required when [`Self::needs_demand`]; `headroom` is
    /// FPGA-dynamic's multiple of the largest step, or FPGA-static's FPGAs above the peak interval.
    pub fn allocator(
        &self,
        platform: &Platform,
        demand: Option<&Arc<Demand>>,
        headroom: u32,
    ) -> Box<dyn Allocator> {
        let demand = || demand.cloned().unwrap_or_default();
        match *self {
            Scheduler::CpuDynamic => Box::new(CpuDynamic),
            Scheduler::FpgaStatic => Box::new(FpgaStatic::new(&demand(), headroom)),
            Scheduler::FpgaDynamic => Box::new(FpgaDynamic::new(&demand(), headroom, platform)),
            Scheduler::FpgaDynamicNow => Box::new(FpgaDynamic::on_current_load(demand(), headroom, platform)),
            Scheduler::MarkIdeal => Box::new(MarkIdeal::new(demand(), platform)),
            Scheduler::Spork(o) => Box::new(SporkAllocator::new(o, platform)),
            Scheduler::SporkIdeal(o) => Box::new(SporkIdeal::new(demand(), o, platform)),
            Scheduler::SporkD(o) => Box::new(SporkD::new(o, platform)),
        }
    }
}

impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let named = |o: &Objective| {
            if *o == Objective::ENERGY {
                Some("E")
            } else if *o == Objective::COST {
                Some("C")
            } else if *o == Objective::BALANCED {
                Some("B")
            } else {
                None
            }
        };
        match self {
            Scheduler::CpuDynamic => f.write_str("CPU-dynamic"),
            Scheduler::FpgaStatic => f.write_str("FPGA-static"),
            Scheduler::FpgaDynamic => f.write_str("FPGA-dynamic"),
            Scheduler::FpgaDynamicNow => f.write_str("FPGA-dynamic-now"),
            Scheduler::MarkIdeal => f.write_str("MArk-ideal"),
            Scheduler::Spork(o) => match named(o) {
                Some(n) => write!(f, "Spork{n}"),
                None => write!(f, "Spork(e={:.2})", o.energy),
            },
            Scheduler::SporkIdeal(o) => match named(o) {
                Some(n) => write!(f, "Spork{n}-ideal"),
                None => write!(f, "Spork(e={:.2})-ideal", o.energy),
            },
            Scheduler::SporkD(o) if *o == Objective::ENERGY => f.write_str("SporkD"),
            Scheduler::SporkD(o) => write!(f, "SporkD(e={:.2})", o.energy),
        }
    }
}

/// An unknown scheduler name.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("unknown scheduler '{0}': expected one of {names}", names = Scheduler::NAMES)]
pub struct UnknownScheduler(pub String);

impl FromStr for Scheduler {
    type Err = UnknownScheduler;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        let weighted = |w: &str, variant: fn(Objective) -> Scheduler| {
            w.parse::<f64>().ok().and_then(Objective::weighted).map(variant)
        };
        let parsed = match lower.as_str() {
            "cpu-dynamic" => Some(Scheduler::CpuDynamic),
            "fpga-static" => Some(Scheduler::FpgaStatic),
            "fpga-dynamic" => Some(Scheduler::FpgaDynamic),
            "fpga-dynamic-now" => Some(Scheduler::FpgaDynamicNow),
            "mark-ideal" => Some(Scheduler::MarkIdeal),
            "spork-e" | "sporke" => Some(Scheduler::Spork(Objective::ENERGY)),
            "spork-c" | "sporkc" => Some(Scheduler::Spork(Objective::COST)),
            "spork-b" | "sporkb" => Some(Scheduler::Spork(Objective::BALANCED)),
            "spork-e-ideal" | "sporke-ideal" => Some(Scheduler::SporkIdeal(Objective::ENERGY)),
            "spork-c-ideal" | "sporkc-ideal" => Some(Scheduler::SporkIdeal(Objective::COST)),
            "spork-d" | "sporkd" => Some(Scheduler::SporkD(Objective::ENERGY)),
            other => match other.split_once(':') {
                Some(("spork", w)) => weighted(w, Scheduler::Spork),
                Some(("spork-ideal", w)) => weighted(w, Scheduler::SporkIdeal),
                Some(("spork-d", w)) => weighted(w, Scheduler::SporkD),
                _ => None,
            },
        };
        parsed.ok_or_else(|| UnknownScheduler(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// FPGA-static's pool turned back into a headroom is that headroom, whatever the demand: a
        /// hint of a run's own pool starts its search at its own headroom.
        #[test]
        fn a_static_pool_gives_back_its_headroom(work in proptest::collection::vec(0.0..50.0f64, 1..40), h in 0..200u32) {
            let demand = Demand { work_s: work, interval_s: 10.0, board_s: 10.0 };
            let s = Scheduler::FpgaStatic;
            prop_assert_eq!(s.headroom_near(&demand, 0, s.headroom_fpgas(&demand, h)), h);
        }
    }

    #[test]
    fn names_round_trip() {
        for s in Scheduler::PAPER {
            let name = s
                .to_string()
                .to_ascii_lowercase()
                .replace("sporke", "spork-e")
                .replace("sporkc", "spork-c")
                .replace("sporkb", "spork-b");
            assert_eq!(name.parse::<Scheduler>(), Ok(s), "{name}");
        }
        assert_eq!(
            "spork:0.25".parse::<Scheduler>(),
            Ok(Scheduler::Spork(Objective { energy: 0.25, cost: 0.75 }))
        );
        assert!("spork:2".parse::<Scheduler>().is_err());
        assert_eq!("spork-d".parse::<Scheduler>(), Ok(Scheduler::SporkD(Objective::ENERGY)));
        assert_eq!(Scheduler::SporkD(Objective::ENERGY).to_string(), "SporkD");
        let half = Objective { energy: 0.5, cost: 0.5 };
        assert_eq!("spork-d:0.5".parse::<Scheduler>(), Ok(Scheduler::SporkD(half)));
        assert_eq!(Scheduler::SporkD(half).to_string(), "SporkD(e=0.50)");
        let err = "sprok-e".parse::<Scheduler>().unwrap_err().to_string();
        assert!(err.contains("sprok-e") && err.contains("spork-e"), "{err}");
    }
}

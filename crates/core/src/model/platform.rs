//! Worker types and their specs, with the paper's Table 6 as the default profile.
//!
//! Workers draw busy power while spinning up and down (section 5.1). A CPU worker's speedup is 1 by
//! definition: request sizes are CPU service times.

use super::link::Link;
use super::time::{Time, from_secs, to_secs};
use serde::Serialize;

/// A worker type. The discriminant indexes per-type arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A general-purpose CPU worker: fast to spin up, power hungry when busy.
    Cpu = 0,
    /// An FPGA worker: slow to reconfigure, efficient when busy.
    Fpga = 1,
}

impl Kind {
    /// Both kinds, in efficiency order (the order efficient-first tries them).
    pub const EFFICIENT_FIRST: [Kind; 2] = [Kind::Fpga, Kind::Cpu];
    /// Both kinds, in index order.
    pub const ALL: [Kind; 2] = [Kind::Cpu, Kind::Fpga];

    /// Array index of this kind.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::Fpga => "fpga",
        }
    }
}

/// What one worker of a type costs and how fast it is.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WorkerSpec {
    /// Time from the allocation decision until the worker can serve (FPGA: reconfiguration).
    #[serde(serialize_with = "ser_secs")]
    pub spin_up: Time,
    /// Time from the release decision until the worker stops drawing power and cost.
    #[serde(serialize_with = "ser_secs")]
    pub spin_down: Time,
    /// Processing speedup over a CPU worker (service time = size / speedup).
    pub speedup: f64,
    /// Power while serving, spinning up or spinning down, in watts.
    pub busy_power_w: f64,
    /// Power while allocated and idle, in watts.
    pub idle_power_w: f64,
    /// Prorated price while allocated (spin-up and spin-down included), in dollars per hour.
    pub price_per_hour: f64,
    /// Compute units per worker: requests one worker serves at once, each at `speedup` (FPGA only:
    /// copies of the kernel beside one shell; 1, the paper's board, is not written out).
    #[serde(skip_serializing_if = "is_one")]
    pub compute_units: u32,
    /// The host link each invocation pays (FPGA only): `None`, not stated, is the paper's board,
    /// which charges nothing; a live run then takes its manifest's or the published figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<Link>,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn ser_secs<S: serde::Serializer>(t: &Time, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(super::time::to_secs(*t))
}

impl WorkerSpec {
    /// Price per second of allocation, in dollars.
    pub fn price_per_sec(&self) -> f64 {
        self.price_per_hour / 3600.0
    }

    /// Service time of one invocation carrying `size` of work (CPU time; a batch's is its members'
    /// sum) on this worker: the kernel's time, and the link's cost when it has one.
    #[inline]
    pub fn service(&self, size: Time) -> Time {
        let kernel = if self.speedup == 1.0 { size } else { super::time::round(size as f64 / self.speedup) };
        match &self.link {
            None => kernel,
            Some(link) => kernel + link.cost(size),
        }
    }

    /// The link's cost, free when none is stated.
    pub fn link(&self) -> Link {
        self.link.unwrap_or_default()
    }
}

/// The paper's Table 6: defaults and the alternatives its sensitivity study sweeps.
pub mod table6 {
    /// CPU spin-up (and spin-down) latency: 5 ms.
    pub const CPU_SPIN_UP_S: f64 = 0.005;
    /// CPU spin-down latency: 5 ms.
    pub const CPU_SPIN_DOWN_S: f64 = 0.005;
    /// CPU busy power: 150 W.
    pub const CPU_BUSY_W: f64 = 150.0;
    /// CPU idle power: default 30 W (section 3.2).
    pub const CPU_IDLE_W: f64 = 30.0;
    /// CPU idle power alternatives.
    pub const CPU_IDLE_W_ALTERNATIVES: [f64; 3] = [10.0, 30.0, 50.0];
    /// CPU prorated price: $0.668/hr.
    pub const CPU_PRICE_PER_HOUR: f64 = 0.668;

    /// FPGA spin-up (reconfiguration) latency: default 10 s.
    pub const FPGA_SPIN_UP_S: f64 = 10.0;
    /// FPGA spin-up alternatives.
    pub const FPGA_SPIN_UP_S_ALTERNATIVES: [f64; 4] = [1.0, 10.0, 60.0, 100.0];
    /// FPGA spin-down latency: 100 ms.
    pub const FPGA_SPIN_DOWN_S: f64 = 0.1;
    /// FPGA speedup over a CPU: default 2x.
    pub const FPGA_SPEEDUP: f64 = 2.0;
    /// FPGA speedup alternatives.
    pub const FPGA_SPEEDUP_ALTERNATIVES: [f64; 3] = [1.0, 2.0, 4.0];
    /// FPGA busy power: default 50 W.
    pub const FPGA_BUSY_W: f64 = 50.0;
    /// FPGA busy power alternatives.
    pub const FPGA_BUSY_W_ALTERNATIVES: [f64; 3] = [25.0, 50.0, 100.0];
    /// FPGA idle power: default 20 W.
    pub const FPGA_IDLE_W: f64 = 20.0;
    /// FPGA idle power alternatives.
    pub const FPGA_IDLE_W_ALTERNATIVES: [f64; 3] = [10.0, 20.0, 30.0];
    /// FPGA prorated price: $0.982/hr.
    pub const FPGA_PRICE_PER_HOUR: f64 = 0.982;
    /// Deadline as a multiple of the request size.
    pub const DEADLINE_FACTOR: f64 = 10.0;
}

/// A CPU + FPGA platform: one spec per worker type and the deadline rule.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Platform {
    /// CPU workers.
    pub cpu: WorkerSpec,
    /// FPGA workers.
    pub fpga: WorkerSpec,
    /// A request's deadline is its arrival plus this many times its size.
    pub deadline_factor: f64,
    /// How long an idle worker is kept before it may spin down.
    pub keep_idle: KeepIdle,
}

/// How long an idle worker is kept: "as long as the allocation duration" (section 5.1), which reads
/// two ways.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeepIdle {
    /// Its own type's spin-up time: an FPGA one interval, a CPU a few milliseconds (the default).
    #[default]
    SpinUp,
    /// The scheduling interval, CPUs as FPGAs (the interval is how long an FPGA is allocated for).
    Interval,
}

impl KeepIdle {
    /// Kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            KeepIdle::SpinUp => "spin-up",
            KeepIdle::Interval => "interval",
        }
    }
}

impl std::str::FromStr for KeepIdle {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        [KeepIdle::SpinUp, KeepIdle::Interval]
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown keep-idle rule '{s}': expected spin-up or interval"))
    }
}

impl Default for Platform {
    /// The paper's defaults (Table 6, section 3.2).
    fn default() -> Self {
        use table6::*;
        Platform {
            cpu: WorkerSpec {
                spin_up: from_secs(CPU_SPIN_UP_S),
                spin_down: from_secs(CPU_SPIN_DOWN_S),
                speedup: 1.0,
                busy_power_w: CPU_BUSY_W,
                idle_power_w: CPU_IDLE_W,
                price_per_hour: CPU_PRICE_PER_HOUR,
                compute_units: 1,
                link: None,
            },
            fpga: WorkerSpec {
                spin_up: from_secs(FPGA_SPIN_UP_S),
                spin_down: from_secs(FPGA_SPIN_DOWN_S),
                speedup: FPGA_SPEEDUP,
                busy_power_w: FPGA_BUSY_W,
                idle_power_w: FPGA_IDLE_W,
                price_per_hour: FPGA_PRICE_PER_HOUR,
                compute_units: 1,
                link: None,
            },
            deadline_factor: DEADLINE_FACTOR,
            keep_idle: KeepIdle::SpinUp,
        }
    }
}

impl Platform {
    /// The spec of a worker type.
    pub fn spec(&self, kind: Kind) -> &WorkerSpec {
        match kind {
            Kind::Cpu => &self.cpu,
            Kind::Fpga => &self.fpga,
        }
    }

    /// Mutable spec of a worker type.
    pub fn spec_mut(&mut self, kind: Kind) -> &mut WorkerSpec {
        match kind {
            Kind::Cpu => &mut self.cpu,
            Kind::Fpga => &mut self.fpga,
        }
    }

    /// The scheduling interval: the FPGA spin-up time (section 5.1, T_s = A_f).
    pub fn interval(&self) -> Time {
        self.fpga.spin_up
    }

    /// FPGA-seconds of work one board serves in one interval: the interval times its compute units
    /// (the allocator counts boards; each CU runs at the FPGA speedup).
    pub fn board_capacity_s(&self) -> f64 {
        to_secs(self.interval()) * f64::from(self.fpga.compute_units.max(1))
    }

    /// Compute units per FPGA board, as the pool holds them.
    pub fn fpga_compute_units(&self) -> u16 {
        self.fpga.compute_units.clamp(1, super::units::MAX_COMPUTE_UNITS) as u16
    }

    /// How long a worker of this type stays idle before it may spin down ([`KeepIdle`]).
    pub fn idle_timeout(&self, kind: Kind) -> Time {
        match self.keep_idle {
            KeepIdle::SpinUp => self.spec(kind).spin_up,
            KeepIdle::Interval => self.interval(),
        }
    }

    /// Checks that every figure is physically meaningful; returns the first problem found.
    pub fn validate(&self) -> Result<(), PlatformError> {
        for kind in Kind::ALL {
            self.validate_spec(kind)?;
        }
        if self.cpu.speedup != 1.0 {
            return Err(PlatformError::OutOfRange {
                field: "cpu.speedup".into(),
                value: self.cpu.speedup,
                expected: "exactly 1 (request sizes are CPU service times; set fpga.speedup instead)",
            });
        }
        if self.fpga.spin_up < limits::MIN_FPGA_SPIN_UP {
            return Err(PlatformError::OutOfRange {
                field: "fpga.spin_up".into(),
                value: to_secs(self.fpga.spin_up),
                expected: "at least 1 ms: it is also the scheduling interval, and a shorter one ticks \
                           more often than any allocator can use",
            });
        }
        check("requests.deadline_factor", self.deadline_factor, 1.0, limits::MAX_DEADLINE_FACTOR)?;
        if self.cpu.compute_units != 1 {
            return Err(PlatformError::OutOfRange {
                field: "cpu.compute_units".into(),
                value: f64::from(self.cpu.compute_units),
                expected: "exactly 1 (a CPU worker is one thread; add CPU workers instead)",
            });
        }
        if !self.cpu.link().is_free() {
            return Err(PlatformError::OutOfRange {
                field: "cpu.invocation".into(),
                value: to_secs(self.cpu.link().invocation),
                expected: "0 (a CPU worker runs its requests in its own thread; the link is a board's)",
            });
        }
        let link = self.fpga.link();
        check("fpga.invocation", to_secs(link.invocation), 0.0, limits::MAX_INVOCATION_S)?;
        check("fpga.transfer_gb_per_s", link.bytes_per_s / 1e9, 0.0, limits::MAX_TRANSFER_GB_PER_S)?;
        check("fpga.bytes_per_cpu_s", link.bytes_per_cpu_s, 0.0, limits::MAX_BYTES_PER_CPU_S)?;
        let cus = f64::from(self.fpga.compute_units);
        check("fpga.compute_units", cus, 1.0, f64::from(super::units::MAX_COMPUTE_UNITS))?;
        for (kind, s) in [("cpu", &self.cpu), ("fpga", &self.fpga)] {
            if s.busy_power_w < s.idle_power_w {
                return Err(PlatformError::OutOfRange {
                    field: format!("{kind}.idle_power_w"),
                    value: s.idle_power_w,
                    expected: "at most busy_power_w (an idle worker cannot draw more than a busy one)",
                });
            }
        }
        Ok(())
    }

    /// One worker type's figures, each within its documented range ([`limits`]).
    fn validate_spec(&self, kind: Kind) -> Result<(), PlatformError> {
        let s = self.spec(kind);
        let name = kind.name();
        let f = |field: &str| format!("{name}.{field}");
        check(&f("speedup"), s.speedup, limits::MIN_SPEEDUP, limits::MAX_SPEEDUP)?;
        check(&f("busy_power_w"), s.busy_power_w, 0.0, limits::MAX_POWER_W)?;
        check(&f("idle_power_w"), s.idle_power_w, 0.0, limits::MAX_POWER_W)?;
        check(&f("price_per_hour"), s.price_per_hour, 0.0, limits::MAX_PRICE_PER_HOUR)?;
        for (field, t) in [("spin_up", s.spin_up), ("spin_down", s.spin_down)] {
            check(&f(field), to_secs(t), 0.0, to_secs(limits::MAX_SPIN))?;
        }
        Ok(())
    }
}

/// The documented ranges of a platform's figures. Beyond them a run is meaningless or unbounded:
/// times overflow the nanosecond clock, or a tiny speedup makes one request run for years.
pub mod limits {
    use super::Time;

    /// Slowest FPGA relative to a CPU.
    pub const MIN_SPEEDUP: f64 = 1e-3;
    /// Fastest FPGA relative to a CPU.
    pub const MAX_SPEEDUP: f64 = 1e6;
    /// Most power one worker draws (W).
    pub const MAX_POWER_W: f64 = 1e6;
    /// Highest price of one worker ($/h).
    pub const MAX_PRICE_PER_HOUR: f64 = 1e6;
    /// Longest spin-up or spin-down: a day.
    pub const MAX_SPIN: Time = 86_400_000_000_000;
    /// Shortest FPGA spin-up (the scheduling interval): 1 ms.
    pub const MIN_FPGA_SPIN_UP: Time = 1_000_000;
    /// Longest deadline, in multiples of the request size.
    pub const MAX_DEADLINE_FACTOR: f64 = 1e6;
    /// Longest cost of one board invocation: a second.
    pub const MAX_INVOCATION_S: f64 = 1.0;
    /// Fastest host link (GB/s).
    pub const MAX_TRANSFER_GB_PER_S: f64 = 1e4;
    /// Most bytes a request moves per CPU-second of its size.
    pub const MAX_BYTES_PER_CPU_S: f64 = 1e13;
}

/// A number as an error shows it: exponent notation when very large or small, so that 1e300 is not
/// printed as 301 digits.
pub fn show(value: f64) -> String {
    let a = value.abs();
    if a != 0.0 && !(1e-3..1e6).contains(&a) { format!("{value:e}") } else { format!("{value}") }
}

/// `value` finite and within `[min, max]`.
fn check(field: &str, value: f64, min: f64, max: f64) -> Result<(), PlatformError> {
    if value.is_finite() && (min..=max).contains(&value) {
        return Ok(());
    }
    Err(PlatformError::Range { field: field.to_string(), value, min, max })
}

/// A platform that cannot be simulated.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlatformError {
    /// A number outside its documented range.
    #[error("{field} = {} is out of range: expected a finite number from {min} to {max}", show(*value))]
    Range {
        /// Dotted field name as in the platform file.
        field: String,
        /// The offending value.
        value: f64,
        /// Smallest accepted.
        min: f64,
        /// Largest accepted.
        max: f64,
    },
    /// A field outside its meaningful range.
    #[error("{field} = {} is out of range: expected {expected}", show(*value))]
    OutOfRange {
        /// Dotted field name as in the platform file.
        field: String,
        /// The offending value.
        value: f64,
        /// What would be accepted.
        expected: &'static str,
    },
}

/// Energy and cost of serving `total_size_s` CPU-seconds of work on the idealised FPGA-only platform:
/// FPGAs with the paper's default parameters that only ever draw busy power for the work itself.
pub fn ideal_fpga_only(total_size_s: f64) -> (f64, f64) {
    let d = Platform::default();
    let fpga_s = total_size_s / d.fpga.speedup;
    (fpga_s * d.fpga.busy_power_w, fpga_s * d.fpga.price_per_sec())
}

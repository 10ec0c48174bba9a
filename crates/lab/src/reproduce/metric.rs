//! The figures a run measures, named once so that a claim cannot ask for a metric no run records.

/// One measured figure of a run, as stored in `runs.jsonl` and the points files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Ideal energy over energy used (1 is ideal).
    EnergyEfficiency,
    /// Cost over the ideal cost (1 is ideal).
    RelativeCost,
    /// Share of requests served on CPUs.
    CpuShare,
    /// FPGA spin-ups.
    FpgaSpinUps,
    /// FPGA-seconds allocated (from spin-up to release): how many FPGAs a schedule holds over time.
    FpgaSeconds,
    /// Share of requests that missed their deadline.
    MissShare,
    /// Energy used, joules.
    EnergyJ,
    /// Cost, dollars.
    Cost,
    /// Energy of the ideal schedule, joules.
    IdealEnergyJ,
    /// Cost of the ideal schedule, dollars.
    IdealCost,
    /// Share of energy spent idle.
    IdleShare,
    /// Share of FPGA energy spent idle.
    FpgaIdleShare,
    /// Requests served.
    Requests,
    /// 99th percentile latency, milliseconds.
    P99Ms,
    /// Headroom the scheduler settled on (schedulers that search one).
    Headroom,
    /// With unknown sizes: the estimates' mean absolute error over the mean size.
    SizeError,
    /// With dynamic batching: requests per batch booked.
    MeanBatch,
    /// Share of work the MILP puts on CPUs.
    CpuWorkShare,
    /// MILP optimality gap.
    Gap,
    /// 1 when the MILP proved optimality.
    Optimal,
    /// MILP solve time, seconds.
    SolveS,
    /// Brownout: Σ over control periods of |p95 of optional-served responses − set-point|, seconds.
    Iae,
    /// Brownout: the same sum over the periods whose p95 exceeded the set-point, by how much it did.
    IaeOver,
    /// Brownout: share of control periods whose p95 exceeded the set-point.
    PeriodsOver,
    /// Brownout: share of requests answered after the set-point.
    RequestsOver,
    /// Brownout: share of requests served with their optional content.
    OptionalRatio,
    /// Brownout: 95th percentile response time, seconds.
    P95S,
    /// Brownout: 99th percentile response time, seconds.
    P99S,
    /// Brownout: largest response time, seconds.
    MaxS,
}

impl Metric {
    /// What a simulated run records.
    pub const SIM: [Metric; 17] = [
        Metric::EnergyEfficiency,
        Metric::RelativeCost,
        Metric::CpuShare,
        Metric::FpgaSpinUps,
        Metric::FpgaSeconds,
        Metric::MissShare,
        Metric::EnergyJ,
        Metric::Cost,
        Metric::IdealEnergyJ,
        Metric::IdealCost,
        Metric::IdleShare,
        Metric::FpgaIdleShare,
        Metric::Requests,
        Metric::P99Ms,
        Metric::Headroom,
        Metric::SizeError,
        Metric::MeanBatch,
    ];

    /// What a MILP run records.
    pub const MILP: [Metric; 8] = [
        Metric::EnergyEfficiency,
        Metric::RelativeCost,
        Metric::EnergyJ,
        Metric::Cost,
        Metric::CpuWorkShare,
        Metric::Gap,
        Metric::Optimal,
        Metric::SolveS,
    ];

    /// What a brownout run records.
    pub const BROWNOUT: [Metric; 8] = [
        Metric::Iae,
        Metric::IaeOver,
        Metric::PeriodsOver,
        Metric::RequestsOver,
        Metric::OptionalRatio,
        Metric::P95S,
        Metric::P99S,
        Metric::MaxS,
    ];

    /// Its name in the results files.
    pub const fn key(self) -> &'static str {
        match self {
            Metric::EnergyEfficiency => "energy_efficiency",
            Metric::RelativeCost => "relative_cost",
            Metric::CpuShare => "cpu_share",
            Metric::FpgaSpinUps => "fpga_spin_ups",
            Metric::FpgaSeconds => "fpga_s",
            Metric::MissShare => "miss_share",
            Metric::EnergyJ => "energy_j",
            Metric::Cost => "cost",
            Metric::IdealEnergyJ => "ideal_energy_j",
            Metric::IdealCost => "ideal_cost",
            Metric::IdleShare => "idle_share",
            Metric::FpgaIdleShare => "fpga_idle_share",
            Metric::Requests => "requests",
            Metric::P99Ms => "p99_ms",
            Metric::Headroom => "headroom",
            Metric::SizeError => "size_error",
            Metric::MeanBatch => "mean_batch",
            Metric::CpuWorkShare => "cpu_work_share",
            Metric::Gap => "gap",
            Metric::Optimal => "optimal",
            Metric::SolveS => "solve_s",
            Metric::Iae => "iae",
            Metric::IaeOver => "iae_over",
            Metric::PeriodsOver => "periods_over",
            Metric::RequestsOver => "requests_over",
            Metric::OptionalRatio => "optional_ratio",
            Metric::P95S => "p95_s",
            Metric::P99S => "p99_s",
            Metric::MaxS => "max_s",
        }
    }
}

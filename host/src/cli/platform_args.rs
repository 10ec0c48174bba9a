//! Platform options shared by commands: a profile file plus per-figure overrides (Table 6's sweeps).

use anyhow::Context;
use spork::model::Platform;
use spork::model::platform::KeepIdle;
use std::path::PathBuf;

/// Platform profile and overrides. Precedence: defaults, then `--config`, then these flags.
#[derive(clap::Args, Debug, Clone)]
pub struct PlatformArgs {
    /// Platform profile (TOML with [cpu], [fpga], [requests]); defaults are the paper's Table 6.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// FPGA spin-up (reconfiguration) time, also the scheduling interval [paper: 1s, 10s, 60s, 100s].
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration)]
    pub fpga_spinup: Option<u64>,
    /// FPGA speedup over a CPU [paper: 1, 2, 4].
    #[arg(long, value_name = "X")]
    pub fpga_speedup: Option<f64>,
    /// FPGA busy power in watts [paper: 25, 50, 100].
    #[arg(long, value_name = "W")]
    pub fpga_busy_power: Option<f64>,
    /// FPGA idle power in watts [paper: 10, 20, 30].
    #[arg(long, value_name = "W")]
    pub fpga_idle_power: Option<f64>,
    /// CPU idle power in watts [paper: 10, 30, 50].
    #[arg(long, value_name = "W")]
    pub cpu_idle_power: Option<f64>,
    /// Compute units per FPGA board: requests a board serves at once, each at the FPGA speedup
    /// [paper: 1; beyond the paper].
    #[arg(long, value_name = "N")]
    pub fpga_compute_units: Option<u32>,
    /// Fixed cost of each board invocation (launch and completion), paid once per job or batch
    /// [paper: none; published XRT/Alveo: 50us, a live run's default].
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration)]
    pub fpga_invocation: Option<u64>,
    /// Host-to-card transfer rate for each invocation's bytes, in GB/s [paper: none; published
    /// XRT/Alveo: 9, a live run's default].
    #[arg(long, value_name = "GB_PER_S")]
    pub fpga_transfer_gbps: Option<f64>,
    /// Bytes a request moves to the board and back per CPU-second of its size (a live run measures
    /// its kernel's) [paper: none].
    #[arg(long, value_name = "BYTES")]
    pub bytes_per_cpu_s: Option<f64>,
    /// How long an idle worker is kept before it may spin down: `spin-up` (its own type's spin-up
    /// time, ours) or `interval` (the scheduling interval for CPUs too: a reading of section 5.1's
    /// "as long as the allocation duration").
    #[arg(long, value_name = "RULE", value_parser = super::named::<KeepIdle>(["spin-up", "interval"]))]
    pub keep_idle: Option<KeepIdle>,
}

impl PlatformArgs {
    /// The platform these options describe, validated.
    pub fn platform(&self) -> anyhow::Result<Platform> {
        let mut p = match &self.config {
            Some(path) => spork::config::read_platform(path)?,
            None => Platform::default(),
        };
        if let Some(v) = self.fpga_spinup {
            p.fpga.spin_up = v;
        }
        if let Some(v) = self.fpga_speedup {
            p.fpga.speedup = v;
        }
        if let Some(v) = self.fpga_busy_power {
            p.fpga.busy_power_w = v;
        }
        if let Some(v) = self.fpga_idle_power {
            p.fpga.idle_power_w = v;
        }
        if let Some(v) = self.cpu_idle_power {
            p.cpu.idle_power_w = v;
        }
        if let Some(v) = self.keep_idle {
            p.keep_idle = v;
        }
        if let Some(v) = self.fpga_compute_units {
            p.fpga.compute_units = v;
        }
        let gbps = self.fpga_transfer_gbps.map(|g| g * 1e9);
        p.fpga.link =
            spork::model::Link::stated(p.fpga.link, self.fpga_invocation, gbps, self.bytes_per_cpu_s);
        p.validate().context("invalid platform from the command-line flags")?;
        Ok(p)
    }
}

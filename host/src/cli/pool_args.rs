//! Pool caps and brownout options, shared by `spork simulate` and `spork run`.

use anyhow::bail;
use spork::engine::{Plan, PoolBrownout};
use spork::model::PerKind;
use spork::policy::Caps;
use spork::policy::Scheduler;
use spork::policy::batching::Batching;
use spork::policy::brownout::ControllerKind;

/// Caps on the pool and brownout on requests' optional parts.
#[derive(clap::Args, Debug)]
pub struct PoolArgs {
    /// Cap on CPU workers (spinning up and down included); beyond it requests queue on the worker that
    /// frees up first.
    #[arg(long, value_name = "N")]
    pub max_cpu: Option<u32>,
    /// CPU workers held warm from the start and never released below, as a serving framework's fixed
    /// instances (0: the paper's, which releases every idle CPU after its timeout). Within --max-cpu;
    /// their idle power is counted.
    #[arg(long, value_name = "N")]
    pub min_cpu: Option<u32>,
    /// Cap on FPGA workers; the allocator's target is clipped to it.
    #[arg(long, value_name = "N")]
    pub max_fpga: Option<u32>,
    /// Brownout controller for requests' optional parts (see --optional-factor); each scheduler is
    /// shown without and with it.
    #[arg(long, value_parser = super::named::<ControllerKind>(ControllerKind::ALL.map(ControllerKind::name)))]
    pub brownout: Option<ControllerKind>,
    /// Brownout control period.
    #[arg(long, default_value = "500ms", value_parser = super::parse_duration)]
    pub brownout_period: u64,
    /// Brownout set-point on the p95 of response time relative to the deadline span (1 = the deadline).
    #[arg(long, default_value_t = 1.0)]
    pub brownout_setpoint: f64,
    /// Dynamic batching (off unless given): the most requests one board invocation carries. A batch
    /// closes when full, at a preferred size, when its delay is up and its board free, or when
    /// waiting longer would miss its earliest deadline.
    #[arg(long, value_name = "N")]
    pub max_batch_size: Option<u32>,
    /// Batch sizes that close a batch at once (comma-separated; with --max-batch-size).
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    pub preferred_batch_size: Vec<u32>,
    /// The longest a batch waits for more requests once its board is free (with --max-batch-size).
    #[arg(long, default_value = "100us", value_parser = super::parse_duration)]
    pub max_queue_delay: u64,
}

impl PoolArgs {
    /// Each scheduler's plan from `base`, capped (the FPGA cap also within `fpga_limit`), followed by
    /// the same plan with brownout when asked. `has_optional`: whether the trace's requests carry an
    /// optional part, without which brownout has nothing to skip.
    pub fn plans(
        &self,
        schedulers: &[Scheduler],
        has_optional: bool,
        fpga_limit: Option<u32>,
        base: impl Fn(Scheduler) -> Plan,
    ) -> anyhow::Result<Vec<Plan>> {
        if !(self.brownout_setpoint.is_finite() && (1e-3..=1e3).contains(&self.brownout_setpoint)) {
            bail!(
                "--brownout-setpoint {} must be from 0.001 to 1000 (relative to the deadline span)",
                self.brownout_setpoint
            );
        }
        // A control period of at least 1 ms: shorter ones would tick more often than any response
        // completes, and a run would spend its time in the controller.
        if !(1_000_000..=3_600_000_000_000).contains(&self.brownout_period) {
            bail!("--brownout-period must be from 1ms to 1h");
        }
        if self.brownout.is_some() && !has_optional {
            bail!(
                "--brownout needs requests with an optional part: add --optional-factor F (e.g. 1.0) or a trace \
                 with optional_ms"
            );
        }
        let batching = self.batching()?;
        self.check_floor(schedulers)?;
        let max_fpga = match (self.max_fpga, fpga_limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut plans = Vec::new();
        for &s in schedulers {
            let plan = Plan {
                caps: Caps(PerKind::new(self.max_cpu, max_fpga)),
                batching,
                min_cpu: self.min_cpu.unwrap_or(0),
                ..base(s)
            };
            plans.push(plan);
            if let Some(controller) = self.brownout {
                let setup = PoolBrownout {
                    controller,
                    period: self.brownout_period,
                    setpoint: self.brownout_setpoint,
                };
                plans.push(Plan { brownout: Some(setup), ..plan });
            }
        }
        Ok(plans)
    }

    /// `--min-cpu` within `--max-cpu` and for schedulers with CPUs.
    fn check_floor(&self, schedulers: &[Scheduler]) -> anyhow::Result<()> {
        let min = self.min_cpu.unwrap_or(0);
        if let Some(max) = self.max_cpu.filter(|&max| min > max) {
            bail!(
                "--min-cpu {min} is above --max-cpu {max}\n  fix: hold at most as many CPUs as the cap allows"
            );
        }
        if let Some(s) = schedulers.iter().find(|s| min > 0 && !s.fleet().cpu) {
            bail!(
                "--min-cpu: scheduler {s} uses no CPU workers\n  fix: drop --min-cpu, or pick a scheduler with CPUs"
            );
        }
        Ok(())
    }

    /// A server batches per model, as its model.toml's `[batching]` says (as Triton's model config
    /// does): a server-wide flag is refused rather than ignored.
    pub fn refuse_served_batching(&self) -> anyhow::Result<()> {
        if self.max_batch_size.is_some() || !self.preferred_batch_size.is_empty() {
            bail!(
                "--max-batch-size: spork serve batches per model\n  fix: drop the flag and give the model a \
                 [batching] table in its model.toml (dim, max_batch_size, preferred_batch_size, \
                 max_queue_delay_us; docs/model-repository.md)"
            );
        }
        Ok(())
    }

    /// The dynamic batching asked for, checked.
    fn batching(&self) -> anyhow::Result<Option<Batching>> {
        let Some(max) = self.max_batch_size else {
            if !self.preferred_batch_size.is_empty() {
                bail!("--preferred-batch-size needs --max-batch-size N (batching is off without it)");
            }
            return Ok(None);
        };
        if self.brownout.is_some() {
            bail!(
                "--max-batch-size with --brownout: the brownout gate decides each request's optional part when it \
                 starts, which a batch does not do per member yet\n  fix: drop one of them"
            );
        }
        let rule = Batching::new(max, &self.preferred_batch_size, self.max_queue_delay)
            .map_err(|e| anyhow::anyhow!("dynamic batching: {e}"))?;
        Ok(Some(rule))
    }
}

/// Parses `--scheduler`.
pub fn parse_schedulers(s: &str) -> anyhow::Result<Vec<Scheduler>> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(Scheduler::PAPER.to_vec());
    }
    let list = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(str::parse)
        .collect::<Result<Vec<Scheduler>, _>>()?;
    if list.is_empty() {
        bail!("--scheduler is empty: name at least one of {}", Scheduler::NAMES);
    }
    Ok(list)
}

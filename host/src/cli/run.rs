//! `spork run`: replay a trace live on CPU worker threads and the simulated board.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, bail};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;
use spork::backend::Calibration;
use spork::backend::bitstream::Manifest;
use spork::datapath::work::KernelImage;
use spork::engine::Plan;
use spork::live::{Fault, FaultPlan, PoolConfig};
use spork::model::time::to_secs;
use spork::model::{Platform, Time};
use spork::policy::Scheduler;
use spork::policy::batching::Batching;
use spork::repository::own;
use spork::run::{RunConfig, RunReport};

use super::board_args::{BoardArg, Images, RealBoard, model_board};
use super::live_trace::LiveTrace;
use super::platform_args::PlatformArgs;
use super::pool_args::PoolArgs;
use super::pool_args::parse_schedulers;
use spork::engine::hardware::EngineKind;

/// Options of `spork run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scheduler(s), comma-separated; each replays the same trace in turn.
    #[arg(long, default_value = "spork-e,cpu-dynamic")]
    scheduler: String,
    /// Model every request runs: one of Spork's own (sobel, bloom or dense: models/ in the source
    /// tree, embedded in the binary), or with --model-repository a model of it.
    #[arg(long, default_value = "sobel")]
    kernel: String,
    /// A model repository (docs/model-repository.md): --kernel names one of its models, whose CPU
    /// code is compiled and (with --board sim) RTL verilated before the runs.
    #[arg(long, value_name = "DIR")]
    model_repository: Option<std::path::PathBuf>,
    #[command(flatten)]
    workload: LiveTrace,
    /// Platform: power, price and spin-up delays (the FPGA speedup is measured, not taken from here).
    #[command(flatten)]
    platform: PlatformArgs,
    /// Board clock in MHz (default: the model's `[fpga.model]` timing).
    #[arg(long)]
    clock_mhz: Option<f64>,
    /// Pool caps and brownout (a real board or slot holds one FPGA worker at a time).
    #[command(flatten)]
    pool: PoolArgs,
    /// A board job running longer than this (wall time) is abandoned and re-run on a CPU.
    #[arg(long, default_value = "10s", value_parser = super::parse_duration)]
    kernel_timeout: u64,
    /// Inject faults: `configure:N` fails the Nth FPGA configuration, `stall:N` stalls the Nth FPGA job
    /// sent to a configured board past the kernel timeout (repeatable).
    #[arg(long, value_name = "FAULT")]
    inject_fault: Vec<Fault>,
    /// FPGA workers: `sim` (the simulated board), `model` (a board emulated in real time: reference
    /// answers released when a board of the manifest's clock would finish), `alveo` (a real board over XRT; feature `xrt`,
    /// --xclbin and --device) or `f1` (an AWS F1 slot; feature `f1`, --slot and --agfi). A real
    /// board or slot holds one FPGA worker at a time.
    #[arg(long, value_enum, default_value = "sim")]
    board: BoardArg,
    #[command(flatten)]
    real: RealBoard,
    /// Write the measured reconfiguration latency (median over the run's loads) into the model's
    /// `[fpga.model]` manifest (`[measured]` in its synth.toml; needs --model-repository: Spork's
    /// own models run from a copy in the cache).
    #[arg(long)]
    record_load: bool,
    /// Skip the evaluator's prediction beside each run.
    #[arg(long)]
    no_compare: bool,
    /// Who picks the FPGA for each request: the software rule, or the hardware dispatch engine, the
    /// Verilated RTL (`rtl`) or its cycle-accurate golden model (`golden`), each decision checked
    /// against the software's.
    #[arg(long, default_value = "software", value_parser = super::named::<EngineKind>(EngineKind::ALL.map(EngineKind::name)))]
    dispatch_engine: EngineKind,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// Model `--kernel` of `--model-repository`, else of Spork's own repository, with its board:
/// loaded for `args.board` (its RTL verilated for the simulated one; a real board's image from the
/// flags or its model.toml).
fn repository_model(args: &Args) -> anyhow::Result<(spork::backend::Board, KernelImage)> {
    use spork::repository::kernel::RepoKernel;
    let name = args.kernel.as_str();
    let dir = match &args.model_repository {
        Some(repo) => repo.join(name),
        None if own::names().contains(&name) => own::dir()?.join(name),
        None => return Err(own::OwnError::Unknown(name.to_string()).into()),
    };
    if !spork::repository::spec::valid_model_name(name) || !dir.join("model.toml").is_file() {
        bail!("--kernel {name}: no model folder {} (a folder with a model.toml)", dir.display());
    }
    let spec = spork::repository::spec::load(&dir)?;
    let images = Images::of(&spec, args.board);
    let timeout = Duration::from_nanos(args.kernel_timeout);
    // The board first: its pre-flight errors are what a user must fix before anything else.
    let board = model_board(args.board, &args.real, name, &images, &[name], timeout)?;
    let kernel = RepoKernel::load(spec, args.board == BoardArg::Sim)?;
    Ok((board, KernelImage::repo(Arc::new(kernel))))
}

#[derive(Serialize)]
struct Output<'a> {
    kernel: String,
    cpu_items_per_s: f64,
    clock_mhz: f64,
    /// The board's items per cycle in force: as stated, or as its RTL streamed them (`--board sim`).
    items_per_cycle: f64,
    /// The model's own statement, where its RTL streamed otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    stated_items_per_cycle: Option<f64>,
    measured_speedup: f64,
    requests: usize,
    platform: &'a Platform,
    runs: &'a [RunReport],
}

/// Runs `spork run`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let schedulers: Vec<Scheduler> = parse_schedulers(&args.scheduler)?;
    if args.platform.fpga_speedup.is_some() {
        bail!(
            "--fpga-speedup does not apply to a live run: the speedup is measured (board clock x items per cycle over the CPU reference's rate)"
        );
    }
    if args.kernel_timeout == 0 {
        bail!("--kernel-timeout must be above 0 (e.g. 10s)");
    }
    let (board, image) = repository_model(&args)?;
    let declared = image.kernel.spec.batching.is_some();
    if args.pool.max_batch_size.is_some() && !declared {
        bail!(
            "--max-batch-size: model '{}' declares no [batching] dimension to stack its tensors along\n  \
             fix: give it a [batching] table in its model.toml (docs/model-repository.md), or drop the flag",
            args.kernel
        );
    }
    let image = Arc::new(image);
    let calibration = Calibration::measure(args.board.target(), &image, args.clock_mhz, 200_000)?;
    let spin_up_given = args.platform.fpga_spinup.is_some() || args.platform.config.is_some();
    let platform = calibration.apply(args.platform.platform()?, spin_up_given);
    let platform = calibration.with_manifest(platform, &image);
    board.check_compute_units(platform.fpga.compute_units).map_err(anyhow::Error::msg)?;
    platform.validate().context("the measured platform is not valid")?;
    let (reqs, horizon) = args.workload.requests()?;
    let kernel_timeout = Duration::from_nanos(args.kernel_timeout);
    let faults = FaultPlan::new(args.inject_fault.clone(), kernel_timeout);
    if !args.json {
        print_calibration(&args, &calibration, &platform, reqs.len(), horizon);
    }
    let has_optional = reqs.iter().any(|r| r.optional > 0);
    let base = |s| Plan { seed: args.workload.seed, dispatch_engine: args.dispatch_engine, ..Plan::new(s) };
    let plans = args.pool.plans(&schedulers, has_optional, board.fpga_limit(), base)?;
    // A repository model's own [batching] applies unless the flags state one (and not under brownout).
    let declared = match image.kernel.spec.dynamic_batching() {
        Some(b) => Some(
            Batching::new(
                b.max_batch_size,
                &b.preferred_batch_size,
                b.max_queue_delay_us.saturating_mul(1_000),
            )
            .map_err(|e| anyhow::anyhow!("model '{}': [batching]: {e}", args.kernel))?,
        ),
        None => None,
    };
    let plans: Vec<Plan> = plans
        .into_iter()
        .map(|p| Plan { batching: p.batching.or(declared.filter(|_| p.brownout.is_none())), ..p })
        .collect();
    let plans = engine_where_it_applies(plans)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut runs = Vec::new();
    for plan in plans {
        if !args.json {
            let with =
                plan.brownout.map_or(String::new(), |b| format!(" with brownout ({})", b.controller.name()));
            eprintln!("running {}{with} live ...", plan.scheduler);
        }
        let mut cfg = RunConfig {
            progress: !args.json,
            sysfs: args.real.sys(),
            compare: !args.no_compare,
            ..RunConfig::new(platform, plan, image.clone(), calibration, reqs.clone(), horizon)
        };
        cfg.pool = PoolConfig {
            board: board.clone(),
            faults: faults.clone(),
            kernel_timeout,
            stop: stop.clone(),
            ..cfg.pool
        };
        runs.push(spork::run::run(cfg).context("starting the runtime")?);
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
    }
    if args.record_load {
        record_load(&args, &image, &runs)?;
    }
    if args.json {
        let out = Output {
            kernel: args.kernel.clone(),
            cpu_items_per_s: calibration.items_per_sec,
            clock_mhz: calibration.clock_hz / 1e6,
            items_per_cycle: calibration.items_per_cycle,
            stated_items_per_cycle: calibration.stated_items_per_cycle,
            measured_speedup: platform.fpga.speedup,
            requests: reqs.len(),
            platform: &platform,
            runs: &runs,
        };
        out!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        out!("{}", table(&runs));
        print_notes(&runs)?;
    }
    Ok(())
}

/// The start-up line: what was measured, and the reconfiguration delay in force.
fn print_calibration(args: &Args, c: &Calibration, platform: &Platform, requests: usize, horizon: Time) {
    eprintln!(
        "{} kernel: CPU reference {:.3e} items/s on this machine; board {:.0} MHz x {:.3} items/cycle = {:.3e} items/s \
         (measured speedup {:.2}x); {requests} requests over {:.0} s; FPGA reconfiguration {:.1} s configured + model load measured",
        args.kernel,
        c.items_per_sec,
        c.clock_hz / 1e6,
        c.items_per_cycle,
        c.device_items_per_sec(),
        platform.fpga.speedup,
        to_secs(horizon),
        to_secs(platform.fpga.spin_up)
    );
    if let Some(stated) = c.stated_items_per_cycle {
        eprintln!(
            "{} states {stated} items/cycle; its RTL streamed {:.3} on the simulated board, which is timed at that",
            args.kernel, c.items_per_cycle
        );
    }
    let link = platform.fpga.link();
    eprintln!(
        "board invocation: {:.1} us each, plus its bytes at {:.1} GB/s ({:.3e} bytes per CPU-second measured)",
        link.invocation as f64 / 1e3,
        link.bytes_per_s / 1e9,
        link.bytes_per_cpu_s
    );
}

/// Writes the runs' measured reconfiguration latency into the model's `[fpga.model]` manifest.
fn record_load(args: &Args, image: &KernelImage, runs: &[RunReport]) -> anyhow::Result<()> {
    use spork::repository::spec::TimingSpec;
    let mut loads: Vec<f64> = runs.iter().flat_map(|r| r.reconfig_loads_ms.iter().copied()).collect();
    let count = loads.len();
    if loads.is_empty() {
        bail!("--record-load: no FPGA was configured in these runs, so there is no load latency to record");
    }
    loads.sort_by(f64::total_cmp);
    if args.model_repository.is_none() {
        bail!(
            "--record-load writes into the model's folder, and Spork's own models run from a copy in the cache\n  \
             fix: give --model-repository models (the source tree's), or your repository"
        );
    }
    let timing = image.kernel.spec.timing.clone();
    let Some(TimingSpec::Manifest(path)) = timing else {
        bail!(
            "--record-load: model '{}' names no [fpga.model] manifest to record into\n  \
             fix: `spork kernel synth DIR` writes one and [fpga.model] manifest = \"synth.toml\" names it",
            args.kernel
        );
    };
    let mut m = Manifest::load(&path)
        .with_context(|| format!("--record-load needs the manifest {}", path.display()))?;
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    m.measured = Some(spork::backend::bitstream::Measured {
        load_s: loads[loads.len() / 2] / 1e3,
        loads: count as u32,
        machine: format!(
            "{} ({} cores), spork run --board {}, {}",
            host.trim(),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            args.board.target().name(),
            humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        ),
    });
    std::fs::write(&path, m.to_toml()).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("recorded a {:.3} ms load ({count} loads) in {}", loads[loads.len() / 2], path.display());
    Ok(())
}

fn table(runs: &[RunReport]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    let mut header = vec!["".to_string()];
    header.extend(runs.iter().map(|r| match &r.brownout {
        Some(b) => format!("{} + {b}", r.scheduler),
        None => r.scheduler.clone(),
    }));
    t.set_header(header);
    let row = |name: &str, f: &dyn Fn(&RunReport) -> String| {
        let mut v = vec![name.to_string()];
        v.extend(runs.iter().map(f));
        v
    };
    t.add_row(row("requests answered / offered", &|r| format!("{} / {}", r.answered, r.offered)));
    t.add_row(row("rejected (admission, input, stop)", &|r| {
        format!("{}, {}", r.rejected, r.rejected_at_stop)
    }));
    t.add_row(row("latency p50 / p95 / p99 (ms)", &|r| {
        format!("{:.2} / {:.2} / {:.2}", r.p50_ms, r.p95_ms, r.p99_ms)
    }));
    t.add_row(row("deadline misses", &|r| format!("{} ({:.2}%)", r.deadline_misses, 100.0 * r.miss_share)));
    t.add_row(row("share on FPGAs", &|r| format!("{:.1}%", 100.0 * r.fpga_share)));
    if runs.iter().any(|r| r.optional_offered > 0) {
        t.add_row(row("optional parts run", &|r| {
            format!("{:.1}% of {}", 100.0 * r.optional_ratio, r.optional_offered)
        }));
    }
    if runs.iter().any(|r| r.batches.is_some()) {
        t.add_row(row("batches booked (requests each)", &|r| match r.batches {
            Some((n, carried)) => format!("{n} ({:.2})", carried as f64 / n.max(1) as f64),
            None => "-".into(),
        }));
    }
    t.add_row(row("FPGA speedup: calibrated, observed at the end", &|r| {
        format!("{:.2}x, {:.2}x", r.speedup.0, r.speedup.1)
    }));
    t.add_row(row("FPGA reconfigurations", &|r| r.fpga_spin_ups.to_string()));
    t.add_row(row("  measured load (ms) min/med/max", &|r| {
        let s = &r.reconfig_measured_ms;
        if s.count == 0 { "-".into() } else { format!("{:.2} / {:.2} / {:.2}", s.min, s.median, s.max) }
    }));
    t.add_row(row("  + configured delay (s)", &|r| format!("{:.1}", r.reconfig_configured_s)));
    t.add_row(row("board invocation booked (us; GB/s)", &|r| {
        let l = &r.link;
        format!("{:.1}; {:.1}", l.invocation as f64 / 1e3, l.bytes_per_s / 1e9)
    }));
    if runs.iter().any(|r| r.invocation_measured_us.count > 0) {
        t.add_row(row("  measured at configuration (us, median)", &|r| {
            let s = &r.invocation_measured_us;
            if s.count == 0 { "-".into() } else { format!("{:.1}", s.median) }
        }));
    }
    t.add_row(row("CPU spin-ups (measured ms, median)", &|r| {
        format!("{} ({:.3})", r.cpu_spin_ups, r.cpu_spin_up_measured_ms.median)
    }));
    t.add_row(row("energy CPU / FPGA (J, modelled)", &|r| {
        format!("{:.0} / {:.0}", r.energy_j.cpu, r.energy_j.fpga)
    }));
    t.add_row(row("cost ($)", &|r| format!("{:.5}", r.cost.total())));
    if runs.iter().any(|r| r.board_power_w.iter().any(Option::is_some)) {
        t.add_row(row("backend power, measured (W) CPU / FPGA", &|r| {
            let f = |p: Option<f64>| p.map_or("-".into(), |w| format!("{w:.1}"));
            format!("{} / {}", f(r.board_power_w.cpu), f(r.board_power_w.fpga))
        }));
    }
    t.add_row(row("faults (config, timeout, kernel, mismatch)", &|r| {
        format!(
            "{}, {}, {}, {}",
            r.faults.configure_failures,
            r.faults.kernel_timeouts,
            r.faults.kernel_errors,
            r.faults.mismatches
        )
    }));
    t.add_row(row("re-run on CPU / late results dropped", &|r| {
        format!("{} / {}", r.faults.redispatched, r.faults.late_discarded)
    }));
    t.add_row(row("board time / Verilator time (s)", &|r| {
        format!("{:.3} / {:.2}", r.device_s, r.verilator_s)
    }));
    t.add_row(row("simulation lag (Verilator / board)", &|r| {
        if r.device_s > 0.0 { format!("{:.0}x", r.simulation_lag) } else { "-".into() }
    }));
    t.add_row(row("result lag p50 / max (ms)", &|r| {
        format!("{:.1} / {:.1}", r.result_lag_ms.0, r.result_lag_ms.1)
    }));
    if runs.iter().any(|r| r.dispatch_engine.is_some()) {
        dispatch_engine_rows(&mut t, runs);
    }
    t.add_row(row("wall time (s)", &|r| format!("{:.1}", r.wall_s)));
    t.add_row(row("evaluator: FPGA share / spin-ups / misses / rejected", &|r| match &r.evaluator {
        Some(e) => format!(
            "{:.1}% / {} / {:.2}% / {}",
            100.0 * e.fpga_share,
            e.fpga_spin_ups,
            100.0 * e.miss_share,
            e.rejected
        ),
        None => "-".into(),
    }));
    t
}

/// The hardware dispatch engine's rows: its decisions, their check against the software rule, and
/// what a decision costs in engine cycles and in wall time simulating it.
fn dispatch_engine_rows(t: &mut Table, runs: &[RunReport]) {
    type Counts = spork::engine::hardware::DispatchCounts;
    let row = |name: &str, f: &dyn Fn(&Counts) -> String| {
        let mut v = vec![name.to_string()];
        v.extend(runs.iter().map(|r| r.dispatch_engine.as_ref().map_or("-".into(), |e| f(&e.counts))));
        v
    };
    let mut first = vec!["dispatch engine: decisions (grants)".to_string()];
    first.extend(runs.iter().map(|r| match &r.dispatch_engine {
        Some(e) => format!("{}: {} ({})", e.engine, e.counts.decisions, e.counts.grants),
        None => "software".into(),
    }));
    t.add_row(first);
    t.add_row(row("  vs software: agree / ties / disagree", &|c| {
        format!("{} / {} / {}", c.agree, c.ties, c.disagree)
    }));
    t.add_row(row("  beyond the engine (decided in software)", &|c| c.beyond.to_string()));
    t.add_row(row("  cycles / decision (element writes)", &|c| {
        format!("{:.1} ({:.1})", c.cycles_per_decision(), c.writes as f64 / c.decisions.max(1) as f64)
    }));
    t.add_row(row("  wall time simulating it (us / decision)", &|c| {
        format!("{:.2}", c.wall_us_per_decision())
    }));
}

fn print_notes(runs: &[RunReport]) -> anyhow::Result<()> {
    out!(
        "Latency: CPU requests in wall time; FPGA requests on the board's own timeline (queueing + cycles / clock), \
         because the Verilated model runs slower than the board would (simulation lag above; each board result \
         arrived that much later in wall time, and was checked against the CPU reference). Energy and cost are \
         modelled from the profile's power and prices: this machine has no power sensor for them."
    );
    for r in runs {
        if let Some(n) = r.fpga_never_pays {
            out!("{}: held no FPGA: {}", r.scheduler, n.describe(&r.kernel));
        }
        if r.meters.is_empty() {
            out!("{}: no power sensor found (no RAPL, no Alveo board): energy is modelled only", r.scheduler);
        }
        for m in &r.meters {
            let kind = if m.measured { "measured" } else { "modelled" };
            match &m.energy_j {
                Ok(j) => out!("{}: {kind} {}: {j:.1} J over the run", r.scheduler, m.name),
                Err(e) => out!("{}: {kind} {}: unreadable ({e})", r.scheduler, m.name),
            }
        }
        for f in &r.faults.log {
            out!("fault ({}): {f}", r.scheduler);
        }
        if r.stopped {
            out!(
                "{}: stopped early; {} in-flight requests rejected explicitly",
                r.scheduler,
                r.rejected_at_stop
            );
        }
    }
    Ok(())
}

/// `--dispatch-engine` on the plans it can serve (a scheduler with boards, dispatching
/// efficient-first); the others run the software rule, said once each. Refused if none can.
fn engine_where_it_applies(plans: Vec<Plan>) -> anyhow::Result<Vec<Plan>> {
    use spork::engine::hardware::EngineKind;
    let refusals: Vec<Option<String>> = plans.iter().map(super::dispatch_engine_refusal).collect();
    if let Some(why) = refusals.iter().flatten().next()
        && refusals.iter().all(Option::is_some)
    {
        anyhow::bail!("{why}");
    }
    Ok(plans
        .into_iter()
        .zip(refusals)
        .map(|(p, why)| match why {
            None => p,
            Some(_) => {
                // On stderr, with --json too: the report's reader sees no engine for it.
                eprintln!(
                    "{}: --dispatch-engine does not apply to it (no boards, or not efficient-first); it runs the software rule",
                    p.scheduler
                );
                Plan { dispatch_engine: EngineKind::Software, ..p }
            }
        })
        .collect())
}

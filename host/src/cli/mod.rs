//! Command-line edge: argument parsing, file loading, output. Errors become `anyhow` here.

/// `println!` that fails instead of panicking: a closed pipe or a full disk on standard output ends
/// the command with an error and a non-zero exit.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
            .map_err(|e| anyhow::anyhow!("cannot write to standard output: {e}"))?
    }};
}

#[cfg(feature = "lab")]
mod bench;
mod board_args;
#[cfg(feature = "lab")]
mod brownout;
mod demo;
mod devices;
mod hdl;
mod kernel;
mod live_trace;
mod load;
#[cfg(feature = "lab")]
mod optimal;
mod platform_args;
mod pool_args;
mod power;
#[cfg(feature = "lab")]
mod reproduce;
mod run;
mod serve;
#[cfg(feature = "lab")]
mod simulate;
#[cfg(feature = "lab")]
mod table;
mod trace;
mod worker;

use clap::{Parser, Subcommand};

/// Spork: hybrid FPGA + CPU scheduling for latency-sensitive, bursty requests.
#[derive(Parser)]
#[command(name = "spork", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
// Parsed once per process: the size of its largest variant (serve's flags) costs nothing.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// The end-to-end demo: `spork serve` on the emulated board driven by `spork load` over loopback,
    /// SporkE then CPU-dynamic.
    Demo(demo::Args),
    /// Evaluate schedulers on a trace in virtual time (the paper's discrete-event simulation).
    #[cfg(feature = "lab")]
    Simulate(simulate::Args),
    /// Generate or inspect trace files.
    #[command(subcommand)]
    Trace(trace::Command),
    /// Solve the MILP optimum of section 3 (Table 3) on a b-model load trace.
    #[cfg(feature = "lab")]
    Optimal(optimal::Args),
    /// Regenerate every experiment of the paper into a results folder with a report.
    #[cfg(feature = "lab")]
    Reproduce(reproduce::Args),
    /// Replay a trace live: real CPU worker threads and the simulated board (Verilated RTL), the same
    /// policy as `simulate` in wall time.
    Run(run::Args),
    /// Serve requests over the Open Inference Protocol (HTTP and gRPC), one Spork pool per model.
    Serve(serve::Args),
    /// Serve this host's boards and CPU worker threads to a scheduler (`spork serve --worker`) over
    /// the worker API (gRPC, mutual TLS outside loopback).
    Worker(worker::Args),
    /// Send a trace to a server, open loop, over HTTP or gRPC; report latency, misses and errors.
    Load(load::Args),
    /// Run the brownout reference scenario (one server, p95 set-point) under one or all controllers.
    #[cfg(feature = "lab")]
    Brownout(brownout::Args),
    /// Measure the evaluator's speed (simulated requests per second).
    #[cfg(feature = "lab")]
    Bench(bench::Args),
    /// List this machine's FPGA boards (Alveo, AWS F1) and whether spork can use them.
    Devices(devices::Args),
    /// List this machine's power sensors (RAPL, Alveo) and read them.
    Power(power::Args),
    /// The RTL: regenerate its Verilog, lint it, synthesise it, report resources and throughput.
    #[command(subcommand)]
    Hdl(hdl::Command),
    /// Your own kernel: scaffold a model folder, check its RTL against its CPU code, synthesise,
    /// lint, build ahead of serving.
    #[command(subcommand)]
    Kernel(kernel::Command),
}

/// Parses the command line and runs it.
pub fn run() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Demo(a) => demo::run(a),
        #[cfg(feature = "lab")]
        Command::Simulate(a) => simulate::run(a),
        Command::Trace(c) => trace::run(c),
        #[cfg(feature = "lab")]
        Command::Optimal(a) => optimal::run(a),
        #[cfg(feature = "lab")]
        Command::Reproduce(a) => reproduce::run_cmd(a),
        #[cfg(feature = "lab")]
        Command::Brownout(a) => brownout::run_cmd(a),
        #[cfg(feature = "lab")]
        Command::Bench(a) => bench::run(a),
        Command::Run(a) => run::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Worker(a) => worker::run(a),
        Command::Load(a) => load::run(a),
        Command::Power(a) => power::run(a),
        Command::Devices(a) => devices::run(a),
        Command::Hdl(c) => hdl::run(c),
        Command::Kernel(c) => kernel::run(c),
    }
}

/// A parser for one of a policy's named choices: `--help` lists `names`, the type's own `FromStr`
/// parses (so the names live with the policy, and clap stays at this edge).
pub fn named<T>(
    names: impl IntoIterator<Item = &'static str>,
) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: std::fmt::Display,
{
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(names).try_map(|s| s.parse::<T>().map_err(|e| e.to_string()))
}

/// Parses a duration such as `10s`, `2h` or `500ms`.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    humantime::parse_duration(s)
        .map(spork::model::time::from_duration)
        .map_err(|e| format!("'{s}' is not a duration ({e}); use e.g. 500ms, 10s, 2h"))
}

/// Logs to standard error at `RUST_LOG`'s level (default info): the long-running commands.
fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .try_init();
}

/// The hardware dispatch engine implements efficient-first's first step: a plan whose scheduler
/// has no FPGA, or whose dispatcher is another, would never ask it.
pub fn check_dispatch_engine(plan: &spork::engine::Plan) -> anyhow::Result<()> {
    match dispatch_engine_refusal(plan) {
        Some(why) => anyhow::bail!(why),
        None => Ok(()),
    }
}

/// Why `plan`'s dispatch engine would never be asked (see [`check_dispatch_engine`]).
pub fn dispatch_engine_refusal(plan: &spork::engine::Plan) -> Option<String> {
    use spork::policy::DispatcherKind::{EfficientFirst, EfficientFirstWait};
    let kind = plan.dispatch_engine;
    if kind == spork::engine::hardware::EngineKind::Software {
        return None;
    }
    if !plan.scheduler.fleet().fpga {
        return Some(format!(
            "--dispatch-engine {} places requests on FPGAs, and {} has none: pick a hybrid or FPGA scheduler (spork-e, ...)",
            kind.name(),
            plan.scheduler
        ));
    }
    if !matches!(plan.dispatcher(), EfficientFirst | EfficientFirstWait) {
        return Some(format!(
            "--dispatch-engine {} implements efficient-first, and {} dispatches by {}: pick an efficient-first scheduler",
            kind.name(),
            plan.scheduler,
            plan.dispatcher().name()
        ));
    }
    None
}

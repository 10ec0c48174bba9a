//! `spork demo`: the real thing end to end on this machine. For SporkE, then CPU-dynamic: start
//! `spork serve` (the emulated board, so answers are on time), drive it with `spork load` over
//! loopback HTTP, drain it, and print both sides: what the client measured and what the server did.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use spork::backend::Board;
use spork::backend::crosscheck::CrossCheck;
use spork::engine::Plan;
use spork::live::PoolReport;
use spork::load::{LoadReport, Protocol};
use spork::policy::Scheduler;
use spork::serve::{Kernelled, Limits, ServeConfig};

use super::live_trace::LiveTrace;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The model every request runs: sobel, bloom or dense (of Spork's own repository).
    #[arg(long, default_value = "sobel")]
    model: String,
    #[command(flatten)]
    workload: LiveTrace,
    /// Over `http` or `grpc`.
    #[arg(long, default_value = "http")]
    protocol: String,
    /// Do not run the emulated board's answers on the Verilated RTL in the background. By default
    /// each answer is queued to a checker that runs only on otherwise idle cores and counts
    /// mismatches; its queue is bounded, and answers it cannot take are counted skipped.
    #[arg(long)]
    no_crosscheck: bool,
}

/// Runs `spork demo`.
pub fn run(args: Args) -> anyhow::Result<()> {
    // The cross-check runs each board answer on the model's verilated RTL too.
    let kernel = Kernelled::own(&args.model, None, None, !args.no_crosscheck)?;
    let protocol = if args.protocol == "grpc" { Protocol::Grpc } else { Protocol::Http };
    let mut results = Vec::new();
    // Emulated board answers are also run on the Verilated RTL in the background.
    let check = (!args.no_crosscheck).then(|| Arc::new(CrossCheck::default()));
    for scheduler in ["spork-e", "cpu-dynamic"] {
        let s: Scheduler = scheduler.parse()?;
        eprintln!(
            "{scheduler}: starting spork serve (model board) and sending the trace over {protocol:?} ..."
        );
        results.push((s, one(&args, &kernel, s, protocol, check.as_ref())?));
    }
    let names: Vec<String> = results.iter().map(|(s, _)| s.to_string()).collect();
    let loads: Vec<(&str, &LoadReport)> =
        names.iter().zip(&results).map(|(n, (_, (l, _)))| (n.as_str(), l)).collect();
    out!("What the client measured (spork load):\n{}", super::load::table(&loads));
    out!("What the server did (spork serve):");
    for (s, (_, server)) in &results {
        let Some(r) = server else { continue };
        let energy: f64 = r.energy_j.cpu + r.energy_j.fpga;
        out!(
            "  {s}: {} answered ({:.1}% on FPGAs), {} rejected, {} FPGA reconfigurations, {} CPU spin-ups, \
             modelled energy {energy:.0} J ({:.3} J per request)",
            r.answered,
            100.0 * r.fpga_share,
            r.rejected,
            r.fpga_spin_ups,
            r.cpu_spin_ups,
            energy / r.answered.max(1) as f64
        );
    }
    let Some(check) = check else { return Ok(()) };
    // The checkers finish their queues after the runs (bounded: 60 s).
    let settled = check.settle(Duration::from_secs(60));
    let (checked, mismatches, skipped) = check.counts();
    out!(
        "FPGA answers checked on the Verilated RTL in the background: {checked} checked, {mismatches} mismatches, \
         {skipped} skipped{} (the simulation is slower than the board it checks and runs only on idle \
         cores; a light run is checked whole)",
        if settled { "" } else { ", the rest still queued after 60 s" }
    );
    if mismatches > 0 {
        anyhow::bail!("{mismatches} emulated board answers disagree with the Verilated RTL");
    }
    Ok(())
}

fn one(
    args: &Args,
    kernel: &Kernelled,
    s: Scheduler,
    protocol: Protocol,
    check: Option<&Arc<CrossCheck>>,
) -> anyhow::Result<(LoadReport, Option<PoolReport>)> {
    let cfg = ServeConfig {
        http: "127.0.0.1:0".parse()?,
        grpc: "127.0.0.1:0".parse()?,
        kernels: vec![kernel.clone()],
        plan: Plan { seed: args.workload.seed, ..Plan::new(s) },
        board: Board::Model(check.cloned()),
        boards: None,
        token: None,
        open_health: true,
        limits: Limits::default(),
        grace: Duration::from_secs(5),
        io_threads: 1,
        io_priority: Default::default(),
        size_estimate: spork::policy::estimate::Statistic::Mean,
        kernel_timeout: Duration::from_secs(10),
        faults: Default::default(),
        repository: None,
    };
    let running = spork::serve::start(cfg).context("starting the server")?;
    let (requests, _) = args.workload.requests()?;
    let load = spork::load::LoadConfig {
        target: if protocol == Protocol::Grpc { running.grpc } else { running.http },
        protocol,
        model: kernel.model.name().to_string(),
        inputs: spork::load::Inputs::Kernel(kernel.image.clone()),
        requests,
        items_per_sec: kernel.calibration.items_per_sec,
        ask_server: false,
        deadline_ms: None,
        token: None,
        max_in_flight: 512,
        timeout: Duration::from_secs(10),
        seed: args.workload.seed,
        priority: Default::default(),
        check: false,
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let report = rt.block_on(spork::load::run(load)).context("the load run")?;
    let server = running.drain().into_iter().next().and_then(|(_, r)| r);
    Ok((report, server))
}

//! `spork serve`: the Open Inference Protocol (HTTP and gRPC) in front of one Spork pool per model.
//! Settings come from `--config serve.toml` and flags (a flag wins); see `spork serve --help`.

use spork::policy::estimate::Statistic;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use serde::Deserialize;
use spork::backend::Board;
use spork::backend::crosscheck::CrossCheck;
use spork::backend::remote::{DEFAULT_WORKER_NAME, Hosts, RemoteConfig, Source, TlsFiles};
use spork::engine::Plan;
use spork::input::InputError;
use spork::model::Kind;
use spork::policy::Scheduler;
use spork::priority::Priority;
use spork::serve::control::ModelControl;
use spork::serve::server::MAX_DEADLINE_MS;
use spork::serve::{Limits, ServeConfig};
use std::sync::Arc;

use super::board_args::{BoardArg, Images, RealBoard, model_board};
use super::pool_args::PoolArgs;
use spork::engine::hardware::EngineKind;

#[derive(clap::Args)]
pub struct Args {
    /// Settings file (TOML): any of the flags below, by their names with underscores, and a
    /// [limits] table (max_body, max_items, header_timeout, body_timeout, max_connections,
    /// max_streams, memory_budget, max_queue).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// HTTP listen address [default: 127.0.0.1:8000].
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// gRPC listen address [default: 127.0.0.1:8001].
    #[arg(long, value_name = "ADDR")]
    grpc: Option<SocketAddr>,
    /// The models served at start, one pool each: any of Spork's own (sobel, bloom, dense) and of
    /// --model-repository's folders; the others stay loadable [default: all three of Spork's own, or
    /// every model of --model-repository when given].
    #[arg(long, value_delimiter = ',')]
    models: Option<Vec<String>>,
    /// A model repository (docs/model-repository.md): every model folder in it is served, its CPU
    /// code compiled and its RTL verilated at start (cached). A model that fails to load is reported
    /// and left out; the others serve. Repeatable. A flag only, not a setting of the file.
    #[arg(long, value_name = "DIR")]
    model_repository: Vec<PathBuf>,
    /// How models change while the server runs: `none` (the models loaded at start stay; the
    /// repository API's load and unload are refused, its index stays readable), `explicit` (by the
    /// repository API's load and unload, as tritonclient's load_model / unload_model call them) or
    /// `poll` (those, and a new or changed model folder is loaded, a removed one unloaded, checked
    /// every --repository-poll-secs). `explicit` and `poll` without --control-token-file need
    /// every listener on loopback [default: none].
    #[arg(long, value_name = "MODE", value_parser = ["none", "explicit", "poll"])]
    model_control: Option<String>,
    /// Seconds between two looks at the repositories under --model-control poll [default: 5].
    #[arg(long, value_name = "S")]
    repository_poll_secs: Option<f64>,
    /// A file holding the bearer token that load and unload require (first line, at least 16
    /// characters; not the --token-file token, which does not grant them). Without it, load and
    /// unload take the inference token, if any, and every listener must be on loopback.
    #[arg(long, value_name = "FILE")]
    control_token_file: Option<PathBuf>,
    /// Scheduler of every pool (one needing the trace in advance cannot serve) [default: spork-e].
    #[arg(long)]
    scheduler: Option<String>,
    /// FPGA workers: `model` (a board emulated in real time: reference answers released when a board
    /// of the manifest's clock would finish), `sim` (the Verilated RTL), `alveo` (a real board over
    /// XRT; feature `xrt`, --xclbin per model and --device) or `f1` (an AWS F1 slot; feature `f1`).
    /// A real board is one board time-shared by the models' pools (as --boards 1) [default: model].
    #[arg(long, value_enum)]
    board: Option<BoardArg>,
    #[command(flatten)]
    real: RealBoard,
    /// Boards shared by all models' pools: each interval the boards go to the pools whose allocators
    /// want them by expected saving, and a board moves between models by reconfiguring it
    /// [default: a pool per model with its own boards, capped by --max-fpga].
    #[arg(long, value_name = "N")]
    boards: Option<u32>,
    /// Also run every emulated board answer on the Verilated RTL in the background and count
    /// mismatches (`--board model` only; the check is bounded and skips what it cannot keep up with).
    #[arg(long)]
    crosscheck: bool,
    /// Board clock in MHz [default: the kernel's manifest in bitstreams/sim].
    #[arg(long, value_name = "MHZ")]
    clock_mhz: Option<f64>,
    /// Platform profile (TOML with [cpu], [fpga], [requests]) [default: the paper's Table 6, with a
    /// 1 s FPGA reconfiguration].
    #[arg(long, value_name = "FILE")]
    platform: Option<PathBuf>,
    /// A file holding the bearer token that inference, metadata and the repository index require
    /// (health and metrics too with --auth-health; load and unload take --control-token-file's
    /// instead, if given). Without it, all of these are open to whoever reaches the listeners.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Require the token on health and metrics too (without it, `/v2/health/*`, `/metrics` and
    /// gRPC's ServerLive, ServerReady and ModelReady are open even with --token-file).
    #[arg(long)]
    auth_health: bool,
    /// How long each build tool run on a model folder (the C compiler, Verilator) may take before it
    /// is killed and the model refused [default: 120s].
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    build_timeout: Option<Duration>,
    /// How long a drain (SIGTERM, SIGINT) lets requests in flight finish [default: 5s].
    #[arg(long, value_parser = humantime::parse_duration)]
    grace: Option<Duration>,
    /// After the drain, also write each model's report to FILE as JSON: an object by model name, each
    /// its pool's run report (the fields of `spork run --json`'s runs: answered, answered_fpga,
    /// rejected, rejected_at_stop, redispatched, workers_lost, ...), or null if its pool ended
    /// abnormally. A flag only, not a setting of the file.
    #[arg(long, value_name = "FILE")]
    report_json: Option<PathBuf>,
    /// Threads serving HTTP and gRPC (the pools have their own): one is fastest per request on a small
    /// machine; more carry more connections [default: 1 per 8 cores, at least 1].
    #[arg(long, value_name = "N")]
    io_threads: Option<usize>,
    /// How the protocol threads and the CPU workers are scheduled: `realtime` (SCHED_FIFO 1; needs
    /// root, CAP_SYS_NICE or RLIMIT_RTPRIO) runs them ahead of every other thread and never
    /// time-slices a kernel, so a request does not wait out a kernel's slice at each of its
    /// wake-ups. A load generator on the same machine needs the same (`spork load --priority
    /// realtime`), or it starves behind them. Keep it for loads that leave the cores some room: near
    /// full use, the kernel's real-time throttling (95% of each second by default) stops every
    /// real-time thread of a core for the rest of the second [default: normal].
    #[arg(long, value_name = "PRIORITY")]
    io_priority: Option<Priority>,
    /// What a request is booked at before it runs: `mean` of the CPU time per item measured so far,
    /// or a percentile such as `p99` (fewer requests overrun their bookings and miss) [default: mean].
    #[arg(long, value_name = "ESTIMATE")]
    size_estimate: Option<Statistic>,
    /// Plan each request that states `deadline_ms` to finish this long before it: the time it spends
    /// outside the server (its bytes both ways, the client's own threads), which the client's deadline
    /// counts and the server's clock does not. Misses are still counted against the deadline itself
    /// [default: 0s].
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration)]
    deadline_margin: Option<u64>,
    /// A worker host (`spork worker`) whose slots the pools use, HOST:PORT; repeatable. With worker
    /// hosts, every FPGA worker is a slot of theirs, and CPU workers are too while one is free.
    #[arg(long = "worker", value_name = "HOST:PORT")]
    worker: Vec<String>,
    /// Worker hosts from DNS, dns:NAME:PORT (every address of NAME, re-resolved every 5 s: a
    /// Kubernetes headless Service gives one per worker pod).
    #[arg(long, value_name = "dns:NAME:PORT")]
    workers: Option<String>,
    #[command(flatten)]
    worker_tls: WorkerTls,
    /// Plaintext to worker hosts outside loopback (a trusted network only).
    #[arg(long)]
    insecure_workers: bool,
    /// Largest request body or gRPC message in bytes [default: 16 MiB].
    #[arg(long, value_name = "BYTES")]
    max_body: Option<usize>,
    /// Bytes all requests in flight may hold together (bodies and decoded inputs, queued and
    /// running); beyond it a request is refused at once (429 / RESOURCE_EXHAUSTED) [default: 512 MiB].
    #[arg(long, value_name = "BYTES")]
    memory_budget: Option<usize>,
    #[command(flatten)]
    pool: PoolArgs,
    /// Who picks the FPGA for each request: the software rule, or the hardware dispatch engine, the
    /// Verilated RTL (`rtl`) or its cycle-accurate golden model (`golden`), each decision checked
    /// against the software's (counts on /metrics).
    /// [default: software]
    #[arg(long, value_parser = super::named::<EngineKind>(EngineKind::ALL.map(EngineKind::name)))]
    dispatch_engine: Option<EngineKind>,
}

/// Mutual TLS to the worker hosts (`[worker_tls]` in the settings file).
#[derive(clap::Args, Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkerTls {
    /// The scheduler's certificate (PEM), presented to worker hosts.
    #[arg(long = "worker-tls-cert", value_name = "FILE")]
    cert: Option<PathBuf>,
    /// The scheduler's private key (PEM).
    #[arg(long = "worker-tls-key", value_name = "FILE")]
    key: Option<PathBuf>,
    /// The CA (PEM) that signed the worker hosts' certificates.
    #[arg(long = "worker-tls-ca", value_name = "FILE")]
    ca: Option<PathBuf>,
    /// The name the worker hosts' certificates carry (they are dialled by address) [default: spork-worker].
    #[arg(long = "worker-tls-name", value_name = "NAME")]
    name: Option<String>,
}

impl WorkerTls {
    /// Each field from `self`, else from `file`.
    fn or(self, file: WorkerTls) -> WorkerTls {
        WorkerTls {
            cert: self.cert.or(file.cert),
            key: self.key.or(file.key),
            ca: self.ca.or(file.ca),
            name: self.name.or(file.name),
        }
    }

    /// The files, all three or none.
    fn files(self) -> anyhow::Result<Option<(TlsFiles, String)>> {
        let name = self.name.unwrap_or_else(|| DEFAULT_WORKER_NAME.into());
        match (self.cert, self.key, self.ca) {
            (Some(cert), Some(key), Some(ca)) => Ok(Some((TlsFiles { cert, key, ca }, name))),
            (None, None, None) => Ok(None),
            _ => bail!(
                "worker TLS needs all three of --worker-tls-cert, --worker-tls-key and --worker-tls-ca (or cert, key and ca in [worker_tls])"
            ),
        }
    }
}

/// The settings file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    http: Option<SocketAddr>,
    grpc: Option<SocketAddr>,
    models: Option<Vec<String>>,
    scheduler: Option<String>,
    board: Option<BoardArg>,
    real_board: Option<RealBoard>,
    boards: Option<u32>,
    crosscheck: Option<bool>,
    clock_mhz: Option<f64>,
    platform: Option<PathBuf>,
    token_file: Option<PathBuf>,
    auth_health: Option<bool>,
    model_control: Option<String>,
    repository_poll_secs: Option<f64>,
    control_token_file: Option<PathBuf>,
    #[serde(default, with = "humantime_serde_opt")]
    grace: Option<Duration>,
    io_threads: Option<usize>,
    io_priority: Option<String>,
    size_estimate: Option<String>,
    dispatch_engine: Option<String>,
    max_cpu: Option<u32>,
    max_fpga: Option<u32>,
    min_cpu: Option<u32>,
    #[serde(default, with = "humantime_serde_opt")]
    deadline_margin: Option<Duration>,
    limits: Option<FileLimits>,
    #[serde(default)]
    worker: Vec<String>,
    workers: Option<String>,
    worker_tls: Option<WorkerTls>,
    insecure_workers: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLimits {
    max_body: Option<usize>,
    max_items: Option<u64>,
    #[serde(default, with = "humantime_serde_opt")]
    header_timeout: Option<Duration>,
    #[serde(default, with = "humantime_serde_opt")]
    body_timeout: Option<Duration>,
    max_connections: Option<usize>,
    max_streams: Option<u32>,
    memory_budget: Option<usize>,
    max_queue: Option<usize>,
}

/// Durations in the settings file as humantime strings ("10s").
mod humantime_serde_opt {
    use serde::Deserialize;
    use std::time::Duration;

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let s: Option<String> = Option::deserialize(d)?;
        s.map(|s| humantime::parse_duration(&s).map_err(|e| serde::de::Error::custom(format!("'{s}': {e}"))))
            .transpose()
    }
}

fn read_file(path: &Path) -> anyhow::Result<File> {
    let text = InputError::read(path)?;
    let fix = "fields are http, grpc, models, scheduler, board, boards, crosscheck, clock_mhz, platform, token_file, \
               auth_health, model_control, repository_poll_secs, control_token_file, grace, io_threads, io_priority, size_estimate, dispatch_engine, max_cpu, max_fpga, min_cpu, deadline_margin, worker, workers, insecure_workers, a [limits] table, \
               a [worker_tls] table (cert, key, ca, name) and a [real_board] table (xclbin, xclbin_alt, device, slot, agfi, sys)";
    Ok(toml::from_str(&text).map_err(|e| InputError::from_toml(path, &text, &e, fix))?)
}

/// Runs `spork serve` until SIGTERM or SIGINT, then drains.
pub fn run(args: Args) -> anyhow::Result<()> {
    super::init_tracing();
    let report_json = args.report_json.clone();
    // Checked before serving: an unwritable path found only at the drain would lose the report.
    if let Some(path) = &report_json {
        std::fs::File::create(path).with_context(|| {
            format!("cannot write --report-json {} (fix: a writable file path)", path.display())
        })?;
    }
    let cfg = config(args)?;
    let check = match &cfg.board {
        Board::Model(Some(c)) => Some(c.clone()),
        _ => None,
    };
    let cap = spork::serve::cpu_cap(cfg.plan, &cfg.board).caps.0[Kind::Cpu];
    if let Some(cap) = cap.filter(|&cap| cfg.plan.min_cpu > cap) {
        bail!(
            "--min-cpu {} is above the {cap} CPU workers a model may hold here (one per core)\n  fix: --min-cpu {cap} or less, or raise --max-cpu",
            cfg.plan.min_cpu
        );
    }
    let cpus = cap.map_or("as many as the policy wants".into(), |n| n.to_string());
    let cpus = match cfg.plan.min_cpu {
        0 => format!("{cpus} (--max-cpu)"),
        n => format!("{cpus} (--max-cpu), {n} held warm (--min-cpu)"),
    };
    let io_priority = cfg.io_priority;
    let mut running = spork::serve::start(cfg).context("starting the server")?;
    eprintln!(
        "spork serve: listening: HTTP {}, gRPC {}; loading the models (health/live answers meanwhile)",
        running.http, running.grpc
    );
    running.load_pending(|name, loaded| match loaded {
        Ok(()) => eprintln!("model {name}: loaded"),
        Err(why) => eprintln!("model {name}: not loaded: {why}"),
    });
    if running.server.models().is_empty() {
        running.drain();
        bail!(
            "no model to serve: every model of the repositories failed to load (see above); fix them or add --models"
        );
    }
    eprintln!(
        "spork serve: HTTP on {}, gRPC on {}; models {}; CPU workers per model at most {cpus}; protocol threads at {io_priority} priority; ready (SIGTERM or Ctrl-C drains)",
        running.http,
        running.grpc,
        running.server.models().into_iter().map(|m| m.name().to_string()).collect::<Vec<_>>().join(", ")
    );
    running.wait_for_signal().context("waiting for a signal")?;
    eprintln!("draining ...");
    let reports = running.drain();
    for (model, report) in &reports {
        match report {
            Some(r) => eprintln!(
                "{model}: {} answered ({} on FPGAs), {} rejected, {} refused at the drain; {} deadline misses; \
                 {} re-run after their worker failed ({} workers lost with their host); \
                 {} FPGA configurations (measured part: median {:.3} ms)",
                r.answered,
                r.answered_fpga,
                r.rejected,
                r.rejected_at_stop,
                r.deadline_misses,
                r.faults.redispatched,
                r.faults.workers_lost,
                r.reconfig_measured_ms.count,
                r.reconfig_measured_ms.median
            ),
            None => eprintln!("{model}: its pool ended abnormally"),
        }
    }
    if let Some(path) = &report_json {
        write_report_json(path, &reports)?;
    }
    if let Some(check) = check {
        let settled = check.settle(Duration::from_secs(10));
        let (checked, mismatches, skipped) = check.counts();
        eprintln!(
            "emulated board answers checked on the Verilated RTL: {checked} checked, {mismatches} mismatches, {skipped} skipped{}",
            if settled { "" } else { " (the rest still queued after 10 s)" }
        );
    }
    Ok(())
}

/// `--report-json FILE`: the pools' drain reports as a JSON object by model name (a report as
/// `spork run --json` gives a run's; null for a pool that ended abnormally).
fn write_report_json(
    path: &Path,
    reports: &[(String, Option<spork::live::PoolReport>)],
) -> anyhow::Result<()> {
    let by_model: std::collections::BTreeMap<&str, Option<&spork::live::PoolReport>> =
        reports.iter().map(|(model, report)| (model.as_str(), report.as_ref())).collect();
    let text = serde_json::to_string_pretty(&by_model)?;
    std::fs::write(path, text + "\n")
        .with_context(|| format!("writing the drain report to {}", path.display()))
}

/// The server's settings from the file and the flags.
pub fn config(args: Args) -> anyhow::Result<ServeConfig> {
    let file = match &args.config {
        Some(p) => read_file(p)?,
        None => File::default(),
    };
    let fl = file.limits.unwrap_or_default();
    let d = Limits::default();
    let limits = Limits {
        max_body: args.max_body.or(fl.max_body).unwrap_or(d.max_body),
        max_items: fl.max_items.unwrap_or(d.max_items),
        header_timeout: fl.header_timeout.unwrap_or(d.header_timeout),
        body_timeout: fl.body_timeout.unwrap_or(d.body_timeout),
        max_connections: fl.max_connections.unwrap_or(d.max_connections),
        max_streams: fl.max_streams.unwrap_or(d.max_streams),
        memory_budget: args.memory_budget.or(fl.memory_budget).unwrap_or(d.memory_budget),
        max_queue: fl.max_queue.unwrap_or(d.max_queue),
    };
    check_limits(&limits)?;
    // The listeners and the control plane first: a control plane open to the network is refused
    // before anything is loaded.
    let http = args.http.or(file.http).unwrap_or(SocketAddr::from(([127, 0, 0, 1], 8000)));
    let grpc = args.grpc.or(file.grpc).unwrap_or(SocketAddr::from(([127, 0, 0, 1], 8001)));
    let token = match args.token_file.or(file.token_file) {
        Some(p) => Some(read_token(&p)?),
        None => None,
    };
    let control = model_control(
        args.model_control.or(file.model_control).as_deref(),
        args.repository_poll_secs.or(file.repository_poll_secs),
    )?;
    let control_token = match args.control_token_file.or(file.control_token_file) {
        Some(_) if !control.takes_calls() => bail!(
            "--control-token-file is the token of load and unload, which --model-control none refuses\n  fix: add --model-control explicit (or poll), or drop --control-token-file"
        ),
        Some(p) => Some(read_token(&p)?),
        None => None,
    };
    if control_token.is_some() && control_token == token {
        bail!(
            "the control token is the inference token: whoever may infer could then load and unload\n  fix: give --control-token-file a token of its own"
        );
    }
    spork::serve::control::check_exposure(control, control_token.is_some(), &[http, grpc])
        .map_err(anyhow::Error::msg)?;
    let scheduler: Scheduler = args.scheduler.or(file.scheduler).as_deref().unwrap_or("spork-e").parse()?;
    if scheduler.needs_demand() {
        bail!(
            "scheduler {scheduler} is told the trace in advance, which a server has not: pick spork-e, spork-c, cpu-dynamic or another online one"
        );
    }
    let named = args.models.or(file.models);
    let own = own_models(named.as_deref(), &served_names(&args.model_repository))?;
    let mut repositories = args.model_repository;
    if let Some(dir) = &own {
        repositories.insert(0, dir.clone());
    }
    let pool = PoolArgs {
        max_cpu: args.pool.max_cpu.or(file.max_cpu),
        max_fpga: args.pool.max_fpga.or(file.max_fpga),
        min_cpu: args.pool.min_cpu.or(file.min_cpu),
        ..args.pool
    };
    pool.refuse_served_batching()?;
    let plans = pool.plans(&[scheduler], true, None, Plan::new)?;
    let dispatch_engine = match (args.dispatch_engine, file.dispatch_engine) {
        (Some(e), _) => e,
        (None, Some(s)) => {
            s.parse().map_err(|e| anyhow::anyhow!("dispatch_engine in the config file: {e}"))?
        }
        (None, None) => EngineKind::Software,
    };
    let margin = match (args.deadline_margin, file.deadline_margin) {
        (Some(m), _) => m,
        (None, m) => m.map_or(0, spork::model::time::from_duration),
    };
    if margin >= spork::model::time::from_secs(MAX_DEADLINE_MS / 1e3) {
        bail!(
            "--deadline-margin must be under {MAX_DEADLINE_MS} ms, the longest deadline a client may ask for"
        );
    }
    let plan = Plan { dispatch_engine, margin, ..*plans.last().context("no plan")? };
    super::check_dispatch_engine(&plan)?;
    let which = args.board.or(file.board).unwrap_or(BoardArg::Model);
    let real = args.real.or(file.real_board.unwrap_or_default());
    let crosscheck = args.crosscheck || file.crosscheck.unwrap_or(false);
    let kernel_timeout = Duration::from_secs(10);
    let remote = remote_hosts(
        if args.worker.is_empty() { file.worker } else { args.worker },
        args.workers.or(file.workers),
        args.worker_tls.or(file.worker_tls.unwrap_or_default()),
        args.insecure_workers || file.insecure_workers.unwrap_or(false),
        kernel_timeout,
    )?;
    if remote.is_some()
        && (matches!(which, BoardArg::Alveo | BoardArg::F1)
            || args.boards.or(file.boards).is_some()
            || crosscheck)
    {
        bail!(
            "with worker hosts the boards are theirs: drop --board alveo/f1, --boards and --crosscheck (give them to `spork worker`)"
        );
    }
    let boards = shared_boards(which, args.boards.or(file.boards), crosscheck)?;
    let platform_file = args.platform.or(file.platform);
    let clock_mhz = args.clock_mhz.or(file.clock_mhz);
    let real_board = matches!(which, BoardArg::Alveo | BoardArg::F1).then(|| {
        let known = served_names(&repositories);
        let real = real.clone();
        spork::serve::control::RealBoardFor(Arc::new(move |spec: &spork::repository::spec::ModelSpec| {
            let names: Vec<&str> = known.iter().map(String::as_str).collect();
            let images = Images::of(spec, which);
            model_board(which, &real, &spec.name, &images, &names, kernel_timeout)
                .map_err(|e| format!("{e:#}"))
        }))
    });
    if let Some(t) = args.build_timeout {
        if t.is_zero() || t > Duration::from_secs(24 * 3600) {
            bail!("--build-timeout {t:?} must be between 1ms and 24h");
        }
        spork_sim::bounded::set_limits(spork_sim::bounded::BuildLimits {
            compile: t,
            verilate: t,
            ..Default::default()
        });
    }
    let measure = spork::serve::control::Measure {
        target: which.target(),
        clock_mhz,
        platform: platform_file.clone(),
        // The simulated board runs the RTL; the cross-check runs it beside the emulated board.
        sim: which == BoardArg::Sim || crosscheck,
        real_board,
        memory_budget: limits.memory_budget as u64,
    };
    let mut pending: Vec<String> = Vec::new();
    for repo in &repositories {
        // With --models, only the models named start; the others stay loadable. Spork's own
        // repository, when no model is named, only when no other is given. A name in two
        // repositories loads once, from the first (as a load call finds it).
        for name in repository_models(repo, named.as_deref())? {
            if !pending.contains(&name) {
                pending.push(name);
            }
        }
    }
    let repository = Some(spork::serve::RepositorySetup {
        dirs: repositories.clone(),
        control,
        control_token,
        measure: measure.clone(),
        pending,
    });
    // The server's board; a real board's models each have their own (above), so it goes unused.
    let board = match (remote, which) {
        (Some(hosts), _) => Board::Remote(hosts),
        (None, BoardArg::Model) => Board::Model(crosscheck.then(|| Arc::new(CrossCheck::default()))),
        (None, BoardArg::Sim | BoardArg::Alveo | BoardArg::F1) => Board::Sim,
    };
    Ok(ServeConfig {
        http,
        grpc,
        kernels: Vec::new(),
        plan,
        board,
        boards,
        token,
        open_health: !(args.auth_health || file.auth_health.unwrap_or(false)),
        limits,
        grace: args.grace.or(file.grace).unwrap_or(Duration::from_secs(5)),
        io_threads: io_threads(args.io_threads.or(file.io_threads))?,
        io_priority: match (args.io_priority, file.io_priority) {
            (Some(p), _) => p,
            (None, Some(p)) => {
                p.parse().map_err(|e| anyhow::anyhow!("io_priority in the config file: {e}"))?
            }
            (None, None) => Priority::Normal,
        },
        size_estimate: match (args.size_estimate, file.size_estimate) {
            (Some(s), _) => s,
            (None, Some(s)) => {
                s.parse().map_err(|e| anyhow::anyhow!("size_estimate in the config file: {e}"))?
            }
            (None, None) => Statistic::Mean,
        },
        kernel_timeout,
        faults: Default::default(),
        repository,
    })
}

/// How models change while the server runs (`--model-control`, `model_control`): `none` unless
/// asked for, as Triton's default.
fn model_control(mode: Option<&str>, poll_secs: Option<f64>) -> anyhow::Result<ModelControl> {
    match (mode, poll_secs) {
        (Some("poll"), secs) => {
            let s = secs.unwrap_or(5.0);
            if !(s.is_finite() && (0.1..=3600.0).contains(&s)) {
                bail!("--repository-poll-secs {s} must be between 0.1 and 3600");
            }
            Ok(ModelControl::Poll(Duration::from_secs_f64(s)))
        }
        (_, Some(_)) => bail!("--repository-poll-secs needs --model-control poll"),
        (None | Some("none"), None) => Ok(ModelControl::None),
        (Some("explicit"), None) => Ok(ModelControl::Explicit),
        (Some(other), None) => {
            bail!("model_control '{other}' in the config file: write none, explicit or poll")
        }
    }
}

/// The worker hosts, if any are given: found, checked and (the first round) described before the
/// pools start. A remote job's fixed allowance is the kernel timeout, as a local board's.
fn remote_hosts(
    listed: Vec<String>,
    dns: Option<String>,
    tls: WorkerTls,
    insecure: bool,
    kernel_timeout: Duration,
) -> anyhow::Result<Option<Hosts>> {
    let mut sources: Vec<Source> = listed.iter().map(|s| s.parse()).collect::<Result<_, _>>()?;
    if let Some(d) = dns {
        if !d.starts_with("dns:") {
            bail!("--workers '{d}': write dns:NAME:PORT (a single host goes in --worker HOST:PORT)");
        }
        sources.push(d.parse()?);
    }
    if sources.is_empty() {
        return Ok(None);
    }
    let mut cfg = RemoteConfig::new(sources, tls.files()?, insecure);
    cfg.job_timeout = kernel_timeout;
    let hosts = Hosts::start(cfg).context("reaching the worker hosts")?;
    let (views, _) = hosts.snapshot();
    let up = views.iter().filter(|v| v.up).count();
    eprintln!("worker hosts: {up} of {} up, {} FPGA slots", views.len(), hosts.capacity());
    for why in views.iter().filter_map(|v| hosts.refusal(v.addr)) {
        eprintln!("  refused: {why}");
    }
    Ok(Some(hosts))
}

/// The boards shared between the models' pools: a real board is one board time-shared; `--boards N`
/// shares N emulated or simulated ones.
fn shared_boards(which: BoardArg, boards: Option<u32>, crosscheck: bool) -> anyhow::Result<Option<u32>> {
    if crosscheck && which != BoardArg::Model {
        bail!(
            "--crosscheck checks the emulated board's answers: it needs --board model (sim and real boards are checked on every answer already)"
        );
    }
    match (which, boards) {
        (BoardArg::Alveo | BoardArg::F1, Some(n)) if n != 1 => {
            bail!(
                "--boards {n}: a real board is one board, time-shared by the models (omit --boards or give 1)"
            )
        }
        (BoardArg::Alveo | BoardArg::F1, _) => Ok(Some(1)),
        (_, Some(n)) if n > spork::live::limits::Limits::default().workers => {
            bail!(
                "--boards {n} is more than a pool may hold ({})",
                spork::live::limits::Limits::default().workers
            )
        }
        (_, b) => Ok(b),
    }
}

/// The protocol threads: as given (1 to 256), else one per 8 cores.
fn io_threads(given: Option<usize>) -> anyhow::Result<usize> {
    match given {
        Some(n) if !(1..=256).contains(&n) => bail!("io_threads {n} must be from 1 to 256"),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get() / 8).max(1)),
    }
}

fn check_limits(l: &Limits) -> anyhow::Result<()> {
    if !(1024..=1 << 30).contains(&l.max_body) {
        bail!("max_body {} must be from 1 KiB to 1 GiB", l.max_body);
    }
    if !(1..=64 << 20).contains(&l.max_items) {
        bail!("max_items {} must be from 1 to 64 Mi", l.max_items);
    }
    for (name, t) in [("header_timeout", l.header_timeout), ("body_timeout", l.body_timeout)] {
        if t < Duration::from_millis(10) || t > Duration::from_secs(3600) {
            bail!("{name} {t:?} must be from 10ms to 1h");
        }
    }
    if !(1..=100_000).contains(&l.max_connections) {
        bail!("max_connections {} must be from 1 to 100000", l.max_connections);
    }
    if !(1..=1024).contains(&l.max_streams) {
        bail!("max_streams {} must be from 1 to 1024 (HTTP/2 streams per connection)", l.max_streams);
    }
    if l.memory_budget < l.max_body.saturating_mul(2) {
        bail!(
            "memory_budget {} must hold at least two of the largest requests (2 x max_body = {}): raise it or lower max_body",
            l.memory_budget,
            l.max_body.saturating_mul(2)
        );
    }
    if !(1..=1 << 20).contains(&l.max_queue) {
        bail!("max_queue {} must be from 1 to 1 Mi requests per model", l.max_queue);
    }
    Ok(())
}

/// A token (inference or control): the file's first line, at least 16 characters.
fn read_token(path: &Path) -> anyhow::Result<String> {
    let text = InputError::read(path)?;
    let t = text.lines().next().unwrap_or("").trim().to_string();
    if t.len() < 16 {
        bail!("{}: the token must be at least 16 characters on the first line", path.display());
    }
    Ok(t)
}

/// Spork's own repository (written to the cache), when it serves: with no model named, unless
/// another repository is given (whose folders are `theirs`); with models named, when one of them is
/// Spork's own and not one of `theirs`. A name in neither is refused.
fn own_models(named: Option<&[String]>, theirs: &[String]) -> anyhow::Result<Option<PathBuf>> {
    use spork::repository::own;
    let ours = own::names();
    let wanted = match named {
        None => theirs.is_empty(),
        Some(names) => {
            if let Some(bad) = names.iter().find(|n| !ours.contains(&n.as_str()) && !theirs.contains(n)) {
                bail!(
                    "--models: '{bad}' is neither a model of Spork's own repository ({}) nor a folder of \
                     --model-repository ({}); fix: name one of those, or add the repository holding it",
                    ours.join(", "),
                    if theirs.is_empty() { "none given".to_string() } else { theirs.join(", ") }
                );
            }
            names.iter().any(|n| ours.contains(&n.as_str()) && !theirs.contains(n))
        }
    };
    if !wanted {
        return Ok(None);
    }
    let dir = own::dir().context(
        "writing Spork's own model repository into the cache (fix: set SPORK_CACHE_DIR to a writable folder)",
    )?;
    Ok(Some(dir))
}

/// Every name a `NAME=FILE` flag may give: every repository's folders.
fn served_names(repositories: &[PathBuf]) -> Vec<String> {
    let mut names = Vec::new();
    for dir in repositories {
        let folders = std::fs::read_dir(dir).into_iter().flatten().flatten();
        names.extend(folders.map(|e| e.file_name().to_string_lossy().into_owned()));
    }
    names
}

/// The models of repository `dir` to load at start (those `only` names, if given), in order; they
/// load once the server listens ([`spork::serve::Running::load_pending`]).
fn repository_models(dir: &std::path::Path, only: Option<&[String]>) -> anyhow::Result<Vec<String>> {
    let folders = spork::repository::folders(dir)?;
    if folders.is_empty() {
        bail!(
            "{} holds no model (a model is a folder with a model.toml): see docs/model-repository.md",
            dir.display()
        );
    }
    let names = folders.iter().filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()));
    Ok(names.filter(|name| only.is_none_or(|names| names.contains(name))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_in_no_repository_is_refused_and_a_users_model_may_be_named() {
        let err = own_models(Some(&["sobol".into()]), &[]).unwrap_err().to_string();
        assert!(err.contains("'sobol' is neither a model of Spork's own repository"), "{err}");
        assert!(err.contains("add the repository holding it"), "{err}");
        let theirs = ["polyscan".to_string()];
        assert!(
            own_models(None, &theirs).expect("no error").is_none(),
            "another repository alone: none of ours"
        );
        assert!(own_models(Some(&theirs), &theirs).expect("a user's model named").is_none());
        let both = ["polyscan".to_string(), "sobel".to_string()];
        assert!(own_models(Some(&both), &theirs).expect("ours and theirs").is_some());
    }

    #[test]
    fn the_kubernetes_serve_config_is_one_this_server_reads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/base/serve.toml");
        let file = read_file(&path).expect("deploy/base/serve.toml parses with serve's own reader");
        let workers = file.workers.expect("the workers come from DNS");
        assert!(matches!(workers.parse::<Source>(), Ok(Source::Dns { port: 7070, .. })), "{workers}");
        let tls = file.worker_tls.expect("[worker_tls]");
        assert!(tls.files().expect("all three files").is_some());
        assert_eq!(file.http.map(|a| a.port()), Some(8000));
        let control = model_control(file.model_control.as_deref(), file.repository_poll_secs);
        assert_eq!(
            control.expect("valid"),
            ModelControl::None,
            "the cluster's server loads and unloads nothing"
        );
    }

    /// `spork serve ARGS` as clap parses them.
    fn args(given: &[&str]) -> Args {
        #[derive(clap::Parser)]
        struct Serve {
            #[command(flatten)]
            args: Args,
        }
        let argv = std::iter::once("serve").chain(given.iter().copied());
        <Serve as clap::Parser>::try_parse_from(argv).expect("the arguments parse").args
    }

    fn refused(given: &[&str]) -> String {
        match config(args(given)) {
            Ok(_) => panic!("{given:?} was taken"),
            Err(e) => format!("{e:#}"),
        }
    }

    #[test]
    fn model_control_is_none_unless_asked_for() {
        assert_eq!(model_control(None, None).expect("default"), ModelControl::None);
        assert_eq!(model_control(Some("explicit"), None).expect("explicit"), ModelControl::Explicit);
        assert_eq!(
            model_control(Some("poll"), Some(0.5)).expect("poll"),
            ModelControl::Poll(Duration::from_millis(500))
        );
        let e = model_control(Some("open"), None).expect_err("not a mode").to_string();
        assert!(e.contains("write none, explicit or poll"), "{e}");
        let e = model_control(Some("explicit"), Some(1.0)).expect_err("no poll").to_string();
        assert!(e.contains("needs --model-control poll"), "{e}");
    }

    #[test]
    fn a_control_plane_open_to_the_network_is_refused_before_anything_loads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).expect("write");
            p.to_string_lossy().into_owned()
        };
        let control = write("control", "control-token-0123456789\n");
        let inference = write("inference", "inference-token-0123456789\n");
        let e = refused(&["--http", "0.0.0.0:8000", "--model-control", "explicit"]);
        assert!(
            e.contains(
                "--model-control explicit without --control-token-file on 0.0.0.0:8000, which is not loopback"
            ),
            "{e}"
        );
        assert!(e.contains("fix: give --control-token-file FILE"), "{e}");
        let file = write("serve.toml", "grpc = \"0.0.0.0:8001\"\nmodel_control = \"poll\"\n");
        let e = refused(&["--config", &file]);
        assert!(e.contains("--model-control poll without --control-token-file on 0.0.0.0:8001"), "{e}");
        let e = refused(&["--control-token-file", &control]);
        assert!(e.contains("which --model-control none refuses"), "{e}");
        let e = refused(&[
            "--model-control",
            "explicit",
            "--control-token-file",
            &inference,
            "--token-file",
            &inference,
        ]);
        assert!(e.contains("the control token is the inference token"), "{e}");
        let short = write("short", "short\n");
        let e = refused(&["--model-control", "explicit", "--control-token-file", &short]);
        assert!(e.contains("at least 16 characters"), "{e}");
    }
}

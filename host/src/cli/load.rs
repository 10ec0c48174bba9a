//! `spork load`: send a trace to a server, open loop, over HTTP or gRPC, and report what came back.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use spork::datapath::work::KernelImage;
use spork::load::described::{self, Data, Given};
use spork::load::{Inputs, LoadConfig, LoadReport, Protocol};
use spork::priority::Priority;
use spork::repository::own;

use super::live_trace::LiveTrace;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The server (loopback or a private address) [default: 127.0.0.1:8000, or :8001 for gRPC].
    #[arg(long, value_name = "ADDR")]
    target: Option<SocketAddr>,
    /// `http` (binary tensors) or `grpc`.
    #[arg(long, default_value = "http", value_parser = parse_protocol)]
    protocol: Protocol,
    /// The model every request runs: one of Spork's own (sobel, bloom or dense), a folder of
    /// --model-repository (its model.toml gives the inputs, random of the sizes the trace asks), or
    /// any model the server serves (its metadata gives the inputs: see --shape and --data).
    #[arg(long, default_value = "sobel")]
    model: String,
    /// An input's shape, as NAME:DIMS (`image:64x64`, `x:1,1000`); repeatable. Inputs are then drawn
    /// from the server's description of the model; an input not given has each variable dimension
    /// sized so that a request holds the items its size asks for.
    #[arg(long = "shape", value_name = "NAME:DIMS", value_parser = parse_shape)]
    shapes: Vec<(String, Vec<u64>)>,
    /// The inputs' data: `random` (within each datatype; floats in [-1, 1)), `zero`, or a JSON file
    /// in perf_analyzer's form ({"data": [{"NAME": [values] or {"content": [...], "shape": [...]}}]},
    /// one entry per request, in turn). Inputs are then drawn from the server's description.
    #[arg(long, value_name = "random|zero|FILE")]
    data: Option<String>,
    /// The repository holding --model, as the server was given it: the model's CPU code sizes and
    /// builds its requests here.
    #[arg(long, value_name = "DIR")]
    model_repository: Option<PathBuf>,
    #[command(flatten)]
    workload: LiveTrace,
    /// `deadline_ms` sent with each request [default: the server's, its deadline factor times the
    /// estimated size].
    #[arg(long, value_name = "MS")]
    deadline_ms: Option<f64>,
    /// A file holding the server's bearer token.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Most requests in flight; beyond, a request waits, its wait counted in its latency.
    #[arg(long, default_value_t = 512)]
    max_in_flight: usize,
    /// A request unanswered after this counts as a timeout.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// The CPU speed that sizes each request (items per second: a request of `--size` carries that
    /// many seconds' worth) [default: the server's own, the speed its model's CPU code measured
    /// when it loaded (`spork serve` states it in the model's metadata), so that `--size 1ms` is 1 ms
    /// of service there; from a server that states none (Triton), the model's C code's speed
    /// measured here, which moved by up to a third between runs on a shared VM]. Pin it (from an
    /// earlier run's `items_per_sec`) to send the same requests to every server and every step.
    #[arg(long, value_name = "N")]
    items_per_sec: Option<f64>,
    /// How the load generator's threads are scheduled: `realtime` (SCHED_FIFO 1; needs root,
    /// CAP_SYS_NICE or RLIMIT_RTPRIO) keeps a server's kernels on the same machine from delaying the
    /// sending and the reading of answers, which would count in the latencies measured. Give the
    /// server the same (`spork serve --io-priority realtime`), or it starves behind the load
    /// generator instead [default: normal].
    #[arg(long, default_value = "normal", value_name = "PRIORITY")]
    priority: Priority,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Compare every answer with --model's CPU code run here on the same inputs (from
    /// --model-repository); exits 2 if any differs.
    #[arg(long)]
    check: bool,
}

fn parse_shape(s: &str) -> Result<(String, Vec<u64>), String> {
    let fix = "give NAME:DIMS, e.g. image:64x64 or x:1,1000";
    let (name, dims) = s.split_once(':').ok_or_else(|| format!("'{s}': {fix}"))?;
    let dims: Result<Vec<u64>, _> = dims.split(['x', ',']).map(|d| d.trim().parse::<u64>()).collect();
    match dims {
        Ok(d) if !name.is_empty() && !d.is_empty() && d.iter().all(|&n| n > 0) => Ok((name.to_string(), d)),
        _ => Err(format!("'{s}': {fix} (every dimension at least 1)")),
    }
}

/// The most bytes of a `--data` file read.
const DATA_MOST: u64 = 256 << 20;

/// Where the requests' inputs come from: the server's description when --shape or --data is given
/// or the model is neither Spork's own nor in --model-repository; else a kernel's image here.
fn inputs(args: &Args) -> anyhow::Result<Inputs> {
    let own = args.model_repository.is_none() && own::names().contains(&args.model.as_str());
    let served = !args.shapes.is_empty() || args.data.is_some() || (args.model_repository.is_none() && !own);
    if !served {
        match image(args) {
            Ok(image) => return Ok(Inputs::Kernel(Arc::new(image))),
            // Spork's own model needs a C compiler here; without one the server's description serves.
            Err(e) if own && !args.check => {
                tracing::warn!("{e:#}: its inputs are drawn from the server's description")
            }
            Err(e) => return Err(e),
        }
    }
    if args.check {
        bail!(
            "--check runs the model's CPU code here: give --model-repository DIR holding '{}', or one of Spork's own \
             models (sobel, bloom, dense), and no --shape or --data",
            args.model
        );
    }
    let data = match args.data.as_deref() {
        None | Some("random") => Data::Random,
        Some("zero") => Data::Zero,
        Some(file) => {
            described::read_data(std::path::Path::new(file), DATA_MOST).map_err(anyhow::Error::msg)?
        }
    };
    Ok(Inputs::Served(Given { shapes: args.shapes.iter().cloned().collect(), data }))
}

fn parse_protocol(s: &str) -> Result<Protocol, String> {
    match s.to_ascii_lowercase().as_str() {
        "http" => Ok(Protocol::Http),
        "grpc" => Ok(Protocol::Grpc),
        _ => Err(format!("unknown protocol '{s}': use http or grpc")),
    }
}

/// The image requests are built from: a model of --model-repository, or one of Spork's own (its
/// C code compiled here, as the server's is).
fn image(args: &Args) -> anyhow::Result<KernelImage> {
    use spork::repository::kernel::RepoKernel;
    let name = args.model.as_str();
    if let Some(repo) = &args.model_repository {
        let dir = repo.join(name);
        if spork::repository::spec::valid_model_name(name) && dir.join("model.toml").is_file() {
            let spec = spork::repository::spec::load(&dir)?;
            return Ok(KernelImage::repo(Arc::new(RepoKernel::load(spec, false)?)));
        }
        bail!(
            "--model {name}: no model folder {} (fix: give --model-repository DIR holding its folder, as the server was given it)",
            dir.display()
        );
    }
    Ok(KernelImage::repo(Arc::new(own::load(name, false)?)))
}

/// The load run's settings; `target` is where the server listens.
pub fn config(args: &Args) -> anyhow::Result<LoadConfig> {
    if !(1..=100_000).contains(&args.max_in_flight) {
        bail!("--max-in-flight {} must be from 1 to 100000", args.max_in_flight);
    }
    if let Some(d) = args.deadline_ms
        && !(d.is_finite() && d > 0.0)
    {
        bail!("--deadline-ms {d} must be a positive number of milliseconds");
    }
    let (requests, _) = args.workload.requests()?;
    let inputs = inputs(args)?;
    let items_per_sec = match (args.items_per_sec, &inputs) {
        (Some(n), _) if n.is_finite() && n >= 1.0 => n,
        (Some(n), _) => bail!("--items-per-sec {n} must be a number of items per second, at least 1"),
        (None, Inputs::Kernel(image)) => image.calibrate(200_000),
        // Asked of the server when the run starts (it refuses to guess if the server states none).
        (None, Inputs::Served(_)) => 1.0,
    };
    let default_port = if args.protocol == Protocol::Grpc { 8001 } else { 8000 };
    let token = match &args.token_file {
        Some(p) => Some(spork::input::InputError::read(p)?.lines().next().unwrap_or("").trim().to_string()),
        None => None,
    };
    Ok(LoadConfig {
        target: args.target.unwrap_or(SocketAddr::from(([127, 0, 0, 1], default_port))),
        protocol: args.protocol,
        model: args.model.clone(),
        inputs,
        requests,
        items_per_sec,
        ask_server: args.items_per_sec.is_none(),
        deadline_ms: args.deadline_ms,
        token,
        max_in_flight: args.max_in_flight,
        timeout: args.timeout,
        seed: args.workload.seed,
        priority: args.priority,
        check: args.check,
    })
}

/// Runs `spork load`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let cfg = config(&args)?;
    if !args.json {
        eprintln!(
            "sending {} {} requests to {} over {:?} (open loop, latency from each request's intended send time) ...",
            cfg.requests.len(),
            args.model,
            cfg.target,
            cfg.protocol
        );
    }
    // This thread too: it runs the loop that sends each request when the pacer says.
    spork::priority::set(cfg.priority).context("--priority")?;
    let priority = cfg.priority;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .on_thread_start(move || {
            let _ = spork::priority::set(priority);
        })
        .enable_all()
        .build()?;
    let report = rt.block_on(spork::load::run(cfg)).context("the load run")?;
    if args.json {
        out!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", table(&[("", &report)]));
    }
    if let Some(c) = report.checks.as_ref().filter(|c| c.wrong > 0) {
        bail!(
            "{} of {} answers differ from the model's CPU code ({})",
            c.wrong,
            report.ok,
            c.first.join("; ")
        );
    }
    Ok(())
}

/// Load reports side by side, one column each.
pub fn table(runs: &[(&str, &LoadReport)]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    let mut header = vec!["".to_string()];
    header.extend(runs.iter().map(|(n, _)| n.to_string()));
    t.set_header(header);
    let row = |name: &str, f: &dyn Fn(&LoadReport) -> String| {
        let mut v = vec![name.to_string()];
        v.extend(runs.iter().map(|(_, r)| f(r)));
        v
    };
    t.add_row(row("sent / answered", &|r| format!("{} / {}", r.sent, r.ok)));
    t.add_row(row("answered on CPU / FPGA", &|r| {
        let k = |n: &str| r.by_kind.get(n).copied().unwrap_or(0);
        format!("{} / {}", k("cpu"), k("fpga"))
    }));
    t.add_row(row("errors", &|r| {
        if r.errors.is_empty() {
            "none".into()
        } else {
            r.errors.iter().map(|(e, n)| format!("{e}: {n}")).collect::<Vec<_>>().join(", ")
        }
    }));
    t.add_row(row("deadline misses", &|r| {
        format!("{} ({:.2}%)", r.missed, 100.0 * r.missed as f64 / r.ok.max(1) as f64)
    }));
    t.add_row(row("latency p50 / p95 / p99 / p99.9 (ms)", &|r| {
        let p = |q| r.percentile_ms(q);
        format!("{:.2} / {:.2} / {:.2} / {:.2}", p(0.5), p(0.95), p(0.99), p(0.999))
    }));
    t.add_row(row("throughput (answers/s), offered (req/s)", &|r| {
        format!("{:.1}, {:.1}", r.throughput, r.offered_rate)
    }));
    t.add_row(row("p99 of the server's part / the rest / its handler's (ms)", &|r| {
        let p99 = |part: &str| r.split_ms.get(part).and_then(|m| m.get("p99")).copied();
        let handler = p99("handler").map_or("-".into(), |h| format!("{h:.2}"));
        match (p99("server"), p99("outside")) {
            (Some(s), Some(o)) => format!("{s:.2} / {o:.2} / {handler} ({} late outside)", r.late_outside),
            _ => "not reported".into(),
        }
    }));
    if runs.iter().any(|(_, r)| r.checks.is_some()) {
        t.add_row(row("answers checked: right / wrong / unchecked", &|r| match &r.checks {
            Some(c) => format!("{} / {} / {}", c.right, c.wrong, c.unchecked),
            None => "-".into(),
        }));
    }
    t.add_row(row("items per request (sized at items/s, whose)", &|r| {
        format!("{:.0} ({:.4e}, {})", r.mean_items, r.items_per_sec, r.sized_by)
    }));
    t
}

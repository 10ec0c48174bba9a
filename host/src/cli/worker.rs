//! `spork worker`: serve this host's boards and CPU worker threads to a scheduler (`spork serve
//! --worker HOST:PORT` or `--workers dns:NAME:PORT`) over the worker API, until SIGTERM or SIGINT.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use spork::backend::remote::TlsFiles;
use spork::model::Platform;
use spork::repository::kernel::RepoKernel;
use spork::worker_host::{self, HostConfig, Offer};
use std::sync::Arc;

use super::board_args::{BoardArg, Images, RealBoard, model_board};

/// What this host's FPGA slots are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HostBoard {
    /// None: a CPU-only host (the burst tier).
    Cpu,
    /// A board emulated in real time.
    Model,
    /// The simulated board (Verilated RTL).
    Sim,
    /// An Alveo board over XRT (feature `xrt`).
    Alveo,
    /// An AWS F1 slot (feature `f1`).
    F1,
}

#[derive(clap::Args)]
pub struct Args {
    /// The worker API's address (outside loopback it needs --tls-cert, --tls-key and --tls-ca).
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: SocketAddr,
    /// What the FPGA slots are.
    #[arg(long, value_enum, default_value = "model")]
    board: HostBoard,
    /// FPGA slots [default: 1 for alveo and f1 (one board, one owner), 2 for model and sim, 0 for cpu].
    #[arg(long, value_name = "N")]
    fpga_slots: Option<u32>,
    /// CPU worker slots [default: the cores available].
    #[arg(long, value_name = "N")]
    cpu_slots: Option<u32>,
    /// A model repository whose models this host serves beside Spork's own (sobel, bloom, dense),
    /// as `spork serve --model-repository` does; a model that fails to load is reported and left
    /// out. Repeatable.
    #[arg(long, value_name = "DIR")]
    model_repository: Vec<std::path::PathBuf>,
    #[command(flatten)]
    real: RealBoard,
    /// This worker's certificate (PEM).
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "tls_ca"])]
    tls_cert: Option<PathBuf>,
    /// This worker's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// The CA (PEM) whose schedulers this worker trusts: a scheduler without a certificate it
    /// signed is refused.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_ca: Option<PathBuf>,
    /// Plaintext without TLS even outside loopback (a trusted network only).
    #[arg(long, conflicts_with = "tls_cert")]
    insecure: bool,
    /// Plain HTTP probes for the kubelet: GET /livez and /readyz.
    #[arg(long, value_name = "ADDR")]
    probe: Option<SocketAddr>,
    /// Platform profile (TOML): the worker specs whose power the slots report [default: the paper's].
    #[arg(long, value_name = "FILE")]
    platform: Option<PathBuf>,
    /// Leases of a scheduler not heard from this long are freed.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    lease_timeout: Duration,
}

/// Runs the worker host until SIGTERM or SIGINT.
pub fn run(args: Args) -> anyhow::Result<()> {
    super::init_tracing();
    let cfg = config(args)?;
    let (cpu, fpga, board) = (cfg.offer.cpu, cfg.offer.fpga, cfg.board.clone());
    let host = worker_host::start(cfg).context("starting the worker host")?;
    eprintln!(
        "spork worker: worker API on {}{}; {fpga} FPGA slots ({board}), {cpu} CPU slots; ready (SIGTERM or Ctrl-C stops)",
        host.addr,
        host.probe.map(|p| format!(", probes on {p}")).unwrap_or_default()
    );
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(spork::serve::terminated()).context("waiting for a signal")?;
    eprintln!("stopping: {} job parts run", host.runs());
    host.stop();
    Ok(())
}

/// The host's settings from the flags.
pub fn config(args: Args) -> anyhow::Result<HostConfig> {
    let platform = match &args.platform {
        Some(p) => spork::config::read_platform(p)?,
        None => Platform::default(),
    };
    let fpga = args.fpga_slots.unwrap_or(match args.board {
        HostBoard::Cpu => 0,
        HostBoard::Alveo | HostBoard::F1 => 1,
        HostBoard::Model | HostBoard::Sim => 2,
    });
    let cpu =
        args.cpu_slots.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    if matches!(args.board, HostBoard::Alveo | HostBoard::F1) && fpga > 1 {
        bail!(
            "--fpga-slots {fpga}: a real board is one slot with one owner (run one worker per board, or give 1)"
        );
    }
    if args.board == HostBoard::Cpu && fpga > 0 {
        bail!("--board cpu has no FPGA slots (omit --fpga-slots, or pick a board)");
    }
    if cpu > 4096 || fpga > 1024 {
        bail!("{cpu} CPU / {fpga} FPGA slots: at most 4096 CPU and 1024 FPGA slots per host");
    }
    let mut repositories = vec![spork::repository::own::dir().context(
        "writing Spork's own model repository into the cache (fix: set SPORK_CACHE_DIR to a writable folder)",
    )?];
    repositories.extend(args.model_repository.iter().cloned());
    let models = repository_models(&repositories, args.board == HostBoard::Sim)?;
    let boards = boards(args.board, &args.real, &models)?;
    if fpga > 0 && boards.is_empty() {
        bail!(
            "--board {:?} has no model image: give --xclbin MODEL=FILE (alveo) or --agfi MODEL=AGFI (f1)",
            args.board
        );
    }
    let describe = match args.board {
        HostBoard::Cpu => "cpu".to_string(),
        _ => boards.values().next().map(|b| b.describe()).unwrap_or_default(),
    };
    let tls = match (args.tls_cert, args.tls_key, args.tls_ca) {
        (Some(cert), Some(key), Some(ca)) => Some(TlsFiles { cert, key, ca }),
        _ => None,
    };
    Ok(HostConfig {
        listen: args.listen,
        probe: args.probe,
        tls,
        insecure: args.insecure,
        offer: Offer { cpu, fpga, boards, platform, lease_timeout: args.lease_timeout, models },
        board: describe,
    })
}

/// Each model's board by name: every model on an emulated or simulated one; on a real board, each
/// model given an image (by a flag or its model.toml; checked before anything runs).
fn boards(
    which: HostBoard,
    real: &RealBoard,
    models: &HashMap<String, Arc<RepoKernel>>,
) -> anyhow::Result<HashMap<String, spork::backend::Board>> {
    let arg = match which {
        HostBoard::Cpu => return Ok(HashMap::new()),
        HostBoard::Model => BoardArg::Model,
        HostBoard::Sim => BoardArg::Sim,
        HostBoard::Alveo => BoardArg::Alveo,
        HostBoard::F1 => BoardArg::F1,
    };
    let timeout = Duration::from_secs(10);
    let known: Vec<&str> = models.keys().map(String::as_str).collect();
    let mut out = HashMap::new();
    let mut first_error = None;
    for (name, model) in models {
        match model_board(arg, real, name, &Images::of(&model.spec, arg), &known, timeout) {
            Ok(b) => {
                out.insert(name.clone(), b);
            }
            // A real board serves the models it was given images for.
            Err(e) if matches!(which, HostBoard::Alveo | HostBoard::F1) => {
                tracing::debug!("{name}: {e}");
                first_error.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    match first_error {
        // The error for one model says what is missing.
        Some(e) if out.is_empty() => Err(e),
        _ => Ok(out),
    }
}

/// The models of `repositories` by name, loaded (their RTL verilated when `sim`); one that fails to
/// load is reported on stderr and left out.
fn repository_models(
    repositories: &[std::path::PathBuf],
    sim: bool,
) -> anyhow::Result<HashMap<String, Arc<RepoKernel>>> {
    let mut models = HashMap::new();
    for repo in repositories {
        for (folder, spec) in spork::repository::scan(repo)? {
            let loaded = spec.map_err(anyhow::Error::from).and_then(|spec| Ok(RepoKernel::load(spec, sim)?));
            match loaded {
                Ok(k) => {
                    eprintln!("model {}: loaded from {}", k.name(), folder.display());
                    models.entry(k.name().to_string()).or_insert_with(|| Arc::new(k));
                }
                Err(e) => eprintln!("model {}: not loaded: {e:#}", folder.display()),
            }
        }
    }
    Ok(models)
}

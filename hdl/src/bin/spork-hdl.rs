//! `spork-hdl generate [--out DIR] [--models DIR] [--check]`: writes each design's Verilog (default:
//! the checked-in copies under `bitstreams/sim/`) and the generated files of Spork's own model
//! repository (`models/`), or with `--check` fails if any checked-in file is stale.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use spork_hdl::repository;
use spork_hdl::verilog::{DESIGNS, generate};

#[derive(Parser)]
#[command(name = "spork-hdl", about = "Generate the Verilog of Spork's RTL from rust_hdl")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write `<design>.v` for every design.
    Generate {
        /// Output folder.
        #[arg(long, default_value_os_t = default_out())]
        out: PathBuf,
        /// The model repository's folder.
        #[arg(long, default_value_os_t = default_models())]
        models: PathBuf,
        /// Compare with the files in the folder instead of writing; fail on any difference.
        #[arg(long)]
        check: bool,
    },
}

fn default_out() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bitstreams/sim")
}

fn default_models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models")
}

fn main() -> ExitCode {
    let Command::Generate { out, models, check } = Cli::parse().command;
    let designs = DESIGNS
        .iter()
        .map(|name| (out.join(format!("{name}.v")), generate(name).expect("every listed design generates")));
    let files = repository::files().into_iter().map(|(rel, text)| (models.join(rel), text));
    let mut stale = 0;
    for (path, text) in designs.chain(files) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if check {
            match std::fs::read_to_string(&path) {
                Ok(old) if old == text => println!("{name}: up to date ({})", path.display()),
                Ok(_) => {
                    eprintln!("{name}: {} differs from the RTL; run `spork-hdl generate`", path.display());
                    stale += 1;
                }
                Err(e) => {
                    eprintln!("{name}: cannot read {}: {e}; run `spork-hdl generate`", path.display());
                    stale += 1;
                }
            }
        } else {
            let folder = path.parent().map(PathBuf::from).unwrap_or_default();
            if let Err(e) = std::fs::create_dir_all(folder).and_then(|()| std::fs::write(&path, &text)) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            println!("{name}: wrote {} ({} lines)", path.display(), text.lines().count());
        }
    }
    if stale > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

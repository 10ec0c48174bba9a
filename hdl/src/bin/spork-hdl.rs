//! `spork-hdl generate [--out DIR] [--check]`: writes each design's Verilog (default: the checked-in
//! copies under `bitstreams/sim/`), or with `--check` fails if any checked-in file is stale.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
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
        /// Compare with the files in the folder instead of writing; fail on any difference.
        #[arg(long)]
        check: bool,
    },
}

fn default_out() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bitstreams/sim")
}

fn main() -> ExitCode {
    let Command::Generate { out, check } = Cli::parse().command;
    let mut stale = 0;
    for name in DESIGNS {
        let text = generate(name).expect("every listed design generates");
        let path = out.join(format!("{name}.v"));
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
            if let Err(e) = std::fs::create_dir_all(&out).and_then(|()| std::fs::write(&path, &text)) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            println!("{name}: wrote {} ({} lines)", path.display(), text.lines().count());
        }
    }
    if stale > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

//! `spork reproduce`: regenerate the paper's experiments.

use anyhow::bail;
use spork::reproduce::{Options, run};
use std::path::PathBuf;

/// Options of `spork reproduce`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Results folder (created; an interrupted run resumes from what it holds).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Small sizes: 2 traces of 1 hour per point, 3 burstiness levels, 10-minute MILPs (a few minutes
    /// on 2 cores; what CI runs).
    #[arg(long)]
    quick: bool,
    /// Azure Functions 2019 folder (invocations_per_function_md.anon.dNN.csv and
    /// function_durations_percentiles.anon.dNN.csv), for Table 8.
    #[arg(long, value_name = "DIR")]
    azure: Option<PathBuf>,
    /// Azure day (1-14); default: the first present.
    #[arg(long)]
    azure_day: Option<u32>,
    /// Alibaba microservices 2021 folder (MSRTQps_*.csv), for Table 8.
    #[arg(long, value_name = "DIR")]
    alibaba: Option<PathBuf>,
    /// Only these experiments, comma-separated: fig2, fig3, fig4, fig5, fig6, fig7, table8, table9, and
    /// beyond the paper: boards (three applications sharing scarce boards), cus (compute units per
    /// board at a fixed board count), speedup (boards from 0.1x to 8x a CPU: an FPGA only where it pays), release, deadline, sizes, batching (the cost of a board invocation
    /// and dynamic batching), brownout (the controllers on the brownout papers' reference scenario), gaps (the
    /// numbers over 15%: each likely cause changed alone).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Exit with an error if a qualitative finding of the paper does not hold on our numbers.
    #[arg(long)]
    check: bool,
    /// Replay a production dataset beyond the work budget (2e10 requests for one replay of its selected
    /// applications).
    #[arg(long)]
    force: bool,
    /// Traces per point (synthetic and MILP) instead of the scale's 10 (2 with --quick): a faster,
    /// noisier loop; runs already stored for the other traces are kept and averaged in.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    traces: Option<u32>,
}

/// Runs `spork reproduce`.
pub fn run_cmd(a: Args) -> anyhow::Result<()> {
    let opts = Options {
        out: a.out.clone(),
        quick: a.quick,
        azure: a.azure,
        azure_day: a.azure_day,
        alibaba: a.alibaba,
        only: a.only,
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        force: a.force,
        traces: a.traces,
    };
    if a.out.join("REPORT.md").exists() {
        eprintln!(
            "note: {} holds an earlier reproduction: its stored runs are checked and resumed; its tables, plots, \
             claims.json and REPORT.md will be replaced",
            a.out.display()
        );
    }
    let s = run(&opts)?;
    for r in &s.rejected {
        eprintln!("warning: {r}");
    }
    eprintln!(
        "{} runs ({} resumed, {} failed) in {:.0} s; report: {}",
        s.runs,
        s.resumed,
        s.failed.len(),
        s.wall_s,
        a.out.join("REPORT.md").display()
    );
    for c in &s.checks {
        eprintln!("{} {} ({})", if c.holds { "holds:" } else { "FAILS:" }, c.finding, c.detail);
    }
    if !s.failed.is_empty() {
        for (k, e) in &s.failed {
            eprintln!("failed run {k}: {e}");
        }
        bail!("{} run(s) failed; see {}", s.failed.len(), a.out.join("REPORT.md").display());
    }
    if a.check && s.checks.iter().any(|c| !c.holds) {
        bail!("a qualitative finding of the paper does not hold on our numbers (see above)");
    }
    Ok(())
}

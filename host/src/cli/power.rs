//! `spork power`: the power sensors this machine has, read over one second.

use std::path::PathBuf;
use std::time::Duration;

/// Options of `spork power`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The sysfs root to search (a copy of a board machine's /sys works too).
    #[arg(long, default_value = "/sys")]
    sys: PathBuf,
    /// How long to measure.
    #[arg(long, default_value = "1s", value_parser = super::parse_duration)]
    over: u64,
}

/// Runs `spork power`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.over == 0 {
        anyhow::bail!("--over must be above 0 (e.g. 1s)");
    }
    let mut meters = spork::backend::power::detect(&args.sys);
    if meters.is_empty() {
        out!(
            "no power sensor under {}: no RAPL domain (class/powercap/intel-rapl:N; needs root, absent in most VMs) \
             and no Alveo board (bus/pci/devices/<BDF>/xmc.*/xmc_power or hwmon_sdm). `spork run` reports \
             modelled energy only.",
            args.sys.display()
        );
        return Ok(());
    }
    for m in &mut meters {
        m.energy_j()?;
    }
    std::thread::sleep(Duration::from_nanos(args.over));
    let secs = args.over as f64 / 1e9;
    for m in &mut meters {
        let j = m.energy_j()?;
        out!(
            "{} ({}): {j:.2} J over {secs:.1} s = {:.1} W",
            m.name(),
            if m.measured() { "measured" } else { "modelled" },
            j / secs
        );
    }
    Ok(())
}

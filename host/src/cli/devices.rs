//! `spork devices`: the FPGA boards this machine has (Alveo over XRT, AWS F1 slots).

use std::path::PathBuf;

use spork::backend::xrt::preflight;

/// Options of `spork devices`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The sysfs root to search.
    #[arg(long, default_value = "/sys")]
    sys: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `spork devices`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let found = preflight::pci_fpgas(&args.sys);
    let xrt = preflight::xrt_root().ok();
    if args.json {
        let v = serde_json::json!({
            "devices": found,
            "xilinx_xrt": xrt,
            "features": { "xrt": cfg!(feature = "xrt"), "f1": cfg!(feature = "f1") },
        });
        out!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    out!(
        "spork built with XRT support: {}; with F1 support: {}; XILINX_XRT: {}",
        if cfg!(feature = "xrt") { "yes" } else { "no (--features xrt)" },
        if cfg!(feature = "f1") { "yes" } else { "no (--features f1)" },
        xrt.as_ref().map_or_else(|| "not set".to_string(), |p| p.display().to_string())
    );
    if found.is_empty() {
        out!(
            "no FPGA board on this machine: no Xilinx (PCI vendor 0x10ee) or AWS F1 (0x1d0f) device under {}. \
             `spork run` uses the simulated board (--board sim).",
            args.sys.join("bus/pci/devices").display()
        );
        return Ok(());
    }
    for d in &found {
        let usable = match (d.family, d.driver.as_deref()) {
            ("xilinx", Some("xocl")) => "usable with --board alveo --device <this BDF>",
            ("xilinx", Some("xclmgmt")) => "management function (its sibling user function runs kernels)",
            ("aws-f1", _) => "AWS FPGA slot (feature f1)",
            _ => "no XRT driver bound",
        };
        out!(
            "{} {} device {} driver {}: {usable}",
            d.bdf,
            d.family,
            d.device,
            d.driver.as_deref().unwrap_or("-")
        );
    }
    Ok(())
}

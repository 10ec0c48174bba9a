//! What the FPGA workers are (`--board` and a real board's settings), shared by `spork run` and
//! `spork serve`. A real board is checked before anything runs: its pre-flight errors are what a
//! user must fix first.

use std::path::PathBuf;
use std::time::Duration;

#[cfg(feature = "f1")]
use anyhow::Context;
use anyhow::bail;
use spork::backend::Board;
use spork::backend::bitstream::Target;

/// `--board`: what the FPGA workers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BoardArg {
    /// The simulated board (Verilated RTL).
    Sim,
    /// A board emulated in real time (reference answers, released on the board's timeline).
    Model,
    /// An Alveo board over XRT.
    Alveo,
    /// An AWS F1 slot.
    F1,
}

impl BoardArg {
    /// Whose manifest gives the board's clock.
    pub fn target(self) -> Target {
        match self {
            // The emulation times the simulated board's RTL: its manifest is the one.
            BoardArg::Sim | BoardArg::Model => Target::Sim,
            BoardArg::Alveo => Target::Alveo,
            BoardArg::F1 => Target::F1,
        }
    }
}

/// A real board's settings. An image option takes `FILE` (every kernel) or `KERNEL=FILE` (that
/// kernel's; repeat it per kernel when a server time-shares one board between several).
#[derive(clap::Args, Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RealBoard {
    /// Alveo: the xclbin with the kernel and the mm2s/s2mm data movers (scripts/build-xclbin.sh);
    /// `FILE` or `KERNEL=FILE`, repeatable.
    #[arg(long, value_name = "[KERNEL=]FILE")]
    #[serde(default)]
    pub xclbin: Vec<String>,
    /// Alveo: another xclbin loaded first, so that the timed load is a real reconfiguration (XRT skips
    /// reloading the image already on the board); `FILE` or `KERNEL=FILE`.
    #[arg(long, value_name = "[KERNEL=]FILE")]
    #[serde(default)]
    pub xclbin_alt: Vec<String>,
    /// Alveo: the board, by PCI address (0000:3b:00.1) or index [default: 0].
    #[arg(long)]
    pub device: Option<String>,
    /// F1: the slot [default: 0].
    #[arg(long)]
    pub slot: Option<u32>,
    /// F1: the AFI to load, `AGFI` or `KERNEL=AGFI` [default: `agfi` in bitstreams/f1/<kernel>.toml].
    #[arg(long, value_name = "[KERNEL=]AGFI")]
    #[serde(default)]
    pub agfi: Vec<String>,
    /// The sysfs root for pre-flight checks and power sensors [default: /sys].
    #[arg(long)]
    pub sys: Option<PathBuf>,
}

impl RealBoard {
    /// Each field from `self`, else from `file`.
    pub fn or(self, file: RealBoard) -> RealBoard {
        let list = |a: Vec<String>, b: Vec<String>| if a.is_empty() { b } else { a };
        RealBoard {
            xclbin: list(self.xclbin, file.xclbin),
            xclbin_alt: list(self.xclbin_alt, file.xclbin_alt),
            device: self.device.or(file.device),
            slot: self.slot.or(file.slot),
            agfi: list(self.agfi, file.agfi),
            sys: self.sys.or(file.sys),
        }
    }

    /// The sysfs root.
    pub fn sys(&self) -> PathBuf {
        self.sys.clone().unwrap_or_else(|| PathBuf::from("/sys"))
    }
}

/// The value of a `[MODEL=]VALUE` list for model `name`: its own entry, else the one without a name.
/// A name that is none of `known` is refused (a misspelt model would silently get the shared entry).
#[cfg_attr(not(any(feature = "xrt", feature = "f1")), allow(dead_code))]
fn for_model(list: &[String], name: &str, known: &[&str]) -> anyhow::Result<Option<String>> {
    let mut any = None;
    for item in list {
        match item.split_once('=') {
            Some((k, v)) if known.iter().any(|n| n.eq_ignore_ascii_case(k)) => {
                if k.eq_ignore_ascii_case(name) {
                    return Ok(Some(v.to_string()));
                }
            }
            Some((k, _)) if !k.contains('/') => {
                bail!("'{item}': unknown model '{k}' before '=': use one of {}", known.join(", "))
            }
            _ => any = Some(item.clone()),
        }
    }
    Ok(any)
}

/// What a real board of one model loads, besides the flags: the image its model.toml names.
#[derive(Clone, Debug, Default)]
#[cfg_attr(not(any(feature = "xrt", feature = "f1")), allow(dead_code))]
pub struct Images {
    /// `[fpga.alveo] xclbin` (Alveo), or `[fpga.f1] xclbin` (F1's data path).
    pub xclbin: Option<PathBuf>,
    /// `[fpga.f1] agfi`.
    #[cfg_attr(not(feature = "f1"), allow(dead_code))]
    pub agfi: Option<String>,
}

impl Images {
    /// The images `spec` names for real boards.
    pub fn of(spec: &spork::repository::spec::ModelSpec, which: BoardArg) -> Images {
        match which {
            BoardArg::F1 => Images {
                xclbin: spec.f1.as_ref().map(|f| f.xclbin.clone()),
                agfi: spec.f1.as_ref().map(|f| f.agfi.clone()),
            },
            _ => Images { xclbin: spec.alveo.as_ref().map(|a| a.xclbin.clone()), agfi: None },
        }
    }
}

/// The FPGA backend of model `name`'s workers: a flag's `NAME=` entry, else the shared one, else
/// the image its model.toml names (`images`); `known` are the names a flag may give.
pub fn model_board(
    which: BoardArg,
    real: &RealBoard,
    name: &str,
    images: &Images,
    known: &[&str],
    timeout: Duration,
) -> anyhow::Result<Board> {
    match which {
        BoardArg::Sim => Ok(Board::Sim),
        BoardArg::Model => Ok(Board::Model(None)),
        BoardArg::Alveo => alveo(real, name, images, known, timeout),
        BoardArg::F1 => f1(real, name, images, known, timeout),
    }
}

#[cfg(feature = "xrt")]
fn alveo(
    real: &RealBoard,
    name: &str,
    images: &Images,
    known: &[&str],
    timeout: Duration,
) -> anyhow::Result<Board> {
    use spork::backend::xrt::preflight;
    let Some(xclbin) = for_model(&real.xclbin, name, known)?.map(PathBuf::from).or(images.xclbin.clone())
    else {
        bail!(
            "--board alveo needs an xclbin for {name}: --xclbin FILE or --xclbin {name}=FILE (built by scripts/build-xclbin.sh), \
             or [fpga.alveo] xclbin in a repository model's model.toml"
        );
    };
    let alternate = for_model(&real.xclbin_alt, name, known)?.map(PathBuf::from);
    // Everything XRT would abort on is checked here, before any XRT call.
    preflight::xrt_root()?;
    let device = real.device.clone().unwrap_or_else(|| "0".into());
    let bdf = device.parse::<u32>().is_err().then_some(device.as_str());
    let sys = real.sys();
    preflight::boards(&sys, bdf)?;
    preflight::xclbin(&xclbin)?;
    if let Some(alt) = &alternate {
        preflight::xclbin(alt)?;
    }
    Ok(Board::Alveo(spork::backend::AlveoConfig { device, xclbin, alternate, sys, timeout }))
}

#[cfg(not(feature = "xrt"))]
fn alveo(_: &RealBoard, _: &str, _: &Images, _: &[&str], _: Duration) -> anyhow::Result<Board> {
    bail!(
        "this spork was built without XRT support\n  fix: rebuild with `cargo build --release -p spork --features xrt` \
         (needs the XRT headers: apt-get install -y libxrt-dev, or source /opt/xilinx/xrt/setup.sh)"
    )
}

#[cfg(feature = "f1")]
fn f1(
    real: &RealBoard,
    name: &str,
    images: &Images,
    known: &[&str],
    timeout: Duration,
) -> anyhow::Result<Board> {
    use spork::backend::bitstream::{Manifest, manifest_path};
    let agfi = match (for_model(&real.agfi, name, known)?, &images.agfi) {
        (Some(a), _) => a,
        (None, Some(a)) => a.clone(),
        (None, None) => {
            let path = manifest_path(Target::F1, name);
            let m = Manifest::load(&path).with_context(|| {
                format!("no --agfi given for {name}, and no F1 manifest to take it from ([fpga.f1] agfi in a repository model)")
            })?;
            m.agfi
                .with_context(|| format!("{} has no agfi (scripts/build-afi.sh writes it)", path.display()))?
        }
    };
    spork::backend::f1::check_agfi(&agfi)?;
    let sys = real.sys();
    spork::backend::f1::slots(&sys)?;
    let xclbin = for_model(&real.xclbin, name, known)?.map(PathBuf::from).or(images.xclbin.clone());
    Ok(Board::F1(spork::backend::F1Config { slot: real.slot.unwrap_or(0), agfi, xclbin, sys, timeout }))
}

#[cfg(not(feature = "f1"))]
fn f1(_: &RealBoard, _: &str, _: &Images, _: &[&str], _: Duration) -> anyhow::Result<Board> {
    bail!(
        "this spork was built without F1 support\n  fix: rebuild with `--features f1` (and `xrt` for the data path)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_list_gives_each_kernel_its_own_else_the_shared_one() {
        let known = ["sobel", "bloom", "dense", "crc8"];
        let list = ["sobel=/a.xclbin".to_string(), "/any.xclbin".to_string(), "DENSE=/d".to_string()];
        assert_eq!(for_model(&list, "sobel", &known).ok().flatten().as_deref(), Some("/a.xclbin"));
        assert_eq!(for_model(&list, "dense", &known).ok().flatten().as_deref(), Some("/d"));
        assert_eq!(for_model(&list, "bloom", &known).ok().flatten().as_deref(), Some("/any.xclbin"));
        assert_eq!(for_model(&[], "bloom", &known).ok().flatten(), None);
        assert_eq!(for_model(&["crc8=/c".into()], "crc8", &known).ok().flatten().as_deref(), Some("/c"));
        let err = for_model(&["sobol=/x".to_string()], "sobel", &known).unwrap_err().to_string();
        assert!(err.contains("unknown model 'sobol'"), "{err}");
        // A path with '=' in a folder name is a path.
        assert_eq!(
            for_model(&["/a=b/x".to_string()], "sobel", &known).ok().flatten().as_deref(),
            Some("/a=b/x")
        );
    }
}

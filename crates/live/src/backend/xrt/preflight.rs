//! Checks made before any XRT call, because XRT aborts the whole process on some failures (with
//! `XILINX_XRT` unset, `xrtDeviceOpen` calls abort()). Always compiled: `spork devices` uses it on any
//! machine.

use std::path::{Path, PathBuf};

/// What is missing for a board run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PreflightError {
    /// `XILINX_XRT` is not set.
    #[error(
        "XILINX_XRT is not set, and XRT aborts the process without it\n  fix: source /opt/xilinx/xrt/setup.sh \
         (or export XILINX_XRT=<the XRT install prefix>)"
    )]
    NoXrt,
    /// No board bound to the XRT user driver.
    #[error(
        "no Xilinx board bound to the XRT driver (PCI vendor 0x10ee, driver xocl) under {0}\n  fix: install the \
         board's XRT and platform packages and check `lspci -d 10ee:`; `spork devices` lists what is present"
    )]
    NoBoard(PathBuf),
    /// The board's driver created no device node.
    #[error(
        "no XRT device node under {0} (dri/renderD*): the xocl driver did not create one\n  fix: check `dmesg` \
         for xocl errors and that the user can open /dev/dri/renderD*"
    )]
    NoDeviceNode(PathBuf),
    /// The requested board is not present.
    #[error("no Xilinx board at {bdf} (found: {found})\n  fix: pick one from `spork devices`")]
    NoSuchBoard {
        /// Requested BDF.
        bdf: String,
        /// What exists.
        found: String,
    },
    /// The xclbin is missing or not an xclbin.
    #[error("{path}: {problem}\n  fix: build it with scripts/build-xclbin.sh, or give the right path")]
    Xclbin {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
}

/// An FPGA found on the PCI bus.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PciFpga {
    /// Bus:device.function.
    pub bdf: String,
    /// "xilinx" (Alveo) or "aws-f1".
    pub family: &'static str,
    /// PCI device id.
    pub device: String,
    /// Bound driver, if any.
    pub driver: Option<String>,
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// Every Xilinx (0x10ee) or AWS FPGA (0x1d0f, F1 slots) PCI function under `sys`.
pub fn pci_fpgas(sys: &Path) -> Vec<PciFpga> {
    let dir = sys.join("bus/pci/devices");
    let mut out: Vec<PciFpga> = std::fs::read_dir(&dir)
        .map(|e| e.filter_map(|e| e.ok().map(|e| e.path())).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| {
            let vendor = read_trim(&p.join("vendor"))?;
            let family = match vendor.as_str() {
                "0x10ee" => "xilinx",
                "0x1d0f" => "aws-f1",
                _ => return None,
            };
            let driver = std::fs::read_link(p.join("driver"))
                .ok()
                .and_then(|l| l.file_name().map(|n| n.to_string_lossy().into_owned()));
            Some(PciFpga {
                bdf: p.file_name()?.to_string_lossy().into_owned(),
                family,
                device: read_trim(&p.join("device")).unwrap_or_default(),
                driver,
            })
        })
        .collect();
    out.sort_by(|a, b| a.bdf.cmp(&b.bdf));
    out
}

/// `XILINX_XRT`, or the reason a board run cannot start.
pub fn xrt_root() -> Result<PathBuf, PreflightError> {
    std::env::var_os("XILINX_XRT").filter(|v| !v.is_empty()).map(PathBuf::from).ok_or(PreflightError::NoXrt)
}

/// The device-node root beside a sysfs root: `/dev` for `/sys`, else `<parent>/dev` (test trees).
pub fn dev_root(sys: &Path) -> PathBuf {
    if sys == Path::new("/sys") {
        PathBuf::from("/dev")
    } else {
        sys.parent().unwrap_or(Path::new("/")).join("dev")
    }
}

/// The functions XRT can drive (Alveo user functions and F1 slots bound to xocl) under `sys`, with
/// their device nodes, or why there are none; with `bdf`, that one.
pub fn boards(sys: &Path, bdf: Option<&str>) -> Result<Vec<PciFpga>, PreflightError> {
    let all: Vec<PciFpga> =
        pci_fpgas(sys).into_iter().filter(|d| d.driver.as_deref() == Some("xocl")).collect();
    if all.is_empty() {
        return Err(PreflightError::NoBoard(sys.join("bus/pci/devices")));
    }
    let dri = dev_root(sys).join("dri");
    let has_node = std::fs::read_dir(&dri)
        .map(|e| e.filter_map(|e| e.ok()).any(|e| e.file_name().to_string_lossy().starts_with("renderD")))
        .unwrap_or(false);
    if !has_node {
        return Err(PreflightError::NoDeviceNode(dev_root(sys)));
    }
    match bdf {
        None => Ok(all),
        Some(b) => {
            let found = all.iter().map(|d| d.bdf.as_str()).collect::<Vec<_>>().join(", ");
            let one: Vec<PciFpga> =
                all.iter().filter(|d| d.bdf == b || d.bdf.ends_with(b)).cloned().collect();
            if one.is_empty() { Err(PreflightError::NoSuchBoard { bdf: b.into(), found }) } else { Ok(one) }
        }
    }
}

/// The xclbin at `path` exists and starts with the `xclbin2` magic.
pub fn xclbin(path: &Path) -> Result<(), PreflightError> {
    let err = |problem: String| PreflightError::Xclbin { path: path.into(), problem };
    let mut magic = [0u8; 8];
    let mut f = std::fs::File::open(path).map_err(|e| err(format!("cannot open: {e}")))?;
    std::io::Read::read_exact(&mut f, &mut magic).map_err(|_| err("shorter than an xclbin header".into()))?;
    if &magic != b"xclbin2\0" {
        return Err(err("not an xclbin (no xclbin2 magic at the start)".into()));
    }
    Ok(())
}

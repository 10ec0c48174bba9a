//! The FPGA speedup of a live run, measured rather than assumed: the board's throughput (clock times
//! items per cycle, from its manifest) over the CPU reference's, timed on this machine.

use crate::backend::bitstream::{Manifest, ManifestLink, Target};
use crate::datapath::work::KernelImage;
use crate::repository::spec::TimingSpec;
use spork_core::input::InputError;
use spork_core::model::Platform;
use spork_core::model::time::from_secs;
use spork_core::policy::speed::HYSTERESIS;

/// Table 6's 10 s FPGA reconfiguration would take a third of a short live demo; its 1 s alternative
/// fits, so a live run uses it unless a profile or flag says otherwise (the start-up line says which).
pub const LIVE_FPGA_SPIN_UP_S: f64 = 1.0;

/// Why the board's throughput is unknown.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    /// No usable manifest for the kernel on this board, and no clock given.
    #[error(
        "model {kernel}'s [fpga.model] manifest, for the {target} board: {source}\n  fix: `spork kernel synth DIR` \
         writes it; or give --clock-mhz"
    )]
    Manifest {
        /// The kernel.
        kernel: String,
        /// The board type.
        target: &'static str,
        /// What went wrong reading it.
        source: Box<InputError>,
    },
    /// A clock that is not a frequency.
    #[error("--clock-mhz {0} must be a positive frequency")]
    Clock(f64),
}

/// The measured throughputs of a live run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// The CPU reference's speed on this machine (items/s): converts request sizes to items.
    pub items_per_sec: f64,
    /// The board's clock (Hz).
    pub clock_hz: f64,
    /// Items the kernel streams per cycle: as stated, or as its RTL streamed them on the simulated
    /// board where that is more than [`HYSTERESIS`] off the statement.
    pub items_per_cycle: f64,
    /// What the model stated, when its RTL measured otherwise (`None`: the statement stands).
    pub stated_items_per_cycle: Option<f64>,
}

/// The manifest that describes `image`'s model, when its model.toml names one (`None`: it gives
/// its timing itself, or none). One manifest serves every board type: its clock and items per
/// cycle are the RTL's.
fn manifest_of(image: &KernelImage) -> Option<std::path::PathBuf> {
    match &image.kernel.spec.timing {
        Some(TimingSpec::Manifest(p)) => Some(p.clone()),
        _ => None,
    }
}

impl Calibration {
    /// The board's clock and items per cycle from the model's manifest or its stated timing
    /// (`clock_mhz` overrides the clock; on a real board (`target`), an unreadable manifest with a
    /// clock given streams one item per cycle), and
    /// the CPU reference timed on `items` items of `image`.
    pub fn measure(
        target: Target,
        image: &KernelImage,
        clock_mhz: Option<f64>,
        items: u64,
    ) -> Result<Calibration, CalibrationError> {
        let path = match (manifest_of(image), &image.kernel.spec.timing) {
            (Some(path), _) => path,
            (None, Some(TimingSpec::Given { clock_mhz: c, items_per_cycle, .. })) => {
                let mhz = clock_mhz.unwrap_or(*c);
                return Calibration::checked(target, image, mhz, *items_per_cycle, items);
            }
            // The simulated board counts its own cycles; the speedup estimate assumes one item per
            // cycle until `spork kernel synth` measures it.
            (None, _) => return Calibration::checked(target, image, clock_mhz.unwrap_or(250.0), 1.0, items),
        };
        let (manifest_clock, items_per_cycle) = match Manifest::load(&path) {
            Ok(m) => (Some(m.clock_mhz), m.items_per_cycle),
            Err(_) if clock_mhz.is_some() && target != Target::Sim => (None, 1.0),
            Err(source) => {
                return Err(CalibrationError::Manifest {
                    kernel: image.kernel.name().to_string(),
                    target: target.name(),
                    source: Box::new(source),
                });
            }
        };
        let mhz = clock_mhz.or(manifest_clock).unwrap_or(250.0);
        Calibration::checked(target, image, mhz, items_per_cycle, items)
    }

    /// The calibration at `mhz` and the `stated` items per cycle, which the RTL's own on the
    /// simulated board replaces where they differ: a statement is a claim, the RTL is the board.
    fn checked(
        target: Target,
        image: &KernelImage,
        mhz: f64,
        stated: f64,
        items: u64,
    ) -> Result<Calibration, CalibrationError> {
        if !(mhz.is_finite() && mhz > 0.0) {
            return Err(CalibrationError::Clock(mhz));
        }
        let measured = if target == Target::Sim { rtl_items_per_cycle(image, items) } else { None };
        let off = measured.filter(|m| (m / stated - 1.0).abs() > HYSTERESIS);
        if let Some(m) = off {
            tracing::warn!(
                model = image.kernel.name(),
                "its RTL streamed {m:.3} items per cycle where its model.toml or manifest states {stated}: \
                 the simulated board is timed at {m:.3}"
            );
        }
        Ok(Calibration {
            items_per_sec: image.calibrate(items),
            clock_hz: mhz * 1e6,
            items_per_cycle: off.unwrap_or(stated),
            stated_items_per_cycle: off.map(|_| stated),
        })
    }

    /// `platform` with what `image`'s model's manifest says of its board: its compute
    /// units when the profile left the default one, and its host link when the profile states
    /// none (a manifest without one: the published XRT/Alveo figures). The link moves the bytes
    /// this kernel's requests measure per CPU-second here, whatever the profile said.
    pub fn with_manifest(&self, mut platform: Platform, image: &KernelImage) -> Platform {
        let manifest = manifest_of(image).and_then(|p| Manifest::load(&p).ok());
        if platform.fpga.compute_units == 1
            && let Some(m) = &manifest
        {
            platform.fpga.compute_units = m.compute_units;
        }
        let bytes_per_cpu_s = image.bytes_per_item(4096) * self.items_per_sec;
        let stated = platform.fpga.link.map(|l| spork_core::model::Link { bytes_per_cpu_s, ..l });
        let link = manifest.and_then(|m| m.link).unwrap_or_else(ManifestLink::published);
        platform.fpga.link = Some(stated.unwrap_or_else(|| link.link(bytes_per_cpu_s)));
        platform
    }

    /// The board's throughput (items/s).
    pub fn device_items_per_sec(&self) -> f64 {
        self.clock_hz * self.items_per_cycle
    }

    /// The FPGA speedup over a CPU worker.
    pub fn speedup(&self) -> f64 {
        self.device_items_per_sec() / self.items_per_sec
    }

    /// `platform` with the measured speedup, and the live FPGA spin-up unless `keep_spin_up`.
    pub fn apply(&self, mut platform: Platform, keep_spin_up: bool) -> Platform {
        platform.fpga.speedup = self.speedup();
        if !keep_spin_up {
            platform.fpga.spin_up = from_secs(LIVE_FPGA_SPIN_UP_S);
        }
        platform
    }
}

/// Items the simulated board's RTL is first timed on: a bounded cost whatever its speed (at most
/// this times the stream's stall bound in cycles).
const RTL_PROBE_ITEMS: u64 = 256;
/// Cycles per item past which the probe's figure stands: a request of the calibration's size
/// would take the RTL longer than its pipeline's latency can skew the probe.
const RTL_SLOW_CYCLES: u64 = 16;

/// Items per cycle `image`'s RTL streams a random request of `items` items at (as many as the
/// CPU code is timed on: the shape, and so the per-row overhead, of a typical request; `None`: no
/// RTL loaded, or it failed on the request, which its board jobs will report).
fn rtl_items_per_cycle(image: &KernelImage, items: u64) -> Option<f64> {
    let rtl = image.kernel.rtl.as_ref()?;
    let time = |items: u64| {
        use rand::SeedableRng;
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(98);
        let crate::datapath::work::Payload::Tensors(t) = image.payload(items, &mut rng);
        let mut outputs = image.kernel.outputs(&t);
        let mut axis = rtl.instance().ok()?;
        let cycles = rtl.run(&mut axis, &t.inputs, &t.dims, &mut outputs, &[]).ok()?;
        Some((t.items, cycles.max(1)))
    };
    let (probed, cycles) = time(RTL_PROBE_ITEMS)?;
    let (items, cycles) = match cycles / probed.max(1) < RTL_SLOW_CYCLES {
        true => time(image.within_measure_bytes(items))?,
        false => (probed, cycles),
    };
    Some(items as f64 / cycles as f64)
}

//! An Alveo board worker over XRT (feature `xrt`): reconfiguration is an xclbin load, measured
//! (after loading an alternate image first when one is given, since XRT skips reloading the image
//! already there); a job streams its words through the `mm2s` -> `<kernel>_axis` -> `s2mm` kernels
//! (layout in [`crate::datapath::stream`]); power comes from the board's sysfs sensor when present.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{Backend, BackendError, Configured, Executed, Power};
use crate::backend::power::AlveoSysfs;
use crate::backend::xrt::{Bo, Device, Kernel, Run, SyncDirection, XrtError};
use crate::datapath::stream;
use crate::datapath::work::{KernelImage, Payload};
use spork_core::model::{Kind, WorkerSpec};

/// Where and what to load.
#[derive(Clone, Debug)]
pub struct AlveoConfig {
    /// PCI address (`0000:3b:00.1`) or device index.
    pub device: String,
    /// The xclbin holding the kernel and the data movers.
    pub xclbin: PathBuf,
    /// Loaded (untimed) before `xclbin` so that the timed load is a real reconfiguration.
    pub alternate: Option<PathBuf>,
    /// The sysfs root (pre-flight checks and the power sensor).
    pub sys: PathBuf,
    /// A run that takes longer fails.
    pub timeout: Duration,
}

/// One Alveo board as a worker.
pub struct AlveoBoard {
    cfg: AlveoConfig,
    spec: WorkerSpec,
    device: Option<Device>,
    uuid: [u8; 16],
    image: Option<KernelImage>,
    meter: Option<AlveoSysfs>,
    /// Power from `xbutil` when sysfs has no sensor (read at configuration).
    xbutil_w: Option<f64>,
}

impl AlveoBoard {
    /// A board worker; nothing is opened until `configure`.
    pub fn new(cfg: AlveoConfig, spec: WorkerSpec) -> AlveoBoard {
        AlveoBoard { cfg, spec, device: None, uuid: [0; 16], image: None, meter: None, xbutil_w: None }
    }

    fn open(&self) -> Result<Device, XrtError> {
        match self.cfg.device.parse::<u32>() {
            Ok(index) => Device::open(index, &self.cfg.sys),
            Err(_) => Device::open_bdf(&self.cfg.device, &self.cfg.sys),
        }
    }

    fn run(&mut self, payload: &Payload) -> Result<(stream::Words, Duration), XrtError> {
        let (Some(device), Some(image)) = (self.device.as_ref(), self.image.as_ref()) else {
            return Err(XrtError::Argument("the board is not configured".into()));
        };
        let words = stream::encode(image, payload);
        let (header, row) = stream::framing(image, payload);
        let out_words = stream::expected_words(image, payload);
        // The movers count their own words (64 or 512 bits); the buffers are in 64-bit words.
        let per = stream::mover_words(image);
        let mm2s = Kernel::open(device, &self.uuid, "mm2s")?;
        let s2mm = Kernel::open(device, &self.uuid, "s2mm")?;
        let mut input = Bo::alloc(device, words.len() * 8, mm2s.group_id(0)?)?;
        let mut output = Bo::alloc(device, out_words.max(1) * 8, s2mm.group_id(0)?)?;
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        input.write(&bytes, 0)?;
        input.sync(SyncDirection::ToDevice)?;
        let start = Instant::now();
        let mut sink = Run::open(&s2mm)?;
        sink.set_bo(0, &output)?;
        sink.set_u32(1, (out_words / per) as u32)?;
        sink.start()?;
        let mut source = Run::open(&mm2s)?;
        source.set_bo(0, &input)?;
        source.set_u32(1, (words.len() / per) as u32)?;
        source.set_u32(2, header)?;
        source.set_u32(3, row)?;
        source.start()?;
        // One deadline for the whole job; a run that misses it leaves the board failed (the
        // dispatcher then re-runs its requests on CPUs and reconfigures a fresh worker).
        let deadline = start + self.cfg.timeout;
        let left = || deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        sink.wait(left())?;
        source.wait(left())?;
        let took = start.elapsed();
        output.sync(SyncDirection::FromDevice)?;
        let mut raw = vec![0u8; out_words * 8];
        output.read(&mut raw, 0)?;
        let out = raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        Ok((out, took))
    }
}

impl AlveoBoard {
    /// The link's cost measured: the median of five runs of the kernel's smallest job (one item),
    /// each timed from its input's write to its output's read, so the launch, both transfers and
    /// the completion are in it and the kernel's own cycles are a handful.
    fn time_invocation(&mut self, image: &KernelImage) -> Result<Duration, XrtError> {
        use rand::SeedableRng;
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(1);
        let payload = image.payload(1, &mut rng);
        let mut took = Vec::with_capacity(INVOCATION_RUNS);
        for _ in 0..INVOCATION_RUNS {
            let start = Instant::now();
            self.run(&payload)?;
            took.push(start.elapsed());
        }
        took.sort();
        Ok(took[INVOCATION_RUNS / 2])
    }
}

/// Invocations timed at configuration.
const INVOCATION_RUNS: usize = 5;

impl Backend for AlveoBoard {
    fn kind(&self) -> Kind {
        Kind::Fpga
    }

    fn configure(&mut self, image: &KernelImage) -> Result<Configured, BackendError> {
        let err = |e: XrtError| BackendError::Configure {
            what: self.cfg.xclbin.display().to_string(),
            reason: e.to_string(),
        };
        let mut device = self.open().map_err(err)?;
        if let Some(alt) = &self.cfg.alternate {
            device.load_xclbin(alt).map_err(err)?;
        }
        let (uuid, took) = device.load_xclbin(&self.cfg.xclbin).map_err(err)?;
        self.uuid = uuid;
        self.device = Some(device);
        self.image = Some(image.clone());
        let bdf_dir = self.cfg.sys.join("bus/pci/devices").join(&self.cfg.device);
        self.meter = AlveoSysfs::open(&bdf_dir).ok();
        if self.meter.is_none() {
            self.xbutil_w = crate::backend::power::xbutil_power(&self.cfg.device).ok();
        }
        let timed = self.time_invocation(image);
        let invocation = Some(timed.map_err(|e| BackendError::Configure {
            what: self.cfg.xclbin.display().to_string(),
            reason: format!("timing one invocation after the load: {e}"),
        })?);
        Ok(Configured { measured: took, configured_delay: Duration::ZERO, invocation })
    }

    fn submit(&mut self, payload: &Payload) -> Result<Executed, BackendError> {
        let (words, took) = self.run(payload).map_err(|e| BackendError::Kernel(e.to_string()))?;
        let image = self.image.as_ref().ok_or(BackendError::NotConfigured)?;
        let output =
            stream::decode(image, payload, &words).map_err(|e| BackendError::Kernel(e.to_string()))?;
        Ok(Executed { output, device: Some((0, took)) })
    }

    fn power(&self) -> Power {
        match self.meter.as_ref().and_then(|m| m.watts().ok()).or(self.xbutil_w) {
            Some(w) => Power { watts: w, measured: true },
            None => Power { watts: self.spec.idle_power_w, measured: false },
        }
    }
}

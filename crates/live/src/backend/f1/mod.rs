//! AWS F1 (feature `f1`): bindings to the FPGA management library `libfpga_mgmt` of the aws-fpga SDK,
//! opened at run time (the SDK is not packaged by distributions, so the build never needs it): load
//! an AFI into a slot (timed), clear a slot, describe a slot. The image-info struct differs between SDK
//! releases, so it is passed as an opaque, zeroed, generously sized buffer and only its leading
//! fields this module knows the offsets of are read: `status`, and with metrics requested the power
//! figures (whole watts, updated once a minute by the card's microcontroller), at the offsets of the
//! current SDK layout (`fpga_common.h` with `power_mean`, `power_max`, `power` after the clock metrics:
//! packed structs, so the offsets are exact); a value beyond any F1's draw means another layout, and is
//! reported as such instead of being used.

mod slot;
pub use slot::{F1Config, F1Slot};

use std::ffi::{CStr, CString, c_char, c_int};
use std::path::Path;
use std::time::{Duration, Instant};

use libloading::Library;

/// Where the SDK installs the library.
pub const LIBRARY: &str = "libfpga_mgmt.so";

/// An F1 management failure.
#[derive(Debug, thiserror::Error)]
pub enum F1Error {
    /// The SDK library could not be opened.
    #[error(
        "cannot open {LIBRARY} ({0})\n  fix: on an F1 instance, build the aws-fpga SDK (source sdk_setup.sh) \
         and put its library on LD_LIBRARY_PATH"
    )]
    Library(String),
    /// A call failed; the SDK's message.
    #[error("{call} failed: {message} (code {code})")]
    Call {
        /// The C function.
        call: &'static str,
        /// Its return code.
        code: i32,
        /// `fpga_mgmt_strerror`.
        message: String,
    },
    /// An AGFI id that cannot be passed.
    #[error("invalid AGFI id {0:?}: expected agfi-<17 hex digits>")]
    Agfi(String),
    /// No F1 slot on this machine.
    #[error(
        "no AWS FPGA slot (PCI vendor 0x1d0f) under {0}\n  fix: run on an F1 instance; `spork devices` lists slots"
    )]
    NoSlot(String),
}

type InitFn = unsafe extern "C" fn() -> c_int;
type StrErrFn = unsafe extern "C" fn(c_int) -> *const c_char;
type LoadFn = unsafe extern "C" fn(c_int, *mut c_char, u32, u32, *mut u8) -> c_int;
type ClearFn = unsafe extern "C" fn(c_int, u32, u32, *mut u8) -> c_int;
type DescribeFn = unsafe extern "C" fn(c_int, *mut u8, u32) -> c_int;

/// Bytes reserved for `struct fpga_mgmt_image_info` (a few hundred bytes in every SDK release).
const INFO_BYTES: usize = 64 * 1024;
/// `FPGA_CMD_GET_HW_METRICS`.
const GET_HW_METRICS: u32 = 1 << 1;
/// Offsets in `fpga_mgmt_image_info`: 3 ints, `fpga_meta_ids` (72 bytes), `fpga_slot_spec` (2 x 58),
/// `sh_version`, then `fpga_metrics_common`, whose power fields follow 344 bytes of counters.
const METRICS_AT: usize = 12 + 72 + 116 + 4;
const POWER_MEAN_AT: usize = METRICS_AT + 344;
const POWER_NOW_AT: usize = POWER_MEAN_AT + 16;
/// More than any F1 FPGA draws: a reading beyond it means the SDK's layout differs.
const MAX_PLAUSIBLE_W: u64 = 1000;

/// Reads a little-endian u64 at `at`.
fn u64_at(info: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&info[at..at + 8]);
    u64::from_le_bytes(b)
}

/// The power figures in a described image-info buffer: (mean, now) in whole watts.
pub fn power_from_info(info: &[u8]) -> Result<(u64, u64), F1Error> {
    let (mean, now) = (u64_at(info, POWER_MEAN_AT), u64_at(info, POWER_NOW_AT));
    if mean > MAX_PLAUSIBLE_W || now > MAX_PLAUSIBLE_W {
        return Err(F1Error::Call {
            call: "fpga_mgmt_describe_local_image",
            code: 0,
            message: format!(
                "power reads {mean} W mean / {now} W now: this SDK's metrics layout differs from the one spork knows"
            ),
        });
    }
    Ok((mean, now))
}

/// The opened management library.
pub struct FpgaMgmt {
    strerror: StrErrFn,
    load: LoadFn,
    clear: ClearFn,
    describe: DescribeFn,
    close: InitFn,
    _lib: Library,
}

/// Checks that an AGFI id has the documented shape.
pub fn check_agfi(agfi: &str) -> Result<(), F1Error> {
    let ok =
        agfi.strip_prefix("agfi-").is_some_and(|h| h.len() == 17 && h.chars().all(|c| c.is_ascii_hexdigit()));
    if ok { Ok(()) } else { Err(F1Error::Agfi(agfi.into())) }
}

/// The F1 slots (vendor 0x1d0f) under `sys`, or why there are none.
pub fn slots(sys: &Path) -> Result<usize, F1Error> {
    let n = crate::backend::xrt::preflight::pci_fpgas(sys).iter().filter(|d| d.family == "aws-f1").count();
    if n == 0 { Err(F1Error::NoSlot(sys.join("bus/pci/devices").display().to_string())) } else { Ok(n) }
}

impl FpgaMgmt {
    /// Opens and initialises the library (after checking for F1 slots under `sys`).
    pub fn open(sys: &Path) -> Result<FpgaMgmt, F1Error> {
        slots(sys)?;
        // SAFETY: loading the SDK's library runs its initialisers, which only set up its own state.
        let lib = unsafe { Library::new(LIBRARY) }.map_err(|e| F1Error::Library(e.to_string()))?;
        // SAFETY: each symbol has the C signature of the SDK's fpga_mgmt.h.
        let sym = |name: &str| -> Result<*const (), F1Error> {
            unsafe { lib.get::<*const ()>(name.as_bytes()) }
                .map(|s| *s)
                .map_err(|e| F1Error::Library(e.to_string()))
        };
        // SAFETY: the pointers come from the library for functions of these exact types.
        let (init, close, strerror, load, clear, describe) = unsafe {
            (
                std::mem::transmute::<*const (), InitFn>(sym("fpga_mgmt_init")?),
                std::mem::transmute::<*const (), InitFn>(sym("fpga_mgmt_close")?),
                std::mem::transmute::<*const (), StrErrFn>(sym("fpga_mgmt_strerror")?),
                std::mem::transmute::<*const (), LoadFn>(sym("fpga_mgmt_load_local_image_sync")?),
                std::mem::transmute::<*const (), ClearFn>(sym("fpga_mgmt_clear_local_image_sync")?),
                std::mem::transmute::<*const (), DescribeFn>(sym("fpga_mgmt_describe_local_image")?),
            )
        };
        let m = FpgaMgmt { strerror, load, clear, describe, close, _lib: lib };
        // SAFETY: no arguments.
        m.check("fpga_mgmt_init", unsafe { init() })?;
        Ok(m)
    }

    fn check(&self, call: &'static str, rc: c_int) -> Result<(), F1Error> {
        if rc == 0 {
            return Ok(());
        }
        // SAFETY: strerror returns a static string for any code.
        let p = unsafe { (self.strerror)(rc) };
        let message = if p.is_null() {
            "unknown".into()
        } else {
            // SAFETY: non-null, NUL-terminated static string.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        };
        Err(F1Error::Call { call, code: rc, message })
    }

    /// Loads AFI `agfi` into `slot`, waiting up to `timeout`; returns how long it took.
    pub fn load(&self, slot: u32, agfi: &str, timeout: Duration) -> Result<Duration, F1Error> {
        check_agfi(agfi)?;
        let c = CString::new(agfi).map_err(|_| F1Error::Agfi(agfi.into()))?;
        let mut info = vec![0u8; INFO_BYTES];
        let (delay_ms, tries) = (100u32, (timeout.as_millis() / 100).max(1) as u32);
        let start = Instant::now();
        // SAFETY: `c` outlives the call (the SDK copies the id); `info` is larger than the struct.
        let rc =
            unsafe { (self.load)(slot as c_int, c.as_ptr().cast_mut(), tries, delay_ms, info.as_mut_ptr()) };
        self.check("fpga_mgmt_load_local_image_sync", rc)?;
        Ok(start.elapsed())
    }

    /// Clears `slot`.
    pub fn clear(&self, slot: u32, timeout: Duration) -> Result<Duration, F1Error> {
        let mut info = vec![0u8; INFO_BYTES];
        let tries = (timeout.as_millis() / 100).max(1) as u32;
        let start = Instant::now();
        // SAFETY: `info` is larger than the struct.
        let rc = unsafe { (self.clear)(slot as c_int, tries, 100, info.as_mut_ptr()) };
        self.check("fpga_mgmt_clear_local_image_sync", rc)?;
        Ok(start.elapsed())
    }

    /// The slot's status code (`FPGA_STATUS_*` of the SDK: 0 = loaded).
    pub fn status(&self, slot: u32) -> Result<i32, F1Error> {
        let mut info = vec![0u8; INFO_BYTES];
        // SAFETY: `info` is larger than the struct; flags 0.
        let rc = unsafe { (self.describe)(slot as c_int, info.as_mut_ptr(), 0) };
        self.check("fpga_mgmt_describe_local_image", rc)?;
        Ok(i32::from_ne_bytes([info[0], info[1], info[2], info[3]]))
    }
}

impl FpgaMgmt {
    /// The slot's power in whole watts (mean, latest), updated once a minute by the card.
    pub fn power(&self, slot: u32) -> Result<(u64, u64), F1Error> {
        let mut info = vec![0u8; INFO_BYTES];
        // SAFETY: `info` is larger than the struct; flags ask for the hardware metrics.
        let rc = unsafe { (self.describe)(slot as c_int, info.as_mut_ptr(), GET_HW_METRICS) };
        self.check("fpga_mgmt_describe_local_image", rc)?;
        power_from_info(&info)
    }
}

impl Drop for FpgaMgmt {
    fn drop(&mut self) {
        // SAFETY: closes what `open` initialised.
        unsafe { (self.close)() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agfi_ids_are_checked_before_any_call() {
        assert!(check_agfi("agfi-0123456789abcdef0").is_ok());
        assert!(check_agfi("agfi-123").is_err());
        assert!(check_agfi("afi-0123456789abcdef0").is_err());
    }

    #[test]
    fn power_is_read_at_the_known_offsets_and_implausible_values_refused() {
        let mut info = vec![0u8; INFO_BYTES];
        info[POWER_MEAN_AT..POWER_MEAN_AT + 8].copy_from_slice(&23u64.to_le_bytes());
        info[POWER_NOW_AT..POWER_NOW_AT + 8].copy_from_slice(&25u64.to_le_bytes());
        assert_eq!(power_from_info(&info).expect("power"), (23, 25));
        info[POWER_NOW_AT..POWER_NOW_AT + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(power_from_info(&info).unwrap_err().to_string().contains("layout differs"));
    }

    #[test]
    fn no_slot_is_a_clear_error_not_a_crash() {
        let err = FpgaMgmt::open(Path::new("/nonexistent")).err().expect("no slot here").to_string();
        assert!(err.contains("no AWS FPGA slot") && err.contains("fix"), "{err}");
    }
}

//! The safe XRT wrapper.

use std::ffi::{CString, c_int, c_void};
use std::marker::PhantomData;
use std::path::Path;
use std::time::{Duration, Instant};

use super::preflight::{self, PreflightError};
use super::sys;

/// An XRT failure, naming the call.
#[derive(Debug, thiserror::Error)]
pub enum XrtError {
    /// A pre-flight check failed; XRT was not called.
    #[error(transparent)]
    Preflight(#[from] PreflightError),
    /// An XRT call returned an error.
    #[error("{call} failed: {source}")]
    Call {
        /// The C function.
        call: &'static str,
        /// The error code XRT reported, as an OS error.
        source: std::io::Error,
    },
    /// A run ended in a state other than completed.
    #[error("the kernel run ended in state {0}")]
    RunState(String),
    /// A run did not finish in time.
    #[error("the kernel run did not finish within {0:?}")]
    Timeout(Duration),
    /// An argument Rust cannot pass to C.
    #[error("invalid argument: {0}")]
    Argument(String),
}

fn check(call: &'static str, rc: c_int) -> Result<(), XrtError> {
    if rc == 0 {
        Ok(())
    } else {
        Err(XrtError::Call { call, source: std::io::Error::from_raw_os_error(rc.abs()) })
    }
}

fn handle(call: &'static str, h: *mut c_void) -> Result<*mut c_void, XrtError> {
    if h.is_null() { Err(XrtError::Call { call, source: std::io::Error::last_os_error() }) } else { Ok(h) }
}

/// An open device.
pub struct Device {
    h: sys::xrtDeviceHandle,
}

// SAFETY: XRT device handles may be used from any thread (XRT locks internally); we also never share
// one between threads without `&mut`/ownership.
unsafe impl Send for Device {}

impl Device {
    /// Opens device `index` after the pre-flight checks (XRT present, a board bound to xocl under
    /// `sys`).
    pub fn open(index: u32, sys_root: &Path) -> Result<Device, XrtError> {
        preflight::xrt_root()?;
        preflight::boards(sys_root, None)?;
        // SAFETY: plain C call with an integer argument; checked for null.
        let h = handle("xrtDeviceOpen", unsafe { sys::xrtDeviceOpen(index) })?;
        Ok(Device { h })
    }

    /// Opens the device at PCI address `bdf` after the pre-flight checks.
    pub fn open_bdf(bdf: &str, sys_root: &Path) -> Result<Device, XrtError> {
        preflight::xrt_root()?;
        preflight::boards(sys_root, Some(bdf))?;
        let c = CString::new(bdf).map_err(|_| XrtError::Argument(format!("BDF {bdf:?} contains a NUL")))?;
        // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
        let h = handle("xrtDeviceOpenByBDF", unsafe { sys::xrtDeviceOpenByBDF(c.as_ptr()) })?;
        Ok(Device { h })
    }

    /// Loads (reconfigures the device with) the xclbin at `path`; returns its UUID and how long the
    /// load took. XRT skips a load of the image already there: alternate images to measure one.
    pub fn load_xclbin(&mut self, path: &Path) -> Result<([u8; 16], Duration), XrtError> {
        preflight::xclbin(path)?;
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| XrtError::Argument(format!("{} contains a NUL", path.display())))?;
        let start = Instant::now();
        // SAFETY: `self.h` is an open device, `c` a valid string.
        check("xrtDeviceLoadXclbinFile", unsafe { sys::xrtDeviceLoadXclbinFile(self.h, c.as_ptr()) })?;
        let took = start.elapsed();
        Ok((self.xclbin_uuid()?, took))
    }

    /// The UUID of the loaded xclbin.
    pub fn xclbin_uuid(&self) -> Result<[u8; 16], XrtError> {
        let mut uuid = [0u8; 16];
        // SAFETY: `uuid` is the 16-byte xuid_t the call fills.
        check("xrtDeviceGetXclbinUUID", unsafe { sys::xrtDeviceGetXclbinUUID(self.h, uuid.as_mut_ptr()) })?;
        Ok(uuid)
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: closes the handle opened in `open`, once.
        unsafe { sys::xrtDeviceClose(self.h) };
    }
}

/// A kernel (its compute units) in the loaded xclbin.
pub struct Kernel<'d> {
    h: sys::xrtKernelHandle,
    _device: PhantomData<&'d Device>,
}

impl<'d> Kernel<'d> {
    /// Opens kernel `name` of the xclbin `uuid` loaded on `device`.
    pub fn open(device: &'d Device, uuid: &[u8; 16], name: &str) -> Result<Kernel<'d>, XrtError> {
        let c = CString::new(name).map_err(|_| XrtError::Argument(format!("kernel name {name:?}")))?;
        // SAFETY: valid device handle, 16-byte uuid and C string for the duration of the call.
        let h =
            handle("xrtPLKernelOpen", unsafe { sys::xrtPLKernelOpen(device.h, uuid.as_ptr(), c.as_ptr()) })?;
        Ok(Kernel { h, _device: PhantomData })
    }

    /// The memory bank group of argument `arg` (where its buffer must live).
    pub fn group_id(&self, arg: u32) -> Result<u32, XrtError> {
        // SAFETY: valid kernel handle.
        let g = unsafe { sys::xrtKernelArgGroupId(self.h, arg as c_int) };
        if g < 0 {
            return Err(XrtError::Call {
                call: "xrtKernelArgGroupId",
                source: std::io::Error::from_raw_os_error(-g),
            });
        }
        Ok(g as u32)
    }
}

impl Drop for Kernel<'_> {
    fn drop(&mut self) {
        // SAFETY: closes the handle opened in `open`, once.
        unsafe { sys::xrtKernelClose(self.h) };
    }
}

/// Direction of a buffer sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncDirection {
    /// Host memory to the device.
    ToDevice,
    /// Device memory to the host.
    FromDevice,
}

/// A device buffer with host backing storage.
pub struct Bo<'d> {
    h: sys::xrtBufferHandle,
    size: usize,
    _device: PhantomData<&'d Device>,
}

// SAFETY: buffer handles are plain references into XRT's state; used by one owner at a time.
unsafe impl Send for Bo<'_> {}

impl<'d> Bo<'d> {
    /// Allocates `size` bytes in memory bank group `group`.
    pub fn alloc(device: &'d Device, size: usize, group: u32) -> Result<Bo<'d>, XrtError> {
        // SAFETY: valid device handle; flags 0 = normal buffer.
        let h = handle("xrtBOAlloc", unsafe { sys::xrtBOAlloc(device.h, size, 0, group) })?;
        Ok(Bo { h, size, _device: PhantomData })
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Copies `data` into the host backing store at byte offset `seek`.
    pub fn write(&mut self, data: &[u8], seek: usize) -> Result<(), XrtError> {
        if seek + data.len() > self.size {
            return Err(XrtError::Argument(format!(
                "write of {} bytes at {seek} into {} bytes",
                data.len(),
                self.size
            )));
        }
        // SAFETY: `data` is valid for `data.len()` bytes, within the buffer (checked above).
        check("xrtBOWrite", unsafe { sys::xrtBOWrite(self.h, data.as_ptr().cast(), data.len(), seek) })
    }

    /// Copies from the host backing store at byte offset `skip` into `out`.
    pub fn read(&self, out: &mut [u8], skip: usize) -> Result<(), XrtError> {
        if skip + out.len() > self.size {
            return Err(XrtError::Argument(format!(
                "read of {} bytes at {skip} from {} bytes",
                out.len(),
                self.size
            )));
        }
        // SAFETY: `out` is valid for writes of `out.len()` bytes, within the buffer.
        check("xrtBORead", unsafe { sys::xrtBORead(self.h, out.as_mut_ptr().cast(), out.len(), skip) })
    }

    /// Synchronises the whole buffer in `dir`.
    pub fn sync(&mut self, dir: SyncDirection) -> Result<(), XrtError> {
        let d = match dir {
            SyncDirection::ToDevice => sys::xclBOSyncDirection::XCL_BO_SYNC_BO_TO_DEVICE,
            SyncDirection::FromDevice => sys::xclBOSyncDirection::XCL_BO_SYNC_BO_FROM_DEVICE,
        };
        // SAFETY: valid buffer handle, whole-buffer range.
        check("xrtBOSync", unsafe { sys::xrtBOSync(self.h, d, self.size, 0) })
    }
}

impl Drop for Bo<'_> {
    fn drop(&mut self) {
        // SAFETY: frees the buffer allocated in `alloc`, once.
        unsafe { sys::xrtBOFree(self.h) };
    }
}

/// One kernel run.
pub struct Run<'k> {
    h: sys::xrtRunHandle,
    _kernel: PhantomData<&'k Kernel<'k>>,
}

impl<'k> Run<'k> {
    /// A run of `kernel`, not started.
    pub fn open(kernel: &'k Kernel<'_>) -> Result<Run<'k>, XrtError> {
        // SAFETY: valid kernel handle.
        let h = handle("xrtRunOpen", unsafe { sys::xrtRunOpen(kernel.h) })?;
        Ok(Run { h, _kernel: PhantomData })
    }

    /// Sets argument `index` to a buffer.
    pub fn set_bo(&mut self, index: u32, bo: &Bo<'_>) -> Result<(), XrtError> {
        // SAFETY: the variadic argument for a global-memory argument is the buffer handle.
        check("xrtRunSetArg", unsafe { sys::xrtRunSetArg(self.h, index as c_int, bo.h) })
    }

    /// Sets argument `index` to a 32-bit scalar.
    pub fn set_u32(&mut self, index: u32, value: u32) -> Result<(), XrtError> {
        // SAFETY: a 32-bit scalar argument is passed as an unsigned int.
        check("xrtRunSetArg", unsafe { sys::xrtRunSetArg(self.h, index as c_int, value as std::ffi::c_uint) })
    }

    /// Starts the run.
    pub fn start(&mut self) -> Result<(), XrtError> {
        // SAFETY: valid run handle with its arguments set.
        check("xrtRunStart", unsafe { sys::xrtRunStart(self.h) })
    }

    /// Waits up to `timeout` for the run to complete.
    pub fn wait(&mut self, timeout: Duration) -> Result<(), XrtError> {
        let ms = timeout.as_millis().clamp(1, u128::from(u32::MAX)) as u32;
        // SAFETY: valid run handle.
        let state = unsafe { sys::xrtRunWaitFor(self.h, ms) };
        use sys::ert_cmd_state as S;
        if state == S::ERT_CMD_STATE_COMPLETED {
            Ok(())
        } else if [
            S::ERT_CMD_STATE_TIMEOUT,
            S::ERT_CMD_STATE_RUNNING,
            S::ERT_CMD_STATE_QUEUED,
            S::ERT_CMD_STATE_SUBMITTED,
            S::ERT_CMD_STATE_NEW,
        ]
        .contains(&state)
        {
            Err(XrtError::Timeout(timeout))
        } else {
            Err(XrtError::RunState(format!("ert_cmd_state {}", state.0)))
        }
    }
}

impl Drop for Run<'_> {
    fn drop(&mut self) {
        // SAFETY: closes the run opened in `open`, once.
        unsafe { sys::xrtRunClose(self.h) };
    }
}

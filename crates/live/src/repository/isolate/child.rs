//! The kernel process's side (`spork __kernel-process LIBRARY WINDOW INPUTS OUTPUTS`): opens the
//! library, makes one kernel state, and runs each call on the tensors where the server says they
//! lie (its window, descriptor 3; the model's inputs arena, 4, mapped read-only; its outputs arena,
//! 5), replying with the kernel's result through the window's header. It serves one server: it ends when its socket (stdin) closes, or when
//! the server is gone even while a kernel spins.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

use spork_kernel::ffi;

use super::doorbell::{self, Side, Woken};
use super::wire::{self, Desc, FromKernel, Region, ToKernel};
use crate::repository::cpu::{CpuKernel, CpuLibrary};
use crate::repository::shm::Window;

/// The window's descriptor in a kernel process; the inputs' and outputs' arenas follow it.
pub const WINDOW_FD: i32 = 3;

/// The memory a kernel process's tensors lie in.
struct Memory {
    window: Window,
    inputs: Window,
    outputs: Window,
}

impl Memory {
    /// The tensor `d` describes, where it lies, if inside and aligned.
    fn span(&self, d: &Desc) -> Option<*mut u8> {
        let (at, len) = (usize::try_from(d.offset).ok()?, usize::try_from(d.bytes).ok()?);
        match d.region {
            // The window's header is the hand-off's, never a tensor's.
            Region::Window if at < doorbell::HEADER => None,
            Region::Window => self.window.span(at, len),
            Region::Inputs => self.inputs.span(at, len),
            Region::Outputs => self.outputs.span(at, len),
        }
    }
}

/// Runs a kernel process; its exit code.
pub fn main(args: &[String]) -> i32 {
    match serve(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("spork kernel process: {e}");
            1
        }
    }
}

fn serve(args: &[String]) -> Result<(), String> {
    let [library, sizes @ ..] = args else { return Err(USAGE.into()) };
    let sizes: Vec<usize> = sizes.iter().map(|s| s.parse()).collect::<Result<_, _>>().map_err(|_| USAGE)?;
    let [window, inputs, outputs] = sizes[..] else { return Err(USAGE.into()) };
    watch_parent();
    // SAFETY: the server hands this process its end of a socket pair as stdin, and the window and
    // the two arenas as descriptors 3 to 5; all are this process's to own from here.
    let map = |fd: i32, len: usize, write: bool, what: &str| {
        Window::map(unsafe { OwnedFd::from_raw_fd(fd) }, len, write)
            .map_err(|e| format!("mapping the {what}: {e}"))
    };
    let mut memory = Memory {
        window: map(WINDOW_FD, window, true, "window")?,
        inputs: map(WINDOW_FD + 1, inputs, false, "inputs' arena")?,
        outputs: map(WINDOW_FD + 2, outputs, true, "outputs' arena")?,
    };
    // SAFETY: as above.
    let mut sock = unsafe { UnixStream::from_raw_fd(0) };
    let mut buf = Vec::new();
    let io = |e: std::io::Error| format!("socket: {e}");
    if !wire::read_frame(&mut sock, wire::REQUEST_MAX, &mut buf).map_err(io)? {
        return Ok(());
    }
    let Ok(ToKernel::Init { config, inputs, outputs }) = ToKernel::decode(&buf) else {
        return Err("the first message was not Init".into());
    };
    let names = (c_names(&inputs), c_names(&outputs));
    // Before any of the user's code runs (the library's constructors included).
    if let Err(m) = super::confine::confine() {
        return wire::write_frame(&mut sock, &FromKernel::Refused(m).encode()).map_err(io);
    }
    let mut kernel = match open(Path::new(library), &config) {
        Ok(k) => {
            wire::write_frame(&mut sock, &FromKernel::Ready.encode()).map_err(io)?;
            k
        }
        Err(m) => return wire::write_frame(&mut sock, &FromKernel::Refused(m).encode()).map_err(io),
    };
    for seq in 1u32.. {
        match doorbell::wait(&memory.window, Side::Kernel, seq, doorbell::SPIN, None, &mut sock, &mut buf) {
            Ok(()) => {}
            Err(Woken::Closed) => return Ok(()),
            Err(Woken::TimedOut) => return Err("a wait with no deadline timed out".into()),
            Err(Woken::Io(e)) => return Err(io(e)),
        }
        let result = match ToKernel::decode(&buf) {
            Ok(ToKernel::Run { inputs, outputs }) => call(&mut kernel, &memory, &names, &inputs, &outputs),
            Ok(ToKernel::Init { .. }) => Err("a second Init".into()),
            Err(e) => Err(e.to_string()),
        };
        doorbell::send(&mut memory.window, Side::Kernel, seq, &FromKernel::Done(result).encode(), &mut sock)
            .map_err(io)?;
    }
    Ok(())
}

const USAGE: &str = "usage: spork __kernel-process LIBRARY WINDOW_BYTES INPUTS_BYTES OUTPUTS_BYTES (started by spork serve, not by hand)";

fn open(library: &Path, config: &str) -> Result<CpuKernel, String> {
    let lib = std::sync::Arc::new(CpuLibrary::open(library, config).map_err(|e| e.to_string())?);
    lib.instance().map_err(|e| e.to_string())
}

fn c_names(names: &[String]) -> Vec<CString> {
    names.iter().map(|n| CString::new(n.replace('\0', "")).unwrap_or_default()).collect()
}

/// One call: the tensors laid out for the ABI, each checked to lie inside its memory.
fn call(
    kernel: &mut CpuKernel,
    memory: &Memory,
    names: &(Vec<CString>, Vec<CString>),
    inputs: &[Desc],
    outputs: &[Desc],
) -> Result<(), String> {
    if inputs.len() != names.0.len() || outputs.len() != names.1.len() {
        return Err("the call's tensors do not match the model's".into());
    }
    let raw = |d: &Desc, name: &CString| -> Result<ffi::Tensor, String> {
        let data = memory.span(d).ok_or("a tensor past its shared memory")?;
        Ok(ffi::Tensor {
            name: name.as_ptr(),
            dtype: d.dtype,
            rank: d.shape.len() as u32,
            shape: d.shape.as_ptr(),
            bytes: d.bytes,
            data: data.cast(),
        })
    };
    let ins = inputs.iter().zip(&names.0).map(|(d, n)| raw(d, n)).collect::<Result<Vec<_>, _>>()?;
    let mut outs = outputs.iter().zip(&names.1).map(|(d, n)| raw(d, n)).collect::<Result<Vec<_>, _>>()?;
    // SAFETY: each tensor was checked to lie inside its memory, aligned; names and shapes live in
    // `names` and the descriptors for the whole call. An input in the read-only arena faults a
    // kernel that writes it: that ends this process, as the server expects of a crash.
    unsafe { kernel.run_raw(&ins, &mut outs) }
}

/// Ends this process once the server is gone, even while a kernel spins and the socket is not read.
fn watch_parent() {
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    let _ = std::thread::Builder::new().name("spork-kernel-watch".into()).spawn(move || {
        loop {
            std::thread::sleep(std::time::Duration::from_millis(500));
            // SAFETY: as above; _exit ends the process without running anything of the kernel's.
            if unsafe { libc::getppid() } != parent {
                unsafe { libc::_exit(3) };
            }
        }
    });
}

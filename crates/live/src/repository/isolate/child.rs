//! The kernel process's side (`spork __kernel-process LIBRARY WINDOW`): opens the library, makes one kernel
//! state, and runs each call on the tensors the server put in the window (descriptor 3), replying
//! with the kernel's result through the window's header. It serves one server: it ends when its socket (stdin) closes, or when
//! the server is gone even while a kernel spins.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

use spork_kernel::ffi;

use super::doorbell::{self, Side, Woken};
use super::shm::Window;
use super::wire::{self, Desc, FromKernel, ToKernel};
use crate::repository::cpu::{CpuKernel, CpuLibrary};

/// The window's descriptor in a kernel process.
pub const WINDOW_FD: i32 = 3;

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
    let [library, window] = args else {
        return Err(
            "usage: spork __kernel-process LIBRARY WINDOW_BYTES (started by spork serve, not by hand)".into(),
        );
    };
    let len: usize = window.parse().map_err(|_| format!("window '{window}' is not a size"))?;
    watch_parent();
    // SAFETY: the server hands this process its end of a socket pair as stdin and the window as
    // descriptor 3; both are this process's to own from here.
    let (mut sock, fd) = unsafe { (UnixStream::from_raw_fd(0), OwnedFd::from_raw_fd(WINDOW_FD)) };
    let mut window = Window::map(fd, len).map_err(|e| format!("mapping the window: {e}"))?;
    let mut buf = Vec::new();
    let io = |e: std::io::Error| format!("socket: {e}");
    if !wire::read_frame(&mut sock, wire::REQUEST_MAX, &mut buf).map_err(io)? {
        return Ok(());
    }
    let Ok(ToKernel::Init { config, inputs, outputs }) = ToKernel::decode(&buf) else {
        return Err("the first message was not Init".into());
    };
    let names = (c_names(&inputs), c_names(&outputs));
    let mut kernel = match open(Path::new(library), &config) {
        Ok(k) => {
            wire::write_frame(&mut sock, &FromKernel::Ready.encode()).map_err(io)?;
            k
        }
        Err(m) => return wire::write_frame(&mut sock, &FromKernel::Refused(m).encode()).map_err(io),
    };
    for seq in 1u32.. {
        match doorbell::wait(&window, Side::Kernel, seq, doorbell::SPIN, None, &mut sock, &mut buf) {
            Ok(()) => {}
            Err(Woken::Closed) => return Ok(()),
            Err(Woken::TimedOut) => return Err("a wait with no deadline timed out".into()),
            Err(Woken::Io(e)) => return Err(io(e)),
        }
        let result = match ToKernel::decode(&buf) {
            Ok(ToKernel::Run { inputs, outputs }) => {
                call(&mut kernel, &mut window, &names, &inputs, &outputs)
            }
            Ok(ToKernel::Init { .. }) => Err("a second Init".into()),
            Err(e) => Err(e.to_string()),
        };
        doorbell::send(&mut window, Side::Kernel, seq, &FromKernel::Done(result).encode(), &mut sock)
            .map_err(io)?;
    }
    Ok(())
}

fn open(library: &Path, config: &str) -> Result<CpuKernel, String> {
    let lib = std::sync::Arc::new(CpuLibrary::open(library, config).map_err(|e| e.to_string())?);
    lib.instance().map_err(|e| e.to_string())
}

fn c_names(names: &[String]) -> Vec<CString> {
    names.iter().map(|n| CString::new(n.replace('\0', "")).unwrap_or_default()).collect()
}

/// One call: the tensors laid out for the ABI, each checked to lie inside the window.
fn call(
    kernel: &mut CpuKernel,
    window: &mut Window,
    names: &(Vec<CString>, Vec<CString>),
    inputs: &[Desc],
    outputs: &[Desc],
) -> Result<(), String> {
    if inputs.len() != names.0.len() || outputs.len() != names.1.len() {
        return Err("the call's tensors do not match the model's".into());
    }
    let mut raw = |d: &Desc, name: &CString| -> Result<ffi::Tensor, String> {
        let (at, len) = (usize::try_from(d.offset), usize::try_from(d.bytes));
        let (Ok(at), Ok(len)) = (at, len) else { return Err("a tensor past the window".into()) };
        if window.slice_mut(at, len).is_none() || at % 8 != 0 {
            return Err("a tensor past the window".into());
        }
        Ok(ffi::Tensor {
            name: name.as_ptr(),
            dtype: d.dtype,
            rank: d.shape.len() as u32,
            shape: d.shape.as_ptr(),
            bytes: d.bytes,
            data: window.ptr_at(at).cast(),
        })
    };
    let ins = inputs.iter().zip(&names.0).map(|(d, n)| raw(d, n)).collect::<Result<Vec<_>, _>>()?;
    let mut outs = outputs.iter().zip(&names.1).map(|(d, n)| raw(d, n)).collect::<Result<Vec<_>, _>>()?;
    // SAFETY: each tensor was checked to lie inside the window, aligned; names and shapes live in
    // `names` and the descriptors for the whole call.
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

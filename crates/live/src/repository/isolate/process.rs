//! One kernel process from the server's side: started with its window and socket, one call at a
//! time, killed when a call outlives its timeout, reaped with what ended it.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use super::child::WINDOW_FD;
use super::doorbell::{self, HEADER, Side, Woken};
use super::wire::{self, Desc, FromKernel, Region, ToKernel};
use crate::repository::arena::Arena;
use crate::repository::shm::{Window, Writers};
use crate::repository::tensor::TensorBuf;

/// What a kernel process is started with.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The model's library.
    pub library: PathBuf,
    /// `spork_kernel_init`'s configuration.
    pub config: String,
    /// Input and output names, in model.toml's order.
    pub names: (Vec<String>, Vec<String>),
    /// The window's size: the most bytes one call's tensors take.
    pub window: usize,
    /// The most heap the kernel may hold (RLIMIT_DATA), past the window.
    pub memory: u64,
}

/// A model's arenas, which every one of its kernel processes maps: tensors made in them are run in
/// place, any other is copied through the process's own window.
#[derive(Clone, Debug)]
pub struct Arenas {
    /// Requests' inputs: the server writes, kernel processes read.
    pub inputs: Arc<Arena>,
    /// Answers: kernel processes write.
    pub outputs: Arc<Arena>,
}

impl Arenas {
    /// Two arenas of `len` bytes each.
    pub fn create(len: usize) -> std::io::Result<Arenas> {
        Ok(Arenas {
            inputs: Arena::create(len, Writers::Server)?,
            outputs: Arena::create(len, Writers::All)?,
        })
    }
}

/// Why a call gave no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The kernel returned an error; its process is fine.
    Kernel(String),
    /// The request cannot be run here (too large for the window); the process is fine.
    Refused(String),
    /// The process died or was killed for misbehaving (what happened); it is gone.
    Died(String),
    /// The call outlived its timeout and the process was killed; it is gone.
    TimedOut(String),
}

/// A running kernel process with one kernel state.
pub struct KernelProcess {
    child: Child,
    sock: UnixStream,
    window: Window,
    buf: Vec<u8>,
    descs: (Vec<Desc>, Vec<Desc>),
    /// The last call's number in the window's header.
    seq: u32,
    /// Recent calls' duration (a moving average): how long the next one is worth polling for.
    recent: Duration,
}

impl KernelProcess {
    /// Starts one and waits (at most `timeout`) for its library to open and its state to be made.
    pub fn start(l: &Launch, arenas: &Arenas, timeout: Duration) -> Result<KernelProcess, Failure> {
        let start = |e: std::io::Error| Failure::Died(format!("cannot start the kernel process: {e}"));
        super::confine::server_not_dumpable();
        let window = Window::create(HEADER.saturating_add(l.window), Writers::All).map_err(start)?;
        let (ours, theirs) = UnixStream::pair().map_err(start)?;
        let mut cmd = Command::new(binary().map_err(Failure::Died)?);
        cmd.arg(super::SUBCOMMAND).arg(&l.library);
        for len in [window.len(), arenas.inputs.len(), arenas.outputs.len()] {
            cmd.arg(len.to_string());
        }
        cmd.stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::from(std::io::stderr().as_fd().try_clone_to_owned().map_err(start)?))
            .stderr(Stdio::inherit());
        let fds = [window.raw_fd(), arenas.inputs.raw_fd(), arenas.outputs.raw_fd()];
        let data = rlimit(l.memory);
        // SAFETY: between fork and exec this runs only fcntl, dup2 and setrlimit, which are
        // async-signal-safe, on descriptors and values computed before the fork.
        unsafe {
            cmd.pre_exec(move || {
                // Each moved above the targets first (closed at exec), so no source is overwritten
                // before it is placed; dup2 leaves the placed ones open across exec.
                let mut high = [0; 3];
                for (h, &fd) in high.iter_mut().zip(&fds) {
                    *h = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, WINDOW_FD + 16);
                    if *h < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                for (target, &h) in (WINDOW_FD..).zip(&high) {
                    if libc::dup2(h, target) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                let limit = libc::rlimit { rlim_cur: data, rlim_max: data };
                libc::setrlimit(libc::RLIMIT_DATA, &limit);
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(start)?;
        let descs = (Vec::new(), Vec::new());
        let mut p = KernelProcess {
            child,
            sock: ours,
            window,
            buf: Vec::new(),
            descs,
            seq: 0,
            recent: Duration::ZERO,
        };
        let (inputs, outputs) = l.names.clone();
        ToKernel::Init { config: l.config.clone(), inputs, outputs }.encode(&mut p.buf);
        match p.start_exchange(timeout)? {
            FromKernel::Ready => Ok(p),
            FromKernel::Refused(m) => Err(Failure::Refused(m)),
            FromKernel::Done(_) => Err(p.kill("answered Init out of turn")),
        }
    }

    /// Rings the process if it sleeps: a call is on its way ([`doorbell::wake`]).
    pub fn wake(&self) {
        doorbell::wake(&self.window, &self.sock);
    }

    /// Runs one call: tensors in `arenas` in place, any other input copied into the window and
    /// output copied out. A call past `timeout` kills the process.
    pub fn run(
        &mut self,
        arenas: &Arenas,
        inputs: &[TensorBuf],
        outputs: &mut [TensorBuf],
        timeout: Duration,
    ) -> Result<(), Failure> {
        let used = self.lay_out(arenas, inputs, outputs)?;
        for (t, d) in inputs.iter().zip(&self.descs.0) {
            if d.region == Region::Window
                && let Some(w) = self.window.slice_mut(d.offset as usize, t.len())
            {
                w.copy_from_slice(t.bytes());
            }
        }
        wire::encode_run(&self.descs.0, &self.descs.1, &mut self.buf);
        if self.buf.len() > doorbell::REQUEST_MAX {
            return Err(Failure::Refused(format!(
                "the request's tensor descriptors take {} bytes, past the {} a call's message holds",
                self.buf.len(),
                doorbell::REQUEST_MAX
            )));
        }
        let reply = self.call(timeout)?;
        let result = match reply {
            FromKernel::Done(Ok(())) => {
                for (t, d) in outputs.iter_mut().zip(&self.descs.1) {
                    if d.region == Region::Window
                        && let Some(w) = self.window.slice(d.offset as usize, t.len())
                    {
                        t.bytes_mut().copy_from_slice(w);
                    }
                }
                Ok(())
            }
            FromKernel::Done(Err(m)) => Err(Failure::Kernel(m)),
            _ => Err(self.kill("answered out of turn")),
        };
        self.window.trim(used);
        result
    }

    /// Says where each tensor lies ([`lay_out`]); the window's bytes used. A call larger than the
    /// window is refused.
    fn lay_out(
        &mut self,
        arenas: &Arenas,
        inputs: &[TensorBuf],
        outputs: &[TensorBuf],
    ) -> Result<usize, Failure> {
        let at = lay_out(arenas, inputs, outputs, &mut self.descs);
        if at > self.window.len() {
            return Err(Failure::Refused(format!(
                "the request's tensors take {at} bytes, past the kernel process's window of {} bytes",
                self.window.len()
            )));
        }
        Ok(at)
    }

    /// Sends `Init` (in `buf`) on the socket and waits at most `timeout` for the reply.
    fn start_exchange(&mut self, timeout: Duration) -> Result<FromKernel, Failure> {
        if let Err(e) = wire::write_frame(&mut self.sock, &self.buf) {
            return Err(self.ended(&format!("starting: {e}")));
        }
        let _ = self.sock.set_read_timeout(Some(timeout.max(Duration::from_millis(1))));
        match wire::read_frame(&mut self.sock, wire::REPLY_MAX, &mut self.buf) {
            Ok(true) => FromKernel::decode(&self.buf).map_err(|e| self.kill(&e.to_string())),
            Ok(false) => Err(self.ended("starting")),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                Err(self.timed_out(&format!("starting took longer than its timeout of {timeout:?}")))
            }
            Err(e) => Err(self.kill(&format!("starting: {e}"))),
        }
    }

    /// Hands the call's message (in `buf`) over through the window's header and waits at most
    /// `timeout` for the reply.
    fn call(&mut self, timeout: Duration) -> Result<FromKernel, Failure> {
        const DOING: &str = "running a request";
        let deadline = std::time::Instant::now() + timeout;
        self.seq = self.seq.wrapping_add(1);
        if let Err(e) = doorbell::send(&mut self.window, Side::Server, self.seq, &self.buf, &mut self.sock) {
            return Err(self.ended(&format!("{DOING}: {e}")));
        }
        let spin = doorbell::spin_for(self.recent).min(timeout);
        let sent = std::time::Instant::now();
        match doorbell::wait(
            &self.window,
            Side::Server,
            self.seq,
            spin,
            Some(deadline),
            &mut self.sock,
            &mut self.buf,
        ) {
            Ok(()) => {
                self.recent = (self.recent * 3 + sent.elapsed()) / 4;
                FromKernel::decode(&self.buf).map_err(|e| self.kill(&e.to_string()))
            }
            Err(Woken::Closed) => Err(self.ended(DOING)),
            Err(Woken::TimedOut) => {
                Err(self.timed_out(&format!("{DOING} took longer than its timeout of {timeout:?}")))
            }
            Err(Woken::Io(e)) => Err(self.kill(&format!("{DOING}: {e}"))),
        }
    }

    /// Kills the process for outliving a timeout.
    fn timed_out(&mut self, why: &str) -> Failure {
        match self.kill(why) {
            Failure::Died(m) => Failure::TimedOut(m),
            other => other,
        }
    }

    /// Kills the process for `why`.
    fn kill(&mut self, why: &str) -> Failure {
        let _ = self.child.kill();
        let _ = self.child.wait();
        Failure::Died(format!("the kernel process was killed: {why}"))
    }

    /// The process ended by itself while `doing`: what ended it.
    fn ended(&mut self, doing: &str) -> Failure {
        let status = match self.child.wait() {
            Ok(s) => match (s.signal(), s.code()) {
                (Some(sig), _) => format!("killed by signal {sig} ({})", signal_name(sig)),
                (None, Some(code)) => format!("exited with status {code}"),
                _ => s.to_string(),
            },
            Err(e) => e.to_string(),
        };
        Failure::Died(format!("the kernel process died while {doing}: {status}"))
    }
}

impl Drop for KernelProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where each tensor lies for a call: in place if it lies in its arena (an input in the inputs',
/// an output in the outputs'), else at an 8-byte aligned offset (64: a cache line) in the window,
/// past its header; the window's end so far.
fn lay_out(
    arenas: &Arenas,
    inputs: &[TensorBuf],
    outputs: &[TensorBuf],
    descs: &mut (Vec<Desc>, Vec<Desc>),
) -> usize {
    let mut at = HEADER;
    let mut place = |t: &TensorBuf, arena: &Arc<Arena>, region: Region| {
        let (region, offset) = match t.block().filter(|b| Arc::ptr_eq(b.arena(), arena)) {
            Some(b) => (region, b.offset()),
            None => {
                let here = at;
                at = at.saturating_add(t.len()).next_multiple_of(64);
                (Region::Window, here)
            }
        };
        Desc {
            dtype: t.dtype as u32,
            shape: t.shape.clone(),
            region,
            offset: offset as u64,
            bytes: t.len() as u64,
        }
    };
    descs.0 = inputs.iter().map(|t| place(t, &arenas.inputs, Region::Inputs)).collect();
    descs.1 = outputs.iter().map(|t| place(t, &arenas.outputs, Region::Outputs)).collect();
    at
}

/// RLIMIT_DATA for `memory` bytes of heap: the shared window is a shared mapping and does not
/// count, the process's own image does (a few megabytes).
fn rlimit(memory: u64) -> libc::rlim_t {
    memory.saturating_add(64 << 20) as libc::rlim_t
}

/// A signal's name, for the reason a model shows.
fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV: a bad memory access",
        libc::SIGBUS => "SIGBUS: a bad memory access",
        libc::SIGABRT => "SIGABRT: abort()",
        libc::SIGFPE => "SIGFPE: an arithmetic fault",
        libc::SIGILL => "SIGILL: an illegal instruction",
        libc::SIGKILL => "SIGKILL",
        _ => "a signal",
    }
}

/// The `spork` binary a kernel process runs: this executable when it is `spork` (the server), else
/// `SPORK_BIN`, else a `spork` beside this executable or one folder up (a test binary under `deps/`).
pub fn binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    if exe.file_name().is_some_and(|n| n == "spork") {
        return Ok(exe);
    }
    if let Some(p) = std::env::var_os("SPORK_BIN") {
        return Ok(PathBuf::from(p));
    }
    let dir = exe.parent().unwrap_or(Path::new("."));
    [dir.join("spork"), dir.join("../spork")].into_iter().find(|p| p.is_file()).ok_or_else(|| {
        format!(
            "no spork binary to run kernel processes from (looked beside {})\n  fix: build it (cargo build -p \
             spork), set SPORK_BIN to its path, or serve trusted code in-process with [cpu] isolation = \"none\"",
            exe.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use spork_kernel::ffi::DType;

    use super::*;

    #[test]
    fn tensors_in_the_models_arenas_run_in_place_and_any_other_goes_through_the_window() {
        let (ours, theirs) = (Arenas::create(1 << 20).unwrap(), Arenas::create(1 << 20).unwrap());
        let request = TensorBuf::from_bytes_in(Some(&ours.inputs), DType::Uint8, &[100], &[1; 100]).unwrap();
        let heap = TensorBuf::from_bytes(DType::Uint8, &[10], &[2; 10]).unwrap();
        let answer = TensorBuf::zeroed_in(Some(&ours.outputs), DType::Uint8, &[100]).unwrap();
        let foreign = TensorBuf::zeroed_in(Some(&theirs.outputs), DType::Uint8, &[100]).unwrap();
        let misplaced = TensorBuf::zeroed_in(Some(&ours.inputs), DType::Uint8, &[8]).unwrap();
        let (at_in, at_out) =
            (request.block().unwrap().offset() as u64, answer.block().unwrap().offset() as u64);
        let mut descs = (Vec::new(), Vec::new());
        let end = lay_out(&ours, &[request, heap], &[answer, foreign, misplaced], &mut descs);
        let places: Vec<(Region, u64)> =
            descs.0.iter().chain(&descs.1).map(|d| (d.region, d.offset)).collect();
        let h = HEADER as u64;
        assert_eq!(
            places,
            [
                (Region::Inputs, at_in),
                (Region::Window, h),
                (Region::Outputs, at_out),
                (Region::Window, h + 64),
                (Region::Window, h + 192),
            ]
        );
        assert_eq!(end, HEADER + 256, "only the copied tensors take window bytes");
    }
}

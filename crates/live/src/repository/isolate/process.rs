//! One kernel process from the server's side: started with its window and socket, one call at a
//! time, killed when a call outlives its timeout, reaped with what ended it.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::child::WINDOW_FD;
use super::doorbell::{self, HEADER, Side, Woken};
use super::shm::Window;
use super::wire::{self, Desc, FromKernel, ToKernel};
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
    pub fn start(l: &Launch, timeout: Duration) -> Result<KernelProcess, Failure> {
        let start = |e: std::io::Error| Failure::Died(format!("cannot start the kernel process: {e}"));
        let window = Window::create(HEADER.saturating_add(l.window)).map_err(start)?;
        let (ours, theirs) = UnixStream::pair().map_err(start)?;
        let mut cmd = Command::new(binary().map_err(Failure::Died)?);
        cmd.arg(super::SUBCOMMAND).arg(&l.library).arg(window.len().to_string());
        cmd.stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::from(std::io::stderr().as_fd().try_clone_to_owned().map_err(start)?))
            .stderr(Stdio::inherit());
        let (fd, data) = (window.raw_fd(), rlimit(l.memory));
        // SAFETY: between fork and exec this runs only dup2, fcntl and setrlimit, which are
        // async-signal-safe, on descriptors and values computed before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if fd == WINDOW_FD {
                    libc::fcntl(fd, libc::F_SETFD, 0);
                } else if libc::dup2(fd, WINDOW_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
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

    /// Runs one call: `inputs` copied into the window, the kernel's `outputs` copied out. A call
    /// past `timeout` kills the process.
    pub fn run(
        &mut self,
        inputs: &[TensorBuf],
        outputs: &mut [TensorBuf],
        timeout: Duration,
    ) -> Result<(), Failure> {
        let used = self.lay_out(inputs, outputs)?;
        for (t, d) in inputs.iter().zip(&self.descs.0) {
            if let Some(w) = self.window.slice_mut(d.offset as usize, t.len()) {
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
                    if let Some(w) = self.window.slice(d.offset as usize, t.len()) {
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

    /// Places each tensor at an 8-byte aligned offset (64: a cache line) in the window, past its
    /// header; the bytes used. A call larger than the window is refused.
    fn lay_out(&mut self, inputs: &[TensorBuf], outputs: &[TensorBuf]) -> Result<usize, Failure> {
        let mut at = HEADER;
        let mut place = |t: &TensorBuf| {
            let d = Desc {
                dtype: t.dtype as u32,
                shape: t.shape.clone(),
                offset: at as u64,
                bytes: t.len() as u64,
            };
            at = at.saturating_add(t.len()).next_multiple_of(64);
            d
        };
        self.descs.0 = inputs.iter().map(&mut place).collect();
        self.descs.1 = outputs.iter().map(&mut place).collect();
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

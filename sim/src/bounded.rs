//! Build tools run on a model folder's files (the C compiler, Verilator) with a bound on their time
//! and on the output kept: a source that includes a FIFO, or a design that makes Verilator run for an
//! hour, fails its own model at load, not the server's start.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long each build tool may run, and how much of its output is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuildLimits {
    /// One run of the C/C++ compiler on a model's CPU code.
    pub compile: Duration,
    /// One run of Verilator, or of the compiler on its output.
    pub verilate: Duration,
    /// Bytes of a tool's output (stdout and stderr each) kept for the error message.
    pub output: usize,
}

impl Default for BuildLimits {
    fn default() -> BuildLimits {
        BuildLimits { compile: DEFAULT_TIMEOUT, verilate: DEFAULT_TIMEOUT, output: 16 * 1024 }
    }
}

/// Each build tool's time when nothing else is set (`spork serve --build-timeout`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

static LIMITS: OnceLock<BuildLimits> = OnceLock::new();

/// Sets the process's build limits (once, at start; later calls are ignored).
pub fn set_limits(l: BuildLimits) {
    let _ = LIMITS.set(l);
}

/// The process's build limits (the defaults unless [`set_limits`] said otherwise).
pub fn limits() -> BuildLimits {
    LIMITS.get().copied().unwrap_or_default()
}

/// The most bytes one file of a model folder may hold to be read (a source, a header, a design).
pub const FILE_MAX: u64 = 16 << 20;

/// Reads a model folder's file: a regular file (not a FIFO or a device, whose read could wait
/// forever) of at most [`FILE_MAX`] bytes.
pub fn read_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > FILE_MAX {
        return Err(std::io::Error::other(format!("{} bytes, past the bound of {FILE_MAX}", meta.len())));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(path)?.take(FILE_MAX + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > FILE_MAX {
        return Err(std::io::Error::other(format!("grew past the bound of {FILE_MAX} bytes while read")));
    }
    Ok(bytes)
}

/// What a bounded run gave.
#[derive(Debug)]
pub enum Ran {
    /// It ended: whether it succeeded, and its output (stdout then stderr, each cut to the bound).
    Ended {
        /// Exit status 0.
        success: bool,
        /// Its output, cut.
        log: String,
    },
    /// It was killed past `timeout`; its output so far.
    TimedOut {
        /// Its output, cut.
        log: String,
    },
}

/// Runs `cmd` (its stdin closed) for at most `timeout`, keeping at most `cap` bytes of each of its
/// stdout and stderr; the rest is read and dropped, so a chatty tool never blocks on a full pipe.
pub fn run(cmd: &mut Command, timeout: Duration, cap: usize) -> std::io::Result<Ran> {
    // A group of its own: a timeout kills the tool with what it started (gcc's cc1, a shell's
    // children), which would otherwise hold its pipes open.
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let readers: Vec<_> = [
        child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
        child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|pipe| std::thread::spawn(move || keep(pipe, cap)))
    .collect();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if start.elapsed() >= timeout {
            if let Ok(pid) = i32::try_from(child.id()) {
                // SAFETY: kill(2) on the process group this function made.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // A grandchild the tool left behind may hold the pipes open: the readers are not waited for
    // past a short grace once the tool itself has ended.
    let log: String =
        readers
            .into_iter()
            .map(|r| {
                if r.is_finished() || wait_briefly(&r) { r.join().unwrap_or_default() } else { String::new() }
            })
            .collect();
    Ok(match status {
        Some(s) => Ran::Ended { success: s.success(), log },
        None => Ran::TimedOut { log },
    })
}

fn wait_briefly(r: &std::thread::JoinHandle<String>) -> bool {
    let until = Instant::now() + Duration::from_millis(200);
    while Instant::now() < until {
        if r.is_finished() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// Reads `pipe` to its end, keeping its first `cap` bytes (with a note of how much was dropped).
fn keep(mut pipe: impl Read, cap: usize) -> String {
    let mut kept = Vec::new();
    let mut dropped = 0u64;
    let mut buf = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        let room = cap.saturating_sub(kept.len()).min(n);
        kept.extend_from_slice(&buf[..room]);
        dropped += (n - room) as u64;
    }
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if dropped > 0 {
        text.push_str(&format!("\n[... {dropped} more bytes of output dropped]\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_past_its_timeout_is_killed_and_its_output_kept() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo started; sleep 30"]);
        match run(&mut cmd, Duration::from_millis(300), 1024).unwrap() {
            Ran::TimedOut { log } => assert!(log.contains("started"), "{log}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_chatty_tool_ends_and_only_its_first_bytes_are_kept() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "head -c 1000000 /dev/zero | tr '\\0' x; echo oops >&2; exit 3"]);
        match run(&mut cmd, Duration::from_secs(60), 100).unwrap() {
            Ran::Ended { success, log } => {
                assert!(!success);
                assert!(log.starts_with(&"x".repeat(100)), "{}", &log[..120.min(log.len())]);
                assert!(log.contains("999900 more bytes") && log.contains("oops"), "{log}");
                assert!(log.len() < 400);
            }
            other => panic!("{other:?}"),
        }
    }
}

//! A model's CPU kernel in processes of its own (the `spork` binary run as `spork
//! __kernel-process`), so that its crash, hang or
//! appetite fails its own requests and never the server. One process holds one kernel state, as a
//! CPU worker holds one in-process; tensors pass through a shared window (a memfd both map), and
//! each call is one message each way through the window's first bytes (the socket pair only wakes a
//! side that sleeps, and tells each side when the other is gone). A process that dies, or is killed past the
//! call's timeout, is replaced at the next call after a backoff; one that keeps dying makes the
//! model unavailable, with the reason.
//!
//! - [`confine`]: what a kernel process gives up before the user's code runs.
//! - [`wire`]: the messages; [`shm`](super::shm): the window; [`doorbell`]: a call's hand-off through it;
//!   [`process`]: one process from the server's side; [`child`]: the process's own side.

pub mod child;
pub mod confine;
pub mod doorbell;
pub mod process;
pub mod wire;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

pub use process::{Arenas, Failure, KernelProcess, Launch};

/// The hidden first argument that makes the `spork` binary a kernel process.
pub const SUBCOMMAND: &str = "__kernel-process";

use super::tensor::TensorBuf;

/// Deaths in a row (no answer between) after which the model is unavailable.
pub const DEATHS_TO_UNAVAILABLE: u32 = 5;

/// Each of a model's two arenas holds twice its largest call's tensors, within these bounds: the
/// inputs' arena cannot give pages back (it is sealed against kernels' writes, hole punching
/// included), so its size is what it can keep resident; a tensor that finds no room is copied
/// through the process's window instead.
const ARENA_MIN: usize = 1 << 20;
const ARENA_MAX: usize = 32 << 20;

/// The first restart's wait; each death in a row doubles it, up to [`BACKOFF_MAX`].
const BACKOFF_FIRST: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// What the kernel processes of a model have been through (for `/metrics`).
#[derive(Debug, Default)]
pub struct Counters {
    /// Processes started (the first included).
    pub started: AtomicU64,
    /// Processes that died by themselves (a crash, an exit).
    pub crashed: AtomicU64,
    /// Processes killed past a call's timeout.
    pub timed_out: AtomicU64,
}

#[derive(Debug, Default)]
struct Health {
    deaths_in_row: u32,
    retry_at: Option<Instant>,
    unavailable: Option<String>,
}

/// A model's kernel processes: idle ones kept for the next call, new ones started as calls need
/// them (one per concurrent call).
pub struct Isolated {
    launch: Launch,
    arenas: Arenas,
    timeout: Duration,
    idle: Mutex<Vec<KernelProcess>>,
    health: Mutex<Health>,
    /// Its counters.
    pub counters: Counters,
}

impl std::fmt::Debug for Isolated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Isolated({})", self.launch.library.display())
    }
}

impl Isolated {
    /// Starts the first process now, so a library that does not open or initialise is refused at
    /// load; `timeout` bounds that start and every call.
    pub fn start(launch: Launch, timeout: Duration) -> Result<Isolated, String> {
        let len = launch.window.saturating_mul(2).clamp(ARENA_MIN, ARENA_MAX);
        let arenas =
            Arenas::create(len).map_err(|e| format!("cannot make the model's shared arenas: {e}"))?;
        let first = KernelProcess::start(&launch, &arenas, timeout).map_err(message)?;
        let iso = Isolated {
            launch,
            arenas,
            timeout,
            idle: Mutex::new(vec![first]),
            health: Mutex::new(Health::default()),
            counters: Counters::default(),
        };
        iso.counters.started.fetch_add(1, Ordering::Relaxed);
        Ok(iso)
    }

    /// Runs one call in an idle process (or a new one).
    pub fn run(&self, inputs: &[TensorBuf], outputs: &mut [TensorBuf]) -> Result<(), String> {
        let mut p = self.take()?;
        match p.run(&self.arenas, inputs, outputs, self.timeout) {
            Ok(()) => {
                self.health().deaths_in_row = 0;
                self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(p);
                Ok(())
            }
            Err(Failure::Kernel(m) | Failure::Refused(m)) => {
                self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(p);
                Err(m)
            }
            Err(f @ (Failure::Died(_) | Failure::TimedOut(_))) => {
                drop(p);
                let counter = if matches!(f, Failure::TimedOut(_)) {
                    &self.counters.timed_out
                } else {
                    &self.counters.crashed
                };
                counter.fetch_add(1, Ordering::Relaxed);
                let m = message(f);
                self.died(&m);
                Err(m)
            }
        }
    }

    /// The arenas its requests' tensors are made in, so its kernel processes run them in place.
    pub fn arenas(&self) -> &Arenas {
        &self.arenas
    }

    /// Wakes the idle process the next call will take, if it sleeps; a protocol thread calls this
    /// as a request arrives, so it never waits for the pool's lock.
    pub fn wake(&self) {
        if let Ok(idle) = self.idle.try_lock()
            && let Some(p) = idle.last()
        {
            p.wake();
        }
    }

    /// Why the model cannot be served any more, once its processes kept dying.
    pub fn unavailable(&self) -> Option<String> {
        self.health().unavailable.clone()
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle process, or a new one unless the model is unavailable or waiting out a backoff.
    fn take(&self) -> Result<KernelProcess, String> {
        if let Some(p) = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop() {
            return Ok(p);
        }
        let wait = {
            let h = self.health();
            if let Some(why) = &h.unavailable {
                return Err(format!("the model is unavailable: {why}"));
            }
            h.retry_at.map_or(Duration::ZERO, |at| at.saturating_duration_since(Instant::now()))
        };
        // A restart waits out its backoff on the worker's thread (never a protocol thread), so a
        // request after a crash is served late rather than refused; the wait is at most BACKOFF_MAX.
        std::thread::sleep(wait);
        self.counters.started.fetch_add(1, Ordering::Relaxed);
        KernelProcess::start(&self.launch, &self.arenas, self.timeout).map_err(|f| {
            let m = message(f.clone());
            if matches!(f, Failure::Died(_) | Failure::TimedOut(_)) {
                self.died(&m);
            }
            m
        })
    }

    fn died(&self, why: &str) {
        let mut h = self.health();
        h.deaths_in_row += 1;
        let wait = BACKOFF_FIRST.saturating_mul(1 << (h.deaths_in_row - 1).min(16)).min(BACKOFF_MAX);
        h.retry_at = Some(Instant::now() + wait);
        if h.deaths_in_row >= DEATHS_TO_UNAVAILABLE {
            h.unavailable =
                Some(format!("its kernel process died {} times in a row; the last: {why}", h.deaths_in_row));
        }
    }
}

fn message(f: Failure) -> String {
    match f {
        Failure::Kernel(m) | Failure::Refused(m) | Failure::Died(m) | Failure::TimedOut(m) => m,
    }
}

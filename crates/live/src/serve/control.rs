//! Model control, as Triton does it: the repository index, loading a model (its pool started, its
//! boards shared with the others) and unloading one (its requests in flight finish within the grace
//! period; new ones find no such model), at a client's call (`explicit`) or when a model folder
//! changes (`poll`). A model that fails to load leaves the others serving and says why in the index.
//!
//! The control plane is closed unless asked for: under `none` (the default, as Triton's) a load or
//! unload is refused whoever asks. Under `explicit` or `poll` a call needs the control token when
//! the server has one (the inference token does not grant it), and a server without one must
//! listen on loopback only ([`check_exposure`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::error::ServeError;
use super::server::Server;
use super::{Kernelled, PoolFactory};
use crate::backend::Board;
use crate::backend::bitstream::Target;
use crate::repository::kernel::RepoKernel;
use crate::repository::spec::{self, ModelSpec, valid_model_name};

/// How models change while the server runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelControl {
    /// Not at all: the models loaded at start are served until the server stops; the repository
    /// API's load and unload are refused (its index stays readable).
    None,
    /// Only by the repository API's load and unload.
    Explicit,
    /// Also by polling the repositories at this period: a new or changed folder is (re)loaded, a
    /// removed one unloaded.
    Poll(Duration),
}

impl ModelControl {
    /// Its name, as `--model-control` takes it.
    pub fn name(self) -> &'static str {
        match self {
            ModelControl::None => "none",
            ModelControl::Explicit => "explicit",
            ModelControl::Poll(_) => "poll",
        }
    }

    /// Whether clients may load and unload models.
    pub fn takes_calls(self) -> bool {
        self != ModelControl::None
    }
}

/// Refuses a control plane open to whoever reaches a listener: load and unload taken (`explicit`
/// or `poll`) without a control token, while a listener binds beyond loopback.
pub fn check_exposure(
    control: ModelControl,
    control_token: bool,
    listeners: &[SocketAddr],
) -> Result<(), String> {
    if !control.takes_calls() || control_token {
        return Ok(());
    }
    match listeners.iter().find(|a| !a.ip().is_loopback()) {
        None => Ok(()),
        Some(open) => Err(format!(
            "--model-control {} without --control-token-file on {open}, which is not loopback: anyone who reaches it could load and unload models\n  fix: give --control-token-file FILE (a token of at least 16 characters on its first line), bind --http and --grpc to loopback (127.0.0.1), or keep --model-control none",
            control.name()
        )),
    }
}

/// How a loaded model is measured for its pool.
#[derive(Clone, Debug)]
pub struct Measure {
    /// The board kind whose manifest (or timing) applies.
    pub target: Target,
    /// The clock given on the command line, if any.
    pub clock_mhz: Option<f64>,
    /// The platform profile, if any.
    pub platform: Option<PathBuf>,
    /// Whether the simulated board runs it (its RTL is verilated at load).
    pub sim: bool,
    /// A real board's backend for a model (its image from the flags or its model.toml); `None`:
    /// the server's board serves it.
    pub real_board: Option<RealBoardFor>,
    /// The server's memory budget (bytes): a model whose largest request could not be held within
    /// it is refused at load, before anything of it is built or run.
    pub memory_budget: u64,
}

/// How a model's real-board backend is made from its spec.
pub type MakeBoard = dyn Fn(&ModelSpec) -> Result<Board, String> + Send + Sync;

/// Makes a model's real-board backend from its spec (checked before its pool starts).
#[derive(Clone)]
pub struct RealBoardFor(pub Arc<MakeBoard>);

impl std::fmt::Debug for RealBoardFor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RealBoardFor(..)")
    }
}

impl Measure {
    /// `spec`'s pool settings: its code loaded (its RTL too for the simulated board), measured, and
    /// given its real board when the server runs one.
    pub fn kernelled(&self, spec: ModelSpec) -> Result<Kernelled, String> {
        fits_budget(&spec, self.memory_budget)?;
        let board = self.real_board.as_ref().map(|f| (f.0)(&spec)).transpose()?;
        let kernel = RepoKernel::load(spec, self.sim).map_err(|e| e.to_string())?;
        let mut k =
            Kernelled::measure_repo(Arc::new(kernel), self.target, self.clock_mhz, self.platform.as_deref())
                .map_err(|e| e.to_string())?;
        k.board = board;
        Ok(k)
    }
}

/// Whether `spec`'s largest request (every input and output at its dimensions' maximums) fits in
/// a memory budget of `budget` bytes; the numbers and the fix if not.
pub fn fits_budget(spec: &ModelSpec, budget: u64) -> Result<(), String> {
    let most = spec.max_call_bytes();
    if most.is_some_and(|b| b <= budget) {
        return Ok(());
    }
    let dims: Vec<String> = spec.dims.iter().map(|d| format!("{} <= {}", d.name, d.max)).collect();
    let takes = most.map_or("more than 2^64".to_string(), |b| b.to_string());
    Err(format!(
        "its largest request ({}) takes {takes} bytes of inputs and outputs, past this server's memory \
         budget of {budget} bytes\n  fix: lower the [dims] maximums in its model.toml, or raise memory_budget",
        dims.join(", ")
    ))
}

/// One entry of the repository index.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct IndexEntry {
    /// The model's name.
    pub name: String,
    /// Its version ("1" once loaded).
    pub version: String,
    /// `READY` or `UNAVAILABLE`.
    pub state: &'static str,
    /// Why it is not ready.
    pub reason: String,
}

/// The server's repositories and what it did with their models.
pub struct Control {
    /// Whether clients may load and unload, and how models change otherwise.
    mode: ModelControl,
    /// The bearer token a load or unload needs, if the server has one.
    token: Option<String>,
    repositories: Vec<PathBuf>,
    factory: Arc<PoolFactory>,
    measure: Measure,
    /// Why each model that failed to load (or was unloaded) is not served.
    reasons: Mutex<BTreeMap<String, String>>,
    /// One load or unload at a time, held by the task that does it (not by the client's handler,
    /// which is dropped when the client leaves while the build goes on).
    busy: Arc<tokio::sync::Mutex<()>>,
    /// Each folder's content as last loaded (poll mode).
    seen: Mutex<BTreeMap<String, String>>,
}

impl Control {
    /// Control over the models of `repositories`, new pools made by `factory`; clients' loads and
    /// unloads taken as `mode` says, with `token` if given.
    pub fn new(
        repositories: Vec<PathBuf>,
        factory: Arc<PoolFactory>,
        measure: Measure,
        mode: ModelControl,
        token: Option<String>,
    ) -> Control {
        Control {
            mode,
            token,
            repositories,
            factory,
            measure,
            reasons: Mutex::default(),
            busy: Arc::new(tokio::sync::Mutex::new(())),
            seen: Mutex::default(),
        }
    }

    /// How models change while the server runs.
    pub fn mode(&self) -> ModelControl {
        self.mode
    }

    /// The control token, if the server has one.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Refuses a client's load or unload when model control is `none`.
    pub fn takes_calls(&self) -> Result<(), ServeError> {
        if self.mode.takes_calls() {
            return Ok(());
        }
        Err(ServeError::Forbidden(
            "model control is off on this server (--model-control none, the default): its models are the ones loaded at start; the repository index stays readable\n  fix: start it with --model-control explicit and --control-token-file FILE".into(),
        ))
    }

    /// Records why model `name` is not served (a load that failed at start, say).
    pub fn note(&self, name: &str, reason: String) {
        self.reasons.lock().unwrap_or_else(PoisonError::into_inner).insert(name.into(), reason);
    }

    /// Records the content model `name` was loaded from (so polling reloads it only on a change).
    pub fn loaded_from(&self, name: &str, dir: &Path) {
        let fp = fingerprint(dir);
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).insert(name.into(), fp);
    }

    /// Every model the repositories hold and every model served, with its state.
    pub fn index(&self, server: &Server, ready_only: bool) -> Vec<IndexEntry> {
        // Served models by name, with why one no longer takes requests (its kernel kept dying).
        let served: BTreeMap<String, Option<String>> =
            server.models().iter().map(|m| (m.name().to_string(), m.unavailable())).collect();
        let mut names: BTreeSet<String> = self.folders().into_keys().collect();
        names.extend(served.keys().cloned());
        let reasons = self.reasons.lock().unwrap_or_else(PoisonError::into_inner);
        names
            .into_iter()
            .map(|name| {
                let (ready, reason) = match served.get(&name) {
                    Some(None) => (true, String::new()),
                    Some(Some(why)) => (false, why.clone()),
                    None => (false, reasons.get(&name).cloned().unwrap_or_else(|| "not loaded".into())),
                };
                IndexEntry {
                    version: if ready { super::models::VERSION.into() } else { String::new() },
                    state: if ready { "READY" } else { "UNAVAILABLE" },
                    name,
                    reason,
                }
            })
            .filter(|e| !ready_only || e.state == "READY")
            .collect()
    }

    /// Model folders of the repositories by name (the first repository holding a name wins).
    fn folders(&self) -> BTreeMap<String, PathBuf> {
        let mut found = BTreeMap::new();
        for repo in &self.repositories {
            let Ok(entries) = std::fs::read_dir(repo) else { continue };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if valid_model_name(&name) && e.path().join("model.toml").is_file() {
                    found.entry(name).or_insert_with(|| e.path());
                }
            }
        }
        found
    }

    /// The repository lock for one load or unload; refused while another runs (a client that keeps
    /// asking while a build goes on queues no work).
    fn one_at_a_time(&self) -> Result<tokio::sync::OwnedMutexGuard<()>, ServeError> {
        self.busy.clone().try_lock_owned().map_err(|_| {
            ServeError::Unavailable(
                "another model load or unload is in progress: one runs at a time; retry when it ends".into(),
            )
        })
    }

    /// Loads (or reloads) model `name` from its folder: built, measured, its pool started and
    /// probed, then served; the model it replaces retires. The work runs in a task of its own that
    /// holds the repository lock to its end, whether or not the caller still waits.
    pub async fn load(self: &Arc<Self>, server: &Arc<Server>, name: &str) -> Result<(), ServeError> {
        let held = self.one_at_a_time()?;
        let (this, server, name) = (self.clone(), server.clone(), name.to_string());
        tokio::spawn(async move {
            let result = this.load_held(&server, &name).await;
            drop(held);
            result
        })
        .await
        .map_err(|e| ServeError::Unavailable(format!("the load stopped: {e}")))?
    }

    async fn load_held(&self, server: &Arc<Server>, name: &str) -> Result<(), ServeError> {
        server.may_retire()?;
        let dir = self.folders().remove(name).ok_or_else(|| {
            let shown: String = name.chars().take(80).collect();
            ServeError::BadRequest(match valid_model_name(name) {
                true => format!("failed to load '{shown}': no model folder of that name in the repositories"),
                false => format!(
                    "failed to load '{shown}': not a model name (at most 64 letters, digits, '_', '-' or \
                     '.', not starting with '.')\n  fix: rename the model's folder"
                ),
            })
        })?;
        match self.build(server, &dir).await {
            Ok(()) => {
                self.reasons.lock().unwrap_or_else(PoisonError::into_inner).remove(name);
                self.loaded_from(name, &dir);
                tracing::info!(model = name, "loaded");
                Ok(())
            }
            Err(why) => {
                tracing::warn!(model = name, "failed to load: {why}");
                self.note(name, why.clone());
                self.loaded_from(name, &dir);
                Err(ServeError::BadRequest(format!("failed to load '{name}': {why}")))
            }
        }
    }

    async fn build(&self, server: &Arc<Server>, dir: &Path) -> Result<(), String> {
        let measure = self.measure.clone();
        let dir = dir.to_path_buf();
        let kernelled = tokio::task::spawn_blocking(move || -> Result<Kernelled, String> {
            // A blocking thread starts at the protocol threads' priority: loading (a build, a
            // measurement of the kernel) must not run ahead of the workers.
            let _ = crate::priority::set(crate::priority::Priority::Normal);
            measure.kernelled(spec::load(&dir).map_err(|e| e.to_string())?)
        })
        .await
        .map_err(|e| format!("the loader stopped: {e}"))??;
        let share = self.factory.add_share();
        let pool = self.factory.start(&kernelled, share).map_err(|e| e.to_string())?;
        let probe = super::probe(&kernelled.image);
        if let Err(r) = pool.submit(probe, None, None).await {
            pool.drain();
            let _ = tokio::task::spawn_blocking(move || pool.join()).await;
            self.factory.retire_share(share);
            return Err(format!("its pool did not answer its start-up probe: {r}"));
        }
        if let Some(old) = server.insert(kernelled.model(), pool, share) {
            self.retire(server, old);
        }
        Ok(())
    }

    /// Stops serving model `name`, loaded at start, and records `why` as its reason in the index.
    pub fn leave_out(&self, server: &Server, name: &str, why: String) {
        if let Some(hosted) = server.remove(name) {
            self.retire(server, hosted);
        }
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).remove(name);
        self.note(name, why);
    }

    fn retire(&self, server: &Server, hosted: Arc<super::server::Hosted>) {
        let factory = self.factory.clone();
        server.retire(hosted, self.factory.grace + Duration::from_secs(10), move |share| {
            factory.retire_share(share)
        });
    }

    /// Unloads model `name`: new requests find no such model; those in flight finish within the
    /// grace period.
    pub async fn unload(&self, server: &Arc<Server>, name: &str) -> Result<(), ServeError> {
        let _one = self.one_at_a_time()?;
        server.may_retire()?;
        let hosted = server.remove(name).ok_or_else(|| {
            let shown: String = name.chars().take(80).collect();
            ServeError::BadRequest(format!("failed to unload '{shown}': it is not loaded"))
        })?;
        self.retire(server, hosted);
        self.note(name, "unloaded".into());
        tracing::info!(model = name, "unloaded");
        Ok(())
    }

    /// Polls the repositories every `every`: a new or changed model folder is (re)loaded, a
    /// repository model whose folder is gone is unloaded. Runs until the server drains.
    pub async fn poll(self: Arc<Self>, server: Arc<Server>, every: Duration) {
        loop {
            tokio::time::sleep(every).await;
            if server.is_draining() {
                return;
            }
            let folders = self.folders();
            for (name, dir) in &folders {
                let fp = fingerprint(dir);
                let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner).get(name).cloned();
                if seen.as_deref() != Some(fp.as_str()) {
                    let _ = self.load(&server, name).await;
                }
            }
            let gone: Vec<String> = server
                .models()
                .iter()
                .filter(|m| !folders.contains_key(m.name()))
                .map(|m| m.name().to_string())
                .collect();
            for name in gone {
                let _ = self.unload(&server, &name).await;
                self.seen.lock().unwrap_or_else(PoisonError::into_inner).remove(&name);
            }
        }
    }
}

/// A model folder's content as the poller compares it: every file's path, size and modification
/// time (build folders `target/` and `.git/` skipped; at most 10,000 files).
fn fingerprint(dir: &Path) -> String {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let name = e.file_name();
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                if name != "target" && name != ".git" {
                    stack.push(e.path());
                }
            } else if files.len() < 10_000 {
                let modified =
                    meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                files.push((e.path(), meta.len(), modified.map_or(0, |t| t.as_nanos())));
            }
        }
    }
    files.sort();
    let mut h = Sha256::new();
    for (p, len, t) in files {
        h.update(p.to_string_lossy().as_bytes());
        h.update(len.to_le_bytes());
        h.update(t.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_plane_without_a_token_is_refused_beyond_loopback() {
        let local: SocketAddr = "127.0.0.1:8000".parse().expect("addr");
        let local6: SocketAddr = "[::1]:8001".parse().expect("addr");
        let any: SocketAddr = "0.0.0.0:8001".parse().expect("addr");
        let poll = ModelControl::Poll(Duration::from_secs(5));
        for mode in [ModelControl::Explicit, poll] {
            assert_eq!(check_exposure(mode, false, &[local, local6]), Ok(()), "loopback only");
            assert_eq!(check_exposure(mode, true, &[local, any]), Ok(()), "with a control token");
            let e = check_exposure(mode, false, &[local, any]).expect_err("open to the network");
            assert!(
                e.contains(&format!(
                    "--model-control {} without --control-token-file on 0.0.0.0:8001",
                    mode.name()
                )),
                "{e}"
            );
            assert!(e.contains("fix: give --control-token-file FILE"), "{e}");
        }
        assert_eq!(check_exposure(ModelControl::None, false, &[any]), Ok(()), "nothing to open");
    }
}

//! Results of individual runs, one JSON line each, appended as runs finish so an interrupted sweep
//! resumes where it stopped.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One finished run: where it sits in the experiment and what it measured.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Row {
    /// Experiment id (fig2, table9, ...).
    pub experiment: String,
    /// Sweep parameters of its point, e.g. burstiness = 0.6.
    pub params: BTreeMap<String, f64>,
    /// Index of the trace (synthetic seed offset or production application).
    pub trace: u32,
    /// Line of the figure: a scheduler, dispatcher or platform/objective.
    pub series: String,
    /// Measured figures.
    pub metrics: BTreeMap<String, f64>,
}

impl Row {
    /// Identity of the run, for resuming.
    pub fn key(&self) -> String {
        run_key(&self.params, self.trace, &self.series)
    }

    /// A metric, NaN when absent.
    pub fn metric(&self, name: &str) -> f64 {
        self.metrics.get(name).copied().unwrap_or(f64::NAN)
    }
}

/// Identity of a run from its coordinates.
pub fn run_key(params: &BTreeMap<String, f64>, trace: u32, series: &str) -> String {
    let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{}|{trace}|{series}", p.join(","))
}

/// An append-only JSON-lines file of rows.
pub struct Store {
    path: PathBuf,
    file: Mutex<File>,
}

/// A store that could not be opened or written.
#[derive(Debug, thiserror::Error)]
#[error("results file {path}: {source}")]
pub struct StoreError {
    path: PathBuf,
    source: std::io::Error,
}

impl Store {
    /// Opens (creating) `path`; returns the store and the rows already in it. Lines that do not parse
    /// (a run cut off mid-write) are dropped and rewritten away.
    pub fn open(path: &Path) -> Result<(Store, Vec<Row>), StoreError> {
        let err = |source| StoreError { path: path.to_path_buf(), source };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let mut rows = Vec::new();
        let mut dropped = 0usize;
        if path.exists() {
            let f = File::open(path).map_err(err)?;
            for line in BufReader::new(f).lines() {
                let line = line.map_err(err)?;
                match serde_json::from_str::<Row>(&line) {
                    Ok(r) => rows.push(r),
                    Err(_) if line.trim().is_empty() => {}
                    Err(_) => dropped += 1,
                }
            }
        }
        if dropped > 0 {
            let mut text = String::new();
            for r in &rows {
                text.push_str(&serde_json::to_string(r).unwrap_or_default());
                text.push('\n');
            }
            std::fs::write(path, text).map_err(err)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path).map_err(err)?;
        Ok((Store { path: path.to_path_buf(), file: Mutex::new(file) }, rows))
    }

    /// Keys of `rows`.
    pub fn keys(rows: &[Row]) -> HashSet<String> {
        rows.iter().map(Row::key).collect()
    }

    /// Appends one row and flushes it. Non-finite metrics are left out (JSON has no NaN).
    pub fn append(&self, row: &Row) -> Result<(), StoreError> {
        let mut row = row.clone();
        row.metrics.retain(|_, v| v.is_finite());
        let line = serde_json::to_string(&row)
            .map_err(|e| StoreError { path: self.path.clone(), source: e.into() })?;
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        writeln!(f, "{line}")
            .and_then(|_| f.flush())
            .map_err(|source| StoreError { path: self.path.clone(), source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resumes_and_drops_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x/runs.jsonl");
        let row = Row {
            experiment: "e".into(),
            params: [("b".to_string(), 0.6)].into(),
            trace: 1,
            series: "SporkE".into(),
            metrics: [("energy_efficiency".to_string(), 0.8)].into(),
        };
        {
            let (s, rows) = Store::open(&p).unwrap();
            assert!(rows.is_empty());
            s.append(&row).unwrap();
        }
        // A run killed mid-line.
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        write!(f, "{{\"experiment\":\"e\",\"par").unwrap();
        drop(f);
        let (s, rows) = Store::open(&p).unwrap();
        assert_eq!(rows, vec![row.clone()]);
        assert!(Store::keys(&rows).contains(&row.key()));
        s.append(&row).unwrap();
        let (_, rows) = Store::open(&p).unwrap();
        assert_eq!(rows.len(), 2);
    }
}

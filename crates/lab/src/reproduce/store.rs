//! Results of individual runs, one JSON line each, appended as runs finish so an interrupted sweep
//! resumes where it stopped.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
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

/// A row as stored: its key and a checksum of the row, so that a duplicated, edited or corrupt line
/// is found on resume instead of being trusted.
#[derive(Serialize, Deserialize)]
struct Stored {
    key: String,
    sum: String,
    #[serde(flatten)]
    row: Row,
}

/// Checksum of a row: the first 64 bits of the SHA-256 of its JSON (maps are ordered, so the JSON
/// of a row is always the same).
fn checksum(row: &Row) -> String {
    let json = serde_json::to_string(row).unwrap_or_default();
    use sha2::{Digest, Sha256};
    Sha256::digest(json.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// A stored line that was not taken: its run is done again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// The results file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// Why.
    pub why: String,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}; the run is done again", self.path.display(), self.line, self.why)
    }
}

/// What a results file held.
pub struct Opened {
    /// The store, for appending.
    pub store: Store,
    /// Its valid rows, each key once.
    pub rows: Vec<Row>,
    /// Lines not taken (a run cut off mid-write, an edit, a duplicate, bytes that are not UTF-8).
    pub rejected: Vec<Rejected>,
}

/// Checks one stored line; `seen` maps keys to the line that first held them.
fn check(line: &[u8], seen: &HashMap<String, usize>) -> Result<Row, String> {
    let text = std::str::from_utf8(line).map_err(|_| "not UTF-8 text".to_string())?;
    let s: Stored = serde_json::from_str(text).map_err(|e| format!("not a stored run ({e})"))?;
    if s.key != s.row.key() {
        return Err(format!("its key '{}' does not match its row", s.key));
    }
    if s.sum != checksum(&s.row) {
        return Err("its checksum does not match: the line was edited or is corrupt".into());
    }
    if let Some(first) = seen.get(&s.key) {
        return Err(format!("a duplicate of line {first}"));
    }
    Ok(s.row)
}

impl Store {
    /// Opens (creating) `path`; returns the store, the valid rows already in it, and the lines it did
    /// not take, which are rewritten away (their runs are done again).
    pub fn open(path: &Path) -> Result<Opened, StoreError> {
        let err = |source| StoreError { path: path.to_path_buf(), source };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let bytes = if path.exists() { std::fs::read(path).map_err(err)? } else { Vec::new() };
        let (mut rows, mut rejected, mut seen) = (Vec::new(), Vec::new(), HashMap::new());
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match check(line, &seen) {
                Ok(row) => {
                    seen.insert(row.key(), i + 1);
                    rows.push(row);
                }
                Err(why) => rejected.push(Rejected { path: path.to_path_buf(), line: i + 1, why }),
            }
        }
        if !rejected.is_empty() {
            let text: String = rows.iter().map(|r| format!("{}\n", line(r))).collect();
            std::fs::write(path, text).map_err(err)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path).map_err(err)?;
        Ok(Opened { store: Store { path: path.to_path_buf(), file: Mutex::new(file) }, rows, rejected })
    }

    /// Keys of `rows`.
    pub fn keys(rows: &[Row]) -> HashSet<String> {
        rows.iter().map(Row::key).collect()
    }

    /// Appends one row and flushes it. Non-finite metrics are left out (JSON has no NaN).
    pub fn append(&self, row: &Row) -> Result<(), StoreError> {
        let mut row = row.clone();
        row.metrics.retain(|_, v| v.is_finite());
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        writeln!(f, "{}", line(&row))
            .and_then(|_| f.flush())
            .map_err(|source| StoreError { path: self.path.clone(), source })
    }
}

/// A row's stored line.
fn line(row: &Row) -> String {
    let stored = Stored { key: row.key(), sum: checksum(row), row: row.clone() };
    serde_json::to_string(&stored).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(trace: u32, efficiency: f64) -> Row {
        Row {
            experiment: "e".into(),
            params: [("b".to_string(), 0.6)].into(),
            trace,
            series: "SporkE".into(),
            metrics: [("energy_efficiency".to_string(), efficiency)].into(),
        }
    }

    fn append_raw(p: &Path, bytes: &[u8]) {
        let mut f = OpenOptions::new().append(true).open(p).unwrap();
        f.write_all(bytes).unwrap();
    }

    #[test]
    fn resumes_and_drops_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x/runs.jsonl");
        // A value whose shortest decimal form only reads back exactly with float_roundtrip parsing.
        let r = row(1, std::f64::consts::PI * 1e-7 + 0.1 + 0.2);
        {
            let o = Store::open(&p).unwrap();
            assert!(o.rows.is_empty());
            o.store.append(&r).unwrap();
        }
        append_raw(&p, b"{\"experiment\":\"e\",\"par"); // a run killed mid-line
        let o = Store::open(&p).unwrap();
        assert_eq!(o.rows, vec![r.clone()]);
        assert_eq!(o.rejected.len(), 1);
        assert_eq!(o.rejected[0].line, 2);
        assert!(Store::keys(&o.rows).contains(&r.key()));
        o.store.append(&row(2, 0.7)).unwrap();
        let o = Store::open(&p).unwrap();
        assert_eq!((o.rows.len(), o.rejected.len()), (2, 0), "the torn line was rewritten away");
    }

    #[test]
    fn duplicates_edits_and_bad_bytes_are_rejected_with_their_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("runs.jsonl");
        let (a, b) = (row(1, 0.9), row(2, 0.8));
        let o = Store::open(&p).unwrap();
        o.store.append(&a).unwrap();
        o.store.append(&b).unwrap();
        drop(o);
        let text = std::fs::read_to_string(&p).unwrap();
        let first = text.lines().next().unwrap().to_string();
        // Line 3 duplicates line 1; line 4 is line 2 with its value edited; line 5 is not UTF-8.
        let edited = text.lines().nth(1).unwrap().replace("0.8", "500000000.0");
        append_raw(&p, format!("{first}\n{edited}\n").as_bytes());
        append_raw(&p, b"\xff\xfe\n");
        let o = Store::open(&p).unwrap();
        assert_eq!(o.rows, vec![a, b]);
        let lines: Vec<(usize, &str)> = o.rejected.iter().map(|r| (r.line, r.why.as_str())).collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].0 == 3 && lines[0].1.contains("duplicate of line 1"), "{lines:?}");
        assert!(lines[1].0 == 4 && lines[1].1.contains("checksum"), "{lines:?}");
        assert!(lines[2].0 == 5 && lines[2].1.contains("UTF-8"), "{lines:?}");
    }
}

//! Readers for the production traces the paper evaluates, and its application selection.
//!
//! - **Azure Functions 2019** (Shahrad et al., ATC'20), from
//!   <https://github.com/Azure/AzurePublicDataset/blob/master/AzureFunctionsDataset2019.md>:
//!   `invocations_per_function_md.anon.dNN.csv` (`HashOwner,HashApp,HashFunction,Trigger,1..1440`:
//!   invocations per minute of one day) and `function_durations_percentiles.anon.dNN.csv`
//!   (`HashOwner,HashApp,HashFunction,Average,Count,Minimum,Maximum,percentile_Average_0,...`, in ms).
//!   An application is a function; its size is its average duration.
//! - **Alibaba microservices 2021** (Luo et al., SoCC'21), from
//!   <https://github.com/alibaba/clusterdata/tree/master/cluster-trace-microservices-v2021>:
//!   `MSRTQps_*.csv` (`timestamp,msname,msinstanceid,metric,value`, one row per container, metric and
//!   minute). An application is a microservice; its per-minute rate is the sum over its containers of
//!   `providerRPC_MCR` (calls per second) and its size the call-weighted mean `providerRPC_RT` (ms).
//!
//! Selection (section 5.1): applications whose load needs more than one CPU worker in some minute
//! (rate x size > 1), whose size falls in the requested bucket, replayed as two-hour traces of
//! time-varying Poisson arrivals from their per-minute rates.

use super::rates::RateTrace;
use super::size::SizeSpec;
use crate::input::{Bounded, InputError, Location};
use crate::model::time::{from_secs, to_secs};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The largest production CSV file read: 8 GiB. These files are far beyond the 16 MiB of
/// [`crate::input::MAX_TEXT_BYTES`]: Alibaba's `MSRTQps` folder is 19 GiB over 25 files (its README),
/// about 0.8 GiB a file as downloaded, by our estimate 2-3 GiB once extracted; an Azure invocation day
/// is 1,440 counts for each of some tens of thousands of functions, of the order of 100 MB. The readers
/// stream the rows (memory follows the rows kept, see [`MAX_RATE_CELLS`], not the bytes read), so the
/// bound is there to stop, within about a minute of reading, a file that is not one of these (a disk
/// image, a file still growing), with a few times the largest real file to spare.
pub const MAX_DATASET_FILE_BYTES: u64 = 8 << 30;

/// The longest line of a production CSV file: 1 MiB. An Azure row is three 64-character hashes, a
/// trigger and 1,440 counts (under 16 KB); an Alibaba row is under 300 bytes. The CSV parser holds one
/// row in memory: this keeps a file with no line breaks (a copy of `/dev/zero`) from growing it.
pub const MAX_DATASET_LINE_BYTES: u64 = 1 << 20;

/// The highest request rate one application (an Azure function in one minute) or one Alibaba container
/// may have: 10 million a second, the traffic of a whole large service rather than of one function or
/// container. A value above is corruption: replayed, it would ask for billions of requests a window.
pub const MAX_RATE_PER_S: f64 = 1e7;

/// The longest mean request size (an Azure function's average duration, an Alibaba response time): 14
/// days in milliseconds, the length of the longest trace. Selection replays only sizes from 10 ms to
/// 1 s; this bound refuses what cannot be a duration at all.
pub const MAX_SIZE_MS: f64 = 14.0 * 24.0 * 3600.0 * 1e3;

/// The most per-minute rates a reader holds (2^28, 2 GiB of them): applications times minutes. A full
/// Azure day is some tens of thousands of functions times 1,440 minutes, Alibaba's 12 hours some
/// thousands of microservices times 720; a file beyond is not one of these (say, one wild timestamp
/// stretching every microservice to 14 days).
pub const MAX_RATE_CELLS: u64 = 1 << 28;

/// An Azure invocation count's bound: [`MAX_RATE_PER_S`] for a minute.
const MAX_COUNT_PER_MINUTE: f64 = MAX_RATE_PER_S * 60.0;

/// One application of a production trace: a size and per-minute rates over the whole trace.
#[derive(Clone, Debug, PartialEq)]
pub struct App {
    /// Identifier (hashes joined by '/').
    pub name: String,
    /// Mean request size in seconds.
    pub size_s: f64,
    /// Requests per second in each minute.
    pub minute_rates: Vec<f64>,
}

impl App {
    /// Peak number of CPU workers its load needs in any minute.
    pub fn peak_workers(&self) -> f64 {
        self.minute_rates.iter().fold(0.0, |m, r| f64::max(m, r * self.size_s))
    }

    /// A rate trace of `minutes` minutes starting at minute `start`, arrivals seeded with `seed`.
    pub fn trace(&self, start: usize, minutes: usize, seed: u64) -> Option<RateTrace> {
        let rates: Vec<f64> = self.minute_rates.iter().skip(start).take(minutes).copied().collect();
        if rates.is_empty() || rates.iter().all(|&r| r == 0.0) {
            return None;
        }
        Some(RateTrace {
            duration: from_secs(rates.len() as f64 * 60.0),
            minute_rates: rates,
            size: from_secs((self.size_s * 1e6).round() / 1e6),
            optional: 0,
            size_cv: 0.0,
            seed,
        })
    }
}

/// The paper's selection: heavy-demand applications (peak load above one CPU worker within the
/// window) whose size lies in `bucket`, as rate traces of the window.
pub fn select(
    apps: &[App],
    bucket: SizeSpec,
    start: usize,
    minutes: usize,
    seed: u64,
) -> Vec<(String, RateTrace)> {
    let (lo, hi) = bucket.bounds_secs();
    apps.iter()
        .filter(|a| a.size_s >= lo && a.size_s < hi)
        .filter_map(|a| {
            let t = a.trace(start, minutes, seed)?;
            let window = App { minute_rates: t.minute_rates.clone(), ..a.clone() };
            (window.peak_workers() > 1.0).then(|| (a.name.clone(), t))
        })
        .collect()
}

fn missing_dataset(dir: &Path, what: &str, url: &str) -> InputError {
    InputError::invalid(
        Location { path: dir.to_path_buf(), line: 0, column: 0 },
        "dataset",
        format!("no {what} files in this folder"),
        format!("download the dataset from {url} and pass the folder holding the extracted CSV files"),
    )
}

fn csv_error(path: &Path, e: &csv::Error) -> InputError {
    if let csv::ErrorKind::Io(io) = e.kind()
        && let Some(overrun) = InputError::overrun(path, io)
    {
        return overrun;
    }
    let line = e.position().map_or(0, |p| p.line() as usize);
    InputError::invalid(
        Location { path: path.to_path_buf(), line, column: 1 },
        "csv",
        e.to_string(),
        "the file is truncated or not CSV: download it again",
    )
}

fn field_error(
    path: &Path,
    line: u64,
    column: usize,
    field: &str,
    value: &str,
    expected: &str,
) -> InputError {
    InputError::invalid(
        Location { path: path.to_path_buf(), line: line as usize, column },
        field.to_string(),
        format!("'{}' is not {expected}", crate::input::excerpt(value)),
        "the file is corrupt or not from this dataset: download it again",
    )
}

fn files(dir: &Path, prefix: &str) -> Result<Vec<PathBuf>, InputError> {
    let rd = std::fs::read_dir(dir).map_err(|source| InputError::Io {
        action: "read",
        path: dir.to_path_buf(),
        source,
    })?;
    let mut v: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".csv"))
        })
        .collect();
    v.sort();
    Ok(v)
}

/// A CSV reader of `path`, opened as every input file is ([`crate::input::open`]: a regular file, read
/// through a bound of [`MAX_DATASET_FILE_BYTES`]) and with lines of at most [`MAX_DATASET_LINE_BYTES`].
fn reader(path: &Path) -> Result<csv::Reader<Bounded<File>>, InputError> {
    let file = crate::input::open(path, MAX_DATASET_FILE_BYTES)?.max_line(MAX_DATASET_LINE_BYTES);
    Ok(csv::ReaderBuilder::new().has_headers(true).from_reader(file))
}

/// Applications times minutes beyond [`MAX_RATE_CELLS`], found at `location`.
fn too_many_rates(location: Location, field: &str, apps: u64, minutes: u64, fix: &str) -> InputError {
    let problem = format!(
        "{apps} applications x {minutes} minutes is more than the {MAX_RATE_CELLS} per-minute rates a dataset \
         may hold"
    );
    InputError::invalid(location, field, problem, fix)
}

fn header_index(path: &Path, headers: &csv::StringRecord, name: &str) -> Result<usize, InputError> {
    headers.iter().position(|h| h.trim() == name).ok_or_else(|| {
        InputError::invalid(
            Location { path: path.to_path_buf(), line: 1, column: 1 },
            name.to_string(),
            format!("the header has no '{name}' column"),
            "the file is not from this dataset or its header is damaged",
        )
    })
}

/// Azure's download page.
pub const AZURE_URL: &str =
    "https://github.com/Azure/AzurePublicDataset/blob/master/AzureFunctionsDataset2019.md";
/// Alibaba's download page.
pub const ALIBABA_URL: &str =
    "https://github.com/alibaba/clusterdata/tree/master/cluster-trace-microservices-v2021";

/// Reads day `day` (1-14) of the Azure Functions 2019 trace from `dir`; `None` takes the first day
/// present.
pub fn read_azure(dir: &Path, day: Option<u32>) -> Result<Vec<App>, InputError> {
    let inv_files = files(dir, "invocations_per_function_md.anon.d")?;
    let day_of = |p: &Path| -> Option<String> {
        let n = p.file_name()?.to_str()?;
        Some(n.rsplit_once(".d")?.1.trim_end_matches(".csv").to_string())
    };
    let inv = match day {
        Some(d) => {
            inv_files.into_iter().find(|p| day_of(p).is_some_and(|x| x.parse::<u32>().ok() == Some(d)))
        }
        None => inv_files.into_iter().next(),
    }
    .ok_or_else(|| missing_dataset(dir, "invocations_per_function_md.anon.dNN.csv", AZURE_URL))?;
    let dd = day_of(&inv).unwrap_or_default();
    let dur = dir.join(format!("function_durations_percentiles.anon.d{dd}.csv"));
    if !dur.exists() {
        return Err(missing_dataset(
            dir,
            &format!("function_durations_percentiles.anon.d{dd}.csv"),
            AZURE_URL,
        ));
    }
    // Durations: function -> average ms.
    let mut sizes: HashMap<String, f64> = HashMap::new();
    let mut rd = reader(&dur)?;
    let h = rd.headers().map_err(|e| csv_error(&dur, &e))?.clone();
    let (io, ia, ifn, iavg) = (
        header_index(&dur, &h, "HashOwner")?,
        header_index(&dur, &h, "HashApp")?,
        header_index(&dur, &h, "HashFunction")?,
        header_index(&dur, &h, "Average")?,
    );
    for rec in rd.records() {
        let rec = rec.map_err(|e| csv_error(&dur, &e))?;
        let line = rec.position().map_or(0, |p| p.line());
        let avg = rec.get(iavg).unwrap_or("");
        let ms: f64 =
            avg.trim().parse().ok().filter(|v: &f64| (0.0..=MAX_SIZE_MS).contains(v)).ok_or_else(|| {
                field_error(&dur, line, iavg + 1, "Average", avg, "a duration in ms, from 0 to 14 days")
            })?;
        let key = format!(
            "{}/{}/{}",
            rec.get(io).unwrap_or(""),
            rec.get(ia).unwrap_or(""),
            rec.get(ifn).unwrap_or("")
        );
        sizes.insert(key, ms / 1e3);
    }
    // Invocations: per-minute counts.
    let mut rd = reader(&inv)?;
    let h = rd.headers().map_err(|e| csv_error(&inv, &e))?.clone();
    let (io, ia, ifn) = (
        header_index(&inv, &h, "HashOwner")?,
        header_index(&inv, &h, "HashApp")?,
        header_index(&inv, &h, "HashFunction")?,
    );
    let first_minute = header_index(&inv, &h, "1")?;
    let minutes = h.len() - first_minute;
    let mut apps = Vec::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| csv_error(&inv, &e))?;
        let line = rec.position().map_or(0, |p| p.line());
        if rec.len() != h.len() {
            return Err(field_error(
                &inv,
                line,
                rec.len() + 1,
                "minutes",
                &rec.len().to_string(),
                &format!("{} fields", h.len()),
            ));
        }
        let key = format!(
            "{}/{}/{}",
            rec.get(io).unwrap_or(""),
            rec.get(ia).unwrap_or(""),
            rec.get(ifn).unwrap_or("")
        );
        let mut rates = Vec::with_capacity(minutes);
        for c in first_minute..h.len() {
            let v = rec.get(c).unwrap_or("");
            let n = v.trim().parse::<f64>().ok().filter(|x| (0.0..=MAX_COUNT_PER_MINUTE).contains(x));
            let Some(n) = n else {
                let field = format!("minute {}", c - first_minute + 1);
                let expected = format!("an invocation count from 0 to {MAX_COUNT_PER_MINUTE:e} a minute");
                return Err(field_error(&inv, line, c + 1, &field, v, &expected));
            };
            rates.push(n / 60.0);
        }
        if let Some(&size_s) = sizes.get(&key)
            && size_s > 0.0
        {
            let kept = apps.len() as u64 + 1;
            if kept.saturating_mul(minutes as u64) > MAX_RATE_CELLS {
                let fix = "a day of the Azure trace is some tens of thousands of functions: check that this \
                           is the file you meant, or download it again";
                let location = Location { path: inv.clone(), line: line as usize, column: 1 };
                return Err(too_many_rates(location, "rows", kept, minutes as u64, fix));
            }
            apps.push(App { name: key, size_s, minute_rates: rates });
        }
    }
    Ok(apps)
}

/// The latest minute a production trace may reach: 14 days (the Azure trace's length; Alibaba's is
/// 12 hours). Rates are kept per minute, so a wild timestamp must not size that list.
const MAX_MINUTES: u64 = 14 * 24 * 60;

/// Reads every `MSRTQps_*.csv` in `dir` (Alibaba microservices 2021).
pub fn read_alibaba(dir: &Path) -> Result<Vec<App>, InputError> {
    let paths = files(dir, "MSRTQps_")?;
    if paths.is_empty() {
        return Err(missing_dataset(dir, "MSRTQps_*.csv", ALIBABA_URL));
    }
    // msname -> minute -> (calls per second summed over containers, rt x calls)
    let mut per_app: HashMap<String, BTreeMap<u64, (f64, f64)>> = HashMap::new();
    // The latest minute of a call rate, and where: the length of every microservice's rates.
    let mut latest: Option<(u64, &Path, u64, usize)> = None;
    for path in &paths {
        let mut rd = reader(path)?;
        let h = rd.headers().map_err(|e| csv_error(path, &e))?.clone();
        let its = header_index(path, &h, "timestamp")?;
        let ims = header_index(path, &h, "msname")?;
        let imetric = header_index(path, &h, "metric").or_else(|_| header_index(path, &h, "metrics"))?;
        let ival = header_index(path, &h, "value")?;
        // MCR and RT arrive in separate rows of the same container and minute: pair them.
        let mut rt: HashMap<(String, String, u64), f64> = HashMap::new();
        let mut mcr: Vec<(String, String, u64, f64)> = Vec::new();
        let iinst = header_index(path, &h, "msinstanceid")?;
        for rec in rd.records() {
            let rec = rec.map_err(|e| csv_error(path, &e))?;
            let line = rec.position().map_or(0, |p| p.line());
            let metric = rec.get(imetric).unwrap_or("");
            if metric != "providerRPC_MCR" && metric != "providerRPC_RT" {
                continue;
            }
            let ts_s = rec.get(its).unwrap_or("");
            let ts: u64 =
                ts_s.trim().parse().ok().filter(|&ts| ts / 60_000 <= MAX_MINUTES).ok_or_else(|| {
                    field_error(
                        path,
                        line,
                        its + 1,
                        "timestamp",
                        ts_s,
                        "milliseconds from the trace's start, within 14 days",
                    )
                })?;
            // A negative value counts as 0, as it always has; beyond its bound it is corruption.
            let is_rate = metric == "providerRPC_MCR";
            let max = if is_rate { MAX_RATE_PER_S } else { MAX_SIZE_MS };
            let v_s = rec.get(ival).unwrap_or("");
            let v = v_s.trim().parse::<f64>().ok().filter(|x| x.is_finite() && *x <= max);
            let Some(v) = v else {
                let expected = if is_rate {
                    format!("a number of calls a second, at most {MAX_RATE_PER_S:e}")
                } else {
                    format!("a response time in ms, at most {MAX_SIZE_MS:e} (14 days)")
                };
                return Err(field_error(path, line, ival + 1, "value", v_s, &expected));
            };
            let key = (
                rec.get(ims).unwrap_or("").to_string(),
                rec.get(iinst).unwrap_or("").to_string(),
                ts / 60_000,
            );
            if is_rate {
                if latest.is_none_or(|(m, ..)| key.2 > m) {
                    latest = Some((key.2, path.as_path(), line, its + 1));
                }
                mcr.push((key.0, key.1, key.2, v.max(0.0)));
            } else {
                rt.insert(key, v.max(0.0));
            }
        }
        for (ms, inst, minute, calls) in mcr {
            let r = rt.get(&(ms.clone(), inst, minute)).copied().unwrap_or(0.0);
            let e = per_app.entry(ms).or_default().entry(minute).or_default();
            e.0 += calls;
            e.1 += calls * r;
        }
    }
    let last_minute = per_app.values().filter_map(|m| m.keys().next_back()).max().copied().unwrap_or(0);
    if let Some((_, path, line, column)) = latest {
        let (apps, minutes) = (per_app.len() as u64, last_minute + 1);
        if apps.saturating_mul(minutes) > MAX_RATE_CELLS {
            let fix = "the trace spans 12 hours (timestamps up to 43200000 ms): a row far later is \
                       corrupt; remove it or download the file again";
            let location = Location { path: path.to_path_buf(), line: line as usize, column };
            return Err(too_many_rates(location, "timestamp", apps, minutes, fix));
        }
    }
    let mut apps: Vec<App> = per_app
        .into_iter()
        .filter_map(|(name, minutes)| {
            let calls: f64 = minutes.values().map(|v| v.0).sum();
            let rt_ms: f64 = minutes.values().map(|v| v.1).sum::<f64>() / calls.max(f64::MIN_POSITIVE);
            let mut rates = vec![0.0; last_minute as usize + 1];
            for (m, (c, _)) in minutes {
                rates[m as usize] = c;
            }
            (calls > 0.0 && rt_ms > 0.0).then_some(App { name, size_s: rt_ms / 1e3, minute_rates: rates })
        })
        .collect();
    apps.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(apps)
}

/// Writes Azure-format files for `apps` (one day, `dd`) into `dir`: what the tests read back, and a
/// way to hand Spork hand-made applications in the real format.
pub fn write_azure(dir: &Path, dd: u32, apps: &[App]) -> Result<(), InputError> {
    let minutes = apps.iter().map(|a| a.minute_rates.len()).max().unwrap_or(0);
    let mut inv = String::from("HashOwner,HashApp,HashFunction,Trigger");
    for m in 1..=minutes {
        inv.push_str(&format!(",{m}"));
    }
    inv.push('\n');
    let mut dur = String::from(
        "HashOwner,HashApp,HashFunction,Average,Count,Minimum,Maximum,percentile_Average_0,percentile_Average_1,\
         percentile_Average_25,percentile_Average_50,percentile_Average_75,percentile_Average_99,percentile_Average_100\n",
    );
    for a in apps {
        let parts: Vec<&str> = a.name.splitn(3, '/').collect();
        let (o, ap, f) =
            (parts.first().unwrap_or(&"o"), parts.get(1).unwrap_or(&"a"), parts.get(2).unwrap_or(&"f"));
        inv.push_str(&format!("{o},{ap},{f},http"));
        let mut count = 0.0;
        for m in 0..minutes {
            let n = (a.minute_rates.get(m).copied().unwrap_or(0.0) * 60.0).round();
            count += n;
            inv.push_str(&format!(",{n}"));
        }
        inv.push('\n');
        let ms = a.size_s * 1e3;
        dur.push_str(&format!("{o},{ap},{f},{ms},{count},{ms},{ms},{ms},{ms},{ms},{ms},{ms},{ms},{ms}\n"));
    }
    InputError::write(&dir.join(format!("invocations_per_function_md.anon.d{dd:02}.csv")), &inv)?;
    InputError::write(&dir.join(format!("function_durations_percentiles.anon.d{dd:02}.csv")), &dur)
}

/// Writes an Alibaba-format `MSRTQps_0.csv` for `apps` into `dir`, spreading each application over
/// `containers` containers.
pub fn write_alibaba(dir: &Path, apps: &[App], containers: usize) -> Result<(), InputError> {
    let mut out = String::from("timestamp,msname,msinstanceid,metric,value\n");
    for a in apps {
        for (m, r) in a.minute_rates.iter().enumerate() {
            for c in 0..containers.max(1) {
                let ts = m as u64 * 60_000;
                let share = r / containers.max(1) as f64;
                out.push_str(&format!("{ts},{},{}-{c},providerRPC_MCR,{share}\n", a.name, a.name));
                out.push_str(&format!("{ts},{},{}-{c},providerRPC_RT,{}\n", a.name, a.name, a.size_s * 1e3));
                out.push_str(&format!("{ts},{},{}-{c},consumerRPC_MCR,{}\n", a.name, a.name, share * 2.0));
            }
        }
    }
    InputError::write(&dir.join("MSRTQps_0.csv"), &out)
}

/// Total CPU-seconds of work an application's window carries (for weighting and reports).
pub fn window_work_s(t: &RateTrace) -> f64 {
    t.expected_requests() * to_secs(t.size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apps() -> Vec<App> {
        vec![
            App { name: "o1/a1/f1".into(), size_s: 0.05, minute_rates: vec![100.0, 200.0, 0.0, 50.0] },
            App { name: "o2/a2/f2".into(), size_s: 0.5, minute_rates: vec![1.0, 1.0, 1.0, 1.0] },
            App { name: "o3/a3/f3".into(), size_s: 0.02, minute_rates: vec![0.5, 0.5, 0.5, 0.5] },
        ]
    }

    #[test]
    fn azure_round_trip_and_selection() {
        let dir = tempfile::tempdir().unwrap();
        write_azure(dir.path(), 3, &apps()).unwrap();
        let back = read_azure(dir.path(), None).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back[0].name, "o1/a1/f1");
        assert!((back[0].size_s - 0.05).abs() < 1e-12);
        assert!((back[0].minute_rates[1] - 200.0).abs() < 1e-9);
        // Short bucket: f1 (peak 10 workers) qualifies; f3 (0.01 workers) is not heavy.
        let sel = select(&back, SizeSpec::Short, 0, 120, 1);
        assert_eq!(sel.iter().map(|s| s.0.as_str()).collect::<Vec<_>>(), ["o1/a1/f1"]);
        assert_eq!(sel[0].1.minute_rates.len(), 4);
        // Medium: f2 needs 0.5 workers: not heavy.
        assert!(select(&back, SizeSpec::Medium, 0, 120, 1).is_empty());
        assert!(read_azure(dir.path(), Some(4)).is_err());
    }

    #[test]
    fn alibaba_round_trip_aggregates_containers() {
        let dir = tempfile::tempdir().unwrap();
        write_alibaba(dir.path(), &apps(), 3).unwrap();
        let back = read_alibaba(dir.path()).unwrap();
        assert_eq!(back.len(), 3);
        let a = back.iter().find(|a| a.name == "o1/a1/f1").unwrap();
        assert!((a.minute_rates[1] - 200.0).abs() < 1e-9, "{:?}", a.minute_rates);
        assert!((a.size_s - 0.05).abs() < 1e-12);
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_azure(dir.path(), None).unwrap_err().to_string();
        assert!(e.contains("download") && e.contains("AzurePublicDataset"), "{e}");
        write_azure(dir.path(), 1, &apps()).unwrap();
        let inv = dir.path().join("invocations_per_function_md.anon.d01.csv");
        let text = std::fs::read_to_string(&inv).unwrap().replace(",12000,", ",12x00,");
        std::fs::write(&inv, text).unwrap();
        let e = read_azure(dir.path(), None).unwrap_err().to_string();
        assert!(e.contains("anon.d01.csv:2:6: minute 2") && e.contains("12x00"), "{e}");
        // Truncated mid-row.
        write_azure(dir.path(), 1, &apps()).unwrap();
        let text = std::fs::read_to_string(&inv).unwrap();
        std::fs::write(&inv, &text[..text.len() - 7]).unwrap();
        let e = read_azure(dir.path(), None).unwrap_err().to_string();
        assert!(e.contains("anon.d01.csv:4:"), "{e}");

        let dir = tempfile::tempdir().unwrap();
        let e = read_alibaba(dir.path()).unwrap_err().to_string();
        assert!(e.contains("MSRTQps") && e.contains("clusterdata"), "{e}");
        std::fs::write(
            dir.path().join("MSRTQps_0.csv"),
            "timestamp,msname,msinstanceid,metric,value\n0,a,b,providerRPC_MCR,zz\n",
        )
        .unwrap();
        let e = read_alibaba(dir.path()).unwrap_err().to_string();
        assert!(e.contains("MSRTQps_0.csv:2:5: value"), "{e}");
    }

    /// The seed files of the reader fuzzing (`tests/fixtures/corpus`), written from [`apps`].
    fn corpus(dataset: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus").join(dataset)
    }

    #[test]
    fn valid_small_folders_read_exactly_as_before() {
        assert_eq!(read_azure(&corpus("azure"), None).unwrap(), apps());
        assert_eq!(read_alibaba(&corpus("alibaba")).unwrap(), apps());
    }

    /// Makes a FIFO at `path`.
    fn mkfifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that lives through the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
    }

    /// `f()`, run on a thread of its own: the test fails after 10 s rather than hang on a reader
    /// blocked on a FIFO (or stuck reading a device).
    fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(10)).expect("the reader returned within 10 s")
    }

    /// The error reading the Azure folder `dir`, within 10 s.
    fn azure_error(dir: &Path) -> String {
        let dir = dir.to_path_buf();
        within_10s(move || read_azure(&dir, None)).unwrap_err().to_string()
    }

    /// The error reading the Alibaba folder `dir`, within 10 s.
    fn alibaba_error(dir: &Path) -> String {
        let dir = dir.to_path_buf();
        within_10s(move || read_alibaba(&dir)).unwrap_err().to_string()
    }

    const INV: &str = "invocations_per_function_md.anon.d01.csv";
    const DUR: &str = "function_durations_percentiles.anon.d01.csv";

    #[test]
    fn a_fifo_named_as_a_dataset_file_is_refused_at_once() {
        for name in [INV, DUR] {
            let dir = tempfile::tempdir().unwrap();
            write_azure(dir.path(), 1, &apps()).unwrap();
            std::fs::remove_file(dir.path().join(name)).unwrap();
            mkfifo(&dir.path().join(name));
            let e = azure_error(dir.path());
            assert!(
                e.contains(&format!("{name}:1:1: file: not a regular file")) && e.contains("fix:"),
                "{e}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        mkfifo(&dir.path().join("MSRTQps_0.csv"));
        let e = alibaba_error(dir.path());
        assert!(e.contains("MSRTQps_0.csv:1:1: file: not a regular file"), "{e}");
    }

    #[test]
    fn dev_zero_named_as_a_dataset_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        write_azure(dir.path(), 1, &apps()).unwrap();
        std::fs::remove_file(dir.path().join(INV)).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join(INV)).unwrap();
        let e = azure_error(dir.path());
        assert!(e.contains(&format!("{INV}:1:1: file: not a regular file")), "{e}");
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("MSRTQps_3.csv")).unwrap();
        let e = alibaba_error(dir.path());
        assert!(e.contains("MSRTQps_3.csv:1:1: file: not a regular file"), "{e}");
    }

    #[test]
    fn files_beyond_the_byte_or_line_bounds_are_refused_without_reading_them_whole() {
        // Zeros with no line break (what copying /dev/zero makes): stopped after 1 MiB of one line.
        let dir = tempfile::tempdir().unwrap();
        let zeros = std::fs::File::create(dir.path().join("MSRTQps_0.csv")).unwrap();
        zeros.set_len(4 * MAX_DATASET_LINE_BYTES).unwrap();
        let e = alibaba_error(dir.path());
        assert!(e.contains("MSRTQps_0.csv:1:1: file: a line of more than 1048576 bytes"), "{e}");
        // A file beyond the size bound (sparse: no disk used) is refused before it is read.
        let dir = tempfile::tempdir().unwrap();
        write_azure(dir.path(), 1, &apps()).unwrap();
        let inv = std::fs::OpenOptions::new().write(true).open(dir.path().join(INV)).unwrap();
        inv.set_len(MAX_DATASET_FILE_BYTES + 1).unwrap();
        let e = azure_error(dir.path());
        assert!(e.contains(&format!("{INV}:1:1: file: {} bytes, beyond", MAX_DATASET_FILE_BYTES + 1)), "{e}");
    }

    #[test]
    fn counts_and_values_out_of_range_are_refused_with_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let inv = dir.path().join(INV);
        for bad in ["1e308", "-5", "NaN", "inf", "6.1e8"] {
            write_azure(dir.path(), 1, &apps()).unwrap();
            let text = std::fs::read_to_string(&inv).unwrap().replace(",12000,", &format!(",{bad},"));
            std::fs::write(&inv, text).unwrap();
            let e = read_azure(dir.path(), None).unwrap_err().to_string();
            assert!(e.contains(&format!("{INV}:2:6: minute 2: '{bad}' is not an invocation count")), "{e}");
            assert!(e.contains("fix:"), "{e}");
        }
        // The bound itself is a count.
        write_azure(dir.path(), 1, &apps()).unwrap();
        let text = std::fs::read_to_string(&inv).unwrap().replace(",12000,", ",600000000,");
        std::fs::write(&inv, text).unwrap();
        assert_eq!(read_azure(dir.path(), None).unwrap()[0].minute_rates[1], 1e7);
        // An average duration beyond 14 days.
        write_azure(dir.path(), 1, &apps()).unwrap();
        let dur = dir.path().join(DUR);
        let text = std::fs::read_to_string(&dur).unwrap().replacen(",50,", ",1e308,", 1);
        std::fs::write(&dur, text).unwrap();
        let e = read_azure(dir.path(), None).unwrap_err().to_string();
        assert!(e.contains(&format!("{DUR}:2:4: Average: '1e308'")), "{e}");

        let dir = tempfile::tempdir().unwrap();
        for (metric, bad) in
            [("providerRPC_MCR", "1e308"), ("providerRPC_MCR", "2e7"), ("providerRPC_RT", "1e308")]
        {
            std::fs::write(
                dir.path().join("MSRTQps_0.csv"),
                format!("timestamp,msname,msinstanceid,metric,value\n0,a,b,providerRPC_RT,5\n0,a,b,{metric},{bad}\n"),
            )
            .unwrap();
            let e = read_alibaba(dir.path()).unwrap_err().to_string();
            assert!(e.contains(&format!("MSRTQps_0.csv:3:5: value: '{bad}'")), "{e}");
        }
    }

    #[test]
    fn a_wild_timestamp_that_would_stretch_every_rate_list_is_refused_before_allocating() {
        // 14,000 microservices over one minute, and one call rate at the last minute of 14 days: every
        // microservice would get 20,161 per-minute rates (2.3 GB).
        let mut text = String::from("timestamp,msname,msinstanceid,metric,value\n");
        for i in 0..14_000 {
            text.push_str(&format!("0,m{i},c,providerRPC_MCR,1\n0,m{i},c,providerRPC_RT,20\n"));
        }
        text.push_str(&format!("{},m0,c,providerRPC_MCR,1\n", MAX_MINUTES * 60_000));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("MSRTQps_0.csv"), text).unwrap();
        let e = read_alibaba(dir.path()).unwrap_err().to_string();
        assert!(e.contains("MSRTQps_0.csv:28002:1: timestamp: 14000 applications x 20161 minutes"), "{e}");
    }
}

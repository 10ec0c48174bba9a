//! Fuzzing every reader on stable Rust: proptest byte strings, and structured mutations of the valid
//! seed files in `tests/fixtures/corpus` (truncations, byte flips, numbers swapped for extreme values,
//! lines duplicated). A reader may accept or refuse what it gets, but never panics, never allocates
//! without bound, and its errors stay short (a corrupt field is quoted, not echoed whole). Cases are
//! bounded so that CI stays fast (`cargo fuzz` needs nightly, which a fresh machine here cannot get).

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use spork::reproduce::store::{Row, Store};

fn corpus(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/corpus").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Values that broke readers before, or sit at the edge of a range.
const EXTREMES: [&str; 10] =
    ["1e308", "-1", "0", "NaN", "inf", "18446744073709551615", "1e-300", "-0", "99999999999999999999", ""];

/// One way to damage a file.
#[derive(Clone, Debug)]
enum Mutation {
    /// Keep only the first fraction of the bytes.
    Truncate(f64),
    /// Replace the byte at a fraction of the length.
    Flip(f64, u8),
    /// Replace the n-th number with an extreme value.
    Number(usize, usize),
    /// Repeat the line at a fraction of the file.
    DuplicateLine(f64),
    /// Grow a field into a long run of one character.
    Bloat(f64, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0.0..1.0f64).prop_map(Mutation::Truncate),
        (0.0..1.0f64, any::<u8>()).prop_map(|(at, b)| Mutation::Flip(at, b)),
        (0..40usize, 0..EXTREMES.len()).prop_map(|(n, v)| Mutation::Number(n, v)),
        (0.0..1.0f64).prop_map(Mutation::DuplicateLine),
        (0.0..1.0f64, 1_000..200_000usize).prop_map(|(at, n)| Mutation::Bloat(at, n)),
    ]
}

fn at(len: usize, f: f64) -> usize {
    ((len as f64 * f) as usize).min(len.saturating_sub(1))
}

fn mutate(seed: &[u8], m: &Mutation) -> Vec<u8> {
    let mut v = seed.to_vec();
    match *m {
        Mutation::Truncate(f) => v.truncate(at(v.len(), f)),
        Mutation::Flip(f, b) => {
            let i = at(v.len(), f);
            if let Some(x) = v.get_mut(i) {
                *x = b;
            }
        }
        Mutation::Number(n, e) => {
            let text = String::from_utf8_lossy(seed).into_owned();
            let spans: Vec<(usize, usize)> = numbers(&text);
            if let Some(&(s, t)) = spans.get(n % spans.len().max(1)) {
                v = format!("{}{}{}", &text[..s], EXTREMES[e], &text[t..]).into_bytes();
            }
        }
        Mutation::DuplicateLine(f) => {
            let text = String::from_utf8_lossy(seed).into_owned();
            let lines: Vec<&str> = text.lines().collect();
            let i = at(lines.len(), f);
            let mut out: Vec<&str> = lines.clone();
            if let Some(l) = lines.get(i) {
                out.insert(i, l);
            }
            v = out.join("\n").into_bytes();
        }
        Mutation::Bloat(f, n) => {
            let i = at(v.len(), f);
            v.splice(i..i, std::iter::repeat_n(b'7', n));
        }
    }
    v
}

/// Byte spans of the numbers in `text`.
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let s = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'e') {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

/// An error, if any, is short enough to read.
fn short<T, E: std::fmt::Display>(r: Result<T, E>) -> Result<(), TestCaseError> {
    if let Err(e) = r {
        let text = e.to_string();
        prop_assert!(
            text.len() < 2_000,
            "an error of {} bytes: {}",
            text.len(),
            &text[..300.min(text.len())]
        );
    }
    Ok(())
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write");
    p
}

fn runs_seed() -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("runs.jsonl");
    let o = Store::open(&p).expect("store");
    for trace in 0..3 {
        let row = Row {
            experiment: "fig5".into(),
            params: [("burstiness".to_string(), 0.6), ("spin_up_s".to_string(), 10.0)].into(),
            trace,
            series: "SporkE".into(),
            metrics: [("energy_efficiency".to_string(), 0.83), ("relative_cost".to_string(), 1.4)].into(),
        };
        o.store.append(&row).expect("append");
    }
    std::fs::read(&p).expect("read")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn trace_files(m in mutation(), noise in prop::collection::vec(any::<u8>(), 0..200)) {
        let path = Path::new("t.toml");
        for bytes in [mutate(&corpus("trace.toml"), &m), noise] {
            let text = String::from_utf8_lossy(&bytes);
            short(spork::trace::file::parse(path, &text))?;
        }
    }

    #[test]
    fn platform_profiles(m in mutation(), noise in prop::collection::vec(any::<u8>(), 0..200)) {
        let path = Path::new("p.toml");
        for bytes in [mutate(&corpus("platform.toml"), &m), noise] {
            let text = String::from_utf8_lossy(&bytes);
            short(spork::config::parse_platform(path, &text))?;
        }
    }

    #[test]
    fn azure_files(m in mutation(), which in 0..2usize) {
        let dir = tempfile::tempdir().expect("tempdir");
        let names = ["invocations_per_function_md.anon.d01.csv", "function_durations_percentiles.anon.d01.csv"];
        for (i, name) in names.iter().enumerate() {
            let seed = corpus(&format!("azure/{name}"));
            write(dir.path(), name, &if i == which { mutate(&seed, &m) } else { seed });
        }
        short(spork::trace::production::read_azure(dir.path(), None))?;
    }

    #[test]
    fn alibaba_files(m in mutation()) {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), "MSRTQps_0.csv", &mutate(&corpus("alibaba/MSRTQps_0.csv"), &m));
        short(spork::trace::production::read_alibaba(dir.path()))?;
    }

    #[test]
    fn stored_runs(m in mutation()) {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = write(dir.path(), "runs.jsonl", &mutate(&runs_seed(), &m));
        match Store::open(&p) {
            // Every row kept is one of the three written, each once.
            Ok(o) => {
                prop_assert!(o.rows.len() <= 3);
                let keys = Store::keys(&o.rows);
                prop_assert_eq!(keys.len(), o.rows.len());
            }
            Err(e) => short::<(), _>(Err(e))?,
        }
    }
}

//! The compact trace file: a TOML document holding per-minute rates, the request size and the seed of
//! the arrival process. A 2-hour trace of 72 M requests is a few kilobytes and replays identically.
//!
//! ```toml
//! format = "spork-trace/1"
//! size_ms = 10.0          # CPU service time of every request (its mandatory part)
//! optional_ms = 5.0       # optional; the optional part brownout may skip (default 0)
//! size_cv = 0.5           # optional; each request's size log-normal around size_ms (default 0)
//! duration_s = 7200.0     # optional; defaults to 60 s per rate
//! seed = 1                # seed of the Poisson arrival process
//! rates_per_s = [9500.0, 10250.5]   # requests per second at the start of each minute
//! [provenance]            # optional, free-form: how the trace was made
//! generator = "b-model"
//! ```

use super::rates::{MAX_SIZE_CV, MINUTE_S, RateTrace};
use crate::input::{InputError, Location};
use crate::model::time::{from_secs, to_secs};
use serde::{Deserialize, Serialize};
use std::path::Path;
use toml::Spanned;

/// The format tag this version reads and writes.
pub const FORMAT: &str = "spork-trace/1";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrace {
    format: Spanned<String>,
    size_ms: Spanned<f64>,
    optional_ms: Option<Spanned<f64>>,
    size_cv: Option<Spanned<f64>>,
    duration_s: Option<Spanned<f64>>,
    seed: Spanned<i64>,
    rates_per_s: Spanned<Vec<Spanned<f64>>>,
    #[allow(dead_code)]
    provenance: Option<toml::Table>,
}

#[derive(Serialize)]
struct OutTrace<'a> {
    format: &'a str,
    size_ms: f64,
    #[serde(skip_serializing_if = "is_zero")]
    optional_ms: f64,
    #[serde(skip_serializing_if = "is_zero")]
    size_cv: f64,
    duration_s: f64,
    seed: i64,
    rates_per_s: Vec<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    provenance: Option<&'a toml::Table>,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// Reads and validates a trace file.
pub fn read(path: &Path) -> Result<RateTrace, InputError> {
    let text = InputError::read(path)?;
    parse(path, &text)
}

/// Parses and validates trace text read from `path`.
pub fn parse(path: &Path, text: &str) -> Result<RateTrace, InputError> {
    let raw: RawTrace = toml::from_str(text).map_err(|e| {
        InputError::from_toml(
            path,
            text,
            &e,
            "see the format in `spork trace gen --help`; regenerate with `spork trace gen`",
        )
    })?;
    let at = |span: std::ops::Range<usize>| Location::at(path, text, span.start);
    if raw.format.get_ref() != FORMAT {
        return Err(InputError::invalid(
            at(raw.format.span()),
            "format",
            format!("unsupported format '{}'", crate::input::excerpt(raw.format.get_ref())),
            format!("this version of spork reads \"{FORMAT}\""),
        ));
    }
    let size_ms = *raw.size_ms.get_ref();
    if !(size_ms.is_finite() && size_ms > 0.0 && size_ms <= 3.6e6) {
        return Err(InputError::invalid(
            at(raw.size_ms.span()),
            "size_ms",
            format!("{size_ms} is not a request size"),
            "give the CPU service time in milliseconds, above 0 and at most one hour",
        ));
    }
    let optional_ms = match &raw.optional_ms {
        None => 0.0,
        Some(o) => {
            let v = *o.get_ref();
            if !(v.is_finite() && (0.0..=3.6e6).contains(&v)) {
                return Err(InputError::invalid(
                    at(o.span()),
                    "optional_ms",
                    format!("{v} is not a size"),
                    "give the optional part's CPU service time in milliseconds, at least 0, or leave it out",
                ));
            }
            v
        }
    };
    let size_cv = match &raw.size_cv {
        None => 0.0,
        Some(c) => {
            let v = *c.get_ref();
            if !(v.is_finite() && (0.0..=MAX_SIZE_CV).contains(&v)) {
                return Err(InputError::invalid(
                    at(c.span()),
                    "size_cv",
                    format!("{v} is not a coefficient of variation we draw"),
                    "give the spread of request sizes as a coefficient of variation from 0 (all the same) to 10",
                ));
            }
            v
        }
    };
    let seed = *raw.seed.get_ref();
    if seed < 0 {
        return Err(InputError::invalid(
            at(raw.seed.span()),
            "seed",
            "negative seed",
            "use a seed of 0 or more",
        ));
    }
    let rates_span = raw.rates_per_s.span();
    let rates = raw.rates_per_s.into_inner();
    if rates.is_empty() {
        return Err(InputError::invalid(
            at(rates_span),
            "rates_per_s",
            "no rates",
            "give at least one per-minute rate in requests per second",
        ));
    }
    let mut minute_rates = Vec::with_capacity(rates.len());
    for (i, r) in rates.iter().enumerate() {
        let v = *r.get_ref();
        if !(v.is_finite() && v >= 0.0) {
            return Err(InputError::invalid(
                at(r.span()),
                format!("rates_per_s[{i}]"),
                format!("{v} is not a request rate"),
                "rates are requests per second: finite and at least 0",
            ));
        }
        minute_rates.push(v);
    }
    let max_s = minute_rates.len() as f64 * MINUTE_S;
    let duration_s = match raw.duration_s {
        None => max_s,
        Some(d) => {
            let v = *d.get_ref();
            if !(v > 0.0 && v <= max_s) {
                return Err(InputError::invalid(
                    at(d.span()),
                    "duration_s",
                    format!("{v} s does not fit the {} per-minute rates ({max_s} s)", minute_rates.len()),
                    "give a duration above 0 and at most 60 s per rate, or leave it out",
                ));
            }
            v
        }
    };
    Ok(RateTrace {
        minute_rates,
        size: from_secs(size_ms / 1e3),
        optional: from_secs(optional_ms / 1e3),
        size_cv,
        duration: from_secs(duration_s),
        seed: seed as u64,
    })
}

/// Renders a trace as file text, with optional provenance.
pub fn render(trace: &RateTrace, provenance: Option<&toml::Table>) -> Result<String, toml::ser::Error> {
    let out = OutTrace {
        format: FORMAT,
        size_ms: to_secs(trace.size) * 1e3,
        optional_ms: to_secs(trace.optional) * 1e3,
        size_cv: trace.size_cv,
        duration_s: to_secs(trace.duration),
        seed: i64::try_from(trace.seed).unwrap_or(i64::MAX),
        rates_per_s: trace.minute_rates.clone(),
        provenance,
    };
    let body = toml::to_string(&out)?;
    Ok(format!(
        "# Spork rate trace: per-minute rates replayed as time-varying Poisson arrivals (see `spork trace gen --help`).\n{body}"
    ))
}

/// Writes a trace file.
pub fn write(path: &Path, trace: &RateTrace, provenance: Option<&toml::Table>) -> Result<(), InputError> {
    let text = render(trace, provenance).map_err(|e| {
        InputError::invalid(Location::at(path, "", 0), "trace", e.to_string(), "report this as a bug")
    })?;
    InputError::write(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_exactly() {
        let t = RateTrace {
            optional: from_secs(0.021),
            size_cv: 0.75,
            minute_rates: vec![1.0, 2.5, 0.0],
            size: from_secs(0.042),
            duration: from_secs(150.0),
            seed: 9,
        };
        let text = render(&t, None).unwrap();
        let back = parse(Path::new("t.toml"), &text).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn errors_name_file_line_field_and_fix() {
        let text = "format = \"spork-trace/1\"\nsize_ms = 10.0\nseed = 1\nrates_per_s = [1.0,\n  -3.0]\n";
        let e = parse(Path::new("bad.toml"), text).unwrap_err().to_string();
        assert!(e.starts_with("bad.toml:5:3: rates_per_s[1]"), "{e}");
        assert!(e.contains("fix:"), "{e}");

        let e = parse(Path::new("bad.toml"), "format = \"spork-trace/1\"\nsize_ms = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.toml:2:"), "{e}");

        let e = parse(Path::new("bad.toml"), "format = \"spork-trace/1\"\nsize_ms = 1.0\nseed = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("rates_per_s"), "{e}");

        let e = parse(
            Path::new("bad.toml"),
            "format = \"spork-trace/1\"\nsize_ms = 1.0\nseed = 1\nrates_per_s=[1.0]\nwat = 2\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("bad.toml:5:1") && e.contains("wat"), "{e}");
    }

    proptest::proptest! {
        /// Arbitrary text, including truncations of a valid file, gives an error, never a panic.
        #[test]
        fn never_panics(text in ".{0,300}", cut in 0usize..400) {
            let _ = parse(Path::new("x.toml"), &text);
            let valid = render(&RateTrace { minute_rates: vec![1.0, 2.0], size: from_secs(0.01), optional: 0, size_cv: 0.0, duration: from_secs(90.0), seed: 3 }, None).unwrap();
            let cut = valid.char_indices().map(|(i, _)| i).nth(cut).unwrap_or(valid.len());
            let _ = parse(Path::new("x.toml"), &valid[..cut]);
        }
    }
}

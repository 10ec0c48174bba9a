//! Platform profiles: a TOML file overriding any figure of the default platform (the paper's Table 6).
//!
//! ```toml
//! [cpu]
//! spin_up = "5ms"          # a duration ("5ms", "10s", "1m") or a number of seconds
//! spin_down = "5ms"
//! busy_power_w = 150.0
//! idle_power_w = 30.0
//! price_per_hour = 0.668
//!
//! [fpga]
//! spin_up = "10s"          # also the scheduling interval
//! spin_down = "100ms"
//! speedup = 2.0
//! busy_power_w = 50.0
//! idle_power_w = 20.0
//! price_per_hour = 0.982
//! compute_units = 1        # requests a board serves at once, each at `speedup` (default 1)
//! invocation = "50us"      # each board invocation's fixed cost (launch, completion); default none
//! transfer_gb_per_s = 9.0  # host-to-card link, for the bytes each invocation moves; default none
//! bytes_per_cpu_s = 4e8    # bytes a request moves per CPU-second of its size (a live run measures it)
//!
//! [requests]
//! deadline_factor = 10.0   # deadline = arrival + factor x size
//! ```

use crate::input::{InputError, Location};
use crate::model::platform::{Platform, PlatformError, WorkerSpec, show};
use crate::model::time::from_duration;
use serde::Deserialize;
use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(untagged)]
enum DurationValue {
    Secs(f64),
    Text(String),
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawWorker {
    spin_up: Option<Spanned<DurationValue>>,
    spin_down: Option<Spanned<DurationValue>>,
    speedup: Option<Spanned<f64>>,
    busy_power_w: Option<Spanned<f64>>,
    idle_power_w: Option<Spanned<f64>>,
    price_per_hour: Option<Spanned<f64>>,
    compute_units: Option<Spanned<i64>>,
    invocation: Option<Spanned<DurationValue>>,
    transfer_gb_per_s: Option<Spanned<f64>>,
    bytes_per_cpu_s: Option<Spanned<f64>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRequests {
    deadline_factor: Option<Spanned<f64>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawPlatform {
    #[serde(default)]
    cpu: RawWorker,
    #[serde(default)]
    fpga: RawWorker,
    #[serde(default)]
    requests: RawRequests,
}

/// Reads a platform profile, applying it over the defaults, and validates the result.
pub fn read_platform(path: &Path) -> Result<Platform, InputError> {
    let text = InputError::read(path)?;
    parse_platform(path, &text)
}

/// Parses platform profile text read from `path`.
pub fn parse_platform(path: &Path, text: &str) -> Result<Platform, InputError> {
    const FIX: &str = "sections are [cpu], [fpga] and [requests]; see `spork simulate --help` for the fields";
    let raw: RawPlatform = toml::from_str(text).map_err(|e| InputError::from_toml(path, text, &e, FIX))?;
    let mut platform = Platform::default();
    let mut spans: HashMap<String, Range<usize>> = HashMap::new();
    for (name, w, spec) in [("cpu", &raw.cpu, &mut platform.cpu), ("fpga", &raw.fpga, &mut platform.fpga)] {
        apply_worker(path, text, name, w, spec, &mut spans)?;
    }
    if let Some(f) = &raw.requests.deadline_factor {
        spans.insert("requests.deadline_factor".into(), f.span());
        platform.deadline_factor = *f.get_ref();
    }
    platform.validate().map_err(|e| {
        let (field, value, expected) = match e {
            PlatformError::OutOfRange { field, value, expected } => (field, value, format!("use {expected}")),
            PlatformError::Range { field, value, min, max } => {
                (field, value, format!("use a finite number from {min} to {max}"))
            }
        };
        let location = Location::of_span(path, text, spans.get(&field).cloned());
        InputError::invalid(location, field, format!("{} is out of range", show(value)), expected)
    })?;
    Ok(platform)
}

fn apply_worker(
    path: &Path,
    text: &str,
    name: &str,
    w: &RawWorker,
    spec: &mut WorkerSpec,
    spans: &mut HashMap<String, Range<usize>>,
) -> Result<(), InputError> {
    let duration = |field: &str, v: &Spanned<DurationValue>| {
        let bad = |problem: String| {
            InputError::invalid(
                Location::at(path, text, v.span().start),
                format!("{name}.{field}"),
                problem,
                "give a duration such as \"5ms\" or \"10s\", or a number of seconds at or above 0",
            )
        };
        match v.get_ref() {
            DurationValue::Secs(s) if s.is_finite() && *s >= 0.0 && *s < 1e9 => {
                Ok(crate::model::time::from_secs(*s))
            }
            DurationValue::Secs(s) => Err(bad(format!("{s} is not a duration"))),
            DurationValue::Text(t) => humantime::parse_duration(t).map(from_duration).map_err(|e| {
                bad(format!("'{}': {}", crate::input::excerpt(t), crate::input::excerpt(&e.to_string())))
            }),
        }
    };
    if let Some(v) = &w.spin_up {
        spec.spin_up = duration("spin_up", v)?;
        spans.insert(format!("{name}.spin_up"), v.span());
    }
    if let Some(v) = &w.spin_down {
        spec.spin_down = duration("spin_down", v)?;
        spans.insert(format!("{name}.spin_down"), v.span());
    }
    let numbers = [
        ("speedup", &w.speedup, &mut spec.speedup),
        ("busy_power_w", &w.busy_power_w, &mut spec.busy_power_w),
        ("idle_power_w", &w.idle_power_w, &mut spec.idle_power_w),
        ("price_per_hour", &w.price_per_hour, &mut spec.price_per_hour),
    ];
    for (field, v, slot) in numbers {
        if let Some(v) = v {
            *slot = *v.get_ref();
            spans.insert(format!("{name}.{field}"), v.span());
        }
    }
    if let Some(v) = &w.compute_units {
        // Out of range is the platform's check, with this span.
        spec.compute_units = (*v.get_ref()).clamp(0, i64::from(u32::MAX)) as u32;
        spans.insert(format!("{name}.compute_units"), v.span());
    }
    apply_link(name, w, spec, spans, duration)
}

/// The link fields, stated through [`crate::model::Link::stated`].
fn apply_link(
    name: &str,
    w: &RawWorker,
    spec: &mut WorkerSpec,
    spans: &mut HashMap<String, Range<usize>>,
    duration: impl Fn(&str, &Spanned<DurationValue>) -> Result<u64, InputError>,
) -> Result<(), InputError> {
    let invocation = w.invocation.as_ref().map(|v| duration("invocation", v)).transpose()?;
    let number = |v: &Option<Spanned<f64>>| v.as_ref().map(|v| *v.get_ref());
    let gbps = number(&w.transfer_gb_per_s).map(|g| g * 1e9);
    spec.link = crate::model::Link::stated(spec.link, invocation, gbps, number(&w.bytes_per_cpu_s));
    let fields = [
        ("invocation", w.invocation.as_ref().map(Spanned::span)),
        ("transfer_gb_per_s", w.transfer_gb_per_s.as_ref().map(Spanned::span)),
        ("bytes_per_cpu_s", w.bytes_per_cpu_s.as_ref().map(Spanned::span)),
    ];
    for (field, span) in fields {
        if let Some(span) = span {
            spans.insert(format!("{name}.{field}"), span);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::time::from_secs;

    #[test]
    fn empty_file_is_the_default_platform() {
        assert_eq!(parse_platform(Path::new("p.toml"), "").unwrap(), Platform::default());
    }

    #[test]
    fn a_link_is_stated_by_any_of_its_fields_and_checked() {
        let p = parse_platform(Path::new("p.toml"), "[fpga]\ninvocation = \"50us\"\n").unwrap();
        let link = p.fpga.link.expect("stated");
        assert_eq!((link.invocation, link.bytes_per_s, link.bytes_per_cpu_s), (50_000, 0.0, 0.0));
        let p = parse_platform(Path::new("p.toml"), "[fpga]\ntransfer_gb_per_s = 9\nbytes_per_cpu_s = 4e8\n")
            .unwrap();
        assert_eq!(p.fpga.link.map(|l| l.bytes_per_s), Some(9e9));
        let e = parse_platform(Path::new("p.toml"), "[cpu]\ninvocation = \"1ms\"\n").unwrap_err().to_string();
        assert!(e.contains("cpu.invocation") && e.contains("board"), "{e}");
        let e =
            parse_platform(Path::new("p.toml"), "[fpga]\ntransfer_gb_per_s = -1\n").unwrap_err().to_string();
        assert!(e.contains("fpga.transfer_gb_per_s") && e.contains("p.toml:2"), "{e}");
    }

    #[test]
    fn overrides_apply() {
        let p = parse_platform(
            Path::new("p.toml"),
            "[fpga]\nspin_up = \"60s\"\nspeedup = 4\n[cpu]\nspin_down = 0.01\n[requests]\ndeadline_factor = 5\n",
        )
        .unwrap();
        assert_eq!(p.fpga.spin_up, from_secs(60.0));
        assert_eq!(p.fpga.speedup, 4.0);
        assert_eq!(p.cpu.spin_down, from_secs(0.01));
        assert_eq!(p.deadline_factor, 5.0);
    }

    #[test]
    fn errors_point_at_line_and_field() {
        let e = parse_platform(Path::new("p.toml"), "[fpga]\nspeedup = 2\nbusy_power_w = -5\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.toml:3:16: fpga.busy_power_w"), "{e}");
        let e = parse_platform(Path::new("p.toml"), "[fpga]\nspin_up = \"ten seconds\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.toml:2:11: fpga.spin_up"), "{e}");
        let e = parse_platform(Path::new("p.toml"), "[fpga]\ncompute_units = 0\n").unwrap_err().to_string();
        assert!(e.starts_with("p.toml:2:17: fpga.compute_units"), "{e}");
        let e = parse_platform(Path::new("p.toml"), "[cpu]\ncompute_units = 2\n").unwrap_err().to_string();
        assert!(e.contains("cpu.compute_units") && e.contains("add CPU workers"), "{e}");
        let p = parse_platform(Path::new("p.toml"), "[fpga]\ncompute_units = 4\n").unwrap();
        assert_eq!(p.fpga.compute_units, 4);
        let e = parse_platform(Path::new("p.toml"), "[gpu]\nspeedup = 2\n").unwrap_err().to_string();
        assert!(e.contains("p.toml:1:") && e.contains("gpu"), "{e}");
        let e = parse_platform(Path::new("p.toml"), "[cpu]\nspeedup = 2\n").unwrap_err().to_string();
        assert!(e.contains("cpu.speedup"), "{e}");
    }

    proptest::proptest! {
        /// Arbitrary text gives an error or a valid platform, never a panic.
        #[test]
        fn never_panics(text in "(\\[(cpu|fpga|requests)\\]\n)?([a-z_]{1,14} = (-?[0-9.e]{1,6}|\"[0-9a-z ]{0,6}\")\n){0,4}") {
            if let Ok(p) = parse_platform(Path::new("p.toml"), &text) {
                proptest::prop_assert!(p.validate().is_ok());
            }
        }
    }
}

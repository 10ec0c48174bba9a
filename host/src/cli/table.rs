//! Human-readable tables.

use super::trace::TraceSummary;
use comfy_table::{Cell, CellAlignment, Table, presets::UTF8_FULL_CONDENSED};
use spork::evaluate::Report;
use spork::model::{Platform, time::to_secs};

/// One line describing the trace and platform.
pub fn trace_line(t: &TraceSummary, p: &Platform) -> String {
    let origin = match (&t.file, t.burstiness) {
        (Some(f), _) => format!("trace {}", f.display()),
        (None, Some(b)) => format!("b-model burstiness {b}"),
        (None, None) => "trace".to_string(),
    };
    format!(
        "{origin}, {:.0} s, size {:.3} ms, ~{:.0} requests ({:.0} req/s mean, peak/mean {:.2}), seed {}\n\
         platform: FPGA spin-up {:.3} s (= interval), speedup {}x{}{}, busy/idle {}/{} W, ${}/h; \
         CPU spin-up {:.3} s, busy/idle {}/{} W, ${}/h; deadline {}x size",
        t.duration_s,
        t.size_ms,
        t.expected_requests,
        t.mean_rate,
        t.peak_to_mean,
        t.seed,
        to_secs(p.fpga.spin_up),
        p.fpga.speedup,
        cus_note(p.fpga.compute_units),
        link_note(p),
        p.fpga.busy_power_w,
        p.fpga.idle_power_w,
        p.fpga.price_per_hour,
        to_secs(p.cpu.spin_up),
        p.cpu.busy_power_w,
        p.cpu.idle_power_w,
        p.cpu.price_per_hour,
        p.deadline_factor,
    )
}

/// How the platform line names a board of several compute units (nothing for the paper's one).
pub fn cus_note(n: u32) -> String {
    if n > 1 { format!(" on each of {n} compute units per board") } else { String::new() }
}

/// How the platform line names a board's link (nothing for the paper's board, which has none).
pub fn link_note(p: &Platform) -> String {
    match p.fpga.link {
        None => String::new(),
        Some(l) => format!(
            ", {:.1} us per invocation + {:.3e} B per CPU-s at {:.1} GB/s",
            l.invocation as f64 / 1e3,
            l.bytes_per_cpu_s,
            l.bytes_per_s / 1e9
        ),
    }
}

/// Reports side by side, one row each.
pub fn reports(reports: &[Report]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header([
        "scheduler",
        "dispatch",
        "energy eff.",
        "rel. cost",
        "on CPUs",
        "FPGA spin-ups",
        "misses",
        "optional",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "energy kJ busy/idle/spin",
        "cost $",
    ]);
    for r in reports {
        let kj = |f: fn(&spork::model::EnergySplit) -> f64| (f(&r.cpu.energy) + f(&r.fpga.energy)) / 1e3;
        let mut name = match r.headroom {
            Some(k) if r.scheduler == "FPGA-dynamic" => format!("{} (headroom x{k})", r.scheduler),
            Some(k) => format!("{} (peak +{k})", r.scheduler),
            None => r.scheduler.clone(),
        };
        if let Some(b) = &r.brownout {
            name.push_str(&format!(" + brownout {b}"));
        }
        if r.rejected > 0 {
            name.push_str(&format!(" [{} rejected]", r.rejected));
        }
        let cells = [
            name,
            r.dispatcher.clone(),
            format!("{:.1}%", r.energy_efficiency * 100.0),
            format!("{:.2}x", r.relative_cost),
            format!("{:.1}%", r.cpu_share * 100.0),
            r.fpga.spin_ups.to_string(),
            format!("{} ({:.3}%)", r.deadline_misses, r.miss_share * 100.0),
            format!("{:.1}%", r.optional_ratio * 100.0),
            format!("{:.1}", r.latency.p50_ms),
            format!("{:.1}", r.latency.p95_ms),
            format!("{:.1}", r.latency.p99_ms),
            format!("{:.0}/{:.0}/{:.0}", kj(|e| e.busy_j), kj(|e| e.idle_j), kj(|e| e.spin_j)),
            format!("{:.2}", r.cost),
        ];
        t.add_row(cells.into_iter().enumerate().map(|(i, c)| {
            let cell = Cell::new(c);
            if i >= 2 { cell.set_alignment(CellAlignment::Right) } else { cell }
        }));
    }
    t
}

//! The MILP schedulers of section 3 (Table 3): the optimum with perfect knowledge of the load.
//!
//! Per interval `t` and worker type `w`: integer allocated workers `Y`, continuous busy workers `B`
//! (idle is `Y - B`), spin-ups `Up >= Y_t - Y_{t-1}` and spin-downs `Dn >= Y_{t-1} - Y_t` (the pool starts
//! and ends empty). All load arriving in an interval is served in it: `B_c + S*B_f = load_t` in CPU
//! workers. FPGAs live at least their spin-up time, in cumulative form: `A_t = A_{t-1} + Up_t` and
//! `Y_t >= A_t - A_{t-L}` (three nonzeros a row, see TOOLCHAIN). The objective is energy (busy and idle
//! power, spin-up and spin-down energy), cost (allocated time, spin time included) or a weighted sum in
//! the same busy-FPGA-second units as the allocator's [`Objective`].

use good_lp::solvers::highs::highs;
use good_lp::{Expression, ProblemVariables, SolverModel, Variable, constraint, variable};
use serde::Serialize;
use spork_core::model::platform::ideal_fpga_only;
use spork_core::model::{Kind, Platform, time::to_secs};
use spork_core::policy::{Fleet, Objective};
use std::collections::HashMap;
use std::time::Instant;

/// What to optimise.
#[derive(Clone, Copy, Debug)]
pub struct MilpSpec {
    /// Worker figures.
    pub platform: Platform,
    /// Which worker types may be used.
    pub fleet: Fleet,
    /// Energy/cost weights.
    pub objective: Objective,
    /// Interval length in seconds (load is per interval).
    pub interval_s: f64,
    /// Solver time limit in seconds.
    pub time_limit_s: f64,
    /// Relative MIP gap at which the solver may stop.
    pub mip_rel_gap: f64,
}

/// The optimum (or best found) schedule and its figures.
#[derive(Clone, Debug, Serialize)]
pub struct MilpSolution {
    /// HiGHS model status.
    pub status: String,
    /// Whether HiGHS proved optimality within the gap tolerance.
    pub optimal: bool,
    /// Relative gap between the solution and the dual bound.
    pub gap: f64,
    /// Objective value (busy-FPGA-seconds).
    pub objective: f64,
    /// Energy in joules: busy, idle, spin-up and spin-down.
    pub energy_busy_j: f64,
    /// Idle energy.
    pub energy_idle_j: f64,
    /// Spin-up and spin-down energy.
    pub energy_spin_j: f64,
    /// Total energy.
    pub energy_j: f64,
    /// Total cost in dollars.
    pub cost: f64,
    /// Ideal FPGA-only energy / energy.
    pub energy_efficiency: f64,
    /// Cost / ideal FPGA-only cost.
    pub relative_cost: f64,
    /// Share of the work run on CPUs.
    pub cpu_work_share: f64,
    /// FPGAs allocated per interval.
    pub fpgas: Vec<u32>,
    /// CPUs allocated per interval.
    pub cpus: Vec<u32>,
    /// Variables, of which integer, and constraints.
    pub size: (usize, usize, usize),
    /// Solve wall time in seconds.
    pub solve_s: f64,
}

/// A model HiGHS could not solve.
#[derive(Debug, thiserror::Error)]
pub enum MilpError {
    /// Bad input.
    #[error("invalid MILP input: {0}")]
    Input(String),
    /// HiGHS failed or found no feasible schedule in time.
    #[error("HiGHS found no schedule ({0}); raise --time-limit or shorten the trace")]
    Solver(String),
}

struct Builder {
    vars: ProblemVariables,
    index: HashMap<Variable, usize>,
    ints: usize,
}

impl Builder {
    /// A non-negative variable; its column index is the order of creation.
    fn add(&mut self, integer: bool) -> Variable {
        let def = variable().min(0);
        let v = self.vars.add(if integer { def.integer() } else { def });
        self.index.insert(v, self.index.len());
        self.ints += usize::from(integer);
        v
    }
}

struct Vars {
    y: Vec<Variable>,
    b: Vec<Variable>,
    up: Vec<Variable>,
    dn: Vec<Variable>,
}

/// The most intervals one MILP may have: a day of 1 s intervals (about 700,000 variables; the paper's
/// Table 3 has 3,600).
pub const MAX_INTERVALS: usize = 86_400;
/// The most load per interval, in CPU workers: HiGHS reads coefficients from 1e20 as infinite.
pub const MAX_LOAD: f64 = 1e9;

/// Refuses inputs the solver cannot take or that are beyond a sane size, with what to change.
fn check(spec: &MilpSpec, load: &[f64]) -> Result<(), MilpError> {
    let bad = |m: String| Err(MilpError::Input(m));
    if load.is_empty() || load.len() > MAX_INTERVALS {
        return bad(format!("{} intervals: use 1 to {MAX_INTERVALS} (--intervals)", load.len()));
    }
    if load.iter().any(|l| !(l.is_finite() && (0.0..=MAX_LOAD).contains(l))) {
        return bad(format!(
            "the load must be finite, from 0 to {MAX_LOAD:e} CPU workers per interval (--workers)"
        ));
    }
    if !(spec.interval_s.is_finite() && spec.interval_s > 0.0) {
        return bad("the interval must be a finite number of seconds above 0".into());
    }
    if !(spec.time_limit_s.is_finite() && spec.time_limit_s > 0.0) {
        return bad(format!(
            "time limit {}: use a finite number of seconds above 0 (--time-limit)",
            spec.time_limit_s
        ));
    }
    if spec.platform.fpga.compute_units != 1 {
        return bad(format!(
            "fpga.compute_units = {}: the MILP models the paper's board of one compute unit; use 1 \
             (`spork simulate` evaluates schedulers on boards of several)",
            spec.platform.fpga.compute_units
        ));
    }
    if !spec.platform.fpga.link().is_free() {
        return bad(
            "a board link (fpga.invocation, transfer_gb_per_s): the MILP models the paper's board, which \
             charges only size over speedup; drop the link (`spork simulate` evaluates schedulers with it)"
                .into(),
        );
    }
    if !(0.0..=1.0).contains(&spec.mip_rel_gap) {
        return bad(format!("gap {}: use a relative gap from 0 to 1 (--gap)", spec.mip_rel_gap));
    }
    Ok(())
}

/// Solves the MILP for `load` (CPU workers of load per interval).
pub fn solve(spec: &MilpSpec, load: &[f64]) -> Result<MilpSolution, MilpError> {
    check(spec, load)?;
    let p = &spec.platform;
    let t_n = load.len();
    let dt = spec.interval_s;
    let mut b = Builder { vars: ProblemVariables::new(), index: HashMap::new(), ints: 0 };
    let kinds: Vec<Kind> = Kind::ALL.into_iter().filter(|k| spec.fleet.allows(*k)).collect();
    if kinds.is_empty() {
        return Err(MilpError::Input("the fleet allows no worker type".into()));
    }
    let mut per_kind: Vec<(Kind, Vars)> = Vec::new();
    for &k in &kinds {
        let v = Vars {
            y: (0..t_n).map(|_| b.add(true)).collect(),
            b: (0..t_n).map(|_| b.add(false)).collect(),
            up: (0..t_n).map(|_| b.add(false)).collect(),
            dn: (0..=t_n).map(|_| b.add(false)).collect(),
        };
        per_kind.push((k, v));
    }
    let fpga_cum: Option<Vec<Variable>> = spec.fleet.fpga.then(|| (0..t_n).map(|_| b.add(false)).collect());

    // Objective coefficients in busy-FPGA-seconds.
    let e0 = p.fpga.busy_power_w.max(f64::MIN_POSITIVE);
    let c0 = p.fpga.price_per_sec().max(f64::MIN_POSITIVE);
    let w = spec.objective;
    let mut objective = Expression::from(0.0);
    for (k, v) in &per_kind {
        let s = p.spec(*k);
        let busy = w.energy * s.busy_power_w * dt / e0;
        let idle = w.energy * s.idle_power_w * dt / e0;
        let alloc = w.cost * s.price_per_sec() * dt / c0;
        let spin_up = w.energy * s.busy_power_w * to_secs(s.spin_up) / e0
            + w.cost * s.price_per_sec() * to_secs(s.spin_up) / c0;
        let spin_down = w.energy * s.busy_power_w * to_secs(s.spin_down) / e0
            + w.cost * s.price_per_sec() * to_secs(s.spin_down) / c0;
        for t in 0..t_n {
            objective += (busy - idle) * v.b[t] + (idle + alloc) * v.y[t] + spin_up * v.up[t];
        }
        for t in 0..=t_n {
            objective += spin_down * v.dn[t];
        }
    }
    let (n_vars, n_int, index) = (b.index.len(), b.ints, b.index);
    let mut problem = b.vars.minimise(objective).using(highs);
    let mut rows = 0usize;
    let mut with = |problem: &mut good_lp::solvers::highs::HighsProblem, c: good_lp::Constraint| {
        rows += 1;
        problem.add_constraint(c);
    };
    let speed = |k: Kind| p.spec(k).speedup;
    for (t, &demand) in load.iter().enumerate() {
        let served: Expression = per_kind.iter().map(|(k, v)| speed(*k) * v.b[t]).sum();
        with(&mut problem, constraint!(served == demand));
        for (_, v) in &per_kind {
            with(&mut problem, constraint!(v.b[t] <= v.y[t]));
            let prev: Expression = if t == 0 { 0.0.into() } else { v.y[t - 1].into() };
            with(&mut problem, constraint!(v.up[t] >= v.y[t] - prev.clone()));
            with(&mut problem, constraint!(v.dn[t] >= prev - v.y[t]));
        }
    }
    for (_, v) in &per_kind {
        with(&mut problem, constraint!(v.dn[t_n] >= v.y[t_n - 1]));
    }
    if let (Some(a), Some((_, fv))) = (&fpga_cum, per_kind.iter().find(|(k, _)| *k == Kind::Fpga)) {
        let life = ((to_secs(p.fpga.spin_up) / dt).ceil() as usize).max(1);
        for t in 0..t_n {
            let prev: Expression = if t == 0 { 0.0.into() } else { a[t - 1].into() };
            with(&mut problem, constraint!(a[t] == prev + fv.up[t]));
            let lag: Expression = if t >= life { a[t - life].into() } else { 0.0.into() };
            with(&mut problem, constraint!(fv.y[t] >= a[t] - lag));
        }
    }
    let mut model = problem.into_inner();
    model.make_quiet();
    model.set_option("time_limit", spec.time_limit_s);
    model.set_option("mip_rel_gap", spec.mip_rel_gap);
    model.set_option("threads", 1);
    let started = Instant::now();
    let solved = model.try_solve().map_err(|e| MilpError::Solver(format!("{e:?}")))?;
    let solve_s = started.elapsed().as_secs_f64();
    let status = solved.status();
    let status_name = format!("{status:?}");
    if solved.primal_solution_status() != ::highs::HighsSolutionStatus::Feasible {
        return Err(MilpError::Solver(status_name));
    }
    let cols = solved.get_solution().columns().to_vec();
    let val = |v: Variable| index.get(&v).map_or(0.0, |&i| cols[i]);
    // Recompute the figures from the schedule in physical units.
    let (mut busy_j, mut idle_j, mut spin_j, mut cost, mut cpu_work, mut all_work) =
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let mut fpgas = vec![0; t_n];
    let mut cpus = vec![0; t_n];
    for (k, v) in &per_kind {
        let s = p.spec(*k);
        for t in 0..t_n {
            let (y, b) = (val(v.y[t]).round(), val(v.b[t]).clamp(0.0, f64::INFINITY));
            busy_j += s.busy_power_w * b * dt;
            idle_j += s.idle_power_w * (y - b).max(0.0) * dt;
            cost += s.price_per_sec() * y * dt;
            let spin = val(v.up[t]) * to_secs(s.spin_up) + val(v.dn[t]) * to_secs(s.spin_down);
            spin_j += s.busy_power_w * spin;
            cost += s.price_per_sec() * spin;
            let work = s.speedup * b * dt;
            all_work += work;
            if *k == Kind::Cpu {
                cpu_work += work;
                cpus[t] = y as u32;
            } else {
                fpgas[t] = y as u32;
            }
        }
        let spin = val(v.dn[t_n]) * to_secs(s.spin_down);
        spin_j += s.busy_power_w * spin;
        cost += s.price_per_sec() * spin;
    }
    let energy_j = busy_j + idle_j + spin_j;
    let total_cpu_s: f64 = load.iter().map(|l| l * dt).sum();
    let (ie, ic) = ideal_fpga_only(total_cpu_s);
    let optimal = status == ::highs::HighsModelStatus::Optimal;
    Ok(MilpSolution {
        status: status_name,
        optimal,
        gap: if optimal { solved.mip_gap().max(0.0) } else { solved.mip_gap() },
        objective: solved.objective_value(),
        energy_busy_j: busy_j,
        energy_idle_j: idle_j,
        energy_spin_j: spin_j,
        energy_j,
        cost,
        energy_efficiency: if energy_j > 0.0 { ie / energy_j } else { 0.0 },
        relative_cost: if ic > 0.0 { cost / ic } else { 0.0 },
        cpu_work_share: if all_work > 0.0 { cpu_work / all_work } else { 0.0 },
        fpgas,
        cpus,
        size: (n_vars, n_int, rows),
        solve_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(fleet: Fleet, objective: Objective) -> MilpSpec {
        MilpSpec {
            platform: Platform::default(),
            fleet,
            objective,
            interval_s: 1.0,
            time_limit_s: 60.0,
            mip_rel_gap: 1e-6,
        }
    }

    #[test]
    fn flat_load_runs_on_fpgas_when_energy_optimal() {
        // 100 CPU workers of load = 50 FPGAs at 2x: exactly 50 FPGAs, all busy, all the time.
        let load = vec![100.0; 60];
        let s = solve(&spec(Fleet::HYBRID, Objective::ENERGY), &load).unwrap();
        assert!(s.optimal, "{}", s.status);
        assert!(s.fpgas.iter().all(|&f| f == 50), "{:?}", s.fpgas);
        assert!(s.cpu_work_share < 1e-9);
        // Busy energy = 50 FPGAs x 50 W x 60 s; spin-up 50 x 500 J; spin-down 50 x 5 J.
        assert!((s.energy_busy_j - 150_000.0).abs() < 1e-3, "{}", s.energy_busy_j);
        assert!((s.energy_spin_j - 50.0 * 505.0).abs() < 1e-3, "{}", s.energy_spin_j);
    }

    #[test]
    fn a_short_spike_goes_to_cpus_and_fpgas_live_their_spin_up() {
        let mut load = vec![20.0; 40];
        load[20] = 60.0; // one-second burst
        let s = solve(&spec(Fleet::HYBRID, Objective::ENERGY), &load).unwrap();
        assert!(s.optimal);
        assert_eq!(s.fpgas[20], s.fpgas[19], "an FPGA for one second never pays off: {:?}", s.fpgas);
        assert!(s.cpus[20] >= 40);
        // FPGA-only serves the spike with 30 FPGAs and honours the paper's lifetime constraint: at every
        // interval at least as many FPGAs are allocated as were spun up in the last 10 (the spin-up).
        let f = solve(&spec(Fleet::FPGA_ONLY, Objective::ENERGY), &load).unwrap();
        assert!(f.fpgas[20] >= 30);
        let ups: Vec<u32> = (0..f.fpgas.len())
            .map(|t| f.fpgas[t].saturating_sub(if t == 0 { 0 } else { f.fpgas[t - 1] }))
            .collect();
        for t in 0..f.fpgas.len() {
            let recent: u32 = ups[t.saturating_sub(9)..=t].iter().sum();
            assert!(f.fpgas[t] >= recent, "t={t}: {:?}", f.fpgas);
        }
        // Hybrid is at least as good as either homogeneous platform on its objective.
        let c = solve(&spec(Fleet::CPU_ONLY, Objective::ENERGY), &load).unwrap();
        assert!(s.energy_j <= f.energy_j + 1e-6 && s.energy_j <= c.energy_j + 1e-6);
    }

    #[test]
    fn cost_optimal_is_cheaper_and_energy_optimal_more_efficient() {
        let load: Vec<f64> = (0..120).map(|t| 40.0 + 30.0 * ((t as f64) / 7.0).sin().abs()).collect();
        let e = solve(&spec(Fleet::HYBRID, Objective::ENERGY), &load).unwrap();
        let c = solve(&spec(Fleet::HYBRID, Objective::COST), &load).unwrap();
        assert!(e.optimal && c.optimal);
        assert!(e.energy_j <= c.energy_j + 1e-6);
        assert!(c.cost <= e.cost + 1e-9);
    }

    #[test]
    fn rejects_bad_load() {
        assert!(solve(&spec(Fleet::HYBRID, Objective::ENERGY), &[]).is_err());
        assert!(solve(&spec(Fleet::HYBRID, Objective::ENERGY), &[1.0, f64::NAN]).is_err());
    }
}

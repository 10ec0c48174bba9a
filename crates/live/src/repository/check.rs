//! `spork kernel check`: a model's RTL co-simulated against its CPU code on random requests drawn
//! from its tensor spec, and on its edge shapes (every dimension at its minimum, then at its
//! maximum); the first mismatch is reported with where it is and both values, and the cycles per
//! item are measured on the largest request, streamed without backpressure.

use rand::{RngExt, SeedableRng};

use super::cpu::{AbiError, CpuLibrary};
use super::rtl::{Rtl, RtlError};
use super::spec::ModelSpec;
use super::tensor::TensorBuf;

/// How to check.
#[derive(Clone, Copy, Debug)]
pub struct CheckOptions {
    /// Random requests beside the two edge cases.
    pub requests: usize,
    /// Seed of the random requests.
    pub seed: u64,
    /// Largest dimension drawn for random requests (edge cases use the real bounds).
    pub cap: u64,
}

impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions { requests: 20, seed: 1, cap: 256 }
    }
}

/// One request checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// "min", "max" or "random 3".
    pub label: String,
    /// The dimensions, as `N=5`.
    pub dims: String,
    /// Its work items (one per stream beat), for cycles per item.
    pub items: u64,
    /// Cycles the RTL took on it.
    pub cycles: u64,
}

/// Where the RTL and the CPU code first disagree.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// The request's label, as in [`Case::label`].
    pub case: String,
    /// The output tensor's name.
    pub output: String,
    /// Row-major index of the element.
    pub index: usize,
    /// Its position in the output's shape.
    pub position: Vec<u64>,
    /// The RTL's value, as shown.
    pub rtl: String,
    /// The CPU code's value, the reference.
    pub cpu: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: output '{}' element {} (position {:?}): the RTL gave {}, the CPU code {}",
            self.case, self.output, self.index, self.position, self.rtl, self.cpu
        )
    }
}

/// What a check found.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// Every request checked, in order, up to and including the first mismatch.
    pub cases: Vec<Case>,
    /// The first disagreement, which ends the check; `None`: the RTL agrees with the CPU code.
    pub mismatch: Option<Mismatch>,
    /// Measured on the largest request without backpressure.
    pub cycles_per_item: f64,
    /// Whether the verilated model came from the cache, and what finding or building it took.
    pub cached: bool,
    /// Seconds spent finding or verilating it.
    pub verilate_s: f64,
}

/// Why a check could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The model (named) has no `[cpu]`: nothing to check against.
    #[error(
        "{0} has no [cpu] implementation to check against\n  fix: add [cpu] sources or library to model.toml"
    )]
    NoCpu(String),
    /// The model (named) has no `[fpga.sim]`: no RTL to check.
    #[error(
        "{0} has no [fpga.sim] implementation to check\n  fix: add [fpga.sim] sources and top to model.toml"
    )]
    NoSim(String),
    /// The CPU code could not be built, opened or initialised.
    #[error(transparent)]
    Abi(#[from] AbiError),
    /// The RTL could not be verilated or loaded, or its ports are too narrow.
    #[error(transparent)]
    Rtl(#[from] RtlError),
    /// The CPU code refused a request.
    #[error("{case}: the CPU code failed: {message}")]
    Cpu {
        /// The request's label.
        case: String,
        /// The kernel's own message.
        message: String,
    },
    /// The simulation failed on a request, or at reset.
    #[error("{case}: {source}")]
    Sim {
        /// The request's label, or "reset".
        case: String,
        /// What the simulator reported.
        source: spork_sim::SimError,
    },
}

/// Co-simulates `spec`'s RTL against its CPU code.
pub fn check(spec: &ModelSpec, opts: CheckOptions) -> Result<CheckReport, CheckError> {
    let cpu_spec = spec.cpu.as_ref().ok_or_else(|| CheckError::NoCpu(spec.name.clone()))?;
    let sim = spec.sim.as_ref().ok_or_else(|| CheckError::NoSim(spec.name.clone()))?;
    let lib = CpuLibrary::load(spec, cpu_spec)?;
    let rtl = Rtl::load(spec, sim)?;
    let mut cpu = lib.instance()?;
    let names = spec.c_names();
    let mut axis = rtl.instance().map_err(|source| CheckError::Sim { case: "reset".into(), source })?;
    let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(opts.seed);
    let (max, capped) = largest_that_fits(spec, MAX_CHECK_BYTES);
    let max_label = if capped { "max (capped)" } else { "max" };
    let mut plan: Vec<(String, Vec<u64>, bool)> = vec![
        ("min".into(), spec.dims.iter().map(|d| d.min).collect(), false),
        (max_label.into(), max, false),
    ];
    for i in 0..opts.requests {
        plan.push((format!("random {}", i + 1), spec.random_dims(&mut rng, opts.cap), true));
    }
    let mut report = CheckReport {
        cases: Vec::new(),
        mismatch: None,
        cycles_per_item: 0.0,
        cached: rtl.built.cached,
        verilate_s: rtl.built.took.as_secs_f64(),
    };
    for (label, values, backpressure) in plan {
        let inputs = spec.random_inputs(&values, &mut rng);
        let mut want = spec.outputs_for(&values);
        cpu.run((&names.0, &names.1), &inputs, &mut want)
            .map_err(|message| CheckError::Cpu { case: label.clone(), message })?;
        let mut got = spec.outputs_for(&values);
        // Random backpressure: TREADY high 70% of cycles, in a pattern of 4,093 cycles (prime, so it
        // does not beat with a design's own periods).
        let ready: Vec<bool> =
            if backpressure { (0..4093).map(|_| rng.random_bool(0.7)).collect() } else { Vec::new() };
        let cycles = rtl
            .run(&mut axis, &inputs, &values, &mut got, &ready)
            .map_err(|source| CheckError::Sim { case: label.clone(), source })?;
        let items = spec.items(&values);
        if label.starts_with("max") {
            report.cycles_per_item = cycles as f64 / items.max(1) as f64;
        }
        let dims = spec
            .dims
            .iter()
            .zip(&values)
            .map(|(d, v)| format!("{}={v}", d.name))
            .collect::<Vec<_>>()
            .join(" ");
        report.cases.push(Case { label: label.clone(), dims, items, cycles });
        if let Some(m) = first_difference(spec, &label, &got, &want) {
            report.mismatch = Some(m);
            break;
        }
    }
    Ok(report)
}

/// Most bytes the tensors of one checked request may take: a model whose largest request is bigger
/// (dimensions up to 2^32 elements are legal) is checked at the largest dimensions that fit.
const MAX_CHECK_BYTES: u64 = 512 << 20;

/// Every dimension at its maximum, the largest halved until the request's tensors fit in `budget`
/// bytes; whether any was cut.
fn largest_that_fits(spec: &ModelSpec, budget: u64) -> (Vec<u64>, bool) {
    let mut values: Vec<u64> = spec.dims.iter().map(|d| d.max).collect();
    let bytes = |v: &[u64]| -> u64 {
        spec.inputs
            .iter()
            .chain(&spec.outputs)
            .map(|t| t.shape.iter().fold(t.dtype.size() as u64, |a, e| a.saturating_mul(e.eval(v))))
            .fold(0u64, u64::saturating_add)
    };
    let mut capped = false;
    while bytes(&values) > budget {
        let Some((i, _)) =
            values.iter().enumerate().filter(|&(i, &v)| v / 2 >= spec.dims[i].min).max_by_key(|&(_, &v)| v)
        else {
            break;
        };
        values[i] /= 2;
        capped = true;
    }
    (values, capped)
}

fn first_difference(spec: &ModelSpec, case: &str, rtl: &[TensorBuf], cpu: &[TensorBuf]) -> Option<Mismatch> {
    for ((r, c), s) in rtl.iter().zip(cpu).zip(&spec.outputs) {
        let n = c.elements() as usize;
        if let Some(i) = (0..n).find(|&i| r.bits(i) != c.bits(i)) {
            return Some(Mismatch {
                case: case.into(),
                output: s.name.clone(),
                index: i,
                position: position(&c.shape, i as u64),
                rtl: r.show(i),
                cpu: c.show(i),
            });
        }
    }
    None
}

/// The multi-index of row-major element `i` in `shape`.
fn position(shape: &[u64], mut i: u64) -> Vec<u64> {
    let mut pos = vec![0; shape.len()];
    for (p, &d) in pos.iter_mut().zip(shape).rev() {
        *p = i % d.max(1);
        i /= d.max(1);
    }
    pos
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_largest_request_is_cut_to_the_budget_halving_the_largest_dimension() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("big");
        std::fs::create_dir(&model).unwrap();
        let toml = "format = 1\n[dims]\nR = { min = 1, max = 65536 }\nL = { min = 1, max = 65536 }\n\
                    [[input]]\nname = \"x\"\ndatatype = \"INT64\"\nshape = [\"R\", \"L\"]\n\
                    [[output]]\nname = \"y\"\ndatatype = \"INT64\"\nshape = [\"R\"]\n";
        std::fs::write(model.join("model.toml"), toml).unwrap();
        let spec = crate::repository::spec::load(&model).unwrap();
        let (v, capped) = super::largest_that_fits(&spec, 1 << 20);
        assert!(capped);
        // 8 bytes x R x L (+ 8 x R) within 1 MiB, and no dimension cut more than the other needs.
        assert!(8 * v[0] * v[1] + 8 * v[0] <= 1 << 20, "{v:?}");
        assert!(v[0].abs_diff(v[1]) <= v[0].max(v[1]) / 2, "{v:?}");
        assert_eq!(super::largest_that_fits(&spec, u64::MAX), (vec![65536, 65536], false));
    }

    #[test]
    fn positions_are_row_major() {
        assert_eq!(super::position(&[2, 3], 4), vec![1, 1]);
        assert_eq!(super::position(&[5], 4), vec![4]);
    }
}

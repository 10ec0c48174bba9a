//! A checked model: `model.toml` read, every rule of format 1 applied, every path resolved and found.
//! Each refusal names the file, line and column, and the fix.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use spork_kernel::ffi::DType;
use spork_sim::axis::AxisPorts;

use super::file::{self, DimEntry, ModelFile, TensorFile};
use super::shape::{Dim, DimExpr};
use spork_core::input::{InputError, Location};

/// A model's tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorSpec {
    /// Its name, as requests and the C ABI carry it.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// Its shape over the model's dims, so its size follows from a request's.
    pub shape: Vec<DimExpr>,
}

/// Where a model's CPU code comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuCode {
    /// C or C++ sources Spork compiles (paths resolved).
    Sources(Vec<PathBuf>),
    /// A library the user built.
    Library(PathBuf),
}

/// `[cpu]`.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuSpec {
    /// Sources to compile, or a library.
    pub code: CpuCode,
    /// The files the sources include (relative to the folder): read, hashed and given to the
    /// compiler with them; no other file of the folder is.
    pub headers: Vec<PathBuf>,
    /// Passed to `spork_kernel_init`, so one library can serve differently configured models.
    pub config: String,
    /// Where the code runs: in kernel processes of its own (the default), or in the server.
    pub isolation: Isolation,
    /// The longest one call (or a kernel process's start) may take before its process is killed.
    pub timeout: std::time::Duration,
    /// The most heap a kernel process may hold, in bytes.
    pub memory: u64,
}

/// Where a model's CPU code runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// In kernel processes of its own: a crash, hang or runaway allocation fails its own requests.
    Process,
    /// In the server's own threads: for trusted code only (a crash takes the server down).
    None,
}

/// A call's timeout when `[cpu] timeout` is not given.
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A kernel process's heap bound when `[cpu] memory_mib` is not given.
pub const DEFAULT_MEMORY_MIB: u64 = 1024;

/// Where TLAST falls on the input stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Last {
    /// The last beat of each row (innermost dimension).
    Row,
    /// The last beat of the request.
    Request,
}

/// `[fpga.sim]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SimSpec {
    /// Sources relative to the model's folder, as written (so Verilator's messages read as the user's).
    pub sources: Vec<PathBuf>,
    /// The top module's name.
    pub top: String,
    /// The clock, reset and stream port names to bind.
    pub ports: AxisPorts,
    /// Where TLAST falls on the input stream.
    pub last: Last,
    /// Each scalar port's dimension (an index into the model's dims), in `ports.scalars`' order:
    /// set to the request's value before its stream.
    pub scalars: Vec<usize>,
    /// Elements of every tensor a beat carries (`lanes`, 1 when not given): lane k of a beat holds
    /// one element of each tensor, packed as a one-lane beat, at bit k x the group's width.
    pub lanes: usize,
}

/// Lanes a beat may carry: TKEEP has a bit per lane and the driver holds it in 64 bits.
pub const MAX_LANES: u64 = 64;

/// The widest beat the simulated board streams (a Vitis 512-bit data mover's).
pub const MAX_BEAT_BITS: usize = 512;

impl ModelSpec {
    /// Its dynamic batching, if it asks for one: `[batching]` with `max_batch_size` above 1 (at 1
    /// the model only says how its requests stack, for a run whose flags batch it).
    pub fn dynamic_batching(&self) -> Option<&BatchingSpec> {
        self.batching.as_ref().filter(|b| b.max_batch_size > 1)
    }

    /// Bits of the model's widest beat (inputs' or outputs'): `lanes` element groups; 0 without RTL.
    pub fn beat_bits(&self) -> usize {
        let Some(sim) = &self.sim else { return 0 };
        [&self.inputs, &self.outputs]
            .map(|ts| ts.iter().map(|t| t.dtype.size() * 8).sum::<usize>() * sim.lanes)
            .into_iter()
            .max()
            .unwrap_or(0)
    }

    /// The word width of the data movers (scripts/vitis/) a real board's image of this model is
    /// built with: 64 bits, or 512 when a beat is wider, one beat a word either way.
    pub fn mover_bits(&self) -> usize {
        if self.beat_bits() <= 64 { 64 } else { MAX_BEAT_BITS }
    }
}

/// `[fpga.model]`: the emulated board's timing.
#[derive(Clone, Debug, PartialEq)]
pub enum TimingSpec {
    /// From a manifest `spork kernel synth` wrote.
    Manifest(PathBuf),
    /// Given inline.
    Given {
        /// The kernel's clock, in MHz.
        clock_mhz: f64,
        /// Items it takes per cycle.
        items_per_cycle: f64,
        /// Cycles before the first output (0 if not given).
        latency_cycles: u64,
    },
}

/// `[fpga.alveo]`: an xclbin of the model's `[fpga.sim]` RTL between Spork's data movers
/// (`mm2s` -> the kernel -> `s2mm`), streamed in the same packing, its scalars as leading words.
#[derive(Clone, Debug, PartialEq)]
pub struct AlveoSpec {
    /// The bitstream (path resolved).
    pub xclbin: PathBuf,
}

/// `[fpga.f1]`: the same on an AWS F1 slot.
#[derive(Clone, Debug, PartialEq)]
pub struct F1Spec {
    /// The FPGA image's id, as AWS returned it (`agfi-...`).
    pub agfi: String,
    /// The `.awsxclbin` XRT loads for the data path (path resolved).
    pub xclbin: PathBuf,
}

/// A model of the repository, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpec {
    /// The folder's name.
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// What the model does, as `model.toml` says it.
    pub description: String,
    /// The deadline as a multiple of a request's service time; `None`: the default.
    pub deadline_factor: Option<f64>,
    /// The variable dimensions with their bounds, by name; shapes index into them.
    pub dims: Vec<Dim>,
    /// The inputs, in the order kernels receive them.
    pub inputs: Vec<TensorSpec>,
    /// The outputs, in order; their shapes follow from the inputs'.
    pub outputs: Vec<TensorSpec>,
    /// Dimensions (indices into `dims`) whose product counts items; empty: the first input's elements.
    pub items: Vec<usize>,
    /// Brownout's optional part: each input's and output's optional name, in order.
    pub optional: Option<(Vec<String>, Vec<String>)>,
    /// `[cpu]`: the CPU implementation, also the reference `spork kernel check` uses.
    pub cpu: Option<CpuSpec>,
    /// `[fpga.sim]`: the RTL for the simulated board.
    pub sim: Option<SimSpec>,
    /// `[fpga.model]`: the emulated board's timing.
    pub timing: Option<TimingSpec>,
    /// `[fpga.alveo]`: the kernel for Alveo boards.
    pub alveo: Option<AlveoSpec>,
    /// `[fpga.f1]`: the kernel for AWS F1 slots.
    pub f1: Option<F1Spec>,
    /// `[batching]`: requests stacked along a dimension every input and output leads with.
    pub batching: Option<BatchingSpec>,
}

/// A model's dynamic batching, as `model.toml` states it (the policy checks the rule's figures).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchingSpec {
    /// The dimension (an index into `dims`) requests stack along.
    pub dim: usize,
    /// The most requests in one batch.
    pub max_batch_size: u32,
    /// Sizes that close a batch at once.
    pub preferred_batch_size: Vec<u32>,
    /// The longest a batch waits for more requests once its board is free, microseconds.
    pub max_queue_delay_us: u64,
    /// Rows each output lacks at either edge of `dim` (a 3x3 window: 1): outputs lead with
    /// `dim - 2 halo`, and the rows centred on each seam between members are computed and dropped.
    pub halo: u64,
}

/// Most elements one tensor may have at its largest dimensions (2^32: 4 Gi).
const MAX_ELEMENTS: u64 = 1 << 32;

/// Reads and checks the model in `dir`.
pub fn load(dir: &Path) -> Result<ModelSpec, InputError> {
    let path = dir.join("model.toml");
    let text = InputError::read(&path)?;
    parse(dir, &path, &text)
}

/// Checks `text`, read from `path` in the model folder `dir`.
pub fn parse(dir: &Path, path: &Path, text: &str) -> Result<ModelSpec, InputError> {
    let fix = "see docs/model-repository.md for model.toml's format";
    let raw: ModelFile = toml::from_str(text).map_err(|e| InputError::from_toml(path, text, &e, fix))?;
    Checker { dir, path, text }.model(raw)
}

struct Checker<'a> {
    dir: &'a Path,
    path: &'a Path,
    text: &'a str,
}

impl Checker<'_> {
    fn err(&self, span: Range<usize>, field: &str, problem: String, fix: &str) -> InputError {
        InputError::invalid(Location::at(self.path, self.text, span.start), field, problem, fix)
    }

    fn model(&self, raw: ModelFile) -> Result<ModelSpec, InputError> {
        let name = model_name(self.dir)?;
        if *raw.format.get_ref() != file::FORMAT {
            let problem = format!("format {} is not one this Spork reads", raw.format.get_ref());
            let fix = "write format = 1, or upgrade Spork if the model was written for a newer one";
            return Err(self.err(raw.format.span(), "format", problem, fix));
        }
        if let Some(d) = &raw.deadline_factor
            && !(d.get_ref().is_finite() && *d.get_ref() >= 1.0)
        {
            let fix = "give a factor of at least 1 (the deadline is this times the service time)";
            return Err(self.err(
                d.span(),
                "deadline_factor",
                format!("{} is not a factor", d.get_ref()),
                fix,
            ));
        }
        let dims = self.dims(&raw)?;
        let inputs = self.tensors(&raw.inputs, "input", &dims, false)?;
        let outputs = self.tensors(&raw.outputs, "output", &dims, true)?;
        if inputs.is_empty() || outputs.is_empty() {
            let fix = "declare at least one [[input]] and one [[output]]";
            return Err(self.err(0..0, "input", "a model needs inputs and outputs".into(), fix));
        }
        self.unique_names(&raw, &inputs, &outputs)?;
        self.dims_used(&raw, &dims, &inputs)?;
        let items = self.items(&raw, &dims)?;
        let optional = raw.optional.as_ref().map(|o| self.optional(o, &inputs, &outputs)).transpose()?;
        let sim = raw.fpga.sim.as_ref().map(|s| self.sim(s, &dims)).transpose()?;
        let spec = ModelSpec {
            name,
            dir: self.dir.to_path_buf(),
            description: raw.description.clone(),
            deadline_factor: raw.deadline_factor.as_ref().map(|d| *d.get_ref()),
            dims,
            inputs,
            outputs,
            items,
            optional,
            cpu: raw.cpu.as_ref().map(|c| self.cpu(c)).transpose()?,
            sim,
            timing: raw.fpga.model.as_ref().map(|m| self.timing(m)).transpose()?,
            alveo: raw.fpga.alveo.as_ref().map(|a| self.alveo(a)).transpose()?,
            f1: raw.fpga.f1.as_ref().map(|f| self.f1(f)).transpose()?,
            batching: None,
        };
        let batching = raw.batching.as_ref().map(|b| self.batching(b, &spec)).transpose()?;
        let spec = ModelSpec { batching, ..spec };
        if let (Some(sim), Some(s)) = (&spec.sim, &raw.fpga.sim) {
            self.stream_fits(&spec, sim, s.span())?;
        }
        let board = raw.fpga.alveo.as_ref().map(|a| ("fpga.alveo", a.span())).or(raw
            .fpga
            .f1
            .as_ref()
            .map(|f| ("fpga.f1", f.span())));
        if let (None, Some((field, span))) = (&spec.sim, board) {
            let fix = "add the [fpga.sim] the xclbin was built from: its ports, TLAST rule and scalars frame the stream";
            return Err(self.err(
                span,
                field,
                "a real board's image needs the model's [fpga.sim]".into(),
                fix,
            ));
        }
        // A real board's beats are bounded as the simulated board's (`stream_fits`): its data movers
        // are built 64 or 512 bits wide to match ([`ModelSpec::mover_bits`]).
        Ok(spec)
    }

    fn dims(&self, raw: &ModelFile) -> Result<Vec<Dim>, InputError> {
        let mut dims = Vec::new();
        for (name, d) in &raw.dims {
            let field = format!("dims.{name}");
            if !is_identifier(name) {
                let fix = "name dimensions with letters, digits and _ (starting with a letter)";
                return Err(self.err(d.span(), &field, format!("'{name}' is not a dimension name"), fix));
            }
            let b = d.get_ref();
            if b.min == 0 || b.min > b.max || b.max > MAX_ELEMENTS {
                let fix = "give 1 <= min <= max <= 4294967296";
                let problem = format!("bounds {}..={} are not a dimension's", b.min, b.max);
                return Err(self.err(d.span(), &field, problem, fix));
            }
            dims.push(Dim { name: name.clone(), min: b.min, max: b.max });
        }
        Ok(dims)
    }

    fn tensors(
        &self,
        raw: &[TensorFile],
        what: &str,
        dims: &[Dim],
        output: bool,
    ) -> Result<Vec<TensorSpec>, InputError> {
        raw.iter().map(|t| self.tensor(t, what, dims, output)).collect()
    }

    fn tensor(
        &self,
        t: &TensorFile,
        what: &str,
        dims: &[Dim],
        output: bool,
    ) -> Result<TensorSpec, InputError> {
        let name = t.name.get_ref();
        if !is_identifier(name) {
            let fix = "name tensors with letters, digits and _ (starting with a letter)";
            return Err(self.err(t.name.span(), what, format!("'{name}' is not a tensor name"), fix));
        }
        let dtype = DType::parse(t.datatype.get_ref()).ok_or_else(|| {
            let known: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
            let problem = format!("datatype '{}' is not one the C ABI takes", t.datatype.get_ref());
            let fix = format!("use one of {}", known.join(", "));
            self.err(t.datatype.span(), &format!("{what}.datatype"), problem, &fix)
        })?;
        let entries = t.shape.get_ref();
        if entries.is_empty() || entries.len() > spork_kernel::MAX_RANK {
            let fix = "give between 1 and 8 dimensions";
            let problem = format!("{name} has {} dimensions", entries.len());
            return Err(self.err(t.shape.span(), &format!("{what}.shape"), problem, fix));
        }
        let mut shape = Vec::new();
        for e in entries {
            shape.push(self.dim_expr(e, dims, output, &format!("{what}.shape"))?);
        }
        let largest = shape.iter().try_fold(1u64, |a, d| a.checked_mul(d.at_max(dims)));
        if largest.is_none_or(|n| n > MAX_ELEMENTS) {
            let fix = "lower the dimensions' max (a tensor holds at most 2^32 elements)";
            let problem = format!("{name} can hold more than 2^32 elements");
            return Err(self.err(t.shape.span(), &format!("{what}.shape"), problem, fix));
        }
        Ok(TensorSpec { name: name.clone(), dtype, shape })
    }

    fn dim_expr(
        &self,
        e: &toml::Spanned<DimEntry>,
        dims: &[Dim],
        output: bool,
        field: &str,
    ) -> Result<DimExpr, InputError> {
        let expr = match e.get_ref() {
            DimEntry::Fixed(n) if *n >= 1 => DimExpr::Fixed(*n as u64),
            DimEntry::Fixed(n) => {
                let fix = "fixed dimensions are at least 1";
                return Err(self.err(e.span(), field, format!("{n} is not a dimension"), fix));
            }
            DimEntry::Named(s) => DimExpr::parse(s, dims).map_err(|why| {
                self.err(e.span(), field, why, "write a [dims] name, or NAME-k / NAME+k in an output")
            })?,
        };
        if let DimExpr::Var { offset, .. } = expr
            && offset != 0
            && !output
        {
            let fix = "an input's dimensions are plain names or numbers; offsets belong to outputs";
            return Err(self.err(e.span(), field, "an offset in an input's shape".into(), fix));
        }
        if expr.at_min(dims) < 1 {
            let fix = "raise the dimension's min so that every output dimension is at least 1";
            return Err(self.err(e.span(), field, "this dimension can be 0 or less".into(), fix));
        }
        Ok(expr)
    }

    fn unique_names(
        &self,
        raw: &ModelFile,
        inputs: &[TensorSpec],
        outputs: &[TensorSpec],
    ) -> Result<(), InputError> {
        let mut seen = BTreeSet::new();
        let spans = raw.inputs.iter().chain(&raw.outputs).map(|t| t.name.span());
        for (t, span) in inputs.iter().chain(outputs).zip(spans) {
            if !seen.insert(t.name.as_str()) {
                let fix = "give every input and output its own name";
                return Err(self.err(span, "name", format!("'{}' is used twice", t.name), fix));
            }
        }
        Ok(())
    }

    /// Every dimension is bound by some input, so the outputs' shapes follow from the inputs'.
    fn dims_used(&self, raw: &ModelFile, dims: &[Dim], inputs: &[TensorSpec]) -> Result<(), InputError> {
        for (i, d) in dims.iter().enumerate() {
            let used = inputs.iter().flat_map(|t| &t.shape).any(|e| e.var() == Some(i));
            if !used {
                let span = raw.dims.get(&d.name).map_or(0..0, |s| s.span());
                let fix = "use it in an input's shape, or remove it";
                return Err(self.err(
                    span,
                    &format!("dims.{}", d.name),
                    "no input has this dimension".into(),
                    fix,
                ));
            }
        }
        Ok(())
    }

    /// `[batching]`: its dimension must lead every input and output (a batch is their stacking along
    /// it, and each member's answer is its own rows).
    fn batching(
        &self,
        b: &toml::Spanned<file::BatchingFile>,
        spec: &ModelSpec,
    ) -> Result<BatchingSpec, InputError> {
        let raw = b.get_ref();
        let Some(dim) = spec.dims.iter().position(|d| d.name == raw.dim) else {
            let fix = "name one of the model's [dims]";
            return Err(self.err(b.span(), "batching.dim", format!("'{}' is not a dimension", raw.dim), fix));
        };
        let edge = i64::try_from(raw.halo).ok().and_then(|h| h.checked_mul(-2)).unwrap_or(i64::MIN);
        let leads = |t: &TensorSpec, by: i64| matches!(t.shape.first(), Some(DimExpr::Var { var, offset }) if *var == dim && *offset == by);
        let bad = spec
            .inputs
            .iter()
            .find(|t| !leads(t, 0))
            .or_else(|| spec.outputs.iter().find(|t| !leads(t, edge)));
        if let Some(t) = bad {
            let fix = "put the batch dimension first in every [[input]] and [[output]] shape (outputs as dim - 2 \
                       halo, halo being the rows a window needs on either side), or drop [batching]";
            let want = if raw.halo == 0 { raw.dim.clone() } else { format!("{}-{}", raw.dim, 2 * raw.halo) };
            let problem = format!(
                "'{}' does not lead with {want}: a batch stacks every tensor along {}",
                t.name, raw.dim
            );
            return Err(self.err(b.span(), "batching.dim", problem, fix));
        }
        Ok(BatchingSpec {
            dim,
            max_batch_size: raw.max_batch_size,
            preferred_batch_size: raw.preferred_batch_size.clone(),
            max_queue_delay_us: raw.max_queue_delay_us,
            halo: raw.halo,
        })
    }

    fn items(&self, raw: &ModelFile, dims: &[Dim]) -> Result<Vec<usize>, InputError> {
        let Some(items) = &raw.items else { return Ok(Vec::new()) };
        items
            .get_ref()
            .iter()
            .map(|n| {
                dims.iter().position(|d| &d.name == n).ok_or_else(|| {
                    let fix = "list [dims] names whose product counts a request's items";
                    self.err(items.span(), "items", format!("'{n}' is not a dimension"), fix)
                })
            })
            .collect()
    }

    fn optional(
        &self,
        o: &toml::Spanned<file::OptionalFile>,
        inputs: &[TensorSpec],
        outputs: &[TensorSpec],
    ) -> Result<(Vec<String>, Vec<String>), InputError> {
        let map = |tensors: &[TensorSpec], names: &std::collections::BTreeMap<String, String>, what: &str| {
            if names.len() != tensors.len() {
                let fix = format!("give every {what} an optional name, and only those");
                return Err(self.err(
                    o.span(),
                    "optional",
                    format!("{} {what} names for {} {what}s", names.len(), tensors.len()),
                    &fix,
                ));
            }
            tensors
                .iter()
                .map(|t| {
                    let n = names.get(&t.name).filter(|n| is_identifier(n)).ok_or_else(|| {
                        let fix = format!("map {what} '{}' to a new name", t.name);
                        self.err(o.span(), "optional", format!("no optional name for '{}'", t.name), &fix)
                    })?;
                    if inputs.iter().chain(outputs).any(|x| &x.name == n) {
                        let fix = "an optional part's names differ from the mandatory part's";
                        return Err(self.err(
                            o.span(),
                            "optional",
                            format!("'{n}' is already a tensor"),
                            fix,
                        ));
                    }
                    Ok(n.clone())
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let o_ref = o.get_ref();
        Ok((map(inputs, &o_ref.inputs, "input")?, map(outputs, &o_ref.outputs, "output")?))
    }

    /// A path relative to the model's folder, which must name a regular file inside it: no
    /// absolute path, no `..`, no symbolic link that leads out, and no name a tool could read as a
    /// flag (a leading `-`).
    fn file(&self, p: &toml::Spanned<String>, field: &str, fix: &str) -> Result<PathBuf, InputError> {
        let rel = PathBuf::from(p.get_ref());
        let full = self.dir.join(&rel);
        let plain = rel.components().all(|c| matches!(c, std::path::Component::Normal(_)));
        let problem = if !plain || p.get_ref().starts_with('-') || p.get_ref().is_empty() {
            Some(format!(
                "'{}' is not a plain path inside the model's folder (no /, .., or leading -)",
                rel.display()
            ))
        } else if !full.is_file() {
            Some(format!("{} does not exist as a file (looked for {})", rel.display(), full.display()))
        } else {
            match (full.canonicalize(), self.dir.canonicalize()) {
                (Ok(f), Ok(d)) if f.starts_with(&d) => None,
                _ => Some(format!("{} leads out of the model's folder (a symbolic link)", rel.display())),
            }
        };
        match problem {
            Some(problem) => Err(self.err(p.span(), field, problem, fix)),
            None => Ok(rel),
        }
    }

    fn cpu(&self, c: &toml::Spanned<file::CpuFile>) -> Result<CpuSpec, InputError> {
        let r = c.get_ref();
        let fix = "give the path relative to the model's folder";
        let code = match (&r.sources, &r.library) {
            (Some(s), None) if !s.is_empty() => {
                let paths =
                    s.iter().map(|p| self.file(p, "cpu.sources", fix)).collect::<Result<Vec<_>, _>>()?;
                CpuCode::Sources(paths)
            }
            (None, Some(l)) => CpuCode::Library(self.dir.join(self.file(l, "cpu.library", fix)?)),
            _ => {
                let fix = "give either sources = [\"cpu/x.c\"] (compiled by Spork) or library = \"libx.so\"";
                return Err(self.err(
                    c.span(),
                    "cpu",
                    "needs exactly one of sources and library".into(),
                    fix,
                ));
            }
        };
        let isolation = match r.isolation.as_ref().map(|i| (i.get_ref().as_str(), i.span())) {
            None | Some(("process", _)) => Isolation::Process,
            Some(("none", _)) => Isolation::None,
            Some((other, span)) => {
                let fix =
                    "write isolation = \"process\" (the default) or \"none\" (trusted code, in the server)";
                return Err(self.err(span, "cpu.isolation", format!("'{other}' is not an isolation"), fix));
            }
        };
        let timeout = match &r.timeout {
            None => DEFAULT_TIMEOUT,
            Some(t) => humantime::parse_duration(t.get_ref())
                .ok()
                .filter(|d| !d.is_zero() && *d <= std::time::Duration::from_secs(3600))
                .ok_or_else(|| {
                    let fix = "write a duration between 1ms and 1h, such as timeout = \"5s\"";
                    self.err(t.span(), "cpu.timeout", format!("'{}' is not a timeout", t.get_ref()), fix)
                })?,
        };
        let memory_mib = r.memory_mib.as_ref().map_or(DEFAULT_MEMORY_MIB, |m| *m.get_ref());
        if !(16..=1 << 20).contains(&memory_mib) {
            let span = r.memory_mib.as_ref().map_or(c.span(), |m| m.span());
            let fix = "give memory_mib between 16 and 1048576 (1 TiB)";
            return Err(self.err(span, "cpu.memory_mib", format!("{memory_mib} MiB is out of range"), fix));
        }
        let headers = r.headers.iter().map(|h| self.file(h, "cpu.headers", fix)).collect::<Result<_, _>>()?;
        Ok(CpuSpec { code, headers, config: r.config.clone(), isolation, timeout, memory: memory_mib << 20 })
    }

    fn sim(&self, s: &toml::Spanned<file::SimFile>, dims: &[Dim]) -> Result<SimSpec, InputError> {
        let r = s.get_ref();
        if r.sources.is_empty() || !is_identifier(&r.top) {
            let fix = "give sources = [\"rtl/x.v\"] and the top module's name";
            return Err(self.err(s.span(), "fpga.sim", "needs sources and a top module".into(), fix));
        }
        let fix = "give the Verilog path relative to the model's folder";
        let sources =
            r.sources.iter().map(|p| self.file(p, "fpga.sim.sources", fix)).collect::<Result<_, _>>()?;
        let last = match r.last.as_ref().map(|l| l.get_ref().as_str()) {
            None | Some("row") => Last::Row,
            Some("request") => Last::Request,
            Some(other) => {
                let span = r.last.as_ref().map_or(s.span(), |l| l.span());
                let fix = "write last = \"row\" or last = \"request\"";
                return Err(self.err(span, "fpga.sim.last", format!("'{other}' is not a TLAST rule"), fix));
            }
        };
        let d = AxisPorts::default();
        let reset = match &r.reset {
            None => d.reset,
            Some(n) if n.is_empty() => None,
            Some(n) => Some(n.clone()),
        };
        let reset_active_high = match r.reset_active.as_ref().map(|l| l.get_ref().as_str()) {
            None | Some("low") => false,
            Some("high") => true,
            Some(other) => {
                let span = r.reset_active.as_ref().map_or(s.span(), |l| l.span());
                let fix = "write reset_active = \"low\" (ap_rst_n, the default) or \"high\" (rst)";
                return Err(self.err(
                    span,
                    "fpga.sim.reset_active",
                    format!("'{other}' is not a level"),
                    fix,
                ));
            }
        };
        let mut scalars = (Vec::new(), Vec::new());
        for (port, dim) in r.scalars.as_ref().map(|m| m.get_ref().iter()).into_iter().flatten() {
            let Some(i) = dims.iter().position(|d| &d.name == dim) else {
                let span = r.scalars.as_ref().map_or(s.span(), |m| m.span());
                let fix = "map each scalar port to a dimension of [dims], as scalars = { width = \"W\" }";
                return Err(self.err(span, "fpga.sim.scalars", format!("'{dim}' is not a dimension"), fix));
            };
            scalars.0.push(port.clone());
            scalars.1.push(i);
        }
        let lanes = match &r.lanes {
            None => 1,
            Some(n) if (1..=MAX_LANES).contains(n.get_ref()) => *n.get_ref() as usize,
            Some(n) => {
                let fix = format!("give lanes = 1..={MAX_LANES} (elements of each tensor per beat)");
                return Err(self.err(n.span(), "fpga.sim.lanes", format!("{} lanes", n.get_ref()), &fix));
            }
        };
        let ports = AxisPorts {
            clock: r.clock.clone().unwrap_or(d.clock),
            reset,
            reset_active_high,
            input: r.input.clone().unwrap_or(d.input),
            output: r.output.clone().unwrap_or(d.output),
            scalars: scalars.0,
        };
        Ok(SimSpec { sources, top: r.top.clone(), ports, last, scalars: scalars.1, lanes })
    }

    /// The zip packing: inputs share one shape (and so an element count), outputs another, and
    /// each side's `lanes` element groups fit one beat of at most [`MAX_BEAT_BITS`].
    fn stream_fits(&self, spec: &ModelSpec, sim: &SimSpec, span: Range<usize>) -> Result<(), InputError> {
        for (what, tensors) in [("inputs", &spec.inputs), ("outputs", &spec.outputs)] {
            if tensors.iter().any(|t| t.shape != tensors[0].shape) {
                let fix = "the stream carries element i of every tensor in one beat: give them one shape";
                return Err(self.err(span.clone(), "fpga.sim", format!("the {what} differ in shape"), fix));
            }
            let bits: usize = tensors.iter().map(|t| t.dtype.size() * 8).sum::<usize>() * sim.lanes;
            if bits > MAX_BEAT_BITS {
                let fix = "the simulated board's TDATA is at most 512 bits: fewer lanes or narrower types";
                return Err(self.err(
                    span.clone(),
                    "fpga.sim",
                    format!("the {what} need {bits}-bit beats"),
                    fix,
                ));
            }
        }
        Ok(())
    }

    fn timing(&self, m: &toml::Spanned<file::TimingFile>) -> Result<TimingSpec, InputError> {
        let r = m.get_ref();
        match (&r.manifest, r.clock_mhz, r.items_per_cycle) {
            (Some(p), None, None) => {
                let fix = "run `spork kernel synth DIR` to write it, or give clock_mhz and items_per_cycle";
                Ok(TimingSpec::Manifest(self.dir.join(self.file(p, "fpga.model.manifest", fix)?)))
            }
            (None, Some(c), Some(i)) if c.is_finite() && c > 0.0 && i.is_finite() && i > 0.0 => {
                Ok(TimingSpec::Given {
                    clock_mhz: c,
                    items_per_cycle: i,
                    latency_cycles: r.latency_cycles.unwrap_or(0),
                })
            }
            _ => {
                let fix = "give manifest = \"synth.toml\", or clock_mhz and items_per_cycle (both positive)";
                Err(self.err(m.span(), "fpga.model", "no timing".into(), fix))
            }
        }
    }

    fn alveo(&self, a: &toml::Spanned<file::AlveoFile>) -> Result<AlveoSpec, InputError> {
        let fix = "give the xclbin's path relative to the model's folder (scripts/build-xclbin.sh --model writes one)";
        Ok(AlveoSpec { xclbin: self.dir.join(self.file(&a.get_ref().xclbin, "fpga.alveo.xclbin", fix)?) })
    }

    fn f1(&self, f: &toml::Spanned<file::F1File>) -> Result<F1Spec, InputError> {
        let r = f.get_ref();
        let agfi = r.agfi.get_ref();
        let hex = agfi
            .strip_prefix("agfi-")
            .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()));
        if !hex {
            let fix = "give the AGFI id AWS returned (agfi-0123456789abcdef0)";
            return Err(self.err(r.agfi.span(), "fpga.f1.agfi", format!("'{agfi}' is not an AGFI id"), fix));
        }
        let fix = "give the .awsxclbin's path relative to the model's folder";
        let xclbin = self.dir.join(self.file(&r.xclbin, "fpga.f1.xclbin", fix)?);
        Ok(F1Spec { agfi: agfi.clone(), xclbin })
    }
}

/// The model's name: its folder's, which must be a name the protocol can carry in a URL (`.` or
/// `..` name the folder they resolve to: `spork kernel check .` from inside it).
fn model_name(dir: &Path) -> Result<String, InputError> {
    let resolved = match dir.file_name() {
        Some(_) => None,
        None => dir.canonicalize().ok(),
    };
    let named = resolved.as_deref().unwrap_or(dir);
    let name = named.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if !valid_model_name(&name) {
        let location = Location { path: dir.join("model.toml"), line: 1, column: 1 };
        let fix = "rename the folder: letters, digits, _ - . (at most 64, not starting with .)";
        return Err(InputError::invalid(location, "name", format!("'{name}' is not a model name"), fix));
    }
    Ok(name)
}

/// Whether `name` can name a model: letters, digits, `_`, `-` and `.`, at most 64, not starting
/// with `.` (so it is one path component and fits in a URL).
pub fn valid_model_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        && !name.starts_with('.')
}

/// Letters, digits and `_`, starting with a letter or `_`.
pub fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
        && s.len() <= 64
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"format = 1
items = ["H", "W"]
[dims]
H = { min = 3, max = 100 }
W = { min = 3, max = 256 }
[[input]]
name = "image"
datatype = "UINT8"
shape = ["H", "W"]
[[output]]
name = "magnitudes"
datatype = "UINT8"
shape = ["H-2", "W-2"]
"#;

    fn parse_text(text: &str) -> Result<ModelSpec, String> {
        parse(Path::new("/nowhere/sobel"), Path::new("sobel/model.toml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn a_good_model_binds_its_outputs_to_its_inputs() {
        let m = parse_text(GOOD).unwrap();
        assert_eq!((m.name.as_str(), m.items.clone()), ("sobel", vec![0, 1]));
        assert_eq!(m.outputs[0].shape[1].show(&m.dims), "W-2");
        assert_eq!(m.outputs[0].shape[0].eval(&[5, 9]), 3);
    }

    #[test]
    fn batching_needs_a_dimension_every_tensor_leads_with() {
        // Sobel's output leads with H-2, not H: its rows are not independent along H.
        let sobel = format!("{GOOD}[batching]\ndim = \"H\"\nmax_batch_size = 8\n");
        let e = parse_text(&sobel).unwrap_err();
        assert!(e.contains(":14:") && e.contains("'magnitudes' does not lead with H"), "{e}");
        // With its 3x3 window's halo stated, sobel batches along H.
        let windowed = parse_text(&format!("{sobel}halo = 1\n")).unwrap();
        assert_eq!(windowed.batching.map(|b| (b.dim, b.halo)), Some((0, 1)));
        let e = parse_text(&format!("{sobel}halo = 2\n")).unwrap_err();
        assert!(e.contains("'magnitudes' does not lead with H-4"), "{e}");
        let unknown = format!("{GOOD}[batching]\ndim = \"Z\"\nmax_batch_size = 8\n");
        assert!(parse_text(&unknown).unwrap_err().contains("'Z' is not a dimension"));
        let rows = GOOD.replace("\"H-2\", \"W-2\"", "\"H\", \"W\"");
        let m = parse_text(&format!("{rows}[batching]\ndim = \"H\"\nmax_batch_size = 8\n")).unwrap();
        let b = m.batching.expect("declared");
        assert_eq!(
            (b.dim, b.max_batch_size, b.max_queue_delay_us),
            (0, 8, 100),
            "Triton's 100 us by default"
        );
    }

    #[test]
    fn each_rule_is_refused_at_its_line_with_a_fix() {
        let cases = [
            (GOOD.replace("format = 1", "format = 2"), "sobel/model.toml:1:", "format 2"),
            (GOOD.replace("min = 3, max = 100", "min = 5, max = 4"), ":4:", "not a dimension's"),
            (GOOD.replace("\"H-2\"", "\"Q\""), ":13:", "'Q' is not in [dims]"),
            (
                GOOD.replace("[\"H\", \"W\"]\n[[output]]", "[\"H+1\", \"W\"]\n[[output]]"),
                ":9:",
                "offset in an input",
            ),
            (GOOD.replace("min = 3, max = 256", "min = 2, max = 256"), ":13:", "can be 0 or less"),
            (GOOD.replace("\"magnitudes\"", "\"image\""), ":11:", "used twice"),
            (GOOD.replace("items = [\"H\", \"W\"]", "items = [\"Z\"]"), ":2:", "'Z' is not a dimension"),
            (
                GOOD.replace("datatype = \"UINT8\"\nshape = [\"H\"", "datatype = \"BYTES\"\nshape = [\"H\""),
                ":8:",
                "'BYTES'",
            ),
            (GOOD.replace("[[output]]", "colour = 1\n[[output]]"), ":10:", "unknown field `colour`"),
            (GOOD.to_string() + "[cpu]\nsources = [\"cpu/none.c\"]\n", ":15:", "cpu/none.c does not exist"),
            (
                GOOD.to_string() + "[cpu]\nconfig = \"x\"\n",
                "model.toml:",
                "exactly one of sources and library",
            ),
            (
                GOOD.to_string() + "[fpga.f1]\nagfi = \"afi-1\"\nxclbin = \"model.toml\"\n",
                ":15:",
                "not an AGFI id",
            ),
            (GOOD.to_string() + "[fpga.model]\nclock_mhz = 250\n", "model.toml:", "no timing"),
        ];
        for (text, at, what) in cases {
            let e = parse_text(&text).unwrap_err();
            assert!(e.contains(at) && e.contains(what) && e.contains("fix:"), "wanted {at} {what}, got: {e}");
        }
    }

    #[test]
    fn an_unused_dimension_and_a_bad_optional_map_are_refused() {
        let unused = GOOD.replace("[dims]\n", "[dims]\nK = { min = 1, max = 2 }\n");
        assert!(parse_text(&unused).unwrap_err().contains("no input has this dimension"));
        let optional = GOOD.to_string() + "[optional]\ninputs = { image = \"refinement\" }\noutputs = {}\n";
        assert!(parse_text(&optional).unwrap_err().contains("0 output names for 1 outputs"));
        let good = GOOD.to_string()
            + "[optional]\ninputs = { image = \"more\" }\noutputs = { magnitudes = \"more_m\" }\n";
        assert_eq!(parse_text(&good).unwrap().optional, Some((vec!["more".into()], vec!["more_m".into()])));
    }
}

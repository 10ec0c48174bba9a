//! Verilating a design into a loadable model: Verilator's C++ and the shim (`shim.cpp`) compiled as
//! ONE translation unit into a shared library that links the Verilator runtime.
//!
//! Used twice: by `build.rs` for Spork's own designs (included with `#[path]`, so this file depends
//! on nothing else in the crate), and at run time for a model repository's RTL, where the result is
//! cached by content hash ([`crate::cache`]).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The shim every model is compiled with: its C ABI (`spork_model_*`).
pub const SHIM: &str = include_str!("shim.cpp");

/// The runtime's `$stop` and `$fatal`, which throw to the shim instead of aborting the process.
pub const FATAL: &str = include_str!("fatal.cpp");

/// A design's `$display`, `$fatal` messages and the runtime's own go to stderr, not stdout, where
/// `spork run --json` writes its report: every file of the runtime and the models is compiled so.
pub const PRINT_TO_STDERR: [&str; 2] =
    ["-DVL_PRINTF(...)=fprintf(stderr, __VA_ARGS__)", "-DVL_VPRINTF(f, a)=vfprintf(stderr, f, a)"];

/// What can go wrong verilating and compiling a design.
#[derive(Debug)]
pub enum VerilateError {
    /// A tool is not installed.
    Tool { tool: String, fix: &'static str },
    /// Verilator refused the design: its `%Error` lines, with file:line.
    Verilator { log: String },
    /// The design's top module has a port the board cannot drive.
    Port(String),
    /// The C++ compiler failed on the generated code.
    Compile { log: String },
    /// Reading or writing the build folder failed.
    Io { path: PathBuf, error: std::io::Error },
}

impl std::fmt::Display for VerilateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VerilateError::Tool { tool, fix } => write!(f, "{tool} was not found on PATH: {fix}"),
            VerilateError::Verilator { log } => write!(f, "Verilator refused the design:\n{log}"),
            VerilateError::Port(why) => f.write_str(why),
            VerilateError::Compile { log } => write!(f, "compiling the verilated model failed:\n{log}"),
            VerilateError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for VerilateError {}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> VerilateError + '_ {
    move |error| VerilateError::Io { path: path.to_path_buf(), error }
}

/// The tools: Verilator's include folder and a C++ compiler.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// `$VERILATOR_ROOT/include`.
    pub include: PathBuf,
    /// The C++ compiler (`$CXX`, else `c++`).
    pub cxx: PathBuf,
    /// `verilator --version`, part of every cache key.
    pub version: String,
}

impl Toolchain {
    /// Finds Verilator 5 and a C++ compiler.
    pub fn find() -> Result<Toolchain, VerilateError> {
        let missing = || VerilateError::Tool {
            tool: "verilator".into(),
            fix: "install Verilator 5 (Debian/Ubuntu: apt-get install -y verilator)",
        };
        let root = Command::new("verilator").args(["--getenv", "VERILATOR_ROOT"]).output();
        let root = match root {
            Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
            _ => return Err(missing()),
        };
        let version = Command::new("verilator").arg("--version").output().map_err(|_| missing())?;
        let cxx = std::env::var_os("CXX").map_or_else(|| PathBuf::from("c++"), PathBuf::from);
        if Command::new(&cxx).arg("--version").output().is_err() {
            return Err(VerilateError::Tool {
                tool: cxx.display().to_string(),
                fix: "install a C++ compiler (Debian/Ubuntu: apt-get install -y g++) or set CXX",
            });
        }
        Ok(Toolchain {
            include: root.join("include"),
            cxx,
            version: String::from_utf8_lossy(&version.stdout).trim().to_string(),
        })
    }

    fn compiler(&self) -> Command {
        let mut c = Command::new(&self.cxx);
        c.args(["-O2", "-fPIC", "-std=c++17", "-faligned-new", "-w"])
            // Without this, g++ marks template statics STB_GNU_UNIQUE and dlclose never unloads a model.
            .arg("-fno-gnu-unique")
            .args(["-DVM_COVERAGE=0", "-DVM_SC=0", "-DVM_TRACE=0", "-DVM_TRACE_FST=0", "-DVM_TRACE_VCD=0"])
            .args(PRINT_TO_STDERR)
            .arg(format!("-I{}", self.include.display()))
            .arg(format!("-I{}", self.include.join("vltstd").display()));
        c
    }

    /// Compiles the Verilator runtime (its `$stop` and `$fatal` throwing, not aborting: `fatal.cpp`) into `dir/libspork_verilated.so` (once: every model links it).
    pub fn build_runtime(&self, dir: &Path) -> Result<PathBuf, VerilateError> {
        let lib = dir.join("libspork_verilated.so");
        let fatal = dir.join("spork_fatal.cpp");
        fs::write(&fatal, FATAL).map_err(io(&fatal))?;
        let mut cmd = self.compiler();
        cmd.args(["-DVL_USER_FATAL", "-DVL_USER_STOP"])
            .arg("-shared")
            .arg("-o")
            .arg(&lib)
            .arg(&fatal)
            .arg(self.include.join("verilated.cpp"))
            .arg(self.include.join("verilated_threads.cpp"))
            .arg("-pthread");
        run(&mut cmd, |log| VerilateError::Compile { log })?;
        Ok(lib)
    }
}

/// One design to verilate.
#[derive(Clone, Debug)]
pub struct Design {
    /// The model's name (what [`crate::Model::name`] reports).
    pub name: String,
    /// The top module.
    pub top: String,
    /// Verilog/SystemVerilog sources, relative to `dir` or absolute.
    pub sources: Vec<PathBuf>,
    /// Where Verilator runs, so its messages name the sources as the user wrote them.
    pub dir: PathBuf,
    /// Verilator configuration files of waivers.
    pub waivers: Vec<PathBuf>,
    /// Warnings fail the build (Spork's own RTL); otherwise they are left to `spork kernel lint`.
    pub strict: bool,
}

/// Verilates `design` into `out/<name>/` and compiles `out/libspork_model_<name>.so`, linked to the
/// runtime library at `runtime` (found through `rpath`, which is `$ORIGIN` when both share `out`).
pub fn build(
    tools: &Toolchain,
    design: &Design,
    out: &Path,
    runtime: &Path,
) -> Result<PathBuf, VerilateError> {
    let dir = out.join(&design.name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(io(&dir))?;
    let prefix = format!("V{}", ident(&design.name));
    let mut verilate = Command::new("verilator");
    verilate.current_dir(&design.dir).arg("--cc");
    verilate
        .args(&design.waivers)
        .args(&design.sources)
        .args(["--top-module", &design.top, "--prefix", &prefix, "-O3", "--x-assign", "fast"])
        .args(["--x-initial", "fast", "--noassert", "-Wall"])
        .args(if design.strict { None } else { Some("-Wno-fatal") })
        .arg("-Mdir")
        .arg(&dir);
    run(&mut verilate, |log| VerilateError::Verilator { log: errors(&log) })?;

    let header = dir.join(format!("{prefix}.h"));
    let ports = parse_ports(&fs::read_to_string(&header).map_err(io(&header))?)?;
    let unit = unit(&dir, &design.name, &prefix, &ports)?;
    let lib = out.join(format!("libspork_model_{}.so", design.name));
    let runtime_dir = runtime.parent().unwrap_or(out);
    let rpath = if runtime_dir == out { "$ORIGIN".to_string() } else { runtime_dir.display().to_string() };
    let mut cmd = tools.compiler();
    cmd.arg(format!("-I{}", dir.display()))
        .arg("-shared")
        .arg("-o")
        .arg(&lib)
        .arg(&unit)
        .arg(runtime)
        .arg(format!("-Wl,-rpath,{rpath}"))
        .arg("-pthread");
    run(&mut cmd, |log| VerilateError::Compile { log })?;
    Ok(lib)
}

/// A C++ identifier from a model name.
fn ident(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// The one translation unit: every generated .cpp, the port table, then the shim.
fn unit(dir: &Path, name: &str, prefix: &str, ports: &[Port]) -> Result<PathBuf, VerilateError> {
    let mut generated: Vec<String> = fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|f| f.ends_with(".cpp"))
        .collect();
    generated.sort();
    let mut unit = String::new();
    for f in &generated {
        let _ = writeln!(unit, "#include \"{f}\"");
    }
    let _ = writeln!(unit, "#define SPORK_MODEL {prefix}\n#define SPORK_SYMS {prefix}__Syms");
    let _ = writeln!(unit, "#define SPORK_MODEL_NAME {name:?}");
    let _ = writeln!(unit, "#define SPORK_PORT_COUNT {}", ports.len());
    unit.push_str("#define SPORK_PORTS(X) \\\n");
    for (i, p) in ports.iter().enumerate() {
        let _ = writeln!(
            unit,
            "  X({i}, {}, {:?}, {}, {}) \\",
            p.member,
            p.verilog_name(),
            p.width,
            u8::from(p.input)
        );
    }
    unit.push('\n');
    let shim = dir.join("spork_shim.inc");
    fs::write(&shim, SHIM).map_err(io(&shim))?;
    unit.push_str("#include \"spork_shim.inc\"\n");
    let path = dir.join(format!("{}_model.cpp", ident(name)));
    fs::write(&path, unit).map_err(io(&path))?;
    Ok(path)
}

struct Port {
    member: String,
    width: u32,
    input: bool,
}

impl Port {
    /// Verilator escapes `$` in names as `__024`.
    fn verilog_name(&self) -> String {
        self.member.replace("__024", "$")
    }
}

/// Ports from the model header's `VL_IN8(&name,msb,lsb);` style declarations.
fn parse_ports(header: &str) -> Result<Vec<Port>, VerilateError> {
    let mut ports = Vec::new();
    for line in header.lines().map(str::trim) {
        let (input, rest) = match (line.strip_prefix("VL_IN"), line.strip_prefix("VL_OUT")) {
            (Some(r), _) => (true, r),
            (_, Some(r)) => (false, r),
            _ => continue,
        };
        let Some(open) = rest.find("(&") else { continue };
        let args: Vec<&str> = rest[open + 2..].trim_end_matches(");").split(',').map(str::trim).collect();
        // Ports past 64 bits (VL_INW/VL_OUTW) add their count of 32-bit words.
        let (&[member, msb, lsb] | &[member, msb, lsb, _]) = &args[..] else {
            return Err(VerilateError::Port(format!("cannot read the port declaration `{line}`")));
        };
        let (Ok(msb), Ok(lsb)) = (msb.parse::<u32>(), lsb.parse::<u32>()) else {
            return Err(VerilateError::Port(format!("cannot read the port widths in `{line}`")));
        };
        ports.push(Port { member: member.to_string(), width: msb - lsb + 1, input });
    }
    if ports.is_empty() {
        return Err(VerilateError::Port("the top module has no ports".into()));
    }
    Ok(ports)
}

/// Verilator's `%Error` and `%Warning` lines (with file:line), else its whole output.
fn errors(log: &str) -> String {
    let lines: Vec<&str> =
        log.lines().filter(|l| l.starts_with("%Error") || l.starts_with("%Warning")).collect();
    if lines.is_empty() { log.trim().to_string() } else { lines.join("\n") }
}

/// Runs a build tool within the process's bounds (`bounded::limits`: its time and the output kept).
fn run(cmd: &mut Command, fail: impl FnOnce(String) -> VerilateError) -> Result<(), VerilateError> {
    let limits = crate::bounded::limits();
    match crate::bounded::run(cmd, limits.verilate, limits.output) {
        Ok(crate::bounded::Ran::Ended { success: true, .. }) => Ok(()),
        Ok(crate::bounded::Ran::Ended { log, .. }) => Err(fail(log)),
        Ok(crate::bounded::Ran::TimedOut { log }) => Err(fail(format!(
            "{log}\n{:?} was killed after {:?} (the build limit; spork serve --build-timeout sets it)",
            cmd.get_program(),
            limits.verilate
        ))),
        Err(e) => Err(VerilateError::Tool {
            tool: format!("{:?}", cmd.get_program()),
            fix: if e.kind() == std::io::ErrorKind::NotFound {
                "install it, or put it on PATH"
            } else {
                "it could not be started"
            },
        }),
    }
}

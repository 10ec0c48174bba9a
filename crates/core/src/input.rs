//! Errors for input files (traces, platform profiles) that point at the file, line, field and fix.

use std::fmt;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::ops::Range;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// `value` as an error quotes it: at most 80 characters, so a corrupt megabyte-long field is not
/// echoed whole.
pub fn excerpt(value: &str) -> String {
    cut(value, 80)
}

/// `text` cut to `chars` characters, saying how long it was.
fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((i, _)) => format!("{}... ({} bytes)", &text[..i], text.len()),
        None => text.to_string(),
    }
}

/// The largest text input (a trace file, a platform profile, a manifest): these are kilobytes.
pub const MAX_TEXT_BYTES: u64 = 16 << 20;

/// Opens `path` for reading the way every reader of input files does: a regular file (a FIFO would
/// block, a device such as `/dev/zero` never ends) of at most `max_bytes`, read through a [`Bounded`]
/// reader that stops at `max_bytes` even if the file grows meanwhile.
///
/// The path is looked at before it is opened (opening a FIFO waits for a writer, opening a device may
/// act on it), then opened without blocking and the open file looked at again, in case the path was
/// replaced in between.
pub fn open(path: &Path, max_bytes: u64) -> Result<Bounded<File>, InputError> {
    let io = |source| InputError::Io { action: "read", path: path.to_path_buf(), source };
    let meta = std::fs::metadata(path).map_err(io)?;
    check_file(path, &meta, max_bytes)?;
    let file =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    check_file(path, &meta, max_bytes)?;
    Ok(Bounded::new(file, max_bytes))
}

/// A regular file of at most `max_bytes`.
fn check_file(path: &Path, meta: &Metadata, max_bytes: u64) -> Result<(), InputError> {
    let start = || Location { path: path.to_path_buf(), line: 1, column: 1 };
    if !meta.is_file() {
        let fix = "give a regular file (not a folder, a FIFO or a device)";
        return Err(InputError::invalid(start(), "file", "not a regular file", fix));
    }
    if meta.len() > max_bytes {
        let problem =
            format!("{} bytes, beyond the {max_bytes} an input file of this kind may hold", meta.len());
        return Err(InputError::invalid(start(), "file", problem, "check that this is the file you meant"));
    }
    Ok(())
}

/// Why a [`Bounded`] reader stopped, carried in the [`io::Error`] it returns (see
/// [`InputError::overrun`]).
#[derive(Clone, Debug, thiserror::Error)]
#[error("{problem}")]
pub struct Overrun {
    /// 1-based line being read when the limit was passed.
    pub line: usize,
    /// What was too long.
    pub problem: String,
}

/// A reader that fails, with an [`Overrun`], once more than `max_bytes` come through or a line grows
/// beyond `max_line` bytes (by default unbounded), so that what is read, and what a parser buffers
/// of one line, stays bounded whatever the file holds.
#[derive(Debug)]
pub struct Bounded<R> {
    inner: R,
    max_bytes: u64,
    max_line: u64,
    /// Bytes read so far.
    bytes: u64,
    /// Newlines read so far.
    newlines: usize,
    /// Bytes of the current line read so far.
    line_bytes: u64,
    /// Set once a limit is passed: every later read fails the same way.
    overrun: Option<Overrun>,
}

impl<R> Bounded<R> {
    /// `inner`, refused beyond `max_bytes`.
    pub fn new(inner: R, max_bytes: u64) -> Self {
        Bounded { inner, max_bytes, max_line: u64::MAX, bytes: 0, newlines: 0, line_bytes: 0, overrun: None }
    }

    /// Also refused once a line grows beyond `max_line` bytes.
    pub fn max_line(self, max_line: u64) -> Self {
        Bounded { max_line, ..self }
    }

    /// Records an overrun at the current line and returns it as an I/O error.
    fn fail(&mut self, problem: String) -> io::Error {
        let overrun = Overrun { line: self.newlines + 1, problem };
        self.overrun = Some(overrun.clone());
        io::Error::new(io::ErrorKind::InvalidData, overrun)
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(o) = &self.overrun {
            return Err(io::Error::new(io::ErrorKind::InvalidData, o.clone()));
        }
        let n = self.inner.read(buf)?;
        self.bytes = self.bytes.saturating_add(n as u64);
        if self.bytes > self.max_bytes {
            let max = self.max_bytes;
            return Err(self.fail(format!(
                "more than {max} bytes read, beyond the {max} an input file of this kind may hold"
            )));
        }
        for (i, piece) in buf[..n].split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                self.newlines += 1;
                self.line_bytes = 0;
            }
            self.line_bytes = self.line_bytes.saturating_add(piece.len() as u64);
            if self.line_bytes > self.max_line {
                let max = self.max_line;
                return Err(self.fail(format!(
                    "a line of more than {max} bytes, beyond the {max} a line of this file may hold"
                )));
            }
        }
        Ok(n)
    }
}

/// Where in an input file a problem is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl Location {
    /// The location of byte offset `offset` of `text`, read from `path`.
    pub fn at(path: &Path, text: &str, offset: usize) -> Self {
        let before = &text[..offset.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Location { path: path.to_path_buf(), line, column }
    }

    /// The location of the start of `span` (or of the file start).
    pub fn of_span(path: &Path, text: &str, span: Option<Range<usize>>) -> Self {
        Self::at(path, text, span.map_or(0, |s| s.start))
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.path.display(), self.line, self.column)
    }
}

/// A file that could not be read or makes no sense.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be read or written.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// "read" or "write".
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file was read but a field is malformed or out of range.
    #[error("{location}: {field}: {problem}\n  fix: {fix}")]
    Invalid {
        /// Where.
        location: Location,
        /// The offending field (dotted, or "syntax").
        field: String,
        /// What is wrong.
        problem: String,
        /// How to fix it.
        fix: String,
    },
}

impl InputError {
    /// An invalid field at `location`.
    pub fn invalid(
        location: Location,
        field: impl Into<String>,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        InputError::Invalid { location, field: field.into(), problem: problem.into(), fix: fix.into() }
    }

    /// Reads `path` to a string: a regular file of at most [`MAX_TEXT_BYTES`] (see [`open`]), in
    /// UTF-8.
    pub fn read(path: &Path) -> Result<String, InputError> {
        let mut file = open(path, MAX_TEXT_BYTES)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| InputError::reading(path, e))?;
        String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(&e.as_bytes()[..at]).into_owned();
            let location = Location::at(path, &text, at);
            InputError::invalid(location, "file", "not UTF-8 text", "save the file as UTF-8")
        })
    }

    /// An error reading `path`: what a [`Bounded`] reader refused (see [`InputError::overrun`]), or
    /// the OS error.
    pub fn reading(path: &Path, source: io::Error) -> Self {
        Self::overrun(path, &source).unwrap_or_else(|| InputError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
        })
    }

    /// If `source` is a [`Bounded`] reader's refusal, the error naming `path` and the line it stopped
    /// at.
    pub fn overrun(path: &Path, source: &io::Error) -> Option<Self> {
        let overrun = source.get_ref()?.downcast_ref::<Overrun>()?;
        let location = Location { path: path.to_path_buf(), line: overrun.line, column: 1 };
        let fix = "check that this is the file you meant";
        Some(InputError::invalid(location, "file", overrun.problem.clone(), fix))
    }

    /// Writes `text` to `path`.
    pub fn write(path: &Path, text: &str) -> Result<(), InputError> {
        std::fs::write(path, text).map_err(|source| InputError::Io {
            action: "write",
            path: path.to_path_buf(),
            source,
        })
    }

    /// A TOML syntax or type error, located, with the field serde named if any.
    pub fn from_toml(path: &Path, text: &str, err: &toml::de::Error, fix: &str) -> Self {
        let location = Location::of_span(path, text, err.span());
        let message = err.message().trim();
        let field = message
            .split('`')
            .nth(1)
            .filter(|_| message.contains("field"))
            .map_or_else(|| "syntax".to_string(), excerpt);
        // The parser quotes what it read (a key, a value): cut, so that a corrupt file's megabyte-long
        // token is not echoed whole.
        InputError::invalid(location, field, cut(message, 400), fix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_counts_lines_and_columns() {
        let text = "a = 1\nbb = 2\n";
        let l = Location::at(Path::new("f.toml"), text, 8);
        assert_eq!((l.line, l.column), (2, 3));
        assert_eq!(l.to_string(), "f.toml:2:3");
    }

    /// What reading `text` through a [`Bounded`] reader gives, or its error as read from `f.csv`.
    fn bounded(text: &str, max_bytes: u64, max_line: u64) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut r = Bounded::new(text.as_bytes(), max_bytes).max_line(max_line);
        match r.read_to_end(&mut out) {
            Ok(_) => Ok(out),
            Err(e) => Err(InputError::reading(Path::new("f.csv"), e).to_string()),
        }
    }

    #[test]
    fn bounded_reads_stop_at_their_limits_and_name_the_line() {
        assert_eq!(bounded("ab\ncd\n", 6, 2).unwrap(), b"ab\ncd\n");
        let e = bounded("ab\ncd\nefgh\n", 100, 3).unwrap_err();
        assert!(e.starts_with("f.csv:3:1: file: a line of more than 3 bytes"), "{e}");
        assert!(e.contains("fix:"), "{e}");
        let e = bounded("ab\ncd\n", 5, 100).unwrap_err();
        assert!(e.starts_with("f.csv:1:1: file: more than 5 bytes read"), "{e}");
        // Other I/O errors stay what they were.
        let e = InputError::reading(Path::new("f.csv"), io::Error::other("disk on fire")).to_string();
        assert_eq!(e, "cannot read f.csv: disk on fire");
    }

    #[test]
    fn only_regular_files_within_the_limit_are_opened() {
        let dir = tempfile::tempdir().unwrap();
        let e = open(dir.path(), MAX_TEXT_BYTES).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = open(Path::new("/dev/zero"), MAX_TEXT_BYTES).unwrap_err().to_string();
        assert!(e.starts_with("/dev/zero:1:1: file: not a regular file"), "{e}");
        let f = dir.path().join("t.toml");
        std::fs::write(&f, "0123456789").unwrap();
        let e = open(&f, 9).unwrap_err().to_string();
        assert!(e.contains("t.toml:1:1: file: 10 bytes, beyond the 9"), "{e}");
        let mut text = String::new();
        open(&f, 10).unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "0123456789");
        assert_eq!(InputError::read(&f).unwrap(), "0123456789");
    }
}

//! Errors for input files (traces, platform profiles) that point at the file, line, field and fix.

use std::fmt;
use std::ops::Range;
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

    /// Reads `path` to a string: a regular file of at most [`MAX_TEXT_BYTES`], in UTF-8 (a FIFO or a
    /// device such as `/dev/zero` would block or never end).
    pub fn read(path: &Path) -> Result<String, InputError> {
        let io = |source| InputError::Io { action: "read", path: path.to_path_buf(), source };
        let meta = std::fs::metadata(path).map_err(io)?;
        let start = Location { path: path.to_path_buf(), line: 1, column: 1 };
        if !meta.is_file() {
            let fix = "give a regular file (not a folder, a FIFO or a device)";
            return Err(InputError::invalid(start, "file", "not a regular file", fix));
        }
        if meta.len() > MAX_TEXT_BYTES {
            let problem = format!(
                "{} bytes, beyond the {MAX_TEXT_BYTES} an input file of this kind may hold",
                meta.len()
            );
            return Err(InputError::invalid(start, "file", problem, "check that this is the file you meant"));
        }
        let bytes = std::fs::read(path).map_err(io)?;
        String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(&e.as_bytes()[..at]).into_owned();
            let location = Location::at(path, &text, at);
            InputError::invalid(location, "file", "not UTF-8 text", "save the file as UTF-8")
        })
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
}

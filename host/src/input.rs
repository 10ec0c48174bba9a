//! Errors for input files (traces, platform profiles) that point at the file, line, field and fix.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

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

    /// Reads `path` to a string.
    pub fn read(path: &Path) -> Result<String, InputError> {
        std::fs::read_to_string(path).map_err(|source| InputError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
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
        let message = err.message().trim().to_string();
        let field = message
            .split('`')
            .nth(1)
            .filter(|_| message.contains("field"))
            .map_or_else(|| "syntax".to_string(), str::to_string);
        InputError::invalid(location, field, message, fix)
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

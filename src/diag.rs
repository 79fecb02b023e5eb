//! Diagnostics: located, actionable messages about a workflow file.
//!
//! Rendered as `file: $.json.path: message` (plus `line:column` for syntax errors), so
//! a user can jump to the field and read what to write instead.

use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One problem found in a workflow file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub file: String,
    /// JSON path of the offending field, e.g. `$.states[2].transition.nextState`.
    pub path: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// A name this file uses but does not define, which a parent workflow may provide to a
    /// sub-workflow (see `definition::Family`).
    #[serde(skip)]
    pub needs: Option<Box<Needs>>,
}

/// A function or event name a definition references without defining it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Needs {
    Function(String),
    Event { name: String, produced: bool },
}

impl Diagnostic {
    pub fn error(file: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            file: file.to_string(),
            path: path.into(),
            message: message.into(),
            line: None,
            column: None,
            needs: None,
        }
    }

    pub fn warning(file: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(file, path, message)
        }
    }

    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    pub fn needing(mut self, needs: Needs) -> Self {
        self.needs = Some(Box::new(needs));
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.severity == Severity::Warning {
            write!(f, "warning: ")?;
        }
        write!(f, "{}", self.file)?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ":{l}:{c}")?;
        }
        write!(f, ": {}: {}", self.path, self.message)
    }
}

/// ` (did you mean "x"?)` when one of `candidates` is close to `wrong`, else empty.
pub fn did_you_mean<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let best = candidates
        .into_iter()
        .map(|c| {
            (
                strsim::damerau_levenshtein(&wrong.to_lowercase(), &c.to_lowercase()),
                c,
            )
        })
        .filter(|(d, c)| *d <= (c.len().max(wrong.len()) / 3).max(1) + 1)
        .min_by_key(|(d, _)| *d);
    match best {
        Some((_, c)) => format!(" (did you mean {c:?}?)"),
        None => String::new(),
    }
}

/// Joins a JSON path prefix and a serde path (`a.b[0]` style) into `$.prefix.a.b[0]`.
pub fn join(prefix: &str, rest: &str) -> String {
    if rest.is_empty() || rest == "." {
        return prefix.to_string();
    }
    // serde_ignored renders sequence indexes as `.0`; normalise to `[0]`.
    let mut out = String::from(prefix);
    for part in rest.split('.') {
        if part.is_empty() {
            continue;
        }
        if part.chars().all(|c| c.is_ascii_digit()) {
            out.push_str(&format!("[{part}]"));
        } else if part.starts_with('[') {
            out.push_str(part);
        } else {
            out.push('.');
            out.push_str(part);
        }
    }
    out
}

/// Why a definition could not be loaded: every error and warning, located.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{} error(s) in workflow definition", .diagnostics.iter().filter(|d| d.is_error()).count())]
pub struct Invalid {
    pub diagnostics: Vec<Diagnostic>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(
            did_you_mean("Shipp", ["Ship", "Order"]),
            " (did you mean \"Ship\"?)"
        );
        assert_eq!(did_you_mean("zzzz", ["Ship", "Order"]), "");
    }

    #[test]
    fn paths() {
        assert_eq!(
            join("$.states[2]", "transition.nextState"),
            "$.states[2].transition.nextState"
        );
        assert_eq!(join("$", "states.2.name"), "$.states[2].name");
        assert_eq!(join("$", "states[2].name"), "$.states[2].name");
    }

    #[test]
    fn renders() {
        let d = Diagnostic::error("workflows/order.yaml", "$.states[2]", "bad");
        assert_eq!(d.to_string(), "workflows/order.yaml: $.states[2]: bad");
        let w = Diagnostic::warning("f.json", "$", "w").at(3, 4);
        assert_eq!(w.to_string(), "warning: f.json:3:4: $: w");
    }
}

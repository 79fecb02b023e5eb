//! Collecting located diagnostics while reading a machine, and writing ASL's JSON paths
//! (`$.States['Hello World'].Next`).

use crate::diag::Diagnostic;

/// Where diagnostics go while a file is read and checked.
pub struct Out<'a> {
    pub file: &'a str,
    pub diags: Vec<Diagnostic>,
}

impl<'a> Out<'a> {
    pub fn new(file: &'a str) -> Out<'a> {
        Out {
            file,
            diags: Vec::new(),
        }
    }

    pub fn error(&mut self, at: impl Into<String>, message: impl Into<String>) {
        self.diags
            .push(Diagnostic::error(self.file, at.into(), message.into()));
    }

    pub fn warning(&mut self, at: impl Into<String>, message: impl Into<String>) {
        self.diags
            .push(Diagnostic::warning(self.file, at.into(), message.into()));
    }

    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(Diagnostic::is_error)
    }
}

/// `at` with member `name` appended: `.Name` when it is a plain identifier, else `['name']`.
pub fn member(at: &str, name: &str) -> String {
    let plain = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        format!("{at}.{name}")
    } else {
        format!("{at}[{}]", serde_json::Value::from(name)).replace('"', "'")
    }
}

/// `at` with index `i` appended.
pub fn index(at: &str, i: usize) -> String {
    format!("{at}[{i}]")
}

/// What a JSON value is, for messages.
pub fn kind(v: &serde_json::Value) -> &'static str {
    crate::model::lenient::kind(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_quote_names_that_are_not_identifiers() {
        assert_eq!(member("$.States", "Pack"), "$.States.Pack");
        assert_eq!(member("$.States", "Hello World"), "$.States['Hello World']");
        assert_eq!(index("$.Choices", 2), "$.Choices[2]");
    }
}

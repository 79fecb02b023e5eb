//! A deployable definition: a parsed, validated workflow with its expressions compiled once.

use crate::diag::Diagnostic;
use crate::expr::{Expr, ExprError};
use crate::load::{parse_workflow, Format};
use crate::model::Workflow;
use std::collections::HashMap;
use std::path::Path;

/// A validated workflow, ready for the engine.
#[derive(Debug, Clone)]
pub struct Definition {
    pub workflow: Workflow,
    exprs: HashMap<String, Expr>,
    /// Warnings found while loading (unknown fields, defaults applied).
    pub warnings: Vec<Diagnostic>,
}

/// Why a definition could not be loaded: every error and warning, located.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{} error(s) in workflow definition", .diagnostics.iter().filter(|d| d.is_error()).count())]
pub struct Invalid {
    pub diagnostics: Vec<Diagnostic>,
}

impl Definition {
    /// Parses and validates `text` read from `file`.
    pub fn parse(file: &str, text: &str, format: Format) -> Result<Definition, Invalid> {
        let parsed = parse_workflow(file, text, format);
        let mut diagnostics = parsed.diagnostics;
        let Some(workflow) = parsed.workflow else {
            return Err(Invalid { diagnostics });
        };
        let report = crate::validate::validate(file, &workflow);
        diagnostics.extend(report.diagnostics);
        if diagnostics.iter().any(Diagnostic::is_error) {
            return Err(Invalid { diagnostics });
        }
        Ok(Definition {
            workflow,
            exprs: report.exprs,
            warnings: diagnostics,
        })
    }

    /// Reads and validates a file; the format follows the extension.
    pub fn load(path: &Path) -> Result<Definition, Invalid> {
        let file = path.display().to_string();
        let fail = |msg: String| Invalid {
            diagnostics: vec![Diagnostic::error(&file, "$", msg)],
        };
        let format = Format::from_path(path)
            .ok_or_else(|| fail("unknown file type: name it *.json, *.yaml or *.yml".into()))?;
        let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read: {e}")))?;
        Definition::parse(&file, &text, format)
    }

    /// Builds a definition from a model (tests, generated workflows).
    pub fn from_workflow(workflow: Workflow) -> Result<Definition, Invalid> {
        let report = crate::validate::validate(&workflow.id, &workflow);
        if report.has_errors() {
            return Err(Invalid {
                diagnostics: report.diagnostics,
            });
        }
        Ok(Definition {
            workflow,
            exprs: report.exprs,
            warnings: report.diagnostics,
        })
    }

    pub fn id(&self) -> &str {
        &self.workflow.id
    }

    /// The compiled expression for `source` (compiled at load time; compiled now only if the
    /// caller evaluates a string validation did not see).
    pub fn expr(&self, source: &str) -> Result<std::borrow::Cow<'_, Expr>, ExprError> {
        match self.exprs.get(source) {
            Some(e) => Ok(std::borrow::Cow::Borrowed(e)),
            None => Expr::compile(source).map(std::borrow::Cow::Owned),
        }
    }

    /// Compiled template (a string that may embed `{{ }}`).
    pub fn template(&self, source: &str) -> Result<Expr, ExprError> {
        match self.exprs.get(source) {
            Some(e) => Ok(e.clone()),
            None => Expr::template(source),
        }
    }
}

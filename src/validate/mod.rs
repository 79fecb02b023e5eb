//! Semantic validation: every reference resolves, every time value and expression compiles,
//! every state has a way out. All problems are listed at once, each with file, JSON path and
//! what to write instead. Compiled expressions are kept for the engine.

mod checks;
mod states;

use crate::diag::{did_you_mean, Diagnostic, Needs};
use crate::expr::{Expr, ExprError};
use crate::model::{EventKind, Workflow};
use crate::time::CronSchedule;
use serde_json::Value;
use std::collections::HashMap;

/// The result of validating a definition.
#[derive(Debug, Default)]
pub struct Report {
    pub diagnostics: Vec<Diagnostic>,
    /// Every expression and template of the definition, compiled, by source text.
    pub exprs: HashMap<String, Expr>,
}

impl Report {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Validates `wf` (read from `file`).
pub fn validate(file: &str, wf: &Workflow) -> Report {
    let mut cx = Cx {
        file,
        wf,
        report: Report::default(),
    };
    checks::workflow(&mut cx);
    for (i, state) in wf.states.iter().enumerate() {
        states::state(&mut cx, &format!("$.states[{i}]"), state);
    }
    cx.report
}

/// Validation context: the definition and the diagnostics so far.
pub(crate) struct Cx<'a> {
    pub file: &'a str,
    pub wf: &'a Workflow,
    pub report: Report,
}

impl Cx<'_> {
    pub fn err(&mut self, path: impl Into<String>, msg: impl Into<String>) {
        self.report
            .diagnostics
            .push(Diagnostic::error(self.file, path, msg));
    }

    pub fn warn(&mut self, path: impl Into<String>, msg: impl Into<String>) {
        self.report
            .diagnostics
            .push(Diagnostic::warning(self.file, path, msg));
    }

    /// An expression field (condition, filter, collection).
    pub fn expr(&mut self, path: &str, source: &str) {
        match Expr::compile(source) {
            Ok(e) => {
                if let Some(stray) = e.stray_text() {
                    self.warn(
                        path,
                        format!("text {stray:?} outside `{{{{ }}}}` is ignored; remove it"),
                    );
                }
                self.report.exprs.insert(source.to_string(), e);
            }
            Err(e) => self.err(path, e.to_string()),
        }
    }

    /// An expression that must be a plain member path (`$.a.b`), because data is written there.
    pub fn member_path(&mut self, path: &str, source: &str) {
        self.expr(path, source);
        if let Some(e) = self.report.exprs.get(source) {
            let plain = e
                .as_path()
                .and_then(|p| p.member_chain())
                .is_some_and(|c| !c.is_empty());
            if !plain {
                self.err(
                    path,
                    format!("{source:?} must be a plain member path such as `{{{{ $.results }}}}`, because results are written there"),
                );
            }
        }
    }

    /// A JSON value whose strings may embed `{{ }}` (parameters, event data).
    pub fn templates(&mut self, path: &str, value: &Value) {
        let mut found = Vec::new();
        crate::expr::templates_in(value, path.to_string(), &mut found);
        for (at, s) in found {
            match Expr::template(&s) {
                Ok(e) => {
                    self.report.exprs.insert(s, e);
                }
                Err(e) => self.err(at, e.to_string()),
            }
        }
    }

    /// A time value of the definition that did not parse.
    pub fn written<T>(&mut self, path: &str, w: &crate::time::Written<T>) {
        if let Some(e) = w.error() {
            self.err(path, e.to_string());
        }
    }

    pub fn cron(&mut self, path: &str, source: &str) {
        if let Err(e) = CronSchedule::parse(source) {
            self.err(path, e.to_string());
        }
    }

    /// A `nextState` (or similar) that must name a state.
    pub fn state_ref(&mut self, path: &str, name: &str) {
        if self.wf.state(name).is_none() {
            let names: Vec<&str> = self.wf.states.iter().map(|s| s.name()).collect();
            self.err(
                path,
                format!(
                    "no state named {name:?}{}",
                    did_you_mean(name, names.iter().copied())
                ),
            );
        }
    }

    /// An event reference that must name an event of `kind`.
    pub fn event_ref(&mut self, path: &str, name: &str, kind: EventKind) {
        match self.wf.event(name) {
            None => {
                let names: Vec<&str> = self.wf.events.iter().map(|e| e.name.as_str()).collect();
                let hint = did_you_mean(name, names.iter().copied());
                let produced = kind == EventKind::Produced;
                self.report.diagnostics.push(
                    Diagnostic::error(
                        self.file,
                        path,
                        format!("no event named {name:?}{hint}; define it under `events`"),
                    )
                    .needing(Needs::Event {
                        name: name.to_string(),
                        produced,
                    }),
                );
            }
            Some(e) if e.kind != kind => {
                let (want, have) = match kind {
                    EventKind::Consumed => ("consumed", "produced"),
                    EventKind::Produced => ("produced", "consumed"),
                };
                self.err(
                    path,
                    format!("event {name:?} is {have}, but this reference needs a {want} event; set `kind: {want}` on it or reference another event"),
                );
            }
            Some(_) => {}
        }
    }

    pub fn function_ref(&mut self, path: &str, name: &str) {
        if self.wf.function(name).is_none() {
            let names: Vec<&str> = self.wf.functions.iter().map(|f| f.name.as_str()).collect();
            let hint = did_you_mean(name, names.iter().copied());
            self.report.diagnostics.push(
                Diagnostic::error(
                    self.file,
                    path,
                    format!("no function named {name:?}{hint}; define it under `functions`"),
                )
                .needing(Needs::Function(name.to_string())),
            );
        }
    }
}

/// Compiles an expression the validator has not seen (used by callers that add their own).
pub fn compile(source: &str) -> Result<Expr, ExprError> {
    Expr::compile(source)
}

//! A deployable definition in one of the languages flowbroker runs, chosen by the file name:
//! a Serverless Workflow (its expressions compiled once), an Amazon States Language machine
//! (`*.asl.json` / `*.asl.yaml`) or a Lambda durable function (`*.durable.yaml`). The
//! language's own part is [`Body`]; the engine hands an instance's inputs to it.

use crate::diag::{Diagnostic, Needs, Severity};
use crate::expr::{Expr, ExprError};
use crate::family::Family;
use crate::load::{parse_workflow, Format};
use crate::model::Workflow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// A validated workflow, ready for the engine.
#[derive(Debug, Clone)]
pub struct Definition {
    /// The Serverless Workflow definition. For the other languages, the top level only: its
    /// id (the file stem), name and description, and no states, functions or events, so the
    /// paths that read them (event routing, schedules) find nothing to do.
    pub workflow: Workflow,
    /// What the engine runs: the workflow above, a machine or a durable function.
    pub body: Body,
    exprs: HashMap<String, Expr>,
    /// Warnings found while loading (unknown fields, defaults applied).
    pub warnings: Vec<Diagnostic>,
}

/// The language-specific part of a definition: the one boundary between the core and the
/// languages (`engine::apply` dispatches on it).
#[derive(Debug, Clone)]
pub enum Body {
    /// A Serverless Workflow: [`Definition::workflow`] itself.
    Workflow,
    /// An Amazon States Language machine.
    Machine(Arc<crate::asl::Machine>),
    /// A Lambda durable function: the user's code, invoked over HTTP.
    Durable(Arc<crate::durable::Function>),
    /// Amazon SWF executions or domains (built in: the decider is the user's code, and the
    /// registry and history live in the instances).
    Swf,
}

/// The language a definition is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    ServerlessWorkflow,
    /// Amazon States Language.
    Asl,
    /// A Lambda durable function.
    Durable,
    /// Amazon SWF's decider model.
    Swf,
}

impl Language {
    /// The name the API gives it: `serverless-workflow`, `asl` or `durable-function`.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::ServerlessWorkflow => "serverless-workflow",
            Language::Asl => "asl",
            Language::Durable => "durable-function",
            Language::Swf => "swf",
        }
    }
}

/// Whether a file holds a Serverless Workflow (not a machine or a durable function): only
/// those define functions and events a sub-workflow inherits.
pub fn is_workflow_file(path: &Path) -> bool {
    !crate::asl::is_asl(path) && !crate::durable::is_durable(path)
}

pub use crate::diag::Invalid;

impl Definition {
    /// Parses and validates `text` read from `file` on its own: every function and event it
    /// references must be defined in it.
    pub fn parse(file: &str, text: &str, format: Format) -> Result<Definition, Invalid> {
        Definition::parse_in(file, text, format, &Family::default())
    }

    /// Parses a version that deployed before (stored): names it used from a parent then are
    /// taken as provided.
    pub fn parse_lenient(file: &str, text: &str, format: Format) -> Result<Definition, Invalid> {
        Definition::parse_in(file, text, format, &Family::trusted())
    }

    /// Parses and validates `text` as a member of `family`: a function or event it does not
    /// define is a warning when a workflow that runs it as a sub-workflow defines it.
    pub fn parse_in(
        file: &str,
        text: &str,
        format: Format,
        family: &Family,
    ) -> Result<Definition, Invalid> {
        if crate::asl::is_asl(Path::new(file)) {
            return Definition::machine(file, text, format);
        }
        if crate::durable::is_durable(Path::new(file)) {
            return Definition::durable(file, text, format);
        }
        let parsed = parse_workflow(file, text, format);
        let mut diagnostics = parsed.diagnostics;
        let Some(workflow) = parsed.workflow else {
            return Err(Invalid { diagnostics });
        };
        let report = crate::validate::validate(file, &workflow);
        diagnostics.extend(report.diagnostics);
        for d in diagnostics.iter_mut() {
            let Some(needs) = &d.needs else { continue };
            match family.provider(&workflow.id, needs) {
                Some(parent) => {
                    d.severity = Severity::Warning;
                    let what = match &**needs {
                        Needs::Function(name) => format!("function {name:?}"),
                        Needs::Event { name, .. } => format!("event {name:?}"),
                    };
                    d.message = format!(
                        "{what} is not defined here; taken from workflow {parent:?}, which runs \
                         this one as a sub-workflow (sub-workflows inherit their parent's \
                         definitions)"
                    );
                }
                None => d.message.push_str(
                    " (or, if this workflow runs as a sub-workflow, in the parent workflow, \
                     deployed or validated together with it)",
                ),
            }
        }
        if diagnostics.iter().any(Diagnostic::is_error) {
            return Err(Invalid { diagnostics });
        }
        Ok(Definition {
            workflow,
            body: Body::Workflow,
            exprs: report.exprs,
            warnings: diagnostics,
        })
    }

    /// An ASL machine read from `file`; its workflow id is the file name without
    /// `.asl.json` (`.asl.yaml`, `.asl.yml`).
    fn machine(file: &str, text: &str, format: Format) -> Result<Definition, Invalid> {
        let id = crate::asl::id_of(Path::new(file)).ok_or_else(|| Invalid {
            diagnostics: vec![Diagnostic::error(
                file,
                "$",
                "an ASL file needs a name before `.asl.json` (it is the workflow id)",
            )],
        })?;
        let checked = crate::asl::parse(file, text, format)?;
        let description = checked.machine.comment.clone();
        Ok(Definition {
            workflow: Definition::top_level(id, description),
            body: Body::Machine(Arc::new(checked.machine)),
            exprs: HashMap::new(),
            warnings: checked.warnings,
        })
    }

    /// A durable function read from `file` (`<id>.durable.yaml`).
    fn durable(file: &str, text: &str, format: Format) -> Result<Definition, Invalid> {
        let checked = crate::durable::parse(file, text, format)?;
        let id = checked.function.id.clone();
        Ok(Definition {
            workflow: Definition::top_level(id, None),
            body: Body::Durable(Arc::new(checked.function)),
            exprs: HashMap::new(),
            warnings: checked.warnings,
        })
    }

    /// A built-in SWF definition: [`crate::swf::EXECUTIONS`] or [`crate::swf::DOMAINS`].
    pub fn swf(id: &str, description: &str) -> Definition {
        Definition {
            workflow: Definition::top_level(id.to_string(), Some(description.to_string())),
            body: Body::Swf,
            exprs: HashMap::new(),
            warnings: Vec::new(),
        }
    }

    /// The top level of a definition in another language than Serverless Workflow: an id,
    /// a name, and nothing to route events or schedules to.
    fn top_level(id: String, description: Option<String>) -> Workflow {
        Workflow {
            id: id.clone(),
            name: id,
            description,
            version: None,
            schema_version: None,
            data_input_schema: None,
            data_output_schema: None,
            events: Vec::new(),
            functions: Vec::new(),
            states: Vec::new(),
            metadata: None,
        }
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
            body: Body::Workflow,
            exprs: report.exprs,
            warnings: report.diagnostics,
        })
    }

    /// This definition with the functions and events it does not define taken from
    /// `ancestors`, nearest first (a sub-workflow's inheritance, see [`crate::family`]).
    /// `None` when it lacks nothing they define: run it as it is.
    pub fn inherit<'a>(
        &self,
        ancestors: impl IntoIterator<Item = &'a Definition>,
    ) -> Option<Definition> {
        let mut merged: Option<Definition> = None;
        for a in ancestors {
            let cur = merged.as_ref().unwrap_or(self);
            let functions: Vec<_> = a
                .workflow
                .functions
                .iter()
                .filter(|f| cur.workflow.function(&f.name).is_none())
                .cloned()
                .collect();
            let events: Vec<_> = a
                .workflow
                .events
                .iter()
                .filter(|e| cur.workflow.event(&e.name).is_none())
                .cloned()
                .collect();
            if functions.is_empty() && events.is_empty() {
                continue;
            }
            let mut next = cur.clone();
            next.workflow.functions.extend(functions);
            next.workflow.events.extend(events);
            for (k, e) in &a.exprs {
                next.exprs.entry(k.clone()).or_insert_with(|| e.clone());
            }
            merged = Some(next);
        }
        merged
    }

    pub fn id(&self) -> &str {
        &self.workflow.id
    }

    pub fn language(&self) -> Language {
        match self.body {
            Body::Workflow => Language::ServerlessWorkflow,
            Body::Machine(_) => Language::Asl,
            Body::Durable(_) => Language::Durable,
            Body::Swf => Language::Swf,
        }
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
    pub fn template(&self, source: &str) -> Result<std::borrow::Cow<'_, Expr>, ExprError> {
        match self.exprs.get(source) {
            Some(e) => Ok(std::borrow::Cow::Borrowed(e)),
            None => Expr::template(source).map(std::borrow::Cow::Owned),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::tests::{CHILD, PARENT};

    #[test]
    fn a_child_inherits_what_it_lacks_and_its_own_definitions_win() {
        let mut fam = Family::default();
        for t in [PARENT, CHILD] {
            fam.add(&parse_workflow("t.yaml", t, Format::Yaml).workflow.unwrap());
        }
        let p = Definition::parse("p.yaml", PARENT, Format::Yaml).unwrap();
        // alone, the child lacks `f` and `e`; with its parent it deploys with warnings
        let alone = Definition::parse("c.yaml", CHILD, Format::Yaml).unwrap_err();
        let errors: Vec<_> = alone.diagnostics.iter().filter(|d| d.is_error()).collect();
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(
            errors[0].message.contains("in the parent workflow"),
            "{}",
            errors[0]
        );
        let c = Definition::parse_in("c.yaml", CHILD, Format::Yaml, &fam).unwrap();
        let w: Vec<String> = c.warnings.iter().map(|d| d.to_string()).collect();
        assert!(
            w.iter().any(|w| w
                .contains("function \"f\" is not defined here; taken from workflow \"parent\"")),
            "{w:#?}"
        );
        let merged = c.inherit([&p]).expect("the child lacks f and e");
        assert_eq!(
            merged.workflow.function("f").unwrap().resource,
            "http://parent/f"
        );
        assert_eq!(
            merged.workflow.function("g").unwrap().resource,
            "http://child/g"
        );
        assert!(merged.workflow.event("e").is_some());
        assert!(p.inherit([&c]).is_none(), "the parent lacks nothing");
    }
}

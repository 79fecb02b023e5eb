//! Reading a workflow file: JSON or YAML text into the model, with every problem located.
//!
//! Syntax errors carry line and column. Each event, function and state is deserialized on its
//! own so that all of their problems are listed together. Unknown fields become warnings.

use crate::diag::{did_you_mean, join, Diagnostic};
use crate::model::{deserialize, EventDef, FunctionDef, RawWorkflow, State, Workflow, STATE_TYPES};
use serde_json::Value;
use std::path::Path;

/// The text format of a definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

impl Format {
    /// By file extension: `.json` is JSON, `.yaml`/`.yml` YAML; `None` otherwise.
    pub fn from_path(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "json" => Some(Format::Json),
            "yaml" | "yml" => Some(Format::Yaml),
            _ => None,
        }
    }
}

/// The outcome of reading one file: the model when it could be built, and every diagnostic.
#[derive(Debug)]
pub struct Parsed {
    pub workflow: Option<Workflow>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses text into a JSON value, reporting syntax errors with line and column.
pub fn parse_value(file: &str, text: &str, format: Format) -> Result<Value, Diagnostic> {
    match format {
        Format::Json => serde_json::from_str(text).map_err(|e| {
            Diagnostic::error(file, "$", format!("invalid JSON: {e}")).at(e.line(), e.column())
        }),
        Format::Yaml => serde_yaml::from_str(text).map_err(|e| {
            let d = Diagnostic::error(file, "$", format!("invalid YAML: {e}"));
            match e.location() {
                Some(l) => d.at(l.line(), l.column()),
                None => d,
            }
        }),
    }
}

/// Parses a whole workflow definition.
pub fn parse_workflow(file: &str, text: &str, format: Format) -> Parsed {
    match parse_value(file, text, format) {
        Ok(v) => workflow_from_value(file, v),
        Err(d) => Parsed {
            workflow: None,
            diagnostics: vec![d],
        },
    }
}

fn unknown_field(file: &str, prefix: &str, field: &str) -> Diagnostic {
    Diagnostic::warning(
        file,
        join(prefix, field),
        "unknown field, ignored (check its spelling against the spec)",
    )
}

/// Deserializes one part of a definition (an event, a function, a filter...), collecting
/// unknown-field warnings and the error, if any, located under `at`.
pub fn element<T: serde::de::DeserializeOwned>(
    file: &str,
    at: &str,
    value: Value,
    diags: &mut Vec<Diagnostic>,
) -> Option<T> {
    let mut unknown = Vec::new();
    let result = deserialize::<T>(value, &mut |p| unknown.push(p));
    diags.extend(unknown.iter().map(|p| unknown_field(file, at, p)));
    match result {
        Ok(v) => Some(v),
        Err(e) => {
            diags.push(Diagnostic::error(
                file,
                join(at, &e.path),
                field_message(&e.message),
            ));
            None
        }
    }
}

/// Turns serde's wording into the user's: what is missing or mistyped and what to write.
fn field_message(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("missing field `") {
        let field = rest.split('`').next().unwrap_or(rest);
        return format!("required field `{field}` is missing: add it");
    }
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        return format!("unknown value `{rest}");
    }
    message.to_string()
}

/// Builds the model from an already parsed JSON value.
pub fn workflow_from_value(file: &str, mut value: Value) -> Parsed {
    let mut diags = Vec::new();
    crate::model::spelling::canonicalize(file, &mut value, &mut diags);
    let Value::Object(ref top) = value else {
        return Parsed {
            workflow: None,
            diagnostics: vec![Diagnostic::error(
                file,
                "$",
                format!(
                    "a workflow definition must be an object with `id`, `name` and `states`, found {}",
                    crate::model::lenient::kind(&value)
                ),
            )],
        };
    };
    let arrays: Vec<(&str, Vec<Value>)> = ["events", "functions", "states"]
        .into_iter()
        .map(|k| {
            let items = match top.get(k) {
                Some(Value::Array(a)) => a.clone(),
                _ => Vec::new(),
            };
            (k, items)
        })
        .collect();
    let raw: Option<RawWorkflow> = element(file, "$", value.clone(), &mut diags);

    let mut events = Vec::new();
    let mut functions = Vec::new();
    let mut states = Vec::new();
    let mut complete = raw.is_some();
    for (key, items) in arrays {
        for (i, item) in items.into_iter().enumerate() {
            let at = format!("$.{key}[{i}]");
            match key {
                "events" => match element::<EventDef>(file, &at, item, &mut diags) {
                    Some(mut e) => {
                        e.read_buffer_ttl();
                        events.push(e)
                    }
                    None => complete = false,
                },
                "functions" => match element::<FunctionDef>(file, &at, item, &mut diags) {
                    Some(f) => functions.push(f),
                    None => complete = false,
                },
                _ => match state_from_value(file, &at, item, &mut diags) {
                    Some(s) => states.push(s),
                    None => complete = false,
                },
            }
        }
    }
    let workflow = match raw {
        Some(raw) if complete => Some(Workflow {
            id: raw.id,
            name: raw.name,
            description: raw.description,
            version: raw.version,
            schema_version: raw.schema_version,
            data_input_schema: raw.data_input_schema,
            data_output_schema: raw.data_output_schema,
            events,
            functions,
            states,
            metadata: raw.metadata,
        }),
        _ => None,
    };
    Parsed {
        workflow,
        diagnostics: diags,
    }
}

/// Deserializes one state object, checking its `type` first.
pub fn state_from_value(
    file: &str,
    at: &str,
    value: Value,
    diags: &mut Vec<Diagnostic>,
) -> Option<State> {
    let kind = match value.get("type") {
        Some(Value::String(k)) => k.clone(),
        Some(other) => {
            diags.push(Diagnostic::error(
                file,
                format!("{at}.type"),
                format!(
                    "state type must be a string, found {}; use one of {}",
                    crate::model::lenient::kind(other),
                    STATE_TYPES.join(", ")
                ),
            ));
            return None;
        }
        None => {
            diags.push(Diagnostic::error(
                file,
                at.to_string(),
                format!(
                    "required field `type` is missing: add one of {}",
                    STATE_TYPES.join(", ")
                ),
            ));
            return None;
        }
    };
    let mut unknown = Vec::new();
    let result = State::from_value(&kind, value, &mut |p| unknown.push(p));
    diags.extend(unknown.iter().map(|p| unknown_field(file, at, p)));
    match result {
        None => {
            diags.push(Diagnostic::error(
                file,
                format!("{at}.type"),
                format!(
                    "unknown state type {kind:?}{}; use one of {}",
                    did_you_mean(&kind, STATE_TYPES),
                    STATE_TYPES.join(", ")
                ),
            ));
            None
        }
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => {
            diags.push(Diagnostic::error(
                file,
                join(at, &e.path),
                field_message(&e.message),
            ));
            None
        }
    }
}

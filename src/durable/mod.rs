//! Lambda durable functions, the third language: the logic is the user's code (written with
//! AWS's durable execution SDKs and served from a Lambda-compatible Invoke endpoint); the broker
//! keeps the record of its operations, drives its timers and callbacks and invokes it again
//! after every change. docs/durable.md.
//!
//! A function is deployed by a file `<id>.durable.yaml` (or `.durable.yml`, `.durable.json`)
//! in `workflows_dir`:
//!
//! ```yaml
//! invoke: http://127.0.0.1:9100      # base URL of a Lambda-compatible Invoke endpoint
//! function: orders                    # optional; the function name there (default: the id)
//! executionTimeout: 86400             # optional; seconds (or an ISO 8601 duration)
//! invocationTimeout: 900              # optional; one invocation, seconds (default 900)
//! ```
//!
//! Layout: this file reads and checks the definition file (every problem located by JSON
//! path); [`wire`] holds the durable execution API's data types (operations, updates, errors)
//! as AWS spells them; [`arn`] the execution ARN, checkpoint tokens and callback ids the
//! broker mints and parses.

pub mod arn;
pub mod wire;

use crate::diag::Invalid;
use crate::diag::{did_you_mean, Diagnostic};
use crate::load::{parse_value, Format};
use serde_json::Value;
use std::path::Path;

/// The longest an execution may run when its file sets no `executionTimeout` (a year, as on
/// AWS).
pub const MAX_EXECUTION_SECS: u64 = 366 * 24 * 3600;
/// One invocation's limit when the file sets no `invocationTimeout` (Lambda's 15 minutes).
pub const DEFAULT_INVOCATION_SECS: u64 = 900;

const SUFFIXES: [&str; 3] = [".durable.yaml", ".durable.yml", ".durable.json"];
const FIELDS: [&str; 5] = [
    "invoke",
    "function",
    "executionTimeout",
    "invocationTimeout",
    "description",
];

/// A deployed durable function.
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    /// The workflow id: the file name without `.durable.yaml`.
    pub id: String,
    /// Base URL of the Invoke endpoint (no trailing `/`).
    pub invoke: String,
    /// The function's name at that endpoint.
    pub function: String,
    /// The execution's limit, in seconds: past it the execution is `TIMED_OUT`.
    pub execution_timeout: u64,
    /// One invocation's limit, in seconds.
    pub invocation_timeout: u64,
    pub description: Option<String>,
}

impl Function {
    /// Where an invocation is sent: `{invoke}/2015-03-31/functions/{function}/invocations`
    /// (the Lambda Invoke path, as the Runtime Interface Emulator and SAM local serve it).
    pub fn invocation_url(&self) -> String {
        format!(
            "{}/2015-03-31/functions/{}/invocations",
            self.invoke, self.function
        )
    }
}

/// A function that validated, with its warnings.
#[derive(Debug, Clone)]
pub struct Checked {
    pub function: Function,
    pub warnings: Vec<Diagnostic>,
}

/// Whether a file deploys a durable function: its name ends in `.durable.yaml`,
/// `.durable.yml` or `.durable.json`.
pub fn is_durable(path: &Path) -> bool {
    id_of_name(path).is_some()
}

/// The workflow id of a durable function's file: its name without the suffix.
pub fn id_of(path: &Path) -> Option<String> {
    id_of_name(path).filter(|id| !id.is_empty())
}

fn id_of_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let lower = name.to_ascii_lowercase();
    SUFFIXES
        .iter()
        .find(|s| lower.ends_with(*s))
        .map(|s| name[..name.len() - s.len()].to_string())
}

/// Parses and checks a durable function's file: every problem at once, located.
pub fn parse(file: &str, text: &str, format: Format) -> Result<Checked, Invalid> {
    let one = |d: Diagnostic| Invalid {
        diagnostics: vec![d],
    };
    let id = id_of(Path::new(file)).ok_or_else(|| {
        one(Diagnostic::error(
            file,
            "$",
            "a durable function's file needs a name before `.durable.yaml` (it is the workflow id)",
        ))
    })?;
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        || id.len() > 64
    {
        return Err(one(Diagnostic::error(
            file,
            "$",
            format!(
                "{id:?} cannot name a durable function: use at most 64 letters, digits, `-` and \
                 `_` before `.durable.yaml` (the name is part of the execution ARN)"
            ),
        )));
    }
    let value = parse_value(file, text, format).map_err(one)?;
    let Value::Object(map) = value else {
        return Err(one(Diagnostic::error(
            file,
            "$",
            "a durable function's file is a mapping: write `invoke: http://host:port` (the base \
             URL of its Invoke endpoint)",
        )));
    };
    let mut diags = Vec::new();
    for k in map.keys().filter(|k| !FIELDS.contains(&k.as_str())) {
        diags.push(Diagnostic::warning(
            file,
            format!("$.{k}"),
            format!("unknown field, ignored{}", did_you_mean(k, FIELDS)),
        ));
    }
    let invoke = match map.get("invoke") {
        Some(Value::String(u)) if is_http_url(u) => Some(u.trim_end_matches('/').to_string()),
        Some(v) => {
            diags.push(Diagnostic::error(
                file,
                "$.invoke",
                format!(
                    "{v} is not an http(s) URL: write the base URL of the function's Invoke \
                     endpoint, e.g. `invoke: http://127.0.0.1:9100` (flowbroker POSTs to \
                     {{invoke}}/2015-03-31/functions/{{function}}/invocations)"
                ),
            ));
            None
        }
        None => {
            diags.push(Diagnostic::error(
                file,
                "$.invoke",
                "missing: write the base URL of the function's Invoke endpoint, e.g. \
                 `invoke: http://127.0.0.1:9100`",
            ));
            None
        }
    };
    let function = match map.get("function") {
        None => Some(id.clone()),
        Some(Value::String(f))
            if !f.is_empty()
                && f.len() <= 64
                && f.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
        {
            Some(f.clone())
        }
        Some(v) => {
            diags.push(Diagnostic::error(
                file,
                "$.function",
                format!(
                    "{v} is not a function name: use 1 to 64 letters, digits, `-` and `_` \
                     (or leave it out: the file's id is used)"
                ),
            ));
            None
        }
    };
    let mut seconds = |field: &str, default: u64, max: u64| match map.get(field) {
        None => Some(default),
        Some(v) => match seconds_of(v) {
            Some(s) if (1..=max).contains(&s) => Some(s),
            _ => {
                diags.push(Diagnostic::error(
                    file,
                    format!("$.{field}"),
                    format!(
                        "{v} is not a time limit: write whole seconds from 1 to {max} (e.g. \
                         `{field}: 3600`) or an ISO 8601 duration (`PT1H`)"
                    ),
                ));
                None
            }
        },
    };
    let execution_timeout = seconds("executionTimeout", MAX_EXECUTION_SECS, MAX_EXECUTION_SECS);
    let invocation_timeout = seconds(
        "invocationTimeout",
        DEFAULT_INVOCATION_SECS,
        DEFAULT_INVOCATION_SECS,
    );
    let description = map
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_string);
    match (invoke, function, execution_timeout, invocation_timeout) {
        (Some(invoke), Some(function), Some(execution_timeout), Some(invocation_timeout))
            if !diags.iter().any(Diagnostic::is_error) =>
        {
            Ok(Checked {
                function: Function {
                    id,
                    invoke,
                    function,
                    execution_timeout,
                    invocation_timeout,
                    description,
                },
                warnings: diags,
            })
        }
        _ => Err(Invalid { diagnostics: diags }),
    }
}

fn is_http_url(u: &str) -> bool {
    reqwest::Url::parse(u)
        .is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
}

/// Whole seconds from a number or an ISO 8601 duration.
fn seconds_of(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => {
            let d = crate::time::Duration::parse(s).ok()?;
            let t0 = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
            u64::try_from((d.after(t0) - t0).num_seconds()).ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Checked, Invalid> {
        parse("wf/orders.durable.yaml", text, Format::Yaml)
    }

    #[test]
    fn a_minimal_file_takes_its_id_as_the_function_name() {
        let c = read("invoke: http://127.0.0.1:9100/\n").unwrap();
        assert_eq!(c.function.id, "orders");
        assert_eq!(
            c.function.invocation_url(),
            "http://127.0.0.1:9100/2015-03-31/functions/orders/invocations"
        );
        assert_eq!(c.function.execution_timeout, MAX_EXECUTION_SECS);
        assert_eq!(c.function.invocation_timeout, 900);
    }

    #[test]
    fn every_problem_is_located_with_a_fix() {
        let e = read("invoke: ftp://x\nfunction: 'a b'\nexecutionTimeout: PTX\ndescripton: 3\n")
            .unwrap_err();
        let text: Vec<String> = e.diagnostics.iter().map(|d| d.to_string()).collect();
        assert_eq!(e.diagnostics.len(), 4, "{text:#?}");
        assert!(
            text[0].contains("$.descripton") && text[0].contains("did you mean \"description\"")
        );
        assert!(text
            .iter()
            .any(|t| t.contains("$.invoke: \"ftp://x\" is not an http(s) URL")));
        assert!(text.iter().any(|t| t.contains("$.function")));
        assert!(text.iter().any(|t| t.contains("$.executionTimeout")));
        let e = read("function: x\n").unwrap_err();
        assert!(e.diagnostics[0].to_string().contains("$.invoke: missing"));
    }

    #[test]
    fn limits_take_seconds_or_durations() {
        let c = read("invoke: http://h\nexecutionTimeout: PT1H\ninvocationTimeout: 30\n").unwrap();
        assert_eq!(c.function.execution_timeout, 3600);
        assert_eq!(c.function.invocation_timeout, 30);
        assert!(read("invoke: http://h\ninvocationTimeout: 901\n").is_err());
    }

    #[test]
    fn names_pick_the_language() {
        assert!(is_durable(Path::new("a/b.durable.YAML")));
        assert!(!is_durable(Path::new("a/b.yaml")));
        assert_eq!(id_of(Path::new(".durable.yaml")), None);
        assert!(parse("x y.durable.yaml", "invoke: http://h", Format::Yaml).is_err());
    }
}

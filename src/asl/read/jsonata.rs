//! Reading JSONata states: which fields each type takes, `{% ... %}` expressions, and the
//! state's query language.

use super::super::jsonata::{inner, Expr};
use super::super::model::*;
use super::super::out::{kind, member, Out};
use serde_json::Value;

/// The fields each state type takes in a JSONata state, besides `Type`, `Comment` and
/// `QueryLanguage`.
pub(super) fn allowed(ty: &str) -> &'static [&'static str] {
    match ty {
        "Pass" => &["Output", "Assign", "Next", "End"],
        "Task" => &[
            "Arguments",
            "Output",
            "Assign",
            "Resource",
            "TimeoutSeconds",
            "HeartbeatSeconds",
            "Retry",
            "Catch",
            "Next",
            "End",
        ],
        "Choice" => &["Choices", "Default", "Output", "Assign"],
        "Wait" => &["Seconds", "Timestamp", "Output", "Assign", "Next", "End"],
        "Succeed" => &["Output"],
        "Fail" => &["Error", "Cause"],
        "Parallel" => &[
            "Arguments",
            "Output",
            "Assign",
            "Branches",
            "Retry",
            "Catch",
            "Next",
            "End",
        ],
        "Map" => &[
            "Items",
            "ItemSelector",
            "ItemProcessor",
            "Iterator",
            "MaxConcurrency",
            "ToleratedFailureCount",
            "ToleratedFailurePercentage",
            "Output",
            "Assign",
            "Retry",
            "Catch",
            "Next",
            "End",
        ],
        _ => &[],
    }
}

/// Fields only a JSONata state has.
pub(super) const JSONATA_ONLY: [&str; 4] = ["Arguments", "Output", "Items", "Condition"];

/// Fields only a JSONPath state has.
pub(super) const JSONPATH_ONLY: [&str; 13] = [
    "InputPath",
    "OutputPath",
    "Parameters",
    "ResultSelector",
    "ResultPath",
    "Result",
    "ItemsPath",
    "SecondsPath",
    "TimestampPath",
    "TimeoutSecondsPath",
    "HeartbeatSecondsPath",
    "ErrorPath",
    "CausePath",
];

/// The query language of a state (its `QueryLanguage`, else the machine's).
pub(super) fn lang(v: Option<&Value>, machine: Lang, at: &str, out: &mut Out) -> Lang {
    match v.map(|v| v.as_str()) {
        None => machine,
        Some(Some("JSONata")) => Lang::Jsonata,
        Some(Some("JSONPath")) if machine == Lang::Jsonata => {
            out.error(
                at,
                "a state of a JSONata machine cannot be JSONPath: set \"QueryLanguage\" per \
                 state in a JSONPath machine instead",
            );
            machine
        }
        Some(Some("JSONPath")) => Lang::JsonPath,
        Some(_) => {
            out.error(
                at,
                format!(
                    "\"QueryLanguage\" is \"JSONPath\" or \"JSONata\", found {}",
                    v.map(Value::to_string).unwrap_or_default()
                ),
            );
            machine
        }
    }
}

/// The text inside a `{% ... %}` string value.
pub(super) fn inner_of(v: &Value) -> Option<&str> {
    inner(v.as_str()?.trim())
}

/// A `{% ... %}` string's expression; `None` (nothing reported) for any other value.
pub(super) fn expr(v: &Value, at: &str, out: &mut Out) -> Option<Result<Expr, ()>> {
    let src = inner_of(v)?;
    Some(Expr::parse(src).map_err(|e| out.error(at, e)))
}

/// A JSONata Choice Rule: `Condition` (an expression), `Next`, `Assign`, `Output`.
pub(super) fn condition(v: &Value, at: &str, out: &mut Out) -> Option<Cond> {
    let Some(c) = v.get("Condition") else {
        out.error(at, "a JSONata Choice Rule needs \"Condition\": \"{% ... %}\", an expression that is true or false");
        return None;
    };
    let at_c = member(at, "Condition");
    match expr(c, &at_c, out) {
        Some(Ok(e)) => Some(Cond::Jsonata(e)),
        Some(Err(())) => None,
        None => {
            out.error(
                at_c,
                format!(
                    "\"Condition\" must be an expression \"{{% ... %}}\", found {}",
                    kind(c)
                ),
            );
            None
        }
    }
}

/// Whether any state of `body`, or of a branch or iterator in it, is JSONata.
pub(super) fn any(body: &States) -> bool {
    body.states.iter().any(|s| {
        s.lang == Lang::Jsonata
            || match &s.kind {
                Kind::Parallel(p) => p.branches.iter().any(any),
                Kind::Map(m) => any(&m.iterator),
                _ => false,
            }
    })
}

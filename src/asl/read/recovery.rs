//! `Retry` and `Catch`: retriers, catchers and their error names.

use super::super::model::*;
use super::super::out::{index, kind, member, Out};
use super::assign;
use super::fields::{self, next, non_negative, positive, result_path, unknown};
use crate::diag::did_you_mean;
use serde_json::{Map, Value};

/// The predefined error names (Appendix A, and those Step Functions added since).
pub const PREDEFINED: [&str; 17] = [
    "States.ALL",
    "States.DataLimitExceeded",
    "States.ExceedToleratedFailureThreshold",
    "States.Http.Socket",
    "States.ItemReaderFailed",
    "States.QueryEvaluationError",
    "States.ResultWriterFailed",
    "States.Timeout",
    "States.HeartbeatTimeout",
    "States.TaskFailed",
    "States.Permissions",
    "States.ResultPathMatchFailure",
    "States.ParameterPathFailure",
    "States.BranchFailed",
    "States.NoChoiceMatched",
    "States.IntrinsicFailure",
    "States.Runtime",
];

pub(super) fn errors(v: Option<&Value>, at: &str, out: &mut Out) -> Option<Errors> {
    let at_e = member(at, "ErrorEquals");
    let list = match v {
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(other) => {
            out.error(
                &at_e,
                format!(
                    "\"ErrorEquals\" must be a non-empty array of error names, found {}",
                    kind(other)
                ),
            );
            return None;
        }
        None => {
            out.error(at, "required field \"ErrorEquals\" is missing: add e.g. \"ErrorEquals\": [\"States.ALL\"]");
            return None;
        }
    };
    let mut names = Vec::new();
    for (i, e) in list.iter().enumerate() {
        match e.as_str() {
            Some(n) if n.starts_with("States.") && !PREDEFINED.contains(&n) => out.error(
                index(&at_e, i),
                format!("{n:?} is not a predefined error{}; names of your own must not start with \"States.\"", did_you_mean(n, PREDEFINED)),
            ),
            Some(n) => names.push(n.to_string()),
            None => out.error(index(&at_e, i), format!("an error name must be a string, found {}", kind(e))),
        }
    }
    if names.iter().any(|n| n == "States.ALL") && names.len() > 1 {
        out.error(
            &at_e,
            "\"States.ALL\" must appear alone in \"ErrorEquals\": it already matches every error",
        );
    }
    Some(Errors(names))
}

/// `Retry` and `Catch` of a Task, Parallel or Map.
pub(super) fn recovery(
    o: &Map<String, Value>,
    at: &str,
    lang: Lang,
    out: &mut Out,
) -> (Vec<Retrier>, Vec<Catcher>) {
    let mut retry = Vec::new();
    let mut catch = Vec::new();
    for (field, is_retry) in [("Retry", true), ("Catch", false)] {
        let at_f = member(at, field);
        let Some(v) = o.get(field) else { continue };
        let Value::Array(items) = v else {
            out.error(
                &at_f,
                format!("\"{field}\" must be an array, found {}", kind(v)),
            );
            continue;
        };
        let last = items.len().saturating_sub(1);
        for (i, item) in items.iter().enumerate() {
            let at_i = index(&at_f, i);
            let Value::Object(r) = item else {
                out.error(
                    &at_i,
                    format!(
                        "must be an object with \"ErrorEquals\", found {}",
                        kind(item)
                    ),
                );
                continue;
            };
            let known: &[&str] = if is_retry {
                &[
                    "ErrorEquals",
                    "IntervalSeconds",
                    "MaxAttempts",
                    "BackoffRate",
                    "MaxDelaySeconds",
                    "JitterStrategy",
                    "Comment",
                ]
            } else {
                match lang {
                    Lang::JsonPath => &["ErrorEquals", "Next", "ResultPath", "Assign", "Comment"],
                    Lang::Jsonata => &["ErrorEquals", "Next", "Output", "Assign", "Comment"],
                }
            };
            for k in r.keys() {
                if !known.contains(&k.as_str()) {
                    unknown(k, &at_i, known, out);
                }
            }
            let Some(errs) = errors(r.get("ErrorEquals"), &at_i, out) else {
                continue;
            };
            if errs.0.iter().any(|e| e == "States.ALL") && i != last {
                out.error(member(&at_i, "ErrorEquals"), format!("\"States.ALL\" must be in the last {} entry: the ones after it could never match", if is_retry { "Retry" } else { "Catch" }));
            }
            if is_retry {
                let interval = match r.get("IntervalSeconds") {
                    None => Some(1),
                    v => positive(v, &member(&at_i, "IntervalSeconds"), out),
                };
                let attempts = match r.get("MaxAttempts") {
                    None => Some(3),
                    v => non_negative(v, &member(&at_i, "MaxAttempts"), "attempts", out),
                };
                let backoff = match r.get("BackoffRate") {
                    None => Some(2.0),
                    Some(v) => {
                        match v.as_f64().filter(|b| *b >= 1.0) {
                            Some(b) => Some(b),
                            None => {
                                out.error(member(&at_i, "BackoffRate"), format!("\"BackoffRate\" must be a number of 1.0 or more, found {v}"));
                                None
                            }
                        }
                    }
                };
                let max_delay = positive(
                    r.get("MaxDelaySeconds"),
                    &member(&at_i, "MaxDelaySeconds"),
                    out,
                );
                let jitter = match r.get("JitterStrategy").map(|j| j.as_str()) {
                    None | Some(Some("NONE")) => false,
                    Some(Some("FULL")) => true,
                    Some(_) => {
                        out.error(
                            member(&at_i, "JitterStrategy"),
                            "\"JitterStrategy\" is \"FULL\" or \"NONE\"",
                        );
                        false
                    }
                };
                if let (Some(interval_seconds), Some(max_attempts), Some(backoff_rate)) =
                    (interval, attempts, backoff)
                {
                    retry.push(Retrier {
                        errors: errs,
                        interval_seconds,
                        max_attempts,
                        backoff_rate,
                        max_delay_seconds: max_delay,
                        jitter,
                    });
                }
            } else {
                let Some(next) = next(r.get("Next"), &at_i, out) else {
                    if !r.contains_key("Next") {
                        out.error(&at_i, "required field \"Next\" is missing: add the state to go to when the error is caught");
                    }
                    continue;
                };
                catch.push(Catcher {
                    errors: errs,
                    next,
                    result_path: result_path(r, &at_i, out),
                    output: r
                        .get("Output")
                        .filter(|_| lang == Lang::Jsonata)
                        .and_then(|v| {
                            fields::template(v, &member(&at_i, "Output"), Lang::Jsonata, out)
                        }),
                    assign: assign::read(r.get("Assign"), &member(&at_i, "Assign"), lang, out),
                });
            }
        }
    }
    (retry, catch)
}

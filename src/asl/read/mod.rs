//! Reading a state machine: a JSON value (from JSON or YAML text) into [`Machine`], every
//! field's type and range checked against the document and every problem reported, located
//! by its JSON path, with what to write instead. Checks that need the whole machine
//! (transitions, reachability) are [`super::check`]'s.
//!
//! Here the top level, the states and their flow; [`fields`]: typed fields, paths and
//! templates; [`recovery`]: Retry and Catch; [`kinds`]: Task, Choice and Wait.

mod fields;
mod kinds;
mod recovery;

pub use fields::template;
pub use recovery::PREDEFINED;

use super::model::*;
use super::out::{index, kind, member, Out};
use crate::diag::did_you_mean;
use fields::{io, next, non_negative, path_field, positive, string, unknown};
use recovery::recovery;
use serde_json::{Map, Value};

pub const STATE_TYPES: [&str; 8] = [
    "Pass", "Task", "Choice", "Wait", "Succeed", "Fail", "Parallel", "Map",
];

/// The fields each state type may have besides `Type` and `Comment`.
fn allowed(ty: &str) -> &'static [&'static str] {
    match ty {
        "Pass" => &[
            "InputPath",
            "OutputPath",
            "Parameters",
            "ResultPath",
            "Result",
            "Next",
            "End",
        ],
        "Task" => &[
            "InputPath",
            "OutputPath",
            "Parameters",
            "ResultSelector",
            "ResultPath",
            "Resource",
            "TimeoutSeconds",
            "TimeoutSecondsPath",
            "HeartbeatSeconds",
            "HeartbeatSecondsPath",
            "Retry",
            "Catch",
            "Next",
            "End",
        ],
        "Choice" => &["InputPath", "OutputPath", "Choices", "Default"],
        "Wait" => &[
            "InputPath",
            "OutputPath",
            "Seconds",
            "SecondsPath",
            "Timestamp",
            "TimestampPath",
            "Next",
            "End",
        ],
        "Succeed" => &["InputPath", "OutputPath"],
        "Fail" => &["Error", "Cause"],
        "Parallel" => &[
            "InputPath",
            "OutputPath",
            "Parameters",
            "ResultSelector",
            "ResultPath",
            "Branches",
            "Retry",
            "Catch",
            "Next",
            "End",
        ],
        "Map" => &[
            "InputPath",
            "OutputPath",
            "ItemsPath",
            "Iterator",
            "ItemProcessor",
            "MaxConcurrency",
            "Parameters",
            "ItemSelector",
            "ResultSelector",
            "ResultPath",
            "Retry",
            "Catch",
            "Next",
            "End",
        ],
        _ => &[],
    }
}

/// Reads a whole machine; `None` when its shape is too broken to check further.
pub fn machine(v: &Value, out: &mut Out) -> Option<Machine> {
    let Value::Object(o) = v else {
        out.error(
            "$",
            format!(
                "a state machine must be an object with \"StartAt\" and \"States\", found {}",
                kind(v)
            ),
        );
        return None;
    };
    for k in o.keys() {
        match k.as_str() {
            "StartAt" | "States" | "Comment" | "Version" | "TimeoutSeconds" => {}
            _ => unknown(
                k,
                "$",
                &["StartAt", "States", "Comment", "Version", "TimeoutSeconds"],
                out,
            ),
        }
    }
    let version = match o.get("Version") {
        None => "1.0".to_string(),
        Some(Value::String(s)) if s == "1.0" => s.clone(),
        Some(other) => {
            out.error(
                "$.Version",
                format!("this is States language version \"1.0\"; found {other}: write \"1.0\" or leave it out"),
            );
            "1.0".into()
        }
    };
    let timeout_seconds = positive(o.get("TimeoutSeconds"), "$.TimeoutSeconds", out);
    let comment = string(o.get("Comment"), "$.Comment", out);
    let body = states(o, "$", out)?;
    Some(Machine {
        comment,
        version,
        timeout_seconds,
        body,
        context: context_use(v),
    })
}

/// What the machine's paths read of the context object: any string starting with `$$` is a
/// path on it; one that could reach `$$.Execution.Input` needs the input copied into it.
fn context_use(v: &Value) -> ContextUse {
    const WITHOUT_INPUT: [&str; 7] = [
        "$$.State.",
        "$$.StateMachine.",
        "$$.Task.",
        "$$.Map.",
        "$$.Execution.Id",
        "$$.Execution.Name",
        "$$.Execution.StartTime",
    ];
    match v {
        Value::String(s) => {
            let s = s.trim_start();
            if !s.starts_with("$$") {
                ContextUse::None
            } else if WITHOUT_INPUT.iter().any(|p| s.starts_with(p)) && !s.contains("..") {
                ContextUse::WithoutInput
            } else {
                ContextUse::Full
            }
        }
        Value::Array(a) => a.iter().map(context_use).max().unwrap_or(ContextUse::None),
        Value::Object(o) => o
            .values()
            .map(context_use)
            .max()
            .unwrap_or(ContextUse::None),
        _ => ContextUse::None,
    }
}

/// `StartAt` and `States` of the top level, a branch or an iterator at `at`.
fn states(o: &Map<String, Value>, at: &str, out: &mut Out) -> Option<States> {
    let start_at = match o.get("StartAt") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            out.error(
                member(at, "StartAt"),
                format!(
                    "\"StartAt\" must be the name of a state, found {}",
                    kind(other)
                ),
            );
            None
        }
        None => {
            out.error(at, "required field \"StartAt\" is missing: add \"StartAt\": \"<the first state's name>\"");
            None
        }
    };
    let at_states = member(at, "States");
    let list = match o.get("States") {
        Some(Value::Object(s)) if !s.is_empty() => s,
        Some(Value::Object(_)) => {
            out.error(&at_states, "\"States\" is empty: add at least one state");
            return None;
        }
        Some(other) => {
            out.error(
                &at_states,
                format!(
                    "\"States\" must be an object of named states, found {}",
                    kind(other)
                ),
            );
            return None;
        }
        None => {
            out.error(at, "required field \"States\" is missing: add \"States\": { \"Name\": { \"Type\": ... } }");
            return None;
        }
    };
    let mut read = Vec::new();
    for (name, v) in list {
        let at_s = member(&at_states, name);
        if name.chars().count() > 128 {
            out.error(&at_s, "a state name is at most 128 characters: shorten it");
        }
        if let Some(s) = state(name, v, &at_s, out) {
            read.push(s);
        }
    }
    Some(States {
        start_at: start_at?,
        states: read,
    })
}

fn state(name: &str, v: &Value, at: &str, out: &mut Out) -> Option<State> {
    let Value::Object(o) = v else {
        out.error(
            at,
            format!(
                "a state must be an object with a \"Type\", found {}",
                kind(v)
            ),
        );
        return None;
    };
    let ty = match o.get("Type") {
        Some(Value::String(t)) if STATE_TYPES.contains(&t.as_str()) => t.as_str(),
        Some(Value::String(t)) => {
            out.error(
                member(at, "Type"),
                format!(
                    "unknown state type {t:?}{}; the types are {}",
                    did_you_mean(t, STATE_TYPES),
                    STATE_TYPES.join(", ")
                ),
            );
            return None;
        }
        Some(other) => {
            out.error(
                member(at, "Type"),
                format!("\"Type\" must be a string, found {}", kind(other)),
            );
            return None;
        }
        None => {
            out.error(
                at,
                format!(
                    "required field \"Type\" is missing: add one of {}",
                    STATE_TYPES.join(", ")
                ),
            );
            return None;
        }
    };
    let ok = allowed(ty);
    for k in o.keys() {
        if k == "Type" || k == "Comment" || ok.contains(&k.as_str()) {
            continue;
        }
        // a field of another state type: say so, rather than "unknown"
        if allowed_anywhere(k) {
            out.error(
                member(at, k),
                format!(
                    "a {ty} state has no \"{k}\" field{}: remove it",
                    why_not(ty, k)
                ),
            );
        } else {
            let mut known: Vec<&str> = ok.to_vec();
            known.extend(["Type", "Comment"]);
            unknown(k, at, &known, out);
        }
    }
    let comment = string(o.get("Comment"), &member(at, "Comment"), out);
    let io = io(o, at, ty, out);
    let flow = flow(o, at, ty, out);
    let kind = match ty {
        "Pass" => Some(Kind::Pass {
            result: o.get("Result").cloned(),
        }),
        "Task" => kinds::task(o, at, out).map(|t| Kind::Task(Box::new(t))),
        "Choice" => kinds::choice(o, at, out).map(|c| Kind::Choice(Box::new(c))),
        "Wait" => kinds::wait(o, at, out).map(Kind::Wait),
        "Succeed" => Some(Kind::Succeed),
        "Fail" => Some(Kind::Fail {
            error: string(o.get("Error"), &member(at, "Error"), out),
            cause: string(o.get("Cause"), &member(at, "Cause"), out),
        }),
        "Parallel" => parallel(o, at, out).map(|p| Kind::Parallel(Box::new(p))),
        _ => map_state(o, at, out).map(|m| Kind::Map(Box::new(m))),
    }?;
    Some(State {
        name: name.to_string(),
        comment,
        kind,
        io,
        flow,
    })
}

fn allowed_anywhere(k: &str) -> bool {
    STATE_TYPES.iter().any(|t| allowed(t).contains(&k))
}

fn why_not(ty: &str, k: &str) -> &'static str {
    match (ty, k) {
        ("Choice", "Next" | "End") => " (a Choice goes where its Choices or Default say)",
        ("Succeed" | "Fail", "Next" | "End") => " (it ends the machine)",
        ("Fail", "InputPath" | "OutputPath") => " (it has no output)",
        (_, "Retry" | "Catch") => " (only Task, Parallel and Map states retry and catch)",
        (_, "ResultPath" | "Parameters" | "ResultSelector") => {
            " (only states that produce a result have it)"
        }
        _ => "",
    }
}

fn flow(o: &Map<String, Value>, at: &str, ty: &str, out: &mut Out) -> Option<Flow> {
    if matches!(ty, "Choice" | "Succeed" | "Fail") {
        return None; // Next/End were reported as not allowed
    }
    let next = next(o.get("Next"), at, out);
    let end = match o.get("End") {
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            out.error(
                member(at, "End"),
                format!("\"End\" must be true, found {}", kind(other)),
            );
            None
        }
        None => None,
    };
    match (next, end) {
        (Some(_), Some(true)) => {
            out.error(
                at,
                "\"Next\" and \"End\": true are both set: a state either goes on or ends; keep one",
            );
            None
        }
        (Some(n), _) => Some(Flow::Next(n)),
        (None, Some(true)) => Some(Flow::End),
        (None, _) if o.contains_key("Next") => None,
        (None, _) => {
            out.error(
                at,
                format!("a {ty} state needs \"Next\": \"<state>\" or \"End\": true"),
            );
            None
        }
    }
}

fn parallel(o: &Map<String, Value>, at: &str, out: &mut Out) -> Option<Parallel> {
    let at_b = member(at, "Branches");
    let items = match o.get("Branches") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(other) => {
            out.error(&at_b, format!("\"Branches\" must be a non-empty array of {{\"StartAt\", \"States\"}} objects, found {}", kind(other)));
            return None;
        }
        None => {
            out.error(
                at,
                "required field \"Branches\" is missing: add the branches to run",
            );
            return None;
        }
    };
    let mut branches = Vec::new();
    for (i, b) in items.iter().enumerate() {
        let at_i = index(&at_b, i);
        match b {
            Value::Object(bo) => {
                for k in bo.keys() {
                    if !["StartAt", "States", "Comment"].contains(&k.as_str()) {
                        unknown(k, &at_i, &["StartAt", "States", "Comment"], out);
                    }
                }
                if let Some(s) = states(bo, &at_i, out) {
                    branches.push(s);
                }
            }
            other => out.error(
                &at_i,
                format!(
                    "a branch must be an object with \"StartAt\" and \"States\", found {}",
                    kind(other)
                ),
            ),
        }
    }
    let (retry, catch) = recovery(o, at, out);
    Some(Parallel {
        branches,
        retry,
        catch,
    })
}

fn map_state(o: &Map<String, Value>, at: &str, out: &mut Out) -> Option<MapState> {
    let (key, v) = match (o.get("ItemProcessor"), o.get("Iterator")) {
        (Some(_), Some(_)) => {
            out.error(member(at, "Iterator"), "a Map has \"ItemProcessor\" or \"Iterator\" (its older name), not both: keep \"ItemProcessor\"");
            return None;
        }
        (Some(v), None) => ("ItemProcessor", v),
        (None, Some(v)) => ("Iterator", v),
        (None, None) => {
            out.error(
                at,
                "a Map needs \"ItemProcessor\" (or \"Iterator\"): the states run for each item",
            );
            return None;
        }
    };
    let at_p = member(at, key);
    let Value::Object(po) = v else {
        out.error(
            &at_p,
            format!(
                "\"{key}\" must be an object with \"StartAt\" and \"States\", found {}",
                kind(v)
            ),
        );
        return None;
    };
    for k in po.keys() {
        match k.as_str() {
            "StartAt" | "States" | "Comment" => {}
            "ProcessorConfig" if key == "ItemProcessor" => {
                let mode = po[k]
                    .get("Mode")
                    .and_then(Value::as_str)
                    .unwrap_or("INLINE");
                if mode != "INLINE" {
                    out.error(member(&member(&at_p, k), "Mode"), format!("Map mode {mode:?} is not supported: only \"INLINE\" (items from the input, run inside the instance)"));
                }
            }
            _ => unknown(
                k,
                &at_p,
                &["StartAt", "States", "Comment", "ProcessorConfig"],
                out,
            ),
        }
    }
    let iterator = states(po, &at_p, out);
    let max_concurrency = match o.get("MaxConcurrency") {
        None => Some(0),
        v => non_negative(
            v,
            &member(at, "MaxConcurrency"),
            "iterations (0: no limit)",
            out,
        ),
    };
    let (retry, catch) = recovery(o, at, out);
    Some(MapState {
        items_path: path_field(o, "ItemsPath", at, out),
        iterator: iterator?,
        max_concurrency: max_concurrency?,
        retry,
        catch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_context_a_machine_reads_is_found_in_its_strings() {
        let use_of = |v: Value| context_use(&json!({"States": {"S": {"Parameters": v}}}));
        assert_eq!(use_of(json!({"a.$": "$.x"})), ContextUse::None);
        assert_eq!(
            use_of(json!({"a.$": "$$.Execution.Id", "b.$": "$$.Map.Item.Value"})),
            ContextUse::WithoutInput
        );
        for reaches_input in [
            "$$.Execution.Input.order",
            "$$",
            "$$.Execution",
            "$$..order",
            "$$['Execution']['Input']",
        ] {
            assert_eq!(
                use_of(json!([{"a.$": "$$.State.Name"}, {"b.$": reaches_input}])),
                ContextUse::Full,
                "{reaches_input}"
            );
        }
    }
}

//! Reading a state machine: a JSON value (from JSON or YAML text) into [`Machine`], every
//! field's type and range checked against the document and every problem reported, located
//! by its JSON path, with what to write instead. Checks that need the whole machine
//! (transitions, reachability) are [`super::check`]'s.
//!
//! Here the top level, the states and their flow; [`allowed`]: which fields each JSONPath
//! state type takes; [`fields`]: typed fields, paths and templates; [`assign`]: `Assign`;
//! [`text`]: a Fail state's error and cause; [`jsonata`]: JSONata states' fields and
//! expressions; [`recovery`]: Retry and Catch; [`kinds`]: Task, Choice and Wait; [`map`]: a
//! Map's iterator, concurrency and tolerated failures.

mod allowed;
mod assign;
mod fields;
mod jsonata;
mod kinds;
mod map;
mod recovery;
mod text;

pub use fields::template;
pub use recovery::PREDEFINED;

use super::model::*;
use super::out::{index, kind, member, Out};
use crate::diag::did_you_mean;
pub use allowed::STATE_TYPES;
use allowed::{allowed, allowed_anywhere, why_not};
use fields::{io, next, positive, string, unknown};
use recovery::recovery;
use serde_json::{Map, Value};

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
            "QueryLanguage" => {}
            _ => unknown(
                k,
                "$",
                &[
                    "StartAt",
                    "States",
                    "Comment",
                    "Version",
                    "TimeoutSeconds",
                    "QueryLanguage",
                ],
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
    let lang = jsonata::lang(
        o.get("QueryLanguage"),
        Lang::JsonPath,
        "$.QueryLanguage",
        out,
    );
    let body = states(o, "$", lang, out)?;
    Some(Machine {
        comment,
        version,
        timeout_seconds,
        context: if jsonata::any(&body) {
            ContextUse::Full
        } else {
            context_use(v)
        },
        jsonata: jsonata::any(&body),
        body,
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
            let of = |p: &str| {
                if WITHOUT_INPUT.iter().any(|w| p.starts_with(w)) && !p.contains("..") {
                    ContextUse::WithoutInput
                } else {
                    ContextUse::Full
                }
            };
            if s.starts_with("States.") {
                // an intrinsic function's arguments: every `$$` in it
                s.match_indices("$$")
                    .map(|(i, _)| of(&s[i..]))
                    .max()
                    .unwrap_or(ContextUse::None)
            } else if s.starts_with("$$") {
                of(s)
            } else {
                ContextUse::None
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
fn states(o: &Map<String, Value>, at: &str, lang: Lang, out: &mut Out) -> Option<States> {
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
        if let Some(s) = state(name, v, &at_s, lang, out) {
            read.push(s);
        }
    }
    Some(States {
        start_at: start_at?,
        states: read,
    })
}

fn state(name: &str, v: &Value, at: &str, machine: Lang, out: &mut Out) -> Option<State> {
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
    let lang = jsonata::lang(
        o.get("QueryLanguage"),
        machine,
        &member(at, "QueryLanguage"),
        out,
    );
    let ok = match lang {
        Lang::JsonPath => allowed(ty),
        Lang::Jsonata => jsonata::allowed(ty),
    };
    for k in o.keys() {
        if k == "Type" || k == "Comment" || k == "QueryLanguage" || ok.contains(&k.as_str()) {
            continue;
        }
        if lang == Lang::Jsonata && jsonata::JSONPATH_ONLY.contains(&k.as_str()) {
            out.error(
                member(at, k),
                format!("\"{k}\" is a JSONPath field; a JSONata state takes its input as it is and shapes it with \"Arguments\" and \"Output\" expressions"),
            );
            continue;
        }
        if lang == Lang::JsonPath && jsonata::JSONATA_ONLY.contains(&k.as_str()) {
            out.error(
                member(at, k),
                format!("\"{k}\" is a JSONata field: set \"QueryLanguage\": \"JSONata\" on the state (or the machine) to use it"),
            );
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
    let io = match lang {
        Lang::JsonPath => io(o, at, ty, out),
        Lang::Jsonata => {
            let t = |k: &str, out: &mut Out| {
                o.get(k)
                    .and_then(|v| fields::template(v, &member(at, k), Lang::Jsonata, out))
            };
            Io {
                jsonata: true,
                arguments: t("Arguments", out),
                output: t("Output", out),
                parameters: t("ItemSelector", out),
                ..Io::default()
            }
        }
    };
    let flow = flow(o, at, ty, out);
    let kind = match ty {
        "Pass" => Some(Kind::Pass {
            result: o.get("Result").cloned(),
        }),
        "Task" => kinds::task(o, at, lang, out).map(|t| Kind::Task(Box::new(t))),
        "Choice" => kinds::choice(o, at, lang, out).map(|c| Kind::Choice(Box::new(c))),
        "Wait" => kinds::wait(o, at, lang, out).map(Kind::Wait),
        "Succeed" => Some(Kind::Succeed),
        "Fail" => Some(Kind::Fail(Box::new(Fail {
            error: text::text(o, "Error", at, lang, out),
            cause: text::text(o, "Cause", at, lang, out),
        }))),
        "Parallel" => parallel(o, at, (lang, machine), out).map(|p| Kind::Parallel(Box::new(p))),
        _ => map::map_state(o, at, (lang, machine), out, states).map(|m| Kind::Map(Box::new(m))),
    }?;
    let assign = assign::read(o.get("Assign"), &member(at, "Assign"), lang, out);
    Some(State {
        name: name.to_string(),
        comment,
        kind,
        io,
        flow,
        assign,
        lang,
    })
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

/// A Parallel state (`state_lang`) of a machine whose default language is `lang`.
fn parallel(
    o: &Map<String, Value>,
    at: &str,
    (state_lang, lang): (Lang, Lang),
    out: &mut Out,
) -> Option<Parallel> {
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
                if let Some(s) = states(bo, &at_i, lang, out) {
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
    let (retry, catch) = recovery(o, at, state_lang, out);
    Some(Parallel {
        branches,
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

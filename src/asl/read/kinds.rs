//! The fields of Task, Choice and Wait states.

use super::super::model::*;
use super::super::out::{index, kind, member, Out};
use super::super::rules;
use super::assign;
use super::fields::{self, next, non_negative, positive, ref_path, string, Given};
use super::jsonata;
use super::recovery::recovery;
use serde_json::{Map, Value};

pub(super) fn seconds_or_path(
    o: &Map<String, Value>,
    k: &str,
    at: &str,
    lang: Lang,
    out: &mut Out,
) -> Option<Seconds> {
    match fields::given(o, k, at, lang, out)? {
        Given::Value(v) => positive(Some(v), &member(at, k), out).map(Seconds::Fixed),
        Given::Expr(e) => Some(Seconds::Expr(e)),
        Given::Path(s) => ref_path(s, &member(at, &format!("{k}Path")), out).map(Seconds::Path),
    }
}

pub(super) fn task(o: &Map<String, Value>, at: &str, lang: Lang, out: &mut Out) -> Option<Task> {
    let resource = match o.get("Resource") {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(other) => {
            out.error(member(at, "Resource"), format!("\"Resource\" must be a URI naming the work (an arn:... mapped in [functions], or an http(s) URL), found {other}"));
            None
        }
        None => {
            out.error(
                at,
                "required field \"Resource\" is missing: add the URI of the work to run",
            );
            None
        }
    };
    let timeout = seconds_or_path(o, "TimeoutSeconds", at, lang, out);
    let heartbeat = seconds_or_path(o, "HeartbeatSeconds", at, lang, out);
    if let (Some(Seconds::Fixed(h)), t) = (&heartbeat, &timeout) {
        let t = match t {
            Some(Seconds::Fixed(t)) => *t,
            None => 60,
            Some(Seconds::Path(_) | Seconds::Expr(_)) => u64::MAX,
        };
        if *h >= t {
            out.error(
                member(at, "HeartbeatSeconds"),
                format!("\"HeartbeatSeconds\" ({h}) must be smaller than \"TimeoutSeconds\" ({t})"),
            );
        }
    }
    let (retry, catch) = recovery(o, at, lang, out);
    Some(Task {
        resource: resource?,
        timeout: timeout.unwrap_or(Seconds::Fixed(60)),
        heartbeat,
        retry,
        catch,
    })
}

pub(super) fn choice(
    o: &Map<String, Value>,
    at: &str,
    lang: Lang,
    out: &mut Out,
) -> Option<Choice> {
    let at_c = member(at, "Choices");
    let items = match o.get("Choices") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(other) => {
            out.error(
                &at_c,
                format!(
                    "\"Choices\" must be a non-empty array of Choice Rules, found {}",
                    kind(other)
                ),
            );
            return None;
        }
        None => {
            out.error(
                at,
                "required field \"Choices\" is missing: add the rules and where each goes",
            );
            return None;
        }
    };
    let mut choices = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at_i = index(&at_c, i);
        let rule = match lang {
            Lang::JsonPath => rules::read(item, &at_i, true, out).map(Cond::Rule),
            Lang::Jsonata => {
                if let Some(r) = item.as_object() {
                    for k in r.keys() {
                        if !["Condition", "Next", "Assign", "Output", "Comment"]
                            .contains(&k.as_str())
                        {
                            fields::unknown(
                                k,
                                &at_i,
                                &["Condition", "Next", "Assign", "Output", "Comment"],
                                out,
                            );
                        }
                    }
                }
                jsonata::condition(item, &at_i, out)
            }
        };
        let next = next(item.get("Next"), &at_i, out);
        if item.is_object() && item.get("Next").is_none() {
            out.error(
                &at_i,
                "a Choice Rule needs \"Next\": the state to go to when it matches",
            );
        }
        let at_a = member(&at_i, "Assign");
        let assign = assign::read(item.get("Assign"), &at_a, lang, out);
        let output = item
            .get("Output")
            .filter(|_| lang == Lang::Jsonata)
            .and_then(|v| fields::template(v, &member(&at_i, "Output"), Lang::Jsonata, out));
        if let (Some(rule), Some(next)) = (rule, next) {
            choices.push(ChoiceRule {
                rule,
                next,
                assign,
                output,
            });
        }
    }
    let default = string(o.get("Default"), &member(at, "Default"), out);
    Some(Choice { choices, default })
}

pub(super) fn wait(o: &Map<String, Value>, at: &str, lang: Lang, out: &mut Out) -> Option<Wait> {
    let given: Vec<&str> = ["Seconds", "SecondsPath", "Timestamp", "TimestampPath"]
        .into_iter()
        .filter(|k| o.contains_key(*k))
        .collect();
    let [k] = given.as_slice() else {
        out.error(at, format!("a Wait state has exactly one of \"Seconds\", \"SecondsPath\", \"Timestamp\" or \"TimestampPath\"; found {}", if given.is_empty() { "none".to_string() } else { given.join(", ") }));
        return None;
    };
    let v = &o[*k];
    let at_k = member(at, k);
    if lang == Lang::Jsonata {
        if let Some(e) = jsonata::expr(v, &at_k, out) {
            return e.ok().map(|expr| Wait::Expr {
                timestamp: *k == "Timestamp",
                expr,
            });
        }
    }
    match *k {
        "Seconds" => non_negative(Some(v), &at_k, "seconds", out).map(Wait::Seconds),
        "Timestamp" => match v.as_str().and_then(rules::timestamp) {
            Some(t) => Some(Wait::Timestamp(t)),
            None => {
                out.error(at_k, format!("\"Timestamp\" must be an RFC 3339 time with uppercase T and Z, e.g. \"2016-03-14T01:59:00Z\"; found {v}"));
                None
            }
        },
        _ => match v.as_str() {
            Some(s) => ref_path(s, &at_k, out).map(|p| {
                if *k == "SecondsPath" {
                    Wait::SecondsPath(p)
                } else {
                    Wait::TimestampPath(p)
                }
            }),
            None => {
                out.error(
                    at_k,
                    format!(
                        "\"{k}\" must be a Reference Path such as \"$.expirydate\", found {}",
                        kind(v)
                    ),
                );
                None
            }
        },
    }
}

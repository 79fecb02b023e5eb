//! The fields of a Map state: its iterator, `MaxConcurrency` and the tolerated failures,
//! each given as a value or read from the state's input by a `...Path`.

use super::super::model::*;
use super::super::out::{kind, member, Out};
use super::fields::{self, path_field, ref_path, template, unknown, Given};
use super::recovery::recovery;
use serde_json::{Map, Value};

pub(super) fn map_state(
    o: &Map<String, Value>,
    at: &str,
    (lang, machine): (Lang, Lang),
    out: &mut Out,
    states: fn(&Map<String, Value>, &str, Lang, &mut Out) -> Option<States>,
) -> Option<MapState> {
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
            // the older `Iterator` takes it too (Step Functions' INLINE form)
            "ProcessorConfig" => {
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
    let iterator = states(po, &at_p, machine, out);
    let max_concurrency = count_or_path(
        o,
        ("MaxConcurrency", "iterations (0: no limit)"),
        at,
        lang,
        out,
    );
    let tolerated = tolerance(o, at, lang, out);
    let items = match lang {
        Lang::Jsonata => o
            .get("Items")
            .and_then(|v| template(v, &member(at, "Items"), Lang::Jsonata, out)),
        Lang::JsonPath => None,
    };
    let (retry, catch) = recovery(o, at, lang, out);
    Some(MapState {
        items_path: path_field(o, "ItemsPath", at, out),
        items,
        iterator: iterator?,
        max_concurrency: max_concurrency.unwrap_or(Count::Fixed(0)),
        tolerated,
        retry,
        catch,
    })
}

/// A whole number field `k` (0 or more, of `what`), or its `...Path` form.
fn count_or_path(
    o: &Map<String, Value>,
    (k, what): (&str, &str),
    at: &str,
    lang: Lang,
    out: &mut Out,
) -> Option<Count> {
    match fields::given(o, k, at, lang, out)? {
        Given::Value(v) => match v.as_u64() {
            Some(n) => Some(Count::Fixed(n)),
            None => {
                out.error(
                    member(at, k),
                    format!("\"{k}\" must be a whole number of {what}, 0 or more, found {v}"),
                );
                None
            }
        },
        Given::Expr(e) => Some(Count::Expr(e)),
        Given::Path(s) => ref_path(s, &member(at, &format!("{k}Path")), out).map(Count::Path),
    }
}

/// `ToleratedFailureCount` and `ToleratedFailurePercentage` (or their `...Path` forms).
fn tolerance(o: &Map<String, Value>, at: &str, lang: Lang, out: &mut Out) -> Tolerance {
    let count = count_or_path(
        o,
        ("ToleratedFailureCount", "failed iterations"),
        at,
        lang,
        out,
    );
    let k = "ToleratedFailurePercentage";
    let percentage = match fields::given(o, k, at, lang, out) {
        Some(Given::Value(v)) => match v.as_f64().filter(|p| (0.0..=100.0).contains(p)) {
            Some(p) => Some(Share::Fixed(p)),
            None => {
                out.error(
                    member(at, k),
                    format!("\"{k}\" must be a number from 0 to 100, found {v}"),
                );
                None
            }
        },
        Some(Given::Expr(e)) => Some(Share::Expr(e)),
        Some(Given::Path(s)) => ref_path(s, &member(at, &format!("{k}Path")), out).map(Share::Path),
        None => None,
    };
    Tolerance { count, percentage }
}

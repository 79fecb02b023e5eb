//! Workflow-level checks and the pieces shared by states: start, end, transitions, produced
//! events, filters, error handling, retries.

use super::Cx;
use crate::model::{
    EndKind, ErrorDef, EventKind, ProduceEvent, RetryDef, Start, StartKind, State, StateDataFilter,
    Transition,
};
use crate::time::Duration;
use serde_json::Value;
use std::collections::HashSet;

pub fn workflow(cx: &mut Cx) {
    let wf = cx.wf;
    if wf.id.trim().is_empty() {
        cx.err(
            "$.id",
            "the workflow `id` is empty: give the workflow a unique id",
        );
    }
    if wf.name.trim().is_empty() {
        cx.err("$.name", "the workflow `name` is empty: give it a name");
    }
    if wf.states.is_empty() {
        cx.err("$.states", "a workflow needs at least one state");
    }
    let starts: Vec<usize> = (0..wf.states.len())
        .filter(|&i| wf.states[i].common().start.is_some())
        .collect();
    if starts.is_empty() && !wf.states.is_empty() {
        cx.err(
            "$.states",
            "no start state: add `start: {kind: default}` to the state instances begin in",
        );
    }
    for &i in starts.iter().skip(1) {
        cx.err(
            format!("$.states[{i}].start"),
            format!(
                "a second start state (the first is {:?}): exactly one state may declare `start`",
                wf.states[starts[0]].name()
            ),
        );
    }
    duplicates(cx, "states", wf.states.iter().map(|s| s.name()), "name");
    duplicates(
        cx,
        "states",
        wf.states.iter().map(|s| s.common().id.unwrap_or("")),
        "id",
    );
    duplicates(
        cx,
        "events",
        wf.events.iter().map(|e| e.name.as_str()),
        "name",
    );
    duplicates(
        cx,
        "functions",
        wf.functions.iter().map(|f| f.name.as_str()),
        "name",
    );
    for (i, e) in wf.events.iter().enumerate() {
        let at = format!("$.events[{i}]");
        if e.kind == EventKind::Consumed && e.source.as_deref().is_none_or(str::is_empty) {
            cx.err(
                format!("{at}.source"),
                format!(
                    "consumed event {:?} has no `source`: add the CloudEvent source it matches",
                    e.name
                ),
            );
        }
        if e.event_type.is_none() {
            cx.warn(
                format!("{at}.type"),
                format!(
                    "event {:?} has no `type`; its name is used as the CloudEvent type",
                    e.name
                ),
            );
        }
        if e.kind == EventKind::Produced && !e.correlation.is_empty() {
            cx.warn(
                format!("{at}.correlation"),
                "correlation applies to consumed events only; it is ignored here",
            );
        }
        // a warning, not an error: versions stored before this check keep running
        let ttl = e.metadata.as_ref().and_then(|m| m.get("bufferTtl"));
        let bad = match ttl {
            Some(Value::String(t)) => Duration::parse(t).err().map(|e| e.to_string()),
            Some(other) => Some(format!(
                "`bufferTtl` is {}, not an ISO 8601 duration such as \"PT10M\"",
                crate::model::lenient::kind(other)
            )),
            None => None,
        };
        if let Some(why) = bad {
            cx.warn(
                format!("{at}.metadata.bufferTtl"),
                format!("{why}; the broker's `buffer_ttl` applies instead"),
            );
        }
        for (j, c) in e.correlation.iter().enumerate() {
            let cat = format!("{at}.correlation[{j}]");
            let name = c.context_attribute_name.trim();
            if name.is_empty() {
                cx.err(
                    format!("{cat}.contextAttributeName"),
                    "empty context attribute name: name the CloudEvent attribute to correlate on",
                );
            } else if ["data", "data_base64"]
                .iter()
                .any(|r| r.eq_ignore_ascii_case(name))
            {
                cx.err(
                    format!("{cat}.contextAttributeName"),
                    format!(
                        "`{name}` is the event's payload, not a context attribute: correlate on \
                         an extension attribute (such as `orderid`) or `subject`, and read the \
                         payload with an `eventDataFilter`"
                    ),
                );
            }
            if let Some(v) = &c.context_attribute_value {
                if v.contains("{{") {
                    cx.templates(
                        &format!("{cat}.contextAttributeValue"),
                        &Value::String(v.clone()),
                    );
                }
            }
        }
    }
    for (i, f) in wf.functions.iter().enumerate() {
        if f.resource.trim().is_empty() {
            cx.err(
                format!("$.functions[{i}].resource"),
                format!("function {:?} has an empty `resource`: give its URL or a name configured under [functions]", f.name),
            );
        }
    }
    unreachable_states(cx);
}

fn duplicates<'a>(cx: &mut Cx, key: &str, names: impl Iterator<Item = &'a str>, field: &str) {
    let mut seen = HashSet::new();
    for (i, n) in names.enumerate() {
        if !n.is_empty() && !seen.insert(n) {
            cx.err(
                format!("$.{key}[{i}].{field}"),
                format!("duplicate {field} {n:?}: each entry of `{key}` needs a unique {field}"),
            );
        }
    }
}

fn unreachable_states<'w>(cx: &mut Cx<'w>) {
    let wf = cx.wf;
    let mut targets: HashSet<&str> = HashSet::new();
    let mut add = |t: Option<&'w Transition>| {
        if let Some(t) = t {
            targets.insert(t.next_state.as_str());
        }
    };
    for s in &wf.states {
        let c = s.common();
        add(c.transition);
        for e in c.on_error {
            add(e.transition.as_ref());
        }
        if let State::Switch(sw) = s {
            add(sw.default.as_ref());
            for d in sw.data_conditions.iter().flatten() {
                add(Some(&d.transition));
            }
            for e in sw.event_conditions.iter().flatten() {
                add(Some(&e.transition));
            }
        }
    }
    for (i, s) in wf.states.iter().enumerate() {
        let c = s.common();
        let reached = c.start.is_some()
            || targets.contains(c.name)
            || c.id.is_some_and(|id| targets.contains(id));
        if !reached {
            cx.warn(
                format!("$.states[{i}]"),
                format!(
                    "state {:?} is never reached: no transition leads to it",
                    c.name
                ),
            );
        }
    }
}

pub fn start(cx: &mut Cx, at: &str, start: &Start) {
    match (start.kind, &start.schedule) {
        (StartKind::Scheduled, None) => cx.err(
            format!("{at}.schedule"),
            "a scheduled start needs a `schedule` with `cron` or `interval`",
        ),
        (StartKind::Default, Some(_)) => cx.warn(
            format!("{at}.schedule"),
            "`schedule` is ignored unless `kind: scheduled`",
        ),
        (StartKind::Scheduled, Some(s)) => {
            let sat = format!("{at}.schedule");
            match (&s.cron, &s.interval) {
                (None, None) => cx.err(&sat, "a schedule needs `cron` or `interval`"),
                (Some(_), Some(_)) => {
                    cx.err(&sat, "a schedule has either `cron` or `interval`, not both")
                }
                (Some(c), None) => cx.cron(&format!("{sat}.cron"), c),
                (None, Some(i)) => cx.written(&format!("{sat}.interval"), i),
            }
            if let Some(tz) = &s.timezone {
                if let Err(e) = crate::time::parse_timezone(tz) {
                    cx.err(format!("{sat}.timezone"), e);
                }
                if s.interval.is_some() {
                    cx.warn(
                        format!("{sat}.timezone"),
                        "`timezone` applies to `cron` only; an interval carries its own offsets",
                    );
                }
            }
            if s.direct_invoke.is_none() {
                cx.warn(
                    format!("{sat}.directInvoke"),
                    "`directInvoke` is missing; `allow` is used",
                );
            }
        }
        (StartKind::Default, None) => {}
    }
}

/// A cron start on an event state: the broker issues the start events itself at each tick
/// (docs/schedules.md), carrying `id`, `source`, `type` and `specversion` of its own. A
/// correlation rule that fixes one of them to a value no tick carries matches no tick, so the
/// schedule would start nothing: warned at the rule's value.
pub fn cron_ticks(cx: &mut Cx, start: &Start, state: &crate::model::EventState) {
    let cron = start.kind == StartKind::Scheduled
        && start.schedule.as_ref().is_some_and(|s| s.cron.is_some());
    if !cron {
        return;
    }
    let refs = state
        .events_actions
        .iter()
        .flat_map(|ea| ea.event_refs.iter());
    let issued: Vec<&String> = refs
        .take(if state.exclusive { 1 } else { usize::MAX })
        .collect();
    let mut found = Vec::new();
    for name in issued {
        let Some((i, ed)) = cx
            .wf
            .events
            .iter()
            .enumerate()
            .find(|(_, e)| &e.name == name)
        else {
            continue;
        };
        for (j, rule) in ed.correlation.iter().enumerate() {
            let Some(fixed) = rule.context_attribute_value.as_deref() else {
                continue;
            };
            let attr = rule.context_attribute_name.trim().to_ascii_lowercase();
            let carried = match attr.as_str() {
                "source" => ed.source.clone(),
                "type" => Some(ed.ce_type().to_string()),
                "specversion" => Some("1.0".to_string()),
                "id" => None,
                _ => continue,
            };
            if carried.as_deref() == Some(fixed) {
                continue;
            }
            let carries = match &carried {
                Some(v) => format!("`{attr}` {v:?}"),
                None => "an `id` of its own, new at every tick".to_string(),
            };
            found.push((
                format!("$.events[{i}].correlation[{j}].contextAttributeValue"),
                format!(
                    "the cron schedule's ticks issue event {name:?} with {carries}, so this \
                     rule's value {fixed:?} matches no tick and the schedule starts no instance \
                     (events from outside still do): drop the value or correlate on another \
                     attribute"
                ),
            ));
        }
    }
    for (path, message) in found {
        cx.warn(path, message);
    }
}

pub fn transition(cx: &mut Cx, at: &str, t: &Transition) {
    cx.state_ref(&format!("{at}.nextState"), &t.next_state);
    if let Some(e) = &t.expression {
        cx.expr(&format!("{at}.expression"), e);
    }
    if let Some(p) = &t.produce_event {
        produce_event(cx, &format!("{at}.produceEvent"), p);
    }
}

pub fn end(cx: &mut Cx, at: &str, end: &crate::model::End) {
    match (end.kind, &end.produce_event) {
        (EndKind::Event, None) => cx.err(
            format!("{at}.produceEvent"),
            "an end of `kind: event` needs `produceEvent` naming the event to produce",
        ),
        (EndKind::Event, Some(p)) => produce_event(cx, &format!("{at}.produceEvent"), p),
        (_, Some(_)) => cx.warn(
            format!("{at}.produceEvent"),
            "`produceEvent` is ignored unless `kind: event`",
        ),
        _ => {}
    }
}

pub fn produce_event(cx: &mut Cx, at: &str, p: &ProduceEvent) {
    cx.event_ref(&format!("{at}.eventRef"), &p.event_ref, EventKind::Produced);
    if let Some(d) = &p.data {
        event_data(cx, &format!("{at}.data"), d);
    }
    if let Some(attrs) = &p.context_attributes {
        context_attributes(cx, &format!("{at}.contextAttributes"), attrs);
    }
}

/// Event data: an expression string or an object with embedded expressions.
pub fn event_data(cx: &mut Cx, at: &str, d: &Value) {
    match d {
        Value::String(s) if s.contains("{{") || s.trim_start().starts_with('$') => cx.expr(at, s),
        other => cx.templates(at, other),
    }
}

/// `contextAttributes`: an object or an array of objects; names follow CloudEvents naming.
pub fn context_attributes(cx: &mut Cx, at: &str, attrs: &Value) {
    let objects: Vec<(String, &serde_json::Map<String, Value>)> = match attrs {
        Value::Object(m) => vec![(at.to_string(), m)],
        Value::Array(items) => {
            let mut v = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::Object(m) => v.push((format!("{at}[{i}]"), m)),
                    _ => cx.err(
                        format!("{at}[{i}]"),
                        "each entry must be an object of attribute names to values",
                    ),
                }
            }
            v
        }
        _ => {
            cx.err(at, "`contextAttributes` must be an object (or an array of objects) of attribute names to values");
            return;
        }
    };
    for (oat, map) in objects {
        for (name, value) in map {
            let path = format!("{oat}.{name}");
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric()) {
                cx.err(&path, format!("{name:?} is not a CloudEvents attribute name: use lowercase letters and digits only"));
            } else if name.chars().any(|c| c.is_ascii_uppercase()) {
                cx.warn(
                    &path,
                    format!(
                        "CloudEvents attribute names are lowercase; produced as {:?}",
                        name.to_ascii_lowercase()
                    ),
                );
            }
            if RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
                cx.err(
                    &path,
                    format!("{name:?} is a reserved CloudEvents attribute and cannot be set here"),
                );
            }
            cx.templates(&path, value);
        }
    }
}

const RESERVED: [&str; 7] = [
    "id",
    "source",
    "type",
    "specversion",
    "time",
    "datacontenttype",
    "data",
];

pub fn state_data_filter(cx: &mut Cx, at: &str, f: &StateDataFilter) {
    if let Some(p) = &f.data_input_path {
        cx.expr(&format!("{at}.dataInputPath"), p);
    }
    if let Some(p) = &f.data_output_path {
        cx.expr(&format!("{at}.dataOutputPath"), p);
    }
}

pub fn on_error(cx: &mut Cx, at: &str, e: &ErrorDef) {
    cx.expr(&format!("{at}.expression"), &e.expression);
    if let Some(f) = &e.error_data_filter {
        if let Some(p) = &f.data_output_path {
            cx.expr(&format!("{at}.errorDataFilter.dataOutputPath"), p);
        }
    }
    match (&e.transition, &e.end) {
        (Some(t), None) => transition(cx, &format!("{at}.transition"), t),
        (None, Some(end_def)) => end(cx, &format!("{at}.end"), end_def),
        (None, None) => cx.err(
            format!("{at}.transition"),
            "an `onError` entry needs a `transition` (or `end`) saying where to go",
        ),
        (Some(_), Some(_)) => cx.err(
            at,
            "an `onError` entry has either `transition` or `end`, not both",
        ),
    }
}

pub fn retry(cx: &mut Cx, at: &str, r: &RetryDef) {
    cx.expr(&format!("{at}.expression"), &r.expression);
    if let Some(i) = &r.interval {
        cx.written(&format!("{at}.interval"), i);
    }
    if let Some(m) = &r.multiplier {
        cx.written(&format!("{at}.multiplier"), m);
    }
}

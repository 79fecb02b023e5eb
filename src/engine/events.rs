//! Consumed events: what an instance waits for, correlation, and delivering an event to the
//! state (or action) waiting for it.

use super::data;
use super::instance::{Activity, Event, Instance, Slot};
use super::{flow, run, Cx, EngineError};
use crate::definition::Definition;
use crate::model::{EventDataFilter, State};
use serde_json::Value;

/// The consumed event definitions the instance would accept now, by name.
pub fn waits_for(def: &Definition, inst: &Instance) -> Vec<String> {
    if inst.status.is_final() {
        return vec![];
    }
    let Some(state) = inst.state.as_deref().and_then(|s| def.workflow.state(s)) else {
        return vec![];
    };
    let names: Vec<String> = match (&inst.activity, state) {
        (Activity::AwaitEvents { received }, State::Event(e)) => e
            .events_actions
            .iter()
            .flat_map(|ea| ea.event_refs.iter())
            .filter(|r| !received.contains(r))
            .cloned()
            .collect(),
        (Activity::SwitchWait, State::Switch(sw)) => sw
            .event_conditions
            .iter()
            .flatten()
            .map(|c| c.event_ref.clone())
            .collect(),
        (Activity::CallbackWait, State::Callback(cb)) => vec![cb.event_ref.clone()],
        (activity, _) => run::runs(activity)
            .into_iter()
            .flat_map(|(_, r)| r.slots.iter())
            .filter_map(|s| match s {
                Slot::AwaitingEvent { event, .. } => Some(event.clone()),
                _ => None,
            })
            .collect(),
    };
    dedupe(names)
}

/// `names` with every name after its first place removed, in order. A state names a few
/// events, so a linear search is the cheap way for a short list; a long one goes through a
/// set of borrowed names (no name is copied either way).
fn dedupe(mut names: Vec<String>) -> Vec<String> {
    if names.len() > 16 {
        let first: Vec<bool> = {
            let mut seen = std::collections::HashSet::with_capacity(names.len());
            names.iter().map(|n| seen.insert(n.as_str())).collect()
        };
        let mut first = first.into_iter();
        names.retain(|_| first.next().unwrap_or(false));
        return names;
    }
    let mut unique: Vec<String> = Vec::with_capacity(names.len());
    for n in names {
        if !unique.contains(&n) {
            unique.push(n);
        }
    }
    unique
}

/// Whether `event` satisfies the correlation rules of event definition `name` for `inst`:
/// every attribute present, fixed values equal, and values pinned by earlier events equal.
pub fn correlates(def: &Definition, inst: &Instance, name: &str, event: &Event) -> bool {
    let Some(ed) = def.workflow.event(name) else {
        return false;
    };
    ed.correlation.iter().all(|rule| {
        let Some(value) = event.attribute(&rule.context_attribute_name) else {
            return false;
        };
        match &rule.context_attribute_value {
            Some(fixed) if fixed.contains("{{") => {
                expected(def, inst, fixed).is_some_and(|s| s == value)
            }
            Some(fixed) => *fixed == value,
            None => inst
                .correlation
                .get(&rule.context_attribute_name.to_ascii_lowercase())
                .is_none_or(|pinned| *pinned == value),
        }
    })
}

/// The attribute value a correlation rule whose `contextAttributeValue` is an expression
/// expects of `inst`: the expression on the instance's data, a string as it is and anything
/// else as compact JSON. `None` when it does not evaluate (no event can match then).
pub fn expected(def: &Definition, inst: &Instance, template: &str) -> Option<String> {
    let e = def.template(template).ok()?;
    match e.eval(&inst.data) {
        Value::String(s) => Some(s),
        other => serde_json::to_string(&other).ok(),
    }
}

/// Delivers `event` to whatever in the instance waits for it.
pub fn consume(cx: &mut Cx, event: Event) -> Result<(), EngineError> {
    let waiting = waits_for(cx.def, &cx.inst);
    let name = cx
        .def
        .workflow
        .events
        .iter()
        .filter(|d| {
            d.source.as_deref() == Some(event.source.as_str()) && d.ce_type() == event.event_type
        })
        .map(|d| d.name.clone())
        .find(|n| waiting.contains(n) && correlates(cx.def, &cx.inst, n, &event))
        .ok_or_else(|| EngineError::NotWaiting {
            id: cx.inst.id.clone(),
            event_type: event.event_type.clone(),
            event_source: event.source.clone(),
        })?;
    pin(cx, &name, &event);
    match (cx.state(), std::mem::take(&mut cx.inst.activity)) {
        (State::Event(e), Activity::AwaitEvents { mut received }) => {
            let g = e
                .events_actions
                .iter()
                .position(|ea| ea.event_refs.contains(&name))
                .unwrap_or(0);
            merge(cx, e.events_actions[g].event_data_filter.as_ref(), event);
            if e.exclusive {
                run::start_group(cx, g, vec![]);
            } else {
                received.push(name);
                let all = e
                    .events_actions
                    .iter()
                    .flat_map(|ea| ea.event_refs.iter())
                    .all(|r| received.contains(r));
                if all {
                    let id = format!("{}/timeout", cx.inst.visit_key());
                    cx.disarm(&id);
                    let rest: Vec<usize> = (1..e.events_actions.len()).collect();
                    run::start_group(cx, 0, rest);
                } else {
                    cx.inst.activity = Activity::AwaitEvents { received };
                }
            }
        }
        (State::Switch(sw), Activity::SwitchWait) => {
            let cond = sw
                .event_conditions
                .iter()
                .flatten()
                .find(|c| c.event_ref == name)
                .expect("waits_for lists only condition events");
            merge(cx, cond.event_data_filter.as_ref(), event);
            cx.inst.activity = Activity::SwitchWait;
            flow::complete_with(cx, Some(&cond.transition), None);
        }
        (State::Callback(cb), Activity::CallbackWait) => {
            merge(cx, cb.event_data_filter.as_ref(), event);
            cx.inst.activity = Activity::CallbackWait;
            flow::complete(cx);
        }
        (_, activity) => {
            cx.inst.activity = activity;
            let slot =
                run::runs(&cx.inst.activity)
                    .into_iter()
                    .find_map(|(lane, r)| {
                        r.slots
                    .iter()
                    .position(|s| matches!(s, Slot::AwaitingEvent { event, .. } if *event == name))
                    .map(|i| (lane, i))
                    });
            if let Some((lane, idx)) = slot {
                run::complete_slot(cx, lane, idx, event.data.unwrap_or(Value::Null));
            }
        }
    }
    Ok(())
}

/// Merges event data into the state data through an event data filter.
/// The whole event is made JSON only for a filter, which selects from it first and then from
/// the event's data.
fn merge(cx: &mut Cx, filter: Option<&EventDataFilter>, event: Event) {
    let path = filter.and_then(|f| f.selector()).and_then(|p| cx.path(p));
    let Some(path) = path else {
        return data::merge_result(&mut cx.inst.data, event.data.unwrap_or(Value::Null), None);
    };
    // an extension named `data` takes the data's place in the whole event: keep a copy then
    let apart = event
        .extensions
        .contains_key("data")
        .then(|| event.data.clone().unwrap_or(Value::Null));
    data::merge_event(&mut cx.inst.data, event.into_json(), apart, &path);
}

/// Pins the event's correlation values and adds them to the state data (unless present).
fn pin(cx: &mut Cx, name: &str, event: &Event) {
    let Some(ed) = cx.def.workflow.event(name) else {
        return;
    };
    for rule in &ed.correlation {
        let Some(value) = event.attribute(&rule.context_attribute_name) else {
            continue;
        };
        if rule.context_attribute_value.is_none() {
            cx.inst.correlation.insert(
                rule.context_attribute_name.to_ascii_lowercase(),
                value.clone(),
            );
        }
        let absent = cx.inst.data.get(&rule.context_attribute_name).is_none();
        if absent {
            data::put(
                &mut cx.inst.data,
                &rule.context_attribute_name,
                Value::String(value),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::dedupe;

    fn names(s: &[&str]) -> Vec<String> {
        s.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_name_keeps_its_first_place_in_short_and_long_lists() {
        assert_eq!(
            dedupe(names(&["b", "a", "b", "c", "a"])),
            names(&["b", "a", "c"])
        );
        // over the linear search's length: the set's way, the same answer
        let long: Vec<String> = (0..40).map(|i| format!("e{}", (i * 7) % 20)).collect();
        let expected: Vec<String> = (0..20).map(|i| format!("e{}", (i * 7) % 20)).collect();
        assert_eq!(dedupe(long), expected);
    }
}

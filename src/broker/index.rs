//! Correlation keys and the index entries an instance should have.
//!
//! The key of an event definition is the tuple of the values of its correlation rules that
//! have no fixed `contextAttributeValue`, in rule order. An event has a key for a definition
//! when it carries every rule's attribute (and fixed values match); an instance has one when
//! it has pinned every such attribute. An instance with nothing pinned waits under [`ANY`].

use crate::definition::Definition;
use crate::engine::{waits_for, Event, Instance};
use crate::model::EventDef;
use crate::store::key;
use std::collections::BTreeSet;

/// The key of instances that have not pinned the values of a definition yet.
pub const ANY: &str = "*";
const VALUE_SEP: &str = "\u{1e}";

/// The event's key for definition `ed`, or `None` when it cannot match.
pub fn event_key(ed: &EventDef, event: &Event) -> Option<String> {
    let mut values = Vec::new();
    for rule in &ed.correlation {
        let value = event.attribute(&rule.context_attribute_name)?;
        match &rule.context_attribute_value {
            // an expression is checked against the instance by the engine
            Some(fixed) if fixed.contains("{{") => {}
            Some(fixed) if *fixed != value => return None,
            Some(_) => {}
            None => values.push(value),
        }
    }
    Some(values.join(VALUE_SEP))
}

/// The instance's key for definition `ed`, or `None` when some value is not pinned yet.
pub fn instance_key(ed: &EventDef, inst: &Instance) -> Option<String> {
    let mut values = Vec::new();
    for rule in ed
        .correlation
        .iter()
        .filter(|r| r.context_attribute_value.is_none())
    {
        let v = inst
            .correlation
            .get(&rule.context_attribute_name.to_ascii_lowercase())?;
        values.push(v.clone());
    }
    Some(values.join(VALUE_SEP))
}

/// Whether the definition has a key at all (some rule without a fixed value).
pub fn keyed(ed: &EventDef) -> bool {
    ed.correlation
        .iter()
        .any(|r| r.context_attribute_value.is_none())
}

/// `Waits` entries: one per event the instance waits for now.
pub fn waits(def: &Definition, inst: &Instance) -> BTreeSet<String> {
    waits_for(def, inst)
        .into_iter()
        .filter_map(|name| {
            let ed = def.workflow.event(&name)?;
            let k = instance_key(ed, inst).unwrap_or_else(|| ANY.to_string());
            Some(key(&[&inst.workflow_id, &name, &k, &inst.id]))
        })
        .collect()
}

/// `Active` entries: one per keyed event definition whose values the instance has pinned.
pub fn active(def: &Definition, inst: &Instance) -> BTreeSet<String> {
    if inst.status.is_final() {
        return BTreeSet::new();
    }
    def.workflow
        .events
        .iter()
        .filter(|ed| keyed(ed))
        .filter_map(|ed| {
            let k = instance_key(ed, inst)?;
            Some(key(&[&inst.workflow_id, &ed.name, &k]))
        })
        .collect()
}

/// The Kafka key of events an instance produces: its correlation values, else its id.
pub fn kafka_key(inst: &Instance) -> String {
    if inst.correlation.is_empty() {
        inst.id.clone()
    } else {
        inst.correlation
            .values()
            .cloned()
            .collect::<Vec<_>>()
            .join(",")
    }
}

//! Correlation keys and the index entries an instance should have.
//!
//! The key of an event definition is the tuple of the values of its correlation rules that
//! have no fixed `contextAttributeValue`, ordered by attribute name. An event has a key for a definition
//! when it carries every rule's attribute (and fixed values match); an instance has one when
//! it has pinned every such attribute. An instance with nothing pinned waits under [`ANY`].

use crate::cluster::partition::{PartitionId, Partitions};
use crate::definition::Definition;
use crate::engine::{waits_for, Event, Instance};
use crate::model::EventDef;
use crate::store::key;
use std::collections::BTreeSet;

/// The key of instances that have not pinned the values of a definition yet.
pub const ANY: &str = "*";
const VALUE_SEP: &str = "\u{1e}";

/// The correlation rules of `ed` in key order: by attribute name (lower case), so that two
/// definitions on the same attributes share keys, and so state partitions.
fn rules(ed: &EventDef) -> Vec<&crate::model::CorrelationDef> {
    let mut rules: Vec<_> = ed.correlation.iter().collect();
    rules.sort_by_key(|r| r.context_attribute_name.to_ascii_lowercase());
    rules
}

/// The event's key for definition `ed`, or `None` when it cannot match.
pub fn event_key(ed: &EventDef, event: &Event) -> Option<String> {
    let mut values = Vec::new();
    for rule in rules(ed) {
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
    for rule in rules(ed)
        .into_iter()
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

/// An index entry: `Waits` (with the instance in the key) or `Active` (the instance is the
/// value). It lives on the partition of its key ([`Entry::owners`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub workflow: String,
    pub event: String,
    /// The correlation key, or [`ANY`] for an instance with nothing pinned yet.
    pub key: String,
    pub instance: String,
}

impl Entry {
    /// The key in `Waits`: `workflow SEP event SEP key SEP instance`.
    pub fn waits_key(&self) -> String {
        key(&[&self.workflow, &self.event, &self.key, &self.instance])
    }

    /// The key in `Active`: `workflow SEP event SEP key`.
    pub fn active_key(&self) -> String {
        key(&[&self.workflow, &self.event, &self.key])
    }

    /// The partitions that keep this entry: its key's, or all for an instance that has
    /// pinned nothing (any key's event may match it).
    pub fn owners(&self, parts: Partitions) -> Vec<PartitionId> {
        if self.key == ANY {
            parts.all().collect()
        } else {
            vec![parts.of_key(&self.workflow, &self.key)]
        }
    }

    /// Parses a `Waits` key back.
    pub fn from_waits_key(k: &str) -> Option<Entry> {
        let mut it = k.split(crate::store::SEP);
        let e = Entry {
            workflow: it.next()?.to_string(),
            event: it.next()?.to_string(),
            key: it.next()?.to_string(),
            instance: it.next()?.to_string(),
        };
        it.next().is_none().then_some(e)
    }
}

/// `Waits` entries: one per event the instance waits for now.
pub fn waits(def: &Definition, inst: &Instance) -> BTreeSet<Entry> {
    waits_for(def, inst)
        .into_iter()
        .filter_map(|name| {
            let ed = def.workflow.event(&name)?;
            let k = instance_key(ed, inst).unwrap_or_else(|| ANY.to_string());
            Some(Entry {
                workflow: inst.workflow_id.clone(),
                event: name,
                key: k,
                instance: inst.id.clone(),
            })
        })
        .collect()
}

/// `Active` entries: one per keyed event definition whose values the instance has pinned.
pub fn active(def: &Definition, inst: &Instance) -> BTreeSet<Entry> {
    if inst.status.is_final() {
        return BTreeSet::new();
    }
    def.workflow
        .events
        .iter()
        .filter(|ed| keyed(ed))
        .filter_map(|ed| {
            let k = instance_key(ed, inst)?;
            Some(Entry {
                workflow: inst.workflow_id.clone(),
                event: ed.name.clone(),
                key: k,
                instance: inst.id.clone(),
            })
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

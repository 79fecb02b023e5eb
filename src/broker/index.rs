//! Correlation keys and the index entries an instance should have.
//!
//! The key of an event definition is the tuple of the values of its correlation rules that
//! have no fixed `contextAttributeValue`, ordered by attribute name. An event has a key for a definition
//! when it carries every rule's attribute (and fixed values match); an instance has one when
//! it has pinned every such attribute. The key picks the state partition.
//!
//! A `Waits` entry is indexed under a finer key, so that an event finds exactly the instances
//! that take it, never a list to filter:
//! - a value the instance has not pinned yet is [`ANY`] in its place (an instance with nothing
//!   pinned waits under [`ANY`] alone); an event looks its values up with every subset of
//!   them replaced by [`ANY`] (2^n prefix reads for n rules without a fixed value, those with
//!   [`ANY`] only where an instance waits under them: `broker::unpinned`);
//! - rules whose value is an expression add a guard: the value the expression gives on the
//!   instance's data (`!` when it does not evaluate), matched against the event's attribute.

use super::compound::{ActiveOf, WaitsOf};
use crate::cluster::partition::{PartitionId, Partitions};
use crate::definition::Definition;
use crate::engine::{expected, waits_for, Event, Instance};
use crate::model::{CorrelationDef, EventDef};
use std::collections::BTreeSet;

/// The key of instances that have not pinned the values of a definition yet (and, in a
/// partly pinned key, the place of a value not pinned yet).
pub const ANY: &str = "*";
const VALUE_SEP: &str = "\u{1e}";
/// Between a waits key's values and its expression guard.
const GUARD_SEP: char = '\u{1d}';
/// A guard value: the expected attribute value follows.
const GUARD_VALUE: char = '=';
/// A guard the instance's data cannot give: no event matches it.
const GUARD_NONE: &str = "!";

/// The correlation rules of `ed` in key order: by attribute name (lower case), so that two
/// definitions on the same attributes share keys, and so state partitions.
fn rules(ed: &EventDef) -> Vec<&CorrelationDef> {
    let mut rules: Vec<_> = ed.correlation.iter().collect();
    rules.sort_by_key(|r| r.context_attribute_name.to_ascii_lowercase());
    rules
}

/// Whether the rule's value is an expression on the instance's data.
fn is_expression(rule: &CorrelationDef) -> bool {
    rule.context_attribute_value
        .as_deref()
        .is_some_and(|v| v.contains("{{"))
}

/// What an event carries for one event definition: the values of its rules without a fixed
/// value (in key order) and of its expression rules (the guard). Read once per definition.
pub struct EventValues {
    values: Vec<String>,
    guard: Vec<String>,
}

impl EventValues {
    /// The event's values for definition `ed`, or `None` when it cannot match (an attribute
    /// missing, a fixed value different).
    pub fn of(ed: &EventDef, event: &Event) -> Option<EventValues> {
        let mut values = Vec::new();
        let mut guard = Vec::new();
        for rule in rules(ed) {
            let value = event.attribute(&rule.context_attribute_name)?;
            match &rule.context_attribute_value {
                Some(_) if is_expression(rule) => guard.push(format!("{GUARD_VALUE}{value}")),
                Some(fixed) if *fixed != value => return None,
                Some(_) => {}
                None => values.push(value),
            }
        }
        Some(EventValues { values, guard })
    }

    /// The correlation key (it picks the state partition; expression values are not in it).
    pub fn key(&self) -> String {
        self.values.join(VALUE_SEP)
    }

    /// The `Waits` keys to look up: the key with every subset of its values replaced by
    /// [`ANY`], the fully pinned key first, each with the event's guard.
    pub fn wait_keys(&self) -> Vec<String> {
        let n = self.values.len();
        (0u64..1 << n.min(16))
            .map(|mask| {
                let parts: Vec<&str> = (0..n)
                    .map(|i| {
                        if mask & (1 << i) != 0 {
                            ANY
                        } else {
                            self.values[i].as_str()
                        }
                    })
                    .collect();
                with_guard(joined(&parts), &self.guard)
            })
            .collect()
    }
}

/// The event's key for definition `ed`, or `None` when it cannot match.
pub fn event_key(ed: &EventDef, event: &Event) -> Option<String> {
    EventValues::of(ed, event).map(|v| v.key())
}

/// Values joined into a key; all of them unpinned is [`ANY`] alone.
fn joined(parts: &[&str]) -> String {
    if !parts.is_empty() && parts.iter().all(|p| *p == ANY) {
        ANY.to_string()
    } else {
        parts.join(VALUE_SEP)
    }
}

fn with_guard(mut k: String, guard: &[String]) -> String {
    if !guard.is_empty() {
        k.push(GUARD_SEP);
        k.push_str(&guard.join(VALUE_SEP));
    }
    k
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

/// The `Waits` key of an instance waiting for definition `ed`: its pinned values ([`ANY`] for
/// those not pinned yet) and the guard its data gives for expression rules.
pub fn instance_wait_key(def: &Definition, ed: &EventDef, inst: &Instance) -> String {
    let mut values = Vec::new();
    let mut guard = Vec::new();
    for rule in rules(ed) {
        match &rule.context_attribute_value {
            // (a value with a control character is one no event carries, since they are
            // refused on decode (`cloudevent`), and it could hold the store's separators:
            // read inside a waits key, it would make a prefix of another key)
            Some(template) if is_expression(rule) => guard.push(
                expected(def, inst, template)
                    .filter(|v| !v.chars().any(char::is_control))
                    .map(|v| format!("{GUARD_VALUE}{v}"))
                    .unwrap_or_else(|| GUARD_NONE.to_string()),
            ),
            Some(_) => {}
            None => values.push(
                inst.correlation
                    .get(&rule.context_attribute_name.to_ascii_lowercase())
                    .map_or(ANY, |v| v.as_str()),
            ),
        }
    }
    with_guard(joined(&values), &guard)
}

/// Whether a waits key has a value not pinned yet: its entry is kept on every partition,
/// since an event of any key may match it.
pub fn has_any(k: &str) -> bool {
    let values = k.split(GUARD_SEP).next().unwrap_or_default();
    values == ANY || values.split(VALUE_SEP).any(|v| v == ANY)
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
    /// `Waits`: the waits key ([`instance_wait_key`]); `Active`: the correlation key.
    pub key: String,
    pub instance: String,
}

impl Entry {
    /// The entry in `Waits`: `workflow SEP event SEP key SEP instance`.
    pub fn waits(&self) -> WaitsOf {
        WaitsOf::new(&self.workflow, &self.event, &self.key, &self.instance)
    }

    /// The entry in `Active`: `workflow SEP event SEP key`.
    pub fn active(&self) -> ActiveOf {
        ActiveOf::new(&self.workflow, &self.event, &self.key)
    }

    /// The partitions that keep this entry: its key's (without the guard), or all for an
    /// instance that has not pinned every value (any key's event may match it).
    pub fn owners(&self, parts: Partitions) -> Vec<PartitionId> {
        if has_any(&self.key) {
            parts.all().collect()
        } else {
            let values = self.key.split(GUARD_SEP).next().unwrap_or_default();
            vec![parts.of_key(&self.workflow, values)]
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
            Some(Entry {
                workflow: inst.workflow_id.clone(),
                key: instance_wait_key(def, ed, inst),
                event: name,
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
    if let Some(x) = crate::engine::swf::execution_of(inst) {
        // an SWF run is the open run of its workflow id (at most one)
        return BTreeSet::from([swf_run_entry(&x.key(), &inst.id)]);
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

/// The `Active` entry naming `instance` as the open run of an SWF workflow id.
pub fn swf_run_entry(key: &crate::swf::RunKey, instance: &str) -> Entry {
    Entry {
        workflow: crate::swf::EXECUTIONS.into(),
        event: SWF_RUN.into(),
        key: key.index_key(),
        instance: instance.to_string(),
    }
}

/// The `Active` entry of the open run of an SWF workflow id: its value is the run's instance.
pub fn open_run(key: &crate::swf::RunKey) -> ActiveOf {
    ActiveOf::new(crate::swf::EXECUTIONS, SWF_RUN, &key.index_key())
}

/// The event name of SWF runs' `Active` entries.
pub const SWF_RUN: &str = "run";

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Format;
    use serde_json::json;

    const WF: &str = r#"
id: w
name: w
events:
- name: E
  type: t
  source: /s
  correlation:
  - {contextAttributeName: region}
  - {contextAttributeName: customerId}
  - {contextAttributeName: channel, contextAttributeValue: web}
  - {contextAttributeName: orderid, contextAttributeValue: "{{ $.order }}"}
states:
- {name: A, type: event, start: {kind: default}, eventsActions: [{eventRefs: [E]}], end: {kind: default}}
"#;

    fn event(attrs: &[(&str, &str)]) -> Event {
        Event {
            id: "1".into(),
            source: "/s".into(),
            event_type: "t".into(),
            time: None,
            datacontenttype: None,
            subject: None,
            data: None,
            extensions: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect(),
        }
    }

    /// Every pin state of an instance is one of the keys an event looks up, and only the
    /// event whose values and expression value agree finds it.
    #[test]
    fn an_instance_is_found_under_exactly_the_keys_that_match_it() {
        let def = Definition::parse("w.yaml", WF, Format::Yaml).unwrap();
        let ed = def.workflow.event("E").unwrap();
        let e = event(&[
            ("customerid", "c1"),
            ("region", "eu"),
            ("channel", "web"),
            ("orderid", "o-1"),
        ]);
        let keys = EventValues::of(ed, &e).unwrap().wait_keys();
        assert_eq!(keys.len(), 4, "{keys:?}");
        assert_eq!(event_key(ed, &e).as_deref(), Some("c1\u{1e}eu"));
        assert!(!has_any(&keys[0]) && keys[1..].iter().all(|k| has_any(k)));
        let mut inst = Instance::new("i", "w");
        inst.data = json!({"order": "o-1"});
        for pins in [
            vec![],
            vec![("customerid", "c1")],
            vec![("region", "eu")],
            vec![("customerid", "c1"), ("region", "eu")],
        ] {
            inst.correlation = pins
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let k = instance_wait_key(&def, ed, &inst);
            assert!(keys.contains(&k), "{pins:?}: {k:?} not in {keys:?}");
            assert_eq!(has_any(&k), pins.len() < 2);
        }
        // another customer, another order, or a data value that does not evaluate: not found
        inst.correlation = [("customerid".to_string(), "c2".to_string())].into();
        assert!(!keys.contains(&instance_wait_key(&def, ed, &inst)));
        inst.correlation.clear();
        inst.data = json!({"order": "o-2"});
        assert!(!keys.contains(&instance_wait_key(&def, ed, &inst)));
        inst.data = json!({"order": 7});
        assert!(instance_wait_key(&def, ed, &inst).ends_with("=7"));
        // a value with a control character (a separator of the store's keys among them)
        // waits under the guard no event gives, and its waits key reads back as written
        for order in ["o-1\u{1f}x", "o-1\u{1e}=x", "o\u{1d}1", "o-1\n"] {
            inst.data = json!({ "order": order });
            let k = instance_wait_key(&def, ed, &inst);
            assert!(k.ends_with(&format!("{GUARD_SEP}{GUARD_NONE}")), "{k:?}");
            let entry = Entry {
                workflow: "w".into(),
                event: "E".into(),
                key: k,
                instance: "i".into(),
            };
            assert_eq!(
                Entry::from_waits_key(&entry.waits().into_key()),
                Some(entry)
            );
        }
        // a fixed value that differs, or a missing attribute: no keys at all
        assert!(EventValues::of(
            ed,
            &event(&[
                ("customerid", "c1"),
                ("region", "eu"),
                ("channel", "app"),
                ("orderid", "o-1")
            ])
        )
        .is_none());
        assert!(EventValues::of(
            ed,
            &event(&[("customerid", "c1"), ("region", "eu"), ("channel", "web")])
        )
        .is_none());
    }

    /// An entry keeps to its key's partition unless a value is not pinned yet; the guard
    /// does not move it.
    #[test]
    fn the_guard_does_not_change_the_partition() {
        let parts = Partitions::new(8).unwrap();
        let entry = |key: &str| Entry {
            workflow: "w".into(),
            event: "E".into(),
            key: key.into(),
            instance: "i".into(),
        };
        let plain = entry("c1\u{1e}eu").owners(parts);
        assert_eq!(plain.len(), 1);
        assert_eq!(entry("c1\u{1e}eu\u{1d}=o-1").owners(parts), plain);
        assert_eq!(entry("*\u{1e}eu\u{1d}=o-1").owners(parts).len(), 8);
        assert_eq!(entry("*").owners(parts).len(), 8);
    }
}

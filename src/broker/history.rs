//! Instance history: one entry per applied input, with the engine's decisions. An entry stays
//! small whatever the events carry: each payload in it (event data, function arguments and
//! results, child input and output, workflow output) larger than about `history.inline_bytes`
//! is stored beside the entry in the `payloads` table, and the entry keeps a summary in its
//! place (`{"$payload": n, "bytes": N}`) and lists where each one was. The API puts them back
//! ([`expand`]). An instance keeps at most `history.max_entries` entries; the oldest goes, with
//! its payloads, when a new one comes. Retention deletes the rest with the instance.

use super::batch::{Batch, Result};
use super::history_entries::{HistoryAt, PayloadOf};
use super::records::{HistoryEntryOf, PayloadRef};
use crate::engine::{Action, Input};
use crate::store::{Scope, Snapshot, Txn};
use serde_json::{json, Value};

/// Where a payload field is in an entry (its JSON pointer is made only for one stored apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// A field of the input.
    Input(&'static str),
    /// The data of the `n`th event of a start.
    StartEvent(usize),
    /// A field of the `n`th action.
    Action(usize, &'static str),
}

impl Slot {
    /// The JSON pointer of the field in the entry.
    fn pointer(self) -> String {
        match self {
            Slot::Input(field) => format!("/input/{field}"),
            Slot::StartEvent(i) => format!("/input/events/{i}/data"),
            Slot::Action(i, field) => format!("/actions/{i}/{field}"),
        }
    }
}

/// The payload fields of an input and its actions, with where they are in the entry.
fn payloads<'a>(input: &'a Input, actions: &'a [Action]) -> Vec<(Slot, &'a Value)> {
    let mut out: Vec<(Slot, &Value)> = Vec::new();
    match input {
        Input::Start { input, events } => {
            out.push((Slot::Input("input"), input));
            for (i, e) in events.iter().enumerate() {
                if let Some(d) = e.data.as_ref() {
                    out.push((Slot::StartEvent(i), d));
                }
            }
        }
        Input::Event { event } => {
            if let Some(d) = event.data.as_ref() {
                out.push((Slot::Input("event/data"), d));
            }
        }
        Input::ActionResult { result, .. } => out.push((Slot::Input("result"), result)),
        Input::ChildCompleted { output, .. } => out.push((Slot::Input("output"), output)),
        Input::Checkpoint { updates, .. } => out.push((Slot::Input("updates"), updates)),
        Input::ActionFailed { .. }
        | Input::Swf { .. }
        | Input::TimerFired { .. }
        | Input::ChildFailed { .. }
        | Input::Cancel => {}
    }
    for (i, a) in actions.iter().enumerate() {
        let (field, v) = match a {
            Action::Produce { event } => match event.data.as_ref() {
                Some(d) => ("event/data", d),
                None => continue,
            },
            Action::Invoke { parameters, .. } => ("parameters", parameters),
            Action::StartChild { input, .. } => ("input", input),
            Action::Complete { output } | Action::Terminate { output } => ("output", output),
            Action::ArmTimer { .. }
            | Action::CancelTimer { .. }
            | Action::CancelChild { .. }
            | Action::Fail { .. }
            | Action::Cancelled
            | Action::Offer { .. }
            | Action::Send { .. }
            | Action::SendToRun { .. } => continue,
        };
        out.push((Slot::Action(i, field), v));
    }
    out
}

/// Whether `v` serializes to more than `limit` bytes (exactly, but for escapes in strings);
/// stops counting as soon as it does, so a large value costs no more than `limit` bytes' worth
/// of walking and nothing is serialized to find out.
fn larger_than(v: &Value, limit: usize) -> bool {
    fn digits(n: &serde_json::Number) -> isize {
        match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.checked_ilog10().unwrap_or(0) as isize + 1,
            (_, Some(i)) => i.unsigned_abs().checked_ilog10().unwrap_or(0) as isize + 2,
            _ => n.to_string().len() as isize, // a float
        }
    }
    fn size(v: &Value, budget: &mut isize) {
        if *budget < 0 {
            return;
        }
        *budget -= match v {
            Value::Null | Value::Bool(true) => 4,
            Value::Bool(false) => 5,
            Value::Number(n) => digits(n),
            Value::String(s) => s.len() as isize + 2,
            Value::Array(a) => {
                for x in a {
                    size(x, budget);
                }
                a.len().saturating_sub(1) as isize + 2
            }
            Value::Object(o) => {
                for (k, x) in o {
                    *budget -= k.len() as isize + 3;
                    size(x, budget);
                }
                o.len().saturating_sub(1) as isize + 2
            }
        };
    }
    let mut budget = limit as isize;
    size(v, &mut budget);
    budget < 0
}

/// A copy of `entry` with a summary (`{"$payload": n, "bytes": N}`) in place of each payload
/// at `large`, and `payloads` (the last field of a stored entry) listing where they were; the
/// payloads' bytes, `n` in order.
fn set_apart(entry: &HistoryEntryOf<'_>, large: Vec<Slot>) -> (Value, Vec<Vec<u8>>) {
    let mut copy = serde_json::to_value(entry).expect("history entries serialize");
    let mut refs = Vec::with_capacity(large.len());
    let mut apart = Vec::with_capacity(large.len());
    for slot in large {
        let pointer = slot.pointer();
        let Some(v) = copy.pointer_mut(&pointer) else {
            continue;
        };
        let bytes = serde_json::to_vec(&*v).expect("JSON values serialize");
        *v = json!({"$payload": apart.len(), "bytes": bytes.len()});
        apart.push(bytes);
        refs.push(PayloadRef { pointer });
    }
    if !refs.is_empty() {
        copy["payloads"] = serde_json::to_value(&refs).expect("pointers serialize");
    }
    (copy, apart)
}

impl Batch<'_, '_> {
    /// Stores `entry` as entry `seq` of instance `id`: payloads over the inline limit go to
    /// the `payloads` table, and past `history.max_entries` the oldest entry goes.
    pub fn record_history(&mut self, id: &str, seq: u64, entry: HistoryEntryOf<'_>) -> Result<()> {
        let inline = self.cfg.history.inline_bytes;
        let large: Vec<Slot> = payloads(entry.input, entry.actions)
            .into_iter()
            .filter(|(_, v)| larger_than(v, inline))
            .map(|(slot, _)| slot)
            .collect();
        let at = HistoryAt::new(id, seq);
        if large.is_empty() {
            // the usual case: the entry is written from what it borrows, nothing copied
            self.tx.write_encoded(&at, Txn::encode(&entry))?;
        } else {
            let (copy, apart) = set_apart(&entry, large);
            for (n, bytes) in apart.into_iter().enumerate() {
                self.tx.write_encoded(&at.payload(n), bytes)?;
            }
            self.tx.write_encoded(&at, Txn::encode(&copy))?;
        }
        let keep = self.cfg.history.max_entries;
        if seq >= keep {
            let old = HistoryAt::new(id, seq - keep);
            if self.tx.erase(&old)? {
                self.tx.clear_of::<PayloadOf>(&old.payloads())?;
            }
        }
        Ok(())
    }

    /// Deletes the history and payloads of instance `id` (retention). Neither table keeps
    /// bloom filters, so the keys one scan finds are removed without looking them up again.
    pub fn forget_history(&mut self, id: &str) -> Result<()> {
        let prefix = HistoryAt::of(id);
        self.tx.clear_of::<HistoryAt>(&prefix)?;
        self.tx.clear_of::<PayloadOf>(&prefix)?;
        Ok(())
    }
}

/// Puts the payloads of entry `seq` of instance `id` back in place.
pub fn expand(
    tx: &Snapshot<'_>,
    scope: Scope,
    id: &str,
    seq: u64,
    entry: &mut Value,
    refs: &[PayloadRef],
) -> Result<()> {
    let at = HistoryAt::new(id, seq);
    for (n, r) in refs.iter().enumerate() {
        let full = tx.read_in(scope, &at.payload(n))?;
        if let (Some(full), Some(slot)) = (full, entry.pointer_mut(&r.pointer)) {
            *slot = full;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::records::HistoryEntry;

    #[test]
    fn larger_than_counts_about_the_serialized_size() {
        for v in [
            json!(null),
            json!(-12.5),
            json!([false, -7, 1234567890]),
            json!("x".repeat(100)),
            json!({"a": [1, 2, {"b": "cc"}], "d": true}),
            json!((0..50)
                .map(|i| json!({"k": i, "s": "vv"}))
                .collect::<Vec<_>>()),
        ] {
            let n = serde_json::to_vec(&v).unwrap().len();
            assert!(!larger_than(&v, n), "{v}: {n}");
            assert!(larger_than(&v, n - 1), "{v}: {n}");
        }
    }

    fn entry_parts() -> (Input, Vec<Action>) {
        let input = Input::Event {
            event: crate::engine::Event {
                id: "e1".into(),
                source: "/s".into(),
                event_type: "t".into(),
                time: None,
                datacontenttype: None,
                subject: None,
                data: Some(json!({"big": "x".repeat(100), "n": 1.5})),
                extensions: serde_json::Map::new(),
            },
        };
        let actions = vec![
            Action::CancelTimer { id: "t".into() },
            Action::Complete {
                output: json!({"small": true}),
            },
        ];
        (input, actions)
    }

    #[test]
    fn a_borrowed_entry_is_written_as_the_entry() {
        let (input, actions) = entry_parts();
        let entered = vec!["A".to_string(), "B".to_string()];
        let at = chrono::Utc::now();
        let owned = HistoryEntry {
            at,
            input: input.clone(),
            actions: actions.clone(),
            state: Some("B".into()),
            status: crate::engine::Status::Running,
            entered: entered.clone(),
            payloads: Vec::new(),
        };
        let of = HistoryEntryOf {
            at,
            input: &input,
            actions: &actions,
            state: Some("B"),
            status: crate::engine::Status::Running,
            entered: &entered,
        };
        assert_eq!(
            serde_json::to_vec(&of).unwrap(),
            serde_json::to_vec(&owned).unwrap()
        );
        let bare = HistoryEntryOf {
            actions: &[],
            state: None,
            entered: &[],
            ..of
        };
        let owned = HistoryEntry {
            actions: Vec::new(),
            state: None,
            entered: Vec::new(),
            ..owned
        };
        assert_eq!(
            serde_json::to_vec(&bare).unwrap(),
            serde_json::to_vec(&owned).unwrap()
        );
    }

    #[test]
    fn large_payloads_are_set_apart_with_a_summary_and_their_pointer() {
        let (input, actions) = entry_parts();
        let at = chrono::Utc::now();
        let of = HistoryEntryOf {
            at,
            input: &input,
            actions: &actions,
            state: None,
            status: crate::engine::Status::Running,
            entered: &[],
        };
        let large: Vec<Slot> = payloads(&input, &actions)
            .into_iter()
            .filter(|(_, v)| larger_than(v, 64))
            .map(|(s, _)| s)
            .collect();
        assert_eq!(large, [Slot::Input("event/data")]);
        let (copy, apart) = set_apart(&of, large);
        let data = serde_json::to_vec(&json!({"big": "x".repeat(100), "n": 1.5})).unwrap();
        assert_eq!(apart, std::slice::from_ref(&data));
        assert_eq!(
            copy["input"]["event"]["data"],
            json!({"$payload": 0, "bytes": data.len()})
        );
        assert_eq!(copy["actions"][1]["output"], json!({"small": true}));
        // what is stored reads back as an entry, and writes out as it was stored
        let stored = serde_json::to_vec(&copy).unwrap();
        let back: HistoryEntry = serde_json::from_slice(&stored).unwrap();
        assert_eq!(
            back.payloads,
            [PayloadRef {
                pointer: "/input/event/data".into()
            }]
        );
        assert_eq!(serde_json::to_vec(&back).unwrap(), stored);
    }

    #[test]
    fn every_payload_field_is_found_with_its_pointer() {
        let input = Input::ActionResult {
            key: "k".into(),
            result: json!({"r": 1}),
        };
        let actions = vec![
            Action::Invoke {
                key: "k2".into(),
                function: "f".into(),
                resource: "r".into(),
                parameters: json!({"p": 1}),
                attempt: 0,
                timeout_secs: None,
                stale_on_takeover: false,
            },
            Action::CancelTimer { id: "t".into() },
            Action::Complete { output: json!(3) },
        ];
        let found: Vec<String> = payloads(&input, &actions)
            .into_iter()
            .map(|(slot, _)| slot.pointer())
            .collect();
        assert_eq!(
            found,
            [
                "/input/result",
                "/actions/0/parameters",
                "/actions/2/output"
            ]
        );
        // the pointers are where serde puts the fields
        let entry = json!({"input": input, "actions": actions});
        assert_eq!(entry.pointer("/input/result"), Some(&json!({"r": 1})));
        assert_eq!(
            entry.pointer("/actions/0/parameters"),
            Some(&json!({"p": 1}))
        );
        assert_eq!(entry.pointer("/actions/2/output"), Some(&json!(3)));
    }
}

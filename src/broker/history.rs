//! Instance history: one entry per applied input, with the engine's decisions. An entry stays
//! small whatever the events carry: each payload in it (event data, function arguments and
//! results, child input and output, workflow output) larger than about `history.inline_bytes`
//! is stored beside the entry in the `payloads` table, and the entry keeps a summary in its
//! place (`{"$payload": n, "bytes": N}`) and lists where each one was. The API puts them back
//! ([`expand`]). An instance keeps at most `history.max_entries` entries; the oldest goes, with
//! its payloads, when a new one comes. Retention deletes the rest with the instance.

use super::batch::{Batch, Result};
use super::records::{HistoryEntry, PayloadRef};
use crate::engine::{Action, Input};
use crate::store::{key, num, Scope, Snapshot, Table, SEP};
use serde_json::{json, Value};

/// The key of payload `n` of entry `seq` of instance `id`.
fn payload_key(id: &str, seq: u64, n: usize) -> String {
    key(&[id, &num(seq), &num(n as u64)])
}

/// The key prefix of entry `seq`'s payloads.
fn entry_prefix(id: &str, seq: u64) -> String {
    format!("{}{SEP}", key(&[id, &num(seq)]))
}

/// The payload fields of an input and its actions, with their JSON pointers in the entry.
fn payloads<'a>(input: &'a mut Input, actions: &'a mut [Action]) -> Vec<(String, &'a mut Value)> {
    let mut out: Vec<(String, &mut Value)> = Vec::new();
    match input {
        Input::Start { input, events } => {
            out.push(("/input/input".into(), input));
            for (i, e) in events.iter_mut().enumerate() {
                if let Some(d) = e.data.as_mut() {
                    out.push((format!("/input/events/{i}/data"), d));
                }
            }
        }
        Input::Event { event } => {
            if let Some(d) = event.data.as_mut() {
                out.push(("/input/event/data".into(), d));
            }
        }
        Input::ActionResult { result, .. } => out.push(("/input/result".into(), result)),
        Input::ChildCompleted { output, .. } => out.push(("/input/output".into(), output)),
        Input::Checkpoint { updates, .. } => out.push(("/input/updates".into(), updates)),
        Input::ActionFailed { .. }
        | Input::Swf { .. }
        | Input::TimerFired { .. }
        | Input::ChildFailed { .. }
        | Input::Cancel => {}
    }
    for (i, a) in actions.iter_mut().enumerate() {
        let (field, v) = match a {
            Action::Produce { event } => match event.data.as_mut() {
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
        out.push((format!("/actions/{i}/{field}"), v));
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

impl Batch<'_, '_> {
    /// Stores `entry` as entry `seq` of instance `id`: payloads over the inline limit go to
    /// the `payloads` table, and past `history.max_entries` the oldest entry goes.
    pub fn record_history(&mut self, id: &str, seq: u64, mut entry: HistoryEntry) -> Result<()> {
        let inline = self.cfg.history.inline_bytes;
        for (pointer, v) in payloads(&mut entry.input, &mut entry.actions) {
            if !larger_than(v, inline) {
                continue;
            }
            let n = entry.payloads.len();
            let bytes = serde_json::to_vec(&*v).expect("JSON values serialize");
            let summary = json!({"$payload": n, "bytes": bytes.len()});
            self.tx
                .put_json(Table::Payloads, &payload_key(id, seq, n), bytes)?;
            *v = summary;
            entry.payloads.push(PayloadRef { pointer });
        }
        self.tx
            .put(Table::History, &key(&[id, &num(seq)]), &entry)?;
        let keep = self.cfg.history.max_entries;
        if seq >= keep {
            let old = seq - keep;
            if self.tx.delete(Table::History, &key(&[id, &num(old)]))? {
                self.delete_payloads(&entry_prefix(id, old))?;
            }
        }
        Ok(())
    }

    /// Deletes the history and payloads of instance `id` (retention).
    pub fn forget_history(&mut self, id: &str) -> Result<()> {
        let prefix = format!("{id}{SEP}");
        for k in self.tx.keys(Table::History, &prefix)? {
            self.tx.delete(Table::History, &k)?;
        }
        self.delete_payloads(&prefix)
    }

    fn delete_payloads(&mut self, prefix: &str) -> Result<()> {
        for k in self.tx.keys(Table::Payloads, prefix)? {
            self.tx.delete(Table::Payloads, &k)?;
        }
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
    for (n, r) in refs.iter().enumerate() {
        let full: Option<Value> = tx.get_in(scope, Table::Payloads, &payload_key(id, seq, n))?;
        if let (Some(full), Some(slot)) = (full, entry.pointer_mut(&r.pointer)) {
            *slot = full;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn every_payload_field_is_found_with_its_pointer() {
        let mut input = Input::ActionResult {
            key: "k".into(),
            result: json!({"r": 1}),
        };
        let mut actions = vec![
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
        let found: Vec<String> = payloads(&mut input, &mut actions)
            .into_iter()
            .map(|(p, _)| p)
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

//! Snapshot chunks of formats 1 to 3: JSON, each store value embedded as raw JSON. Written by
//! brokers before format 4; still read, so a snapshot written by them restores.

use super::SnapshotError;
use crate::store::{Table, Write};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A run of a snapshot's keys: puts only, values embedded as the JSON they are.
#[derive(Serialize, Deserialize)]
pub(super) struct Wire<'a> {
    pub v: u32,
    /// The snapshot it belongs to: its `next`.
    pub snapshot: i64,
    #[serde(borrow)]
    pub puts: Vec<(String, String, &'a RawValue)>,
}

/// Decodes a JSON chunk: its format (checked by the caller), the snapshot it belongs to, and
/// its writes.
pub(super) fn decode(bytes: &[u8]) -> Result<(u32, i64, Vec<Write>), SnapshotError> {
    let wire: Wire<'_> = serde_json::from_slice(bytes)?;
    if wire.v > super::FORMAT {
        // refused by the caller as newer, whatever its tables
        return Ok((wire.v, wire.snapshot, vec![]));
    }
    let writes = wire
        .puts
        .into_iter()
        .map(|(t, key, value)| {
            let table = Table::from_name(&t).ok_or(SnapshotError::Table(t))?;
            Ok(Write {
                table,
                key,
                value: Some(bytes::Bytes::copy_from_slice(value.get().as_bytes())),
            })
        })
        .collect::<Result<_, SnapshotError>>()?;
    Ok((wire.v, wire.snapshot, writes))
}

/// A chunk as a broker of format `v` (1 to 3) wrote it, for tests of reading them.
#[cfg(test)]
pub(super) fn encode(v: u32, next: i64, writes: &[Write]) -> Vec<u8> {
    let raw: Vec<(String, String, Box<RawValue>)> = writes
        .iter()
        .filter_map(|w| {
            let text = String::from_utf8(w.value.as_ref()?.to_vec()).expect("UTF-8");
            let raw = RawValue::from_string(text).expect("store values are JSON");
            Some((w.table.name().to_string(), w.key.clone(), raw))
        })
        .collect();
    serde_json::to_vec(&Wire {
        v,
        snapshot: next,
        puts: raw
            .iter()
            .map(|(t, k, v)| (t.clone(), k.clone(), &**v))
            .collect(),
    })
    .expect("snapshot chunks serialize")
}

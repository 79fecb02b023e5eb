//! The changelog: partition `p` of the changelog topic holds, in order, one record per batch
//! that state partition `p` committed (its writes, atomically) and a fence record each time a
//! broker took the partition over.
//!
//! Fencing without transactions: every batch names the offset of its owner's fence. Restoring
//! reads the log in order and applies a batch only if its fence is the latest fence read so
//! far. A broker that lost the partition without noticing (a zombie) may still append batches,
//! but they come after the new owner's fence and name an older one, so no restore applies them.
//! The new owner restores up to its own fence before it writes anything, so every batch the
//! zombie appended before that fence is part of the state it continues from.

use crate::store::{Table, Write};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// One record of the changelog.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A broker takes the partition over; batches it writes name this record's offset.
    Fence {
        owner: String,
        /// Written by a restarted broker resuming what it held last, before the group
        /// assigned it (`broker::resume`): an owner the group assigned takes the partition
        /// back from such a fence instead of letting it go.
        provisional: bool,
    },
    /// The writes of one committed batch.
    Batch { fence: i64, writes: Vec<Write> },
}

/// The changelog record format this broker writes and the newest it reads. A record of a
/// newer format is refused, never guessed at.
pub const FORMAT: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum ChangelogError {
    #[error("changelog record at offset {offset} is not readable: {why}")]
    Corrupt { offset: i64, why: String },
    #[error(
        "changelog record at offset {offset} has format {found}, written by a newer flowbroker; \
         this broker reads format {FORMAT} and older: upgrade every broker of the cluster to the \
         version that wrote it (this partition is not taken over until then)"
    )]
    Version { offset: i64, found: u32 },
}

fn format_one() -> u32 {
    1
}

/// The record as JSON. A plain struct, not a tagged enum: values are embedded as raw JSON,
/// which serde cannot buffer through an internally tagged enum.
#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    /// The record format ([`FORMAT`]); records from before it was written are format 1.
    #[serde(default = "format_one")]
    v: u32,
    kind: Kind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fence: Option<i64>,
    /// A fence of a resumed partition (absent: `false`; older readers ignore it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    provisional: bool,
    /// `[table, key, value]`: a value may itself be `null` (a unit value), so deletes are a
    /// list of their own rather than puts of `null`.
    #[serde(borrow, default, skip_serializing_if = "Vec::is_empty")]
    puts: Vec<(String, String, &'a RawValue)>,
    /// `[table, key]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    deletes: Vec<(String, String)>,
}

#[derive(Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
enum Kind {
    Fence,
    Batch,
}

impl Entry {
    /// JSON: store values are JSON already and are embedded as they are.
    pub fn encode(&self) -> Vec<u8> {
        let wire = match self {
            Entry::Fence { owner, provisional } => {
                return serde_json::to_vec(&Wire {
                    v: FORMAT,
                    kind: Kind::Fence,
                    owner: Some(owner.clone()),
                    fence: None,
                    provisional: *provisional,
                    puts: vec![],
                    deletes: vec![],
                })
                .expect("changelog entries serialize")
            }
            Entry::Batch { fence, writes } => (fence, writes),
        };
        let (fence, writes) = wire;
        let raw: Vec<(String, String, Box<RawValue>)> = writes
            .iter()
            .filter_map(|w| {
                let v = w.value.as_ref()?;
                let text = String::from_utf8_lossy(v).into_owned();
                let raw = RawValue::from_string(text).expect("store values are JSON");
                Some((w.table.name().to_string(), w.key.clone(), raw))
            })
            .collect();
        serde_json::to_vec(&Wire {
            v: FORMAT,
            kind: Kind::Batch,
            owner: None,
            fence: Some(*fence),
            provisional: false,
            puts: raw
                .iter()
                .map(|(t, k, v)| (t.clone(), k.clone(), &**v))
                .collect(),
            deletes: writes
                .iter()
                .filter(|w| w.value.is_none())
                .map(|w| (w.table.name().to_string(), w.key.clone()))
                .collect(),
        })
        .expect("changelog entries serialize")
    }

    pub fn decode(offset: i64, bytes: &[u8]) -> Result<Entry, ChangelogError> {
        let corrupt = |why: String| ChangelogError::Corrupt { offset, why };
        let wire: Wire<'_> = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
        if wire.v > FORMAT {
            return Err(ChangelogError::Version {
                offset,
                found: wire.v,
            });
        }
        if wire.kind == Kind::Fence {
            return Ok(Entry::Fence {
                owner: wire.owner.unwrap_or_default(),
                provisional: wire.provisional,
            });
        }
        let fence = wire
            .fence
            .ok_or_else(|| corrupt("a batch without `fence`".into()))?;
        let table = |name: &str| {
            Table::from_name(name).ok_or_else(|| corrupt(format!("unknown table {name:?}")))
        };
        let mut writes = Vec::with_capacity(wire.puts.len() + wire.deletes.len());
        for (t, key, value) in wire.puts {
            writes.push(Write {
                table: table(&t)?,
                key,
                value: Some(value.get().as_bytes().to_vec()),
            });
        }
        for (t, key) in wire.deletes {
            writes.push(Write {
                table: table(&t)?,
                key,
                value: None,
            });
        }
        Ok(Entry::Batch { fence, writes })
    }
}

/// How far a broker's local store has applied a partition's changelog: the next offset to read
/// and the latest fence read. Stored in the broker's own store with the writes it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    pub next: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<i64>,
}

impl Checkpoint {
    /// Reads the entry at `offset` (the next one): the writes to apply, or `None` for a fence
    /// or a batch of an owner that was fenced out (a zombie's).
    pub fn offer(&mut self, offset: i64, entry: Entry) -> Option<Vec<Write>> {
        self.next = offset + 1;
        match entry {
            Entry::Fence { .. } => {
                self.fence = Some(offset);
                None
            }
            Entry::Batch { fence, writes } if Some(fence) == self.fence => Some(writes),
            Entry::Batch { fence, .. } => {
                tracing::warn!(offset, batch_fence = fence, latest_fence = ?self.fence,
                    "changelog batch of a fenced-out owner ignored");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence(owner: &str) -> Entry {
        Entry::Fence {
            owner: owner.into(),
            provisional: false,
        }
    }

    fn batch(fence: i64, key: &str, value: Option<&str>) -> Entry {
        Entry::Batch {
            fence,
            writes: vec![Write {
                table: Table::Instances,
                key: key.into(),
                value: value.map(|v| v.as_bytes().to_vec()),
            }],
        }
    }

    #[test]
    fn records_carry_their_format_and_a_newer_one_is_refused() {
        let bytes = fence("a").encode();
        assert!(String::from_utf8_lossy(&bytes).contains("\"v\":1"));
        // a record from before the format was written reads as format 1
        let old = br#"{"kind":"batch","fence":4,"deletes":[["instances","k"]]}"#;
        assert!(matches!(
            Entry::decode(9, old),
            Ok(Entry::Batch { fence: 4, .. })
        ));
        let newer = br#"{"v":2,"kind":"batch","fence":4}"#;
        let e = Entry::decode(9, newer).unwrap_err();
        assert!(matches!(
            e,
            ChangelogError::Version {
                offset: 9,
                found: 2
            }
        ));
        assert!(e.to_string().contains("upgrade every broker"), "{e}");
    }

    #[test]
    fn entries_round_trip_with_values_embedded_as_json() {
        let e = batch(3, "p0001\u{1f}x", Some(r#"{"a":[1,2]}"#));
        let bytes = e.encode();
        assert!(
            String::from_utf8_lossy(&bytes).contains(r#"{"a":[1,2]}"#),
            "{}",
            String::from_utf8_lossy(&bytes)
        );
        assert_eq!(Entry::decode(9, &bytes).unwrap(), e);
        let d = batch(3, "k", None);
        assert_eq!(Entry::decode(9, &d.encode()).unwrap(), d);
        // a unit value (`null`, as the waits index stores) is a put, not a delete
        let unit = batch(3, "w", Some("null"));
        assert_eq!(Entry::decode(9, &unit.encode()).unwrap(), unit);
        let f = Entry::Fence {
            owner: "broker-a".into(),
            provisional: false,
        };
        assert_eq!(Entry::decode(0, &f.encode()).unwrap(), f);
        assert!(!String::from_utf8_lossy(&f.encode()).contains("provisional"));
        let r = Entry::Fence {
            owner: "broker-a".into(),
            provisional: true,
        };
        assert_eq!(Entry::decode(0, &r.encode()).unwrap(), r);
        assert!(Entry::decode(4, b"{nope").is_err());
    }

    /// A owns the partition (fence at 0); B takes over (fence at 3) while A, a zombie, still
    /// appends. Every restore, from the start or from a checkpoint, applies A's batches before
    /// B's fence and B's after it, and never A's after B's fence.
    #[test]
    fn batches_of_a_fenced_out_owner_are_never_restored() {
        let log = [
            fence("a"),                // 0
            batch(0, "x", Some("1")),  // 1: A
            batch(0, "y", Some("1")),  // 2: A
            fence("b"),                // 3
            batch(0, "x", Some("99")), // 4: A, fenced out
            batch(3, "x", Some("2")),  // 5: B
            batch(0, "z", Some("99")), // 6: A, fenced out
        ];
        let mut cp = Checkpoint::default();
        let mut applied = vec![];
        for (o, e) in log.iter().enumerate() {
            if let Some(w) = cp.offer(o as i64, e.clone()) {
                applied.push((o, w[0].key.clone()));
            }
        }
        assert_eq!(
            applied,
            vec![(1, "x".to_string()), (2, "y".into()), (5, "x".into())]
        );
        assert_eq!(
            cp,
            Checkpoint {
                next: 7,
                fence: Some(3)
            }
        );
        // a broker whose store stopped after offset 4 resumes from its checkpoint
        let mut resumed = Checkpoint {
            next: 5,
            fence: Some(3),
        };
        let rest: Vec<i64> = (5..7)
            .filter(|o| resumed.offer(*o, log[*o as usize].clone()).is_some())
            .collect();
        assert_eq!(rest, vec![5]);
    }
}

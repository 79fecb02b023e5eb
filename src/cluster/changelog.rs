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

mod json;

use crate::store::{Table, Write};
use serde::{Deserialize, Serialize};

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
/// newer format is refused, never guessed at. Format 2 is binary ([`MAGIC`], the format, then
/// the record in postcard); format 1 was JSON and is still read. Format 3 is format 2's
/// layout, and its batches may write the `superseded` table (`broker::active`), which a
/// broker of format 2 would neither read nor keep up: it must refuse them. Format 4 is the
/// same again, and its batches may write the `unpinned` table (`broker::unpinned`), which a
/// broker of format 3 would not keep up. Format 5 is the same again, and its batches' outbox
/// values may be Kafka records in binary (`broker::produced`), which a broker of format 4
/// would not read. Format 6 is the same again, and its batches' values may be in MessagePack
/// (store layout 5, `store::codec`), which a broker of format 5 would not read.
pub const FORMAT: u32 = 6;

/// The first byte of a binary record: never the first byte of a JSON text (format 1 records
/// start with `{`), nor of any UTF-8 text.
const MAGIC: u8 = 0xFB;

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

/// A format 2 record, after its two leading bytes. Values are the store's bytes, carried as
/// they are (no copy on decode: they borrow from the record). postcard writes variants by
/// index and fields by position: any change to `Wire` or `WireWrite` (order, a field added)
/// is a new [`FORMAT`], or records earlier brokers wrote are misread
/// (`the_format_2_layout_is_pinned` fails first).
#[derive(Serialize, Deserialize)]
enum Wire<'a> {
    Fence {
        owner: &'a str,
        /// Written by a restarted broker resuming what it held last (see [`Entry::Fence`]).
        provisional: bool,
    },
    Batch {
        fence: i64,
        #[serde(borrow)]
        writes: Vec<WireWrite<'a>>,
    },
}

/// One write of a format 2 batch: the table by name (stable across versions), the key, and
/// the value (`None`: deleted).
#[derive(Serialize, Deserialize)]
struct WireWrite<'a> {
    table: &'a str,
    key: &'a str,
    #[serde(borrow)]
    value: Option<&'a serde_bytes::Bytes>,
}

impl Entry {
    /// Format 3 (format 2's layout): binary, the store's values embedded as they are.
    pub fn encode(&self) -> Vec<u8> {
        let wire = match self {
            Entry::Fence { owner, provisional } => Wire::Fence {
                owner,
                provisional: *provisional,
            },
            Entry::Batch { fence, writes } => Wire::Batch {
                fence: *fence,
                writes: writes
                    .iter()
                    .map(|w| WireWrite {
                        table: w.table.name(),
                        key: &w.key,
                        value: w.value.as_deref().map(serde_bytes::Bytes::new),
                    })
                    .collect(),
            },
        };
        let size = match self {
            Entry::Fence { owner, .. } => owner.len() + 16,
            Entry::Batch { writes, .. } => writes
                .iter()
                .map(|w| w.key.len() + w.value.as_ref().map_or(0, bytes::Bytes::len) + 16)
                .sum::<usize>(),
        };
        let mut out = Vec::with_capacity(size + 16);
        out.extend_from_slice(&[MAGIC, FORMAT as u8]);
        postcard::to_extend(&wire, out).expect("changelog entries serialize")
    }

    pub fn decode(offset: i64, bytes: &[u8]) -> Result<Entry, ChangelogError> {
        let corrupt = |why: String| ChangelogError::Corrupt { offset, why };
        let Some((&MAGIC, rest)) = bytes.split_first() else {
            return json::decode(offset, bytes);
        };
        let (&found, body) = rest
            .split_first()
            .ok_or_else(|| corrupt("a record without its format".into()))?;
        if u32::from(found) > FORMAT {
            return Err(ChangelogError::Version {
                offset,
                found: found.into(),
            });
        }
        if found < 2 {
            return Err(corrupt(format!("a binary record of format {found}")));
        }
        let wire: Wire<'_> = super::postcard_whole(body, "record").map_err(corrupt)?;
        match wire {
            Wire::Fence { owner, provisional } => Ok(Entry::Fence {
                owner: owner.to_string(),
                provisional,
            }),
            Wire::Batch { fence, writes } => {
                let writes = writes
                    .into_iter()
                    .map(|w| {
                        Ok(Write {
                            table: Table::from_name(w.table)
                                .ok_or_else(|| corrupt(format!("unknown table {:?}", w.table)))?,
                            key: w.key.to_string(),
                            value: w.value.map(|v| bytes::Bytes::copy_from_slice(v)),
                        })
                    })
                    .collect::<Result<_, ChangelogError>>()?;
                Ok(Entry::Batch { fence, writes })
            }
        }
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
                value: value.map(|v| v.as_bytes().to_vec().into()),
            }],
        }
    }

    #[test]
    fn records_carry_their_format_and_a_newer_one_is_refused() {
        let bytes = fence("a").encode();
        assert_eq!(bytes[..2], [MAGIC, 6]);
        // format 1 (JSON) records are still read
        let old = br#"{"kind":"batch","fence":4,"deletes":[["instances","k"]]}"#;
        assert!(matches!(
            Entry::decode(9, old),
            Ok(Entry::Batch { fence: 4, .. })
        ));
        // format 2 to 5 records (before `superseded`, `unpinned`, binary outbox values,
        // MessagePack values) are still read
        for format in [2, 3, 4, 5] {
            let mut older = batch(4, "k", None).encode();
            older[1] = format;
            assert_eq!(Entry::decode(9, &older).unwrap(), batch(4, "k", None));
        }
        let mut newer = batch(4, "k", None).encode();
        newer[1] = 7;
        let e = Entry::decode(9, &newer).unwrap_err();
        assert!(matches!(
            e,
            ChangelogError::Version {
                offset: 9,
                found: 7
            }
        ));
        assert!(e.to_string().contains("upgrade every broker"), "{e}");
        // a record cut short, or with an unknown table, is corrupt, not guessed at
        let whole = batch(4, "k", Some("[1]")).encode();
        for cut in [1, whole.len() - 1] {
            let e = Entry::decode(9, &whole[..cut]).unwrap_err();
            assert!(
                matches!(e, ChangelogError::Corrupt { offset: 9, .. }),
                "{e}"
            );
        }
        let mut longer = whole.clone();
        longer.push(0);
        let e = Entry::decode(9, &longer).unwrap_err();
        assert!(e.to_string().contains("1 bytes after the record"), "{e}");
        let mut older = whole.clone();
        older[1] = 1;
        let e = Entry::decode(9, &older).unwrap_err();
        assert!(matches!(e, ChangelogError::Corrupt { .. }), "{e}");
        let mut renamed = whole.clone();
        let at = renamed.windows(9).position(|w| w == b"instances").unwrap();
        renamed[at + 8] = b'Z';
        let e = Entry::decode(9, &renamed).unwrap_err();
        assert!(e.to_string().contains("unknown table"), "{e}");
    }

    /// The bytes of formats 2 to 5 as brokers have written them since format 2 was
    /// introduced: a change of layout must come with a new format number, not pass silently.
    #[test]
    fn the_format_2_layout_is_pinned() {
        let f = Entry::Fence {
            owner: "ab".into(),
            provisional: true,
        };
        // marker, format, variant 0, "ab" (length 2), true
        assert_eq!(f.encode(), [MAGIC, 6, 0, 2, b'a', b'b', 1]);
        let b = Entry::Batch {
            fence: 3,
            writes: vec![
                Write {
                    table: Table::Instances,
                    key: "k".into(),
                    value: Some(b"[1]".to_vec().into()),
                },
                Write {
                    table: Table::Instances,
                    key: "d".into(),
                    value: None,
                },
            ],
        };
        let mut want = vec![MAGIC, 6, 1, 6, 2]; // variant 1, fence 3 (zigzag), two writes
        want.extend([9]);
        want.extend(b"instances");
        want.extend([1, b'k', 1, 3, b'[', b'1', b']']); // key "k", Some, 3 bytes
        want.extend([9]);
        want.extend(b"instances");
        want.extend([1, b'd', 0]); // key "d", None
        assert_eq!(b.encode(), want);
        assert_eq!(Entry::decode(0, &want).unwrap(), b);
        for format in [2, 3, 4] {
            want[1] = format;
            assert_eq!(Entry::decode(0, &want).unwrap(), b);
        }
        assert_eq!(
            Entry::decode(0, &[MAGIC, 2, 0, 2, b'a', b'b', 1]).unwrap(),
            f
        );
    }

    #[test]
    fn entries_round_trip_with_values_carried_as_they_are() {
        let e = batch(3, "p0001\u{1f}x", Some(r#"{"a":[1,2]}"#));
        let bytes = e.encode();
        assert!(
            bytes.windows(11).any(|w| w == br#"{"a":[1,2]}"#),
            "the value's bytes are in the record as they are"
        );
        assert_eq!(Entry::decode(9, &bytes).unwrap(), e);
        let d = batch(3, "k", None);
        assert_eq!(Entry::decode(9, &d.encode()).unwrap(), d);
        // a unit value (`null`, as the waits index stores) is a put, not a delete, and an
        // empty value stays an empty value
        let unit = batch(3, "w", Some("null"));
        assert_eq!(Entry::decode(9, &unit.encode()).unwrap(), unit);
        let empty = batch(3, "w", Some(""));
        assert_eq!(Entry::decode(9, &empty.encode()).unwrap(), empty);
        let many = Entry::Batch {
            fence: -1,
            writes: Table::ALL
                .iter()
                .enumerate()
                .map(|(i, t)| Write {
                    table: *t,
                    key: format!("k{i}"),
                    value: (i % 3 != 0).then(|| vec![b'x'; i * 100].into()),
                })
                .collect(),
        };
        assert_eq!(Entry::decode(9, &many.encode()).unwrap(), many);
        for provisional in [false, true] {
            let f = Entry::Fence {
                owner: "broker-a".into(),
                provisional,
            };
            assert_eq!(Entry::decode(0, &f.encode()).unwrap(), f);
        }
        assert!(Entry::decode(4, b"{nope").is_err());
        assert!(Entry::decode(4, b"").is_err());
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

//! Snapshots of a state partition (docs/scale.md "Snapshots"): every key of the partition as
//! of one changelog offset, written as [`Chunk`] records to partition `p` of the snapshot
//! topic, then announced by a [`Manifest`] on the owners topic. A broker whose store is behind
//! a partition's latest snapshot (an empty `data_dir`, a store far behind) loads the snapshot
//! and reads only the changelog after it, so a restore costs the snapshot's size plus a tail,
//! not the partition's history; and the changelog before a snapshot can be deleted.

use super::partition::PartitionId;
use crate::store::{Table, Write};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The format of snapshot records and manifests this build writes, and the newest it reads.
/// Format 2 is format 1's layout, and its chunks may hold the `superseded` table
/// (`broker::active`), which a broker of format 1 would neither read nor keep up. Format 3
/// is the same, and its chunks may hold the `unpinned` table (`broker::unpinned`), which a
/// broker of format 2 would not keep up.
pub const FORMAT: u32 = 3;

/// A complete snapshot: where its chunks are and the changelog position it stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    #[serde(rename = "v")]
    pub format: u32,
    pub partition: PartitionId,
    /// The changelog offset after the snapshot: restore reads the changelog from here.
    pub next: i64,
    /// The latest fence at `next` (batches after it are judged against it).
    pub fence: Option<i64>,
    /// The offsets of its first and last chunk in partition `partition` of the snapshot topic.
    pub first: i64,
    pub last: i64,
    /// How many keys and bytes it holds (logs and metrics).
    pub keys: u64,
    pub bytes: u64,
    /// The broker that wrote it.
    pub broker: String,
}

/// Why a snapshot record or manifest is not used.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("not a snapshot record: {0}")]
    Decode(#[from] serde_json::Error),
    #[error(
        "written in snapshot format {0} by a newer flowbroker (this one reads format {FORMAT} \
         and older); \
         upgrade this broker"
    )]
    Format(u32),
    #[error("unknown table {0:?} in a snapshot chunk")]
    Table(String),
    #[error("snapshot chunk at offset {offset} belongs to another snapshot (expected the one at changelog offset {expected}, found {found})")]
    Foreign {
        offset: i64,
        expected: i64,
        found: i64,
    },
}

impl Manifest {
    /// The owners topic key manifests are published under (claims use the bare number).
    pub fn key(p: PartitionId) -> String {
        format!("snapshot/{}", p.0)
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a manifest serializes")
    }

    pub fn decode(bytes: &[u8]) -> Result<Manifest, SnapshotError> {
        let m: Manifest = serde_json::from_slice(bytes)?;
        if m.format > FORMAT {
            return Err(SnapshotError::Format(m.format));
        }
        Ok(m)
    }
}

/// One snapshot to write: a partition's keys as of changelog offset `next`.
pub struct Job {
    pub partition: PartitionId,
    pub export: crate::store::Export,
    pub next: i64,
    pub fence: Option<i64>,
}

/// Where the core hands snapshots to be written (on Kafka: `kafka::snapshots`).
pub trait Writer: Send {
    /// Whether a snapshot of `p` is being written.
    fn running(&self, p: PartitionId) -> bool;
    /// Writes `job` in the background (nothing when one of the same partition is running).
    fn submit(&self, job: Job);
}

/// A run of a snapshot's keys: puts only, values embedded as the JSON they are.
#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    v: u32,
    /// The snapshot it belongs to: its `next`.
    snapshot: i64,
    #[serde(borrow)]
    puts: Vec<(String, String, &'a RawValue)>,
}

/// Encodes one chunk of snapshot `next`.
pub fn encode_chunk(next: i64, writes: &[Write]) -> Vec<u8> {
    let raw: Vec<(String, String, Box<RawValue>)> = writes
        .iter()
        .filter_map(|w| {
            let text = String::from_utf8_lossy(w.value.as_ref()?).into_owned();
            let raw = RawValue::from_string(text).expect("store values are JSON");
            Some((w.table.name().to_string(), w.key.clone(), raw))
        })
        .collect();
    serde_json::to_vec(&Wire {
        v: FORMAT,
        snapshot: next,
        puts: raw
            .iter()
            .map(|(t, k, v)| (t.clone(), k.clone(), &**v))
            .collect(),
    })
    .expect("snapshot chunks serialize")
}

/// Decodes the chunk at `offset`, which must belong to snapshot `next`.
pub fn decode_chunk(offset: i64, next: i64, bytes: &[u8]) -> Result<Vec<Write>, SnapshotError> {
    let wire: Wire<'_> = serde_json::from_slice(bytes)?;
    if wire.v > FORMAT {
        return Err(SnapshotError::Format(wire.v));
    }
    if wire.snapshot != next {
        return Err(SnapshotError::Foreign {
            offset,
            expected: next,
            found: wire.snapshot,
        });
    }
    wire.puts
        .into_iter()
        .map(|(t, key, value)| {
            let table = Table::from_name(&t).ok_or(SnapshotError::Table(t))?;
            Ok(Write {
                table,
                key,
                value: Some(bytes::Bytes::copy_from_slice(value.get().as_bytes())),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_and_manifests_round_trip_and_are_checked() {
        let writes = vec![
            Write {
                table: Table::Instances,
                key: "p0001\u{1f}a".into(),
                value: Some(br#"{"x":[1,2]}"#.to_vec().into()),
            },
            Write {
                table: Table::Waits,
                key: "p0001\u{1f}w".into(),
                value: Some(b"null".to_vec().into()),
            },
        ];
        let bytes = encode_chunk(42, &writes);
        assert_eq!(decode_chunk(7, 42, &bytes).unwrap(), writes);
        let e = decode_chunk(7, 43, &bytes).unwrap_err();
        assert!(e.to_string().contains("another snapshot"), "{e}");
        let m = Manifest {
            format: FORMAT,
            partition: PartitionId(1),
            next: 42,
            fence: Some(3),
            first: 10,
            last: 12,
            keys: 2,
            bytes: bytes.len() as u64,
            broker: "b".into(),
        };
        assert_eq!(Manifest::decode(&m.encode()).unwrap(), m);
        // formats 1 and 2 (before `superseded`, before `unpinned`) are still read
        let text = String::from_utf8(m.encode()).unwrap();
        assert!(text.contains("\"v\":3"), "{text}");
        for format in [1, 2] {
            let v = format!("\"v\":{format}");
            let older = Manifest::decode(text.replace("\"v\":3", &v).as_bytes()).unwrap();
            assert_eq!(older.format, format);
            let chunk = String::from_utf8(bytes.clone()).unwrap();
            let chunk = chunk.replace("\"v\":3", &v);
            assert_eq!(decode_chunk(7, 42, chunk.as_bytes()).unwrap(), writes);
        }
        let newer = text.replace("\"v\":3", "\"v\":9");
        let e = Manifest::decode(newer.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("upgrade this broker"), "{e}");
        assert_eq!(Manifest::key(PartitionId(1)), "snapshot/1");
    }
}

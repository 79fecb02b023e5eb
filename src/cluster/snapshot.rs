//! Snapshots of a state partition (docs/scale.md "Snapshots"): every key of the partition as
//! of one changelog offset, written as [`Chunk`] records to partition `p` of the snapshot
//! topic, then announced by a [`Manifest`] on the owners topic. A broker whose store is behind
//! a partition's latest snapshot (an empty `data_dir`, a store far behind) loads the snapshot
//! and reads only the changelog after it, so a restore costs the snapshot's size plus a tail,
//! not the partition's history; and the changelog before a snapshot can be deleted.

mod json;

use super::partition::PartitionId;
use crate::store::{Table, Write};
use serde::{Deserialize, Serialize};

/// The format of snapshot records and manifests this build writes, and the newest it reads.
/// Format 2 is format 1's layout, and its chunks may hold the `superseded` table
/// (`broker::active`), which a broker of format 1 would neither read nor keep up. Format 3
/// is the same, and its chunks may hold the `unpinned` table (`broker::unpinned`), which a
/// broker of format 2 would not keep up. Format 4 chunks are binary ([`MAGIC`], the format,
/// then the chunk in postcard, the store's values as they are) where formats 1 to 3 were JSON
/// with each value embedded as JSON (`json`, still read); manifests stay JSON. Format 5 is
/// format 4's layout, and its outbox values may be Kafka records in binary
/// (`broker::produced`), which a broker of format 4 would not read. Format 6 is the same
/// again, and its values may be in MessagePack (store layout 5, `store::codec`), which a
/// broker of format 5 would not read.
pub const FORMAT: u32 = 6;

/// The first byte of a binary chunk: never the first byte of a JSON text (chunks of formats 1
/// to 3 start with `{`), nor of any UTF-8 text.
const MAGIC: u8 = 0xFB;

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
    #[error("not a snapshot record: {0}")]
    Corrupt(String),
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

/// A format 4 chunk, after its two leading bytes: a run of a snapshot's keys, puts only.
/// Values are the store's bytes, carried as they are (borrowed from the record on decode).
/// postcard writes fields by position: any change to `Wire` or `Put` (order, a field added) is
/// a new [`FORMAT`], or chunks earlier brokers wrote are misread
/// (`the_format_4_layout_is_pinned` fails first).
#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    /// The snapshot it belongs to: its `next`.
    snapshot: i64,
    #[serde(borrow)]
    puts: Vec<Put<'a>>,
}

/// One key of a chunk: the table by name (stable across versions), the key and the value.
#[derive(Serialize, Deserialize)]
struct Put<'a> {
    table: &'a str,
    key: &'a str,
    #[serde(borrow)]
    value: &'a serde_bytes::Bytes,
}

/// Encodes one chunk of snapshot `next` (its puts: writes without a value are left out).
pub fn encode_chunk(next: i64, writes: &[Write]) -> Vec<u8> {
    let puts: Vec<Put<'_>> = writes
        .iter()
        .filter_map(|w| {
            Some(Put {
                table: w.table.name(),
                key: &w.key,
                value: serde_bytes::Bytes::new(w.value.as_deref()?),
            })
        })
        .collect();
    let size = puts
        .iter()
        .map(|p| p.table.len() + p.key.len() + p.value.len() + 8)
        .sum::<usize>();
    let mut out = Vec::with_capacity(size + 16);
    out.extend_from_slice(&[MAGIC, FORMAT as u8]);
    postcard::to_extend(
        &Wire {
            snapshot: next,
            puts,
        },
        out,
    )
    .expect("snapshot chunks serialize")
}

/// Decodes the chunk at `offset`, which must belong to snapshot `next`: binary (formats 4 and 5) or
/// JSON (formats 1 to 3).
pub fn decode_chunk(offset: i64, next: i64, bytes: &[u8]) -> Result<Vec<Write>, SnapshotError> {
    let (format, snapshot, writes) = match bytes.split_first() {
        Some((&MAGIC, rest)) => decode_binary(rest)?,
        _ => json::decode(bytes)?,
    };
    if format > FORMAT {
        return Err(SnapshotError::Format(format));
    }
    if snapshot != next {
        return Err(SnapshotError::Foreign {
            offset,
            expected: next,
            found: snapshot,
        });
    }
    Ok(writes)
}

/// A binary chunk after [`MAGIC`]: its format, the snapshot it belongs to, and its writes (of a
/// format newer than this build's, only the format: the caller refuses it).
fn decode_binary(bytes: &[u8]) -> Result<(u32, i64, Vec<Write>), SnapshotError> {
    let corrupt = |why: String| SnapshotError::Corrupt(why);
    let (&format, body) = bytes
        .split_first()
        .ok_or_else(|| corrupt("a chunk without its format".into()))?;
    let format = u32::from(format);
    if format > FORMAT {
        return Ok((format, 0, vec![]));
    }
    if format < 4 {
        return Err(corrupt(format!("a binary chunk of format {format}")));
    }
    let wire: Wire<'_> = super::postcard_whole(body, "chunk").map_err(corrupt)?;
    let writes = wire
        .puts
        .into_iter()
        .map(|p| {
            Ok(Write {
                table: Table::from_name(p.table)
                    .ok_or_else(|| SnapshotError::Table(p.table.to_string()))?,
                key: p.key.to_string(),
                value: Some(bytes::Bytes::copy_from_slice(p.value)),
            })
        })
        .collect::<Result<_, SnapshotError>>()?;
    Ok((format, wire.snapshot, writes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writes() -> Vec<Write> {
        vec![
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
        ]
    }

    #[test]
    fn chunks_round_trip_and_are_checked() {
        let bytes = encode_chunk(42, &writes());
        assert_eq!(bytes[..2], [MAGIC, 6]);
        assert_eq!(decode_chunk(7, 42, &bytes).unwrap(), writes());
        let e = decode_chunk(7, 43, &bytes).unwrap_err();
        assert!(e.to_string().contains("another snapshot"), "{e}");
        // a write without a value (none in an export) is left out
        let mut with_delete = writes();
        with_delete.push(Write {
            table: Table::Active,
            key: "gone".into(),
            value: None,
        });
        assert_eq!(encode_chunk(42, &with_delete), bytes);
        // chunks of formats 1 to 3 (JSON, before `superseded`, before `unpinned`) are read
        for format in [1, 2, 3] {
            let older = json::encode(format, 42, &writes());
            assert_eq!(older[0], b'{');
            assert_eq!(decode_chunk(7, 42, &older).unwrap(), writes());
            let e = decode_chunk(7, 41, &older).unwrap_err();
            assert!(e.to_string().contains("another snapshot"), "{e}");
        }
        // a newer format is refused, binary or JSON
        let mut newer = bytes.clone();
        newer[1] = 7;
        let e = decode_chunk(7, 42, &newer).unwrap_err();
        assert!(matches!(e, SnapshotError::Format(7)), "{e}");
        assert!(e.to_string().contains("upgrade this broker"), "{e}");
        let e = decode_chunk(7, 42, &json::encode(9, 42, &writes())).unwrap_err();
        assert!(matches!(e, SnapshotError::Format(9)), "{e}");
        // cut short, longer, a binary chunk of a JSON format, an unknown table: not guessed at
        for cut in [1, 2, bytes.len() - 1] {
            let e = decode_chunk(7, 42, &bytes[..cut]).unwrap_err();
            assert!(matches!(e, SnapshotError::Corrupt(_)), "{cut}: {e}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        let e = decode_chunk(7, 42, &longer).unwrap_err();
        assert!(e.to_string().contains("1 bytes after the chunk"), "{e}");
        let mut older = bytes.clone();
        older[1] = 3;
        assert!(matches!(
            decode_chunk(7, 42, &older),
            Err(SnapshotError::Corrupt(_))
        ));
        let mut renamed = bytes.clone();
        let at = renamed.windows(9).position(|w| w == b"instances").unwrap();
        renamed[at] = b'X';
        let e = decode_chunk(7, 42, &renamed).unwrap_err();
        assert!(
            matches!(e, SnapshotError::Table(ref t) if t == "Xnstances"),
            "{e}"
        );
    }

    #[test]
    fn the_format_4_to_6_layout_is_pinned() {
        let one = vec![Write {
            table: Table::Meta,
            key: "k".into(),
            value: Some(b"1".to_vec().into()),
        }];
        // magic, format, snapshot 3 (zigzag varint 6), one put: "meta", "k", b"1"
        let want = [0xFB, 6, 6, 1, 4, b'm', b'e', b't', b'a', 1, b'k', 1, b'1'];
        assert_eq!(encode_chunk(3, &one), want);
        // format 4 and 5 chunks (before binary outbox values, before MessagePack values) are
        // read as they are
        for format in [4, 5] {
            let mut older = want;
            older[1] = format;
            assert_eq!(decode_chunk(0, 3, &older).unwrap(), one);
        }
    }

    #[test]
    fn manifests_round_trip_and_are_checked() {
        let m = Manifest {
            format: FORMAT,
            partition: PartitionId(1),
            next: 42,
            fence: Some(3),
            first: 10,
            last: 12,
            keys: 2,
            bytes: 120,
            broker: "b".into(),
        };
        assert_eq!(Manifest::decode(&m.encode()).unwrap(), m);
        // formats 1 to 5 (before `superseded`, `unpinned`, binary chunks, binary outbox
        // values, MessagePack values) are still read
        let text = String::from_utf8(m.encode()).unwrap();
        assert!(text.contains("\"v\":6"), "{text}");
        for format in [1, 2, 3, 4, 5] {
            let v = format!("\"v\":{format}");
            let older = Manifest::decode(text.replace("\"v\":6", &v).as_bytes()).unwrap();
            assert_eq!(older.format, format);
        }
        let newer = text.replace("\"v\":6", "\"v\":9");
        let e = Manifest::decode(newer.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("upgrade this broker"), "{e}");
        assert_eq!(Manifest::key(PartitionId(1)), "snapshot/1");
    }
}

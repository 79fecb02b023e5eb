//! Format 1 changelog records: JSON, each store value embedded as raw JSON. Written by
//! brokers before format 2; still read, so a changelog written by them restores.

use super::{ChangelogError, Entry};
use crate::store::{Table, Write};
use serde::Deserialize;
use serde_json::value::RawValue;

fn format_one() -> u32 {
    1
}

/// The record as JSON. A plain struct, not a tagged enum: values are embedded as raw JSON,
/// which serde cannot buffer through an internally tagged enum.
#[derive(Deserialize)]
struct Wire<'a> {
    /// The record format; records from before it was written are format 1.
    #[serde(default = "format_one")]
    v: u32,
    kind: Kind,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    fence: Option<i64>,
    /// A fence of a resumed partition (absent: `false`).
    #[serde(default)]
    provisional: bool,
    /// `[table, key, value]`: a value may itself be `null` (a unit value), so deletes are a
    /// list of their own rather than puts of `null`.
    #[serde(borrow, default)]
    puts: Vec<(String, String, &'a RawValue)>,
    /// `[table, key]`.
    #[serde(default)]
    deletes: Vec<(String, String)>,
}

#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
enum Kind {
    Fence,
    Batch,
}

/// Reads a format 1 record. No broker wrote a JSON record of another format, so one is
/// damaged, not newer.
pub(super) fn decode(offset: i64, bytes: &[u8]) -> Result<Entry, ChangelogError> {
    let corrupt = |why: String| ChangelogError::Corrupt { offset, why };
    let wire: Wire<'_> = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    if wire.v != 1 {
        return Err(corrupt(format!(
            "a JSON record of format {} (JSON records are format 1)",
            wire.v
        )));
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
            value: Some(bytes::Bytes::copy_from_slice(value.get().as_bytes())),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_one_records_are_read_as_they_were_written() {
        let batch = br#"{"v":1,"kind":"batch","fence":3,"puts":[["instances","p0001\u001fx",{"a":[1,2]}],["waits","w",null]],"deletes":[["instances","k"]]}"#;
        let Ok(Entry::Batch { fence: 3, writes }) = decode(9, batch) else {
            panic!("a format 1 batch reads");
        };
        let got: Vec<(Table, &str, Option<&[u8]>)> = writes
            .iter()
            .map(|w| (w.table, w.key.as_str(), w.value.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    Table::Instances,
                    "p0001\u{1f}x",
                    Some(&br#"{"a":[1,2]}"#[..])
                ),
                (Table::Waits, "w", Some(&b"null"[..])),
                (Table::Instances, "k", None),
            ]
        );
        // a record from before the format was written reads as format 1
        let old = br#"{"kind":"fence","owner":"broker-a","provisional":true}"#;
        assert_eq!(
            decode(0, old).unwrap(),
            Entry::Fence {
                owner: "broker-a".into(),
                provisional: true
            }
        );
        let e = decode(9, br#"{"v":2,"kind":"batch","fence":4}"#).unwrap_err();
        assert!(matches!(e, ChangelogError::Corrupt { .. }), "{e}");
        let e = decode(9, br#"{"kind":"batch"}"#).unwrap_err();
        assert!(matches!(e, ChangelogError::Corrupt { .. }), "{e}");
    }
}

//! How the store's values are written: MessagePack (rmp-serde), struct fields as named map
//! entries, every type in its human-readable form (timestamps as RFC 3339 text, as in JSON),
//! behind one leading [`MARK`] byte. Since store layout 5; values written before (and the
//! history's payloads, which stay JSON text) are JSON and are still read: a value that does
//! not start with the mark is JSON.
//!
//! Why MessagePack and not postcard, as the changelog's framing: the values hold
//! `serde_json::Value`s (instance data, events), which only a self-describing format can
//! decode, and named fields keep `#[serde(default)]` and `skip_serializing_if` working as they
//! do in JSON, so a record type can gain a field without a new layout. The same value decoded
//! from either encoding is the same, which the tests below pin.

use serde::{de::DeserializeOwned, Serialize};

/// The first byte of a MessagePack value: 0xC1 is the one byte MessagePack never uses, and
/// neither a JSON text nor any UTF-8 text starts with it, so the two encodings cannot be
/// mistaken for each other.
pub const MARK: u8 = 0xC1;

/// A stored value that does not decode as the type asked for.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("MessagePack: {0}")]
    MessagePack(#[from] rmp_serde::decode::Error),
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("MessagePack: {0} bytes after the value")]
    Trailing(usize),
}

/// `value` as the store writes it.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.push(MARK);
    let mut ser = rmp_serde::Serializer::new(&mut out)
        .with_struct_map()
        .with_human_readable();
    value.serialize(&mut ser).expect("store values serialize");
    out
}

/// A stored value, in either encoding; one value and nothing after it.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    match bytes.split_first() {
        Some((&MARK, mut body)) => {
            let mut de = rmp_serde::Deserializer::new(&mut body).with_human_readable();
            let value = T::deserialize(&mut de)?;
            match de.get_ref().len() {
                0 => Ok(value),
                n => Err(CodecError::Trailing(n)),
            }
        }
        _ => Ok(serde_json::from_slice(bytes)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use serde::Deserialize;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Record {
        id: String,
        at: DateTime<Utc>,
        data: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<String>,
        #[serde(default)]
        pinned: BTreeMap<String, String>,
        kind: Kind,
        lineage: Vec<(String, u64)>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    enum Kind {
        Idle,
        Waiting { events: Vec<String> },
        Calling(u64),
    }

    fn sample(kind: Kind) -> Record {
        Record {
            id: "p0001/9f2c".into(),
            at: "2026-12-06T11:30:00.123456Z".parse().unwrap(),
            data: json!({"z": 1, "a": [1.5, -2, u64::MAX, null, true], "s": "é\"\n", "o": {}}),
            parent: None,
            pinned: BTreeMap::from([("orderid".into(), "42".into())]),
            kind,
            lineage: vec![("wf".into(), 3)],
        }
    }

    #[test]
    fn values_round_trip_behind_the_mark_and_smaller_than_json() {
        for kind in [
            Kind::Idle,
            Kind::Waiting {
                events: vec!["paid".into()],
            },
            Kind::Calling(7),
        ] {
            let r = sample(kind);
            let bytes = encode(&r);
            assert_eq!(bytes[0], MARK);
            assert_eq!(decode::<Record>(&bytes).unwrap(), r);
            let json = serde_json::to_vec(&r).unwrap();
            assert!(
                bytes.len() < json.len(),
                "{} >= {}",
                bytes.len(),
                json.len()
            );
        }
        // scalars, as the counters and flags tables hold them
        for n in [0i64, 48, 123, -1, i64::MAX] {
            assert_eq!(decode::<i64>(&encode(&n)).unwrap(), n);
        }
        assert!(decode::<bool>(&encode(&true)).unwrap());
    }

    #[test]
    fn json_written_before_the_mark_is_still_read() {
        let r = sample(Kind::Waiting {
            events: vec!["a".into(), "b".into()],
        });
        let json = serde_json::to_vec(&r).unwrap();
        assert_eq!(decode::<Record>(&json).unwrap(), r);
        // JSON scalars whose first byte a MessagePack integer could share
        assert_eq!(decode::<i64>(b"48").unwrap(), 48);
        assert_eq!(decode::<Value>(b"null").unwrap(), Value::Null);
        assert!(
            decode::<Value>(b"{\"a\":1} x").is_err(),
            "trailing text is refused"
        );
    }

    #[test]
    fn either_encoding_decodes_to_the_same_json_value() {
        // the API turns stored records into JSON: a MessagePack value must look as its JSON did,
        // field order, timestamp text and number kinds included
        let r = sample(Kind::Calling(9));
        let from_json: Value = decode(&serde_json::to_vec(&r).unwrap()).unwrap();
        let from_mp: Value = decode(&encode(&r)).unwrap();
        assert_eq!(from_mp, from_json);
        assert_eq!(
            serde_json::to_string(&from_mp).unwrap(),
            serde_json::to_string(&r).unwrap()
        );
    }

    #[test]
    fn integer_keys_are_written_as_strings_so_a_value_can_hold_them() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Open {
            #[serde(with = "crate::engine::swf::execution::string_keys")]
            externals: BTreeMap<i64, String>,
        }
        let open = Open {
            externals: BTreeMap::from([(5, "a".into()), (-2, "b".into())]),
        };
        let json = serde_json::to_vec(&open).unwrap();
        assert_eq!(
            json, br#"{"externals":{"-2":"b","5":"a"}}"#,
            "as JSON wrote them"
        );
        let mp = encode(&open);
        assert_eq!(decode::<Open>(&mp).unwrap(), open);
        assert_eq!(decode::<Open>(&json).unwrap(), open);
        assert_eq!(
            decode::<Value>(&mp).unwrap(),
            decode::<Value>(&json).unwrap()
        );
        let e = decode::<Open>(br#"{"externals":{"x":"a"}}"#).unwrap_err();
        assert!(e.to_string().contains("not a number"), "{e}");
    }

    #[test]
    fn damage_is_an_error_not_a_guess() {
        let bytes = encode(&sample(Kind::Idle));
        for cut in [1, 2, bytes.len() / 2, bytes.len() - 1] {
            let e = decode::<Record>(&bytes[..cut]).unwrap_err();
            assert!(matches!(e, CodecError::MessagePack(_)), "{cut}: {e}");
        }
        assert!(matches!(
            decode::<Record>(&encode(&42u8)).unwrap_err(),
            CodecError::MessagePack(_)
        ));
        assert!(matches!(
            decode::<Record>(b"{}").unwrap_err(),
            CodecError::Json(_)
        ));
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            decode::<Record>(&longer).unwrap_err(),
            CodecError::Trailing(1)
        ));
    }
}

//! A record for Kafka as the outbox keeps it: encoded once, when it enters the outbox, into
//! the topic, key, headers and payload Kafka gets, and stored in that form. The producer
//! sends it as it is; before, the outbox stored the event as JSON and the producer encoded it
//! again (docs/performance.md, "The outbox written once").
//!
//! Stored values are [`MAGIC`], [`FORMAT`], then the record in postcard (header values and
//! payloads as length-prefixed bytes). Outbox values of store layout 3 and changelog format 4
//! and earlier were JSON (`{"kind":"event",..}`, `{"kind":"raw",..}`): they are still read,
//! and encoded on the way (`broker::records::OutRecord::decode`).

use crate::config::OutputMode;
use crate::engine::Event;
use crate::kafka::binary::HeaderName;
use serde::{Deserialize, Serialize};

/// The first byte of a stored record: never the first byte of a JSON text (the outbox's
/// other values, and its values before layout 4), nor of any UTF-8 text.
pub const MAGIC: u8 = 0xFB;

/// The layout of a stored record after [`MAGIC`]; a newer one is refused.
pub const FORMAT: u8 = 1;

/// Record headers as name and bytes.
pub type Headers = Vec<(HeaderName, Vec<u8>)>;

/// A record as Kafka gets it, and what it is counted as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Produced {
    pub topic: String,
    /// The event type it is counted under (`flowbroker_events_produced_total{type}`), or
    /// `dead-letter`.
    pub label: String,
    #[serde(with = "serde_bytes")]
    pub key: Option<Vec<u8>>,
    #[serde(with = "header_list")]
    pub headers: Headers,
    #[serde(with = "serde_bytes")]
    pub payload: Option<Vec<u8>>,
}

/// Why a stored record cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ProducedError {
    #[error("an outbox record of format {0}, written by a newer flowbroker")]
    Newer(u8),
    #[error("a corrupt outbox record: {0}")]
    Corrupt(String),
}

impl Produced {
    /// The CloudEvent `e` as a record of `topic` with `key`, in `mode`; or why it cannot be
    /// one (an event the CloudEvents SDK refuses).
    pub fn event(mode: OutputMode, topic: &str, key: &str, e: &Event) -> Result<Self, String> {
        let (headers, payload) = match mode {
            OutputMode::Binary => {
                let b = crate::kafka::binary::binary(e)?;
                (b.headers, b.payload)
            }
            OutputMode::Structured => {
                let ce = crate::cloudevent::to_sdk(e)?;
                let payload = serde_json::to_vec(&ce).map_err(|err| err.to_string())?;
                let ct = b"application/cloudevents+json; charset=utf-8".to_vec();
                (vec![("content-type".into(), ct)], Some(payload))
            }
        };
        Ok(Produced {
            topic: topic.to_string(),
            label: e.event_type.clone(),
            key: Some(key.as_bytes().to_vec()),
            headers,
            payload,
        })
    }

    /// The dead letter of an event that cannot be encoded (`why`): no key, headers or
    /// payload, only the reason and where it was going (docs/broker.md "Topics and records").
    pub fn unencodable(dlq: &str, topic: &str, label: &str, why: &str) -> Self {
        let headers = vec![
            ("flowbroker-dlq-reason".into(), why.as_bytes().to_vec()),
            ("flowbroker-dlq-kind".into(), b"unencodable".to_vec()),
            ("flowbroker-dlq-topic".into(), topic.as_bytes().to_vec()),
            ("flowbroker-dlq-type".into(), label.as_bytes().to_vec()),
        ];
        Produced {
            topic: dlq.to_string(),
            label: "dead-letter".into(),
            key: None,
            headers,
            payload: None,
        }
    }

    /// The CloudEvent this record carries, read back as a consumer of its topic reads it
    /// (`kafka::decode`); `None` for a record that is not one (a dead letter).
    pub fn read_event(&self) -> Option<Event> {
        use rdkafka::message::{Header, OwnedHeaders, OwnedMessage, Timestamp};
        let mut h = OwnedHeaders::new_with_capacity(self.headers.len());
        for (name, value) in &self.headers {
            h = h.insert(Header {
                key: name,
                value: Some(value.as_slice()),
            });
        }
        let (payload, key, topic) = (self.payload.clone(), self.key.clone(), self.topic.clone());
        let msg = OwnedMessage::new(payload, key, topic, Timestamp::NotAvailable, 0, 0, Some(h));
        crate::kafka::decode::decode(&msg).ok()
    }

    /// What the outbox stores.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.payload.as_ref().map_or(0, Vec::len));
        out.extend_from_slice(&[MAGIC, FORMAT]);
        // (writing into a Vec cannot fail)
        postcard::to_io(self, &mut out).expect("a record encodes");
        out
    }

    /// Whether `bytes` are a record [`Produced::encode`] wrote (not JSON).
    pub fn is_encoded(bytes: &[u8]) -> bool {
        bytes.first() == Some(&MAGIC)
    }

    /// Reads what [`Produced::encode`] wrote.
    pub fn decode(bytes: &[u8]) -> Result<Self, ProducedError> {
        match bytes {
            [MAGIC, FORMAT, rest @ ..] => {
                postcard::from_bytes(rest).map_err(|e| ProducedError::Corrupt(e.to_string()))
            }
            [MAGIC, newer, ..] if *newer > FORMAT => Err(ProducedError::Newer(*newer)),
            _ => Err(ProducedError::Corrupt("no format marker".into())),
        }
    }
}

/// Headers as a sequence of (name, bytes) pairs, the bytes length-prefixed.
mod header_list {
    use super::Headers;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(h: &Headers, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            h.iter()
                .map(|(n, v)| (n.as_ref(), serde_bytes::Bytes::new(v))),
        )
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Headers, D::Error> {
        let v: Vec<(String, serde_bytes::ByteBuf)> = Vec::deserialize(d)?;
        Ok(v.into_iter()
            .map(|(n, b)| (n.into(), b.into_vec()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> Produced {
        Produced {
            topic: "t".into(),
            label: "ty".into(),
            key: Some(b"k".to_vec()),
            headers: vec![("ce_id".into(), b"1".to_vec())],
            payload: Some(b"{}".to_vec()),
        }
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let r = rec();
        let bytes = r.encode();
        assert!(Produced::is_encoded(&bytes));
        assert_eq!(Produced::decode(&bytes).unwrap(), r);
        let none = Produced {
            key: None,
            payload: None,
            ..rec()
        };
        assert_eq!(Produced::decode(&none.encode()).unwrap(), none);
    }

    /// The bytes as brokers write them: a change of layout must come with a new [`FORMAT`].
    #[test]
    fn the_layout_is_pinned() {
        let want: Vec<u8> = [
            &[MAGIC, 1][..],
            &[1, b't'],
            &[2, b't', b'y'],
            &[1, 1, b'k'],
            &[1, 5, b'c', b'e', b'_', b'i', b'd', 1, b'1'],
            &[1, 2, b'{', b'}'],
        ]
        .concat();
        assert_eq!(rec().encode(), want);
    }

    #[test]
    fn a_newer_format_is_refused_and_json_is_not_a_record() {
        let mut b = rec().encode();
        b[1] = FORMAT + 1;
        assert!(matches!(Produced::decode(&b), Err(ProducedError::Newer(2))));
        assert!(!Produced::is_encoded(b"{\"kind\":\"event\"}"));
    }
}

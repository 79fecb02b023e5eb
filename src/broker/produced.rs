//! A record for Kafka as the outbox keeps it: encoded once, when it enters the outbox, into
//! the topic, key, headers and payload Kafka gets, in one buffer that is both the stored value
//! and what the producer sends from. Before, the outbox stored the event as JSON and the
//! producer encoded it again (docs/performance.md, "The outbox written once").
//!
//! A record is [`MAGIC`], [`FORMAT`], then [`Parts`] in postcard (strings, header values and
//! payloads length-prefixed, read back borrowed). Outbox values of store layout 3 and
//! changelog format 4 and earlier were JSON (`{"kind":"event",..}`, `{"kind":"raw",..}`): they
//! are still read, and encoded on the way (`broker::records::OutRecord::decode`).

use crate::config::OutputMode;
use crate::engine::Event;
use serde::{Deserialize, Serialize};
use serde_bytes::Bytes;

/// The first byte of a stored record: never the first byte of the outbox's other values
/// (MessagePack behind `store::codec`'s 0xC1 mark, or a JSON text before layout 5), nor of
/// any UTF-8 text.
pub const MAGIC: u8 = 0xFB;

/// The layout of a stored record after [`MAGIC`]; a newer one is refused.
pub const FORMAT: u8 = 1;

/// An encoded record (always one [`Produced::parts`] reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Produced {
    bytes: Vec<u8>,
}

/// A record's parts, borrowed from its buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parts<'a> {
    pub topic: &'a str,
    /// The event type it is counted under (`flowbroker_events_produced_total{type}`), or
    /// `dead-letter`.
    pub label: &'a str,
    #[serde(borrow, with = "serde_bytes")]
    pub key: Option<&'a [u8]>,
    #[serde(borrow)]
    pub headers: Vec<(&'a str, &'a Bytes)>,
    #[serde(borrow, with = "serde_bytes")]
    pub payload: Option<&'a [u8]>,
}

/// Why a stored record cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ProducedError {
    #[error(
        "an outbox record of format {0}, written by a newer flowbroker: upgrade every broker \
         of the cluster to the version that wrote it"
    )]
    Newer(u8),
    #[error("a corrupt outbox record: {0}")]
    Corrupt(String),
}

impl Parts<'_> {
    /// The headers as librdkafka takes them (copied into its record).
    pub fn kafka_headers(&self) -> rdkafka::message::OwnedHeaders {
        use rdkafka::message::{Header, OwnedHeaders};
        let mut h = OwnedHeaders::new_with_capacity(self.headers.len());
        for (name, value) in &self.headers {
            h = h.insert(Header {
                key: name,
                value: Some(value.as_ref()),
            });
        }
        h
    }

    /// The record these parts make.
    pub fn encode(&self) -> Produced {
        let mut bytes = Vec::with_capacity(256 + self.payload.map_or(0, <[u8]>::len));
        bytes.extend_from_slice(&[MAGIC, FORMAT]);
        // (writing into a Vec cannot fail)
        postcard::to_io(self, &mut bytes).expect("a record encodes");
        Produced { bytes }
    }
}

impl Produced {
    /// The CloudEvent `e` as a record of `topic` with `key`, in `mode`; or why it cannot be
    /// one (an event the CloudEvents SDK refuses).
    pub fn event(mode: OutputMode, topic: &str, key: &str, e: &Event) -> Result<Self, String> {
        let parts = |headers, payload| Parts {
            topic,
            label: &e.event_type,
            key: Some(key.as_bytes()),
            headers,
            payload,
        };
        match mode {
            OutputMode::Binary => {
                let b = crate::kafka::binary::binary(e)?;
                let headers = b
                    .headers
                    .iter()
                    .map(|(n, v)| (n.as_ref(), Bytes::new(v)))
                    .collect();
                Ok(parts(headers, b.payload.as_deref()).encode())
            }
            OutputMode::Structured => {
                let ce = crate::cloudevent::to_sdk(e)?;
                let payload = serde_json::to_vec(&ce).map_err(|err| err.to_string())?;
                let ct = Bytes::new(b"application/cloudevents+json; charset=utf-8");
                Ok(parts(vec![("content-type", ct)], Some(&payload)).encode())
            }
        }
    }

    /// A record copied as it was, with extra headers (a dead letter).
    pub fn raw(
        topic: &str,
        key: Option<&[u8]>,
        payload: Option<&[u8]>,
        headers: &[(String, Vec<u8>)],
    ) -> Self {
        Parts {
            topic,
            label: "dead-letter",
            key,
            headers: headers
                .iter()
                .map(|(n, v)| (n.as_str(), Bytes::new(v)))
                .collect(),
            payload,
        }
        .encode()
    }

    /// The dead letter of an event that cannot be encoded (`why`): no key, headers or
    /// payload, only the reason and where it was going (docs/broker.md "Topics and records").
    pub fn unencodable(dlq: &str, topic: &str, label: &str, why: &str) -> Self {
        let headers = [
            ("flowbroker-dlq-reason", why.as_bytes()),
            ("flowbroker-dlq-kind", b"unencodable"),
            ("flowbroker-dlq-topic", topic.as_bytes()),
            ("flowbroker-dlq-type", label.as_bytes()),
        ];
        Parts {
            topic: dlq,
            label: "dead-letter",
            key: None,
            headers: headers.iter().map(|(n, v)| (*n, Bytes::new(v))).collect(),
            payload: None,
        }
        .encode()
    }

    /// The record's parts.
    pub fn parts(&self) -> Parts<'_> {
        // (checked when the record was made or read from the store)
        Self::read(&self.bytes).expect("an encoded record reads")
    }

    /// The CloudEvent this record carries, read back as a consumer of its topic reads it
    /// (`kafka::decode`); `None` for a record that is not one (a dead letter).
    pub fn read_event(&self) -> Option<Event> {
        use rdkafka::message::{OwnedMessage, Timestamp};
        let p = self.parts();
        let h = p.kafka_headers();
        let (payload, key) = (p.payload.map(<[u8]>::to_vec), p.key.map(<[u8]>::to_vec));
        let topic = p.topic.to_string();
        let msg = OwnedMessage::new(payload, key, topic, Timestamp::NotAvailable, 0, 0, Some(h));
        crate::kafka::decode::decode(&msg).ok()
    }

    /// What the outbox stores.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether `bytes` are a record [`Produced::as_bytes`] gave (not JSON).
    pub fn is_encoded(bytes: &[u8]) -> bool {
        bytes.first() == Some(&MAGIC)
    }

    /// Takes stored bytes back, checked.
    pub fn from_stored(bytes: Vec<u8>) -> Result<Self, ProducedError> {
        Self::read(&bytes)?;
        Ok(Produced { bytes })
    }

    fn read(bytes: &[u8]) -> Result<Parts<'_>, ProducedError> {
        match bytes {
            [MAGIC, FORMAT, rest @ ..] => {
                postcard::from_bytes(rest).map_err(|e| ProducedError::Corrupt(e.to_string()))
            }
            [MAGIC, newer, ..] if *newer > FORMAT => Err(ProducedError::Newer(*newer)),
            _ => Err(ProducedError::Corrupt("no format marker".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> Produced {
        Produced::raw(
            "t",
            Some(b"k"),
            Some(b"{}"),
            &[("ce_id".into(), b"1".to_vec())],
        )
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let r = rec();
        assert!(Produced::is_encoded(r.as_bytes()));
        let again = Produced::from_stored(r.as_bytes().to_vec()).unwrap();
        assert_eq!(again, r);
        let p = again.parts();
        assert_eq!((p.topic, p.label), ("t", "dead-letter"));
        assert_eq!((p.key, p.payload), (Some(&b"k"[..]), Some(&b"{}"[..])));
        assert_eq!(p.headers, vec![("ce_id", Bytes::new(b"1"))]);
        let none = Produced::raw("t", None, None, &[]);
        let none = none.parts();
        assert_eq!(
            (none.key, none.payload, none.headers.len()),
            (None, None, 0)
        );
    }

    /// The bytes as brokers write them: a change of layout must come with a new [`FORMAT`].
    #[test]
    fn the_layout_is_pinned() {
        let want: Vec<u8> = [
            &[MAGIC, 1][..],
            &[1, b't'],
            &[11],
            b"dead-letter",
            &[1, 1, b'k'],
            &[1, 5, b'c', b'e', b'_', b'i', b'd', 1, b'1'],
            &[1, 2, b'{', b'}'],
        ]
        .concat();
        assert_eq!(rec().as_bytes(), want);
    }

    #[test]
    fn a_newer_format_or_a_cut_record_is_refused_and_json_is_not_a_record() {
        let mut b = rec().as_bytes().to_vec();
        b[1] = FORMAT + 1;
        assert!(matches!(
            Produced::from_stored(b),
            Err(ProducedError::Newer(2))
        ));
        let b = rec().as_bytes().to_vec();
        let cut = b[..b.len() - 1].to_vec();
        assert!(matches!(
            Produced::from_stored(cut),
            Err(ProducedError::Corrupt(_))
        ));
        assert!(!Produced::is_encoded(b"{\"kind\":\"event\"}"));
    }
}

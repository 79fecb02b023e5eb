//! The outbox sender: records are enqueued in outbox order, and every acknowledgement goes
//! back to the core, which deletes the entry. A transient failure is retried with backoff
//! until Kafka acknowledges; a record Kafka refuses for good (too large, invalid topic, not
//! authorised) goes to the dead-letter topic with the reason, so it never blocks the outbox.
//! Records arrive encoded (`broker::produced`: an event that could not be was dead-lettered
//! when it entered the outbox); librdkafka copies each as it is queued, so the buffer is freed
//! then. A record whose delivery failed is read back from its report to be sent again; one
//! librdkafka would not queue keeps its buffer. Delivery reports arrive through the client's
//! context ([`super::sender`]), not as a future per record. After a crash the core re-sends
//! what is left, with the same ids.
//! Each record's Kafka timestamp is when the core let it out (`broker::LetOut`), not when this
//! task got to it.

use super::sender::{ticketed, Pending, Record, Report, Sender, Ticket};
use crate::broker::produced::Produced;
use crate::broker::records::OutRecord;
use crate::broker::{Acked, Cmd, Delivery, LetOut, OutboxKey};
use rdkafka::message::{Header, Message, OwnedHeaders, OwnedMessage};
use rdkafka::producer::BaseRecord;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How many delivery reports one acknowledgement to the core carries at most.
const ACKS_AT_ONCE: usize = 4096;

/// Sends outbox batches until the core goes away. Each record is queued with its [`Pending`]
/// ticket; delivery reports come back through `reports` and go to the core in batches. A
/// record librdkafka did not take, or that Kafka refused, is handed to a task of its own that
/// retries it, restamps it or dead-letters it ([`resend`]) and acknowledges it alone.
pub async fn run(
    sender: Sender,
    mut reports: mpsc::UnboundedReceiver<Report>,
    topics: Topics,
    mut rx: mpsc::UnboundedReceiver<LetOut>,
    core: mpsc::UnboundedSender<Cmd>,
) {
    let topics = Arc::new(topics);
    let mut got: Vec<Report> = Vec::new();
    loop {
        tokio::select! {
            batch = rx.recv() => match batch {
                Some(batch) => {
                    let at = batch.at.timestamp_millis();
                    for (k, rec) in batch {
                        enqueue(&sender, &topics, k, rec, at, &core);
                    }
                }
                None => return,
            },
            n = reports.recv_many(&mut got, ACKS_AT_ONCE) => {
                if n == 0 {
                    // (not while `sender` lives: the reports' sender is in its context)
                    return;
                }
                let mut acks = Vec::with_capacity(n);
                for r in got.drain(..) {
                    match r.result {
                        Ok(()) => acks.push(Acked {
                            topic: counted_topic(&r.pending, r.topic),
                            key: r.pending.key,
                            label: r.pending.label,
                            delivery: Delivery::Delivered,
                        }),
                        Err((e, msg)) => {
                            let enc = Encoded::reported(msg, r.pending.partition);
                            let first = Some(e);
                            spawn_resend(&sender, &topics, r.pending, r.topic, enc, first, &core);
                        }
                    }
                }
                if !acks.is_empty() && core.send(Cmd::Acked(acks)).is_err() {
                    return;
                }
            }
        }
    }
}

/// Queues one outbox record; one librdkafka does not take goes to [`resend`].
fn enqueue(
    sender: &Sender,
    topics: &Arc<Topics>,
    key: OutboxKey,
    rec: OutRecord,
    at: i64,
    core: &mpsc::UnboundedSender<Cmd>,
) {
    let (partition, work) = match &rec {
        OutRecord::Kafka(_) => (None, false),
        OutRecord::Work { partition, .. } => (Some(partition.kafka()), true),
    };
    let enc = encode(&topics.work, rec, at);
    let (record, label) = enc.record_labelled();
    let pending = Pending {
        key,
        label: label.unwrap_or("work").to_string(),
        partition,
        work,
    };
    let (e, p) = match sender.enqueue(ticketed(record, Ticket::Outbox(pending))) {
        Ok(()) => return,
        Err((e, back)) => match *back.delivery_opaque {
            Ticket::Outbox(p) => (e, p),
            Ticket::Wait(_) => unreachable!("an outbox record carries its pending entry"),
        },
    };
    let topic = enc.topic().to_string();
    // a full queue is waited out quietly first (tried again every 100 ms for 30 s), as
    // librdkafka's own future-based send did; any other error is handled as a failed try
    let first = (!super::sender::queue_full(&e)).then_some(e);
    spawn_resend(sender, topics, p, topic, enc, first, core);
}

/// Hands a record whose first try failed to [`resend`], on a task of its own.
fn spawn_resend(
    sender: &Sender,
    topics: &Arc<Topics>,
    p: Pending,
    topic: String,
    enc: Encoded,
    first: Option<rdkafka::error::KafkaError>,
    core: &mpsc::UnboundedSender<Cmd>,
) {
    let to = Resend {
        topic: counted_topic(&p, topic),
        key: p.key,
        label: p.label,
        enc,
        first,
    };
    tokio::spawn(resend(sender.clone(), topics.clone(), to, core.clone()));
}

/// The topic a record's acknowledgement counts under (`flowbroker_events_produced_total`):
/// its own, or `work` for a message between partitions.
fn counted_topic(p: &Pending, topic: String) -> String {
    if p.work {
        "work".to_string()
    } else {
        topic
    }
}

/// A record for [`resend`], with the error that sent it there.
struct Resend {
    key: OutboxKey,
    /// The topic it counts under ([`counted_topic`]).
    topic: String,
    label: String,
    enc: Encoded,
    first: Option<rdkafka::error::KafkaError>,
}

/// A record librdkafka did not take, or Kafka refused: sent again until Kafka acknowledges it
/// (a full queue or a transient error waited out, a refused timestamp replaced), or
/// dead-lettered when Kafka refuses it for good; then acknowledged to the core alone.
async fn resend(sender: Sender, topics: Arc<Topics>, r: Resend, core: mpsc::UnboundedSender<Cmd>) {
    let Resend {
        key,
        topic,
        label,
        mut enc,
        first,
    } = r;
    let delivery = match deliver(&sender, &mut enc, first).await {
        Ok(()) => Delivery::Delivered,
        Err(refused) => {
            let copy = dead_letter_copy(&topics.dead_letter, &topic, &label, &enc, &refused);
            send_dead_letter(&sender, copy, &topic, &label, &refused.why).await
        }
    };
    let acked = Acked {
        key,
        topic,
        label,
        delivery,
    };
    let _ = core.send(Cmd::Acked(vec![acked]));
}

/// The internal topics the sender writes besides the records' own.
#[derive(Debug, Clone)]
pub struct Topics {
    /// Where work records for state partitions go.
    pub work: String,
    /// Where records Kafka refuses for good go instead.
    pub dead_letter: String,
}

/// A record as Kafka gets it.
struct Encoded {
    /// When the core let it out (ms since the epoch); `None`: when it is sent (after Kafka
    /// refused the first for being too old or too new).
    timestamp: Option<i64>,
    body: Body,
}

enum Body {
    /// An outbox record, sent from the buffer it was encoded into (`broker::produced`).
    Stored(Produced),
    /// A message to a state partition, or a dead-letter copy.
    Owned {
        topic: String,
        partition: Option<i32>,
        key: Option<Vec<u8>>,
        payload: Option<Vec<u8>>,
        headers: Vec<(String, Vec<u8>)>,
    },
}

/// Copies of a record's key, payload and headers (for its dead-letter copy).
type Copied = (Option<Vec<u8>>, Option<Vec<u8>>, Vec<(String, Vec<u8>)>);

impl Encoded {
    fn topic(&self) -> &str {
        match &self.body {
            Body::Stored(p) => p.parts().topic,
            Body::Owned { topic, .. } => topic,
        }
    }

    /// The record's content read back from a failed delivery report, to be sent again.
    fn reported(m: OwnedMessage, partition: Option<i32>) -> Encoded {
        let headers = super::owned_headers(&m);
        Encoded {
            timestamp: m.timestamp().to_millis(),
            body: Body::Owned {
                topic: m.topic().to_string(),
                partition,
                key: m.key().map(<[u8]>::to_vec),
                payload: m.payload().map(<[u8]>::to_vec),
                headers,
            },
        }
    }

    fn record(&self) -> Record<'_> {
        self.record_labelled().0
    }

    /// The record, and the label a stored record carries (`None` for one built here): its
    /// parts are read once.
    fn record_labelled(&self) -> (Record<'_>, Option<&str>) {
        let mut label = None;
        let (mut r, key, payload) = match &self.body {
            Body::Stored(p) => {
                let p = p.parts();
                label = Some(p.label);
                let r = BaseRecord::<[u8], [u8]>::to(p.topic).headers(p.kafka_headers());
                (r, p.key, p.payload)
            }
            Body::Owned {
                topic,
                partition,
                key,
                payload,
                headers,
            } => {
                let mut h = OwnedHeaders::new_with_capacity(headers.len());
                for (name, value) in headers {
                    h = h.insert(Header {
                        key: name,
                        value: Some(value.as_slice()),
                    });
                }
                let mut r = BaseRecord::<[u8], [u8]>::to(topic).headers(h);
                if let Some(p) = partition {
                    r = r.partition(*p);
                }
                (r, key.as_deref(), payload.as_deref())
            }
        };
        if let Some(p) = payload {
            r = r.payload(p);
        }
        if let Some(t) = self.timestamp {
            r = r.timestamp(t);
        }
        if let Some(k) = key {
            r = r.key(k);
        }
        (r, label)
    }

    /// Copies of the key, payload and headers (for a dead-letter copy).
    fn copied(&self) -> Copied {
        match &self.body {
            Body::Stored(p) => {
                let p = p.parts();
                let headers = p.headers.iter().map(|(n, v)| (n.to_string(), v.to_vec()));
                let to_vec = |b: &[u8]| b.to_vec();
                (p.key.map(to_vec), p.payload.map(to_vec), headers.collect())
            }
            Body::Owned {
                key,
                payload,
                headers,
                ..
            } => (key.clone(), payload.clone(), headers.clone()),
        }
    }
}

/// The record as Kafka gets it: an outbox record as it was encoded when it entered the outbox
/// (`broker::produced`), or a message between partitions.
fn encode(work_topic: &str, rec: OutRecord, timestamp: i64) -> Encoded {
    let body = match rec {
        OutRecord::Kafka(p) => Body::Stored(p),
        OutRecord::Work { partition, work } => Body::Owned {
            topic: work_topic.to_string(),
            partition: Some(partition.kafka()),
            key: None,
            payload: Some(work.encode()),
            headers: vec![],
        },
    };
    Encoded {
        timestamp: Some(timestamp),
        body,
    }
}

/// Errors Kafka (or the client) will give again for the same record: sending it again cannot
/// succeed, so it is dead-lettered instead of blocking the outbox.
fn permanent(e: &rdkafka::error::KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(
            C::MessageSizeTooLarge
                | C::MessageBatchTooLarge
                | C::InvalidMessage
                | C::InvalidMessageSize
                | C::InvalidRecord
                | C::InvalidTopic
                | C::UnknownTopic
                | C::UnknownPartition
                | C::TopicAuthorizationFailed
                | C::ClusterAuthorizationFailed
                | C::InvalidArgument
        )
    )
}

/// Why Kafka (or the client) refuses a record for good.
struct Refused {
    why: String,
    /// The refusal was the record's size: its dead-letter copy leaves the payload out.
    too_large: bool,
}

/// Sends until Kafka acknowledges, retrying transient errors with backoff (up to 10 s between
/// tries); returns a permanent refusal. A record refused for its timestamp (a topic that bounds
/// how old or new a `CreateTime` may be, and a record held back longer) is sent again stamped
/// when it is sent. `first`: the error its first try already got.
async fn deliver(
    sender: &Sender,
    enc: &mut Encoded,
    mut first: Option<rdkafka::error::KafkaError>,
) -> Result<(), Refused> {
    use rdkafka::types::RDKafkaErrorCode as C;
    let mut pause = Duration::from_millis(100);
    loop {
        let sent = match first.take() {
            Some(e) => Err(e),
            None => sender.send(enc.record(), Duration::from_secs(30)).await,
        };
        match sent {
            Ok(()) => return Ok(()),
            Err(e)
                if e.rdkafka_error_code() == Some(C::InvalidTimestamp)
                    && enc.timestamp.is_some() =>
            {
                tracing::warn!(topic = %enc.topic(), error = %e,
                    "Kafka refused the record's timestamp; sending it again stamped now");
                enc.timestamp = None;
            }
            Err(e) if permanent(&e) => {
                let too_large = matches!(
                    e.rdkafka_error_code(),
                    Some(C::MessageSizeTooLarge | C::MessageBatchTooLarge | C::InvalidMessageSize)
                );
                let why = e.to_string();
                return Err(Refused { why, too_large });
            }
            Err(e) => {
                tracing::warn!(topic = %enc.topic(), error = %e, retry_in = ?pause, "produce failed; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(10));
            }
        }
    }
}

/// The dead-letter copy of a record Kafka refuses: its key, headers and payload (the payload
/// left out when the refusal was its size), with the reason and where it was going.
fn dead_letter_copy(
    dlq: &str,
    topic: &str,
    label: &str,
    enc: &Encoded,
    refused: &Refused,
) -> Encoded {
    let (key, payload, mut headers) = enc.copied();
    let mut push = |name: &str, value: &[u8]| headers.push((name.to_string(), value.to_vec()));
    push("flowbroker-dlq-reason", refused.why.as_bytes());
    push("flowbroker-dlq-kind", b"undeliverable");
    push("flowbroker-dlq-topic", topic.as_bytes());
    push("flowbroker-dlq-type", label.as_bytes());
    if let Some(p) = &payload {
        push(
            "flowbroker-dlq-payload-bytes",
            p.len().to_string().as_bytes(),
        );
    }
    Encoded {
        timestamp: enc.timestamp,
        body: Body::Owned {
            topic: dlq.to_string(),
            partition: None,
            key,
            payload: payload.filter(|_| !refused.too_large),
            headers,
        },
    }
}

/// Sends a dead-letter copy; if Kafka refuses that for good too, the record is dropped and
/// logged with both reasons.
async fn send_dead_letter(
    sender: &Sender,
    copy: Encoded,
    topic: &str,
    label: &str,
    why: &str,
) -> Delivery {
    let mut copy = copy;
    match deliver(sender, &mut copy, None).await {
        Ok(()) => {
            tracing::error!(topic, r#type = label, error = why, dead_letter = %copy.topic(),
                "Kafka refuses this record for good; sent to the dead-letter topic instead");
            Delivery::DeadLettered
        }
        Err(again) => {
            tracing::error!(topic, r#type = label, error = why, dead_letter_error = %again.why,
                "Kafka refuses this record and its dead-letter copy for good; dropped");
            Delivery::Dropped
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::message::{Headers, Timestamp};

    fn sent_headers(r: &Record<'_>) -> Vec<(String, Vec<u8>)> {
        let h = r.headers.as_ref().expect("headers");
        h.iter()
            .map(|x| (x.key.to_string(), x.value.unwrap_or_default().to_vec()))
            .collect()
    }

    /// A record whose delivery failed is sent again as Kafka had it: read back from the
    /// report, it makes the record that was queued.
    #[test]
    fn a_failed_report_gives_the_record_back_as_it_was_sent() {
        let headers = OwnedHeaders::new()
            .insert(Header {
                key: "ce_type",
                value: Some(b"order.placed".as_slice()),
            })
            .insert(Header {
                key: "ce_id",
                value: Some(b"e-1".as_slice()),
            });
        let msg = OwnedMessage::new(
            Some(b"{\"a\":1}".to_vec()),
            Some(b"k1".to_vec()),
            "flowbroker.out".into(),
            Timestamp::CreateTime(1_700_000_000_123),
            2,
            41,
            Some(headers),
        );
        let enc = Encoded::reported(msg, Some(2));
        assert_eq!(enc.topic(), "flowbroker.out");
        assert_eq!(enc.timestamp, Some(1_700_000_000_123));
        let r = enc.record();
        assert_eq!(r.topic, "flowbroker.out");
        assert_eq!(r.partition, Some(2));
        assert_eq!(r.key, Some(b"k1".as_slice()));
        assert_eq!(r.payload, Some(b"{\"a\":1}".as_slice()));
        assert_eq!(r.timestamp, Some(1_700_000_000_123));
        assert_eq!(
            sent_headers(&r),
            vec![
                ("ce_type".to_string(), b"order.placed".to_vec()),
                ("ce_id".to_string(), b"e-1".to_vec()),
            ]
        );
        // sent by its key (an outbox event): no partition named, as the first time
        let by_key = OwnedMessage::new(
            None,
            Some(b"k1".to_vec()),
            "flowbroker.out".into(),
            Timestamp::NotAvailable,
            5,
            0,
            None,
        );
        let enc = Encoded::reported(by_key, None);
        let r = enc.record();
        assert_eq!((r.partition, r.timestamp, r.payload), (None, None, None));
    }

    /// Work records count under `work`, as they always did; outbox events under their topic.
    #[test]
    fn acknowledgements_count_under_the_records_topic() {
        let key = OutboxKey {
            partition: crate::cluster::partition::PartitionId(1),
            seq: 1,
        };
        let p = |partition, work| Pending {
            key,
            label: "x".into(),
            partition,
            work,
        };
        let out = counted_topic(&p(None, false), "flowbroker.out".into());
        assert_eq!(out, "flowbroker.out");
        let work = counted_topic(&p(Some(3), true), "flowbroker.work".into());
        assert_eq!(work, "work");
    }
}

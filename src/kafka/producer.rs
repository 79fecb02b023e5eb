//! The outbox sender: records are enqueued in outbox order, and every acknowledgement goes
//! back to the core, which deletes the entry. A transient failure is retried with backoff
//! until Kafka acknowledges; a record Kafka refuses for good (too large, invalid topic, not
//! authorised) goes to the dead-letter topic with the reason, so it never blocks the outbox.
//! Records arrive encoded (`broker::produced`: an event that could not be was dead-lettered
//! when it entered the outbox) and are sent from their own buffers. After a crash the core
//! re-sends what is left, with the same ids.
//! Each record's Kafka timestamp is when the core let it out (`broker::LetOut`), not when this
//! task got to it.

use super::{client_config, KafkaError};
use crate::broker::produced::Produced;
use crate::broker::records::OutRecord;
use crate::broker::{Acked, Cmd, Delivery, LetOut, OutboxKey};
use crate::config::KafkaConfig;
use futures::stream::{FuturesUnordered, StreamExt};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use std::time::Duration;
use tokio::sync::mpsc;

pub fn create(cfg: &KafkaConfig) -> Result<FutureProducer, KafkaError> {
    let c = client_config(
        cfg,
        &[
            ("enable.idempotence", "true".into()),
            ("linger.ms", "5".into()),
            // librdkafka retries a record for as long as Kafka is away, in order: a record
            // that timed out and was sent again could be overtaken by a later record of its
            // key that was already queued (docs/broker.md "Topics and records")
            ("message.timeout.ms", "0".into()),
            // kafka.max_in_flight bounds what the core hands over; librdkafka's queue must
            // take all of it, or every record in FutureProducer::send retries `QueueFull`
            // every 100 ms (out of order)
            (
                "queue.buffering.max.messages",
                (cfg.max_in_flight + 1000).max(100_000).to_string(),
            ),
        ],
    );
    c.create().map_err(|source| KafkaError::Client {
        what: "producer",
        brokers: cfg.brokers.clone(),
        source,
    })
}

/// Sends outbox batches until the core goes away.
pub async fn run(
    producer: FutureProducer,
    topics: Topics,
    mut rx: mpsc::UnboundedReceiver<LetOut>,
    core: mpsc::UnboundedSender<Cmd>,
) {
    let topics = std::sync::Arc::new(topics);
    let mut inflight = FuturesUnordered::new();
    let mut acks: Vec<Acked> = Vec::new();
    loop {
        tokio::select! {
            batch = rx.recv() => match batch {
                Some(batch) => {
                    let at = batch.at.timestamp_millis();
                    for (k, rec) in batch {
                        inflight.push(send(producer.clone(), topics.clone(), k, rec, at));
                    }
                }
                None => return,
            },
            Some(ack) = inflight.next(), if !inflight.is_empty() => {
                acks.push(ack);
                while let Some(Some(more)) = futures::FutureExt::now_or_never(inflight.next()) {
                    acks.push(more);
                }
                if core.send(Cmd::Acked(std::mem::take(&mut acks))).is_err() {
                    return;
                }
            }
        }
    }
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

    fn record(&self) -> FutureRecord<'_, [u8], [u8]> {
        let (mut r, key, payload) = match &self.body {
            Body::Stored(p) => {
                let p = p.parts();
                let r = FutureRecord::<[u8], [u8]>::to(p.topic).headers(p.kafka_headers());
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
                let mut r = FutureRecord::<[u8], [u8]>::to(topic).headers(h);
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
        r
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

/// Sends one record: librdkafka retries transient errors itself, in order, without a time
/// limit (`message.timeout.ms = 0`); what it gives back before the record was queued (its
/// queue stayed full) is retried here with backoff; a record Kafka refuses for good goes to the
/// dead-letter topic with the reason.
async fn send(
    producer: FutureProducer,
    topics: std::sync::Arc<Topics>,
    key: OutboxKey,
    rec: OutRecord,
    timestamp: i64,
) -> Acked {
    let (topic, label) = match &rec {
        OutRecord::Kafka(p) => {
            let p = p.parts();
            (p.topic.to_string(), p.label.to_string())
        }
        OutRecord::Work { .. } => ("work".to_string(), "work".to_string()),
    };
    let done = |delivery| Acked {
        key: key.clone(),
        topic: topic.clone(),
        label: label.clone(),
        delivery,
    };
    let mut enc = encode(&topics.work, rec, timestamp);
    let refused = match deliver(&producer, &mut enc).await {
        Ok(()) => return done(Delivery::Delivered),
        Err(refused) => refused,
    };
    let copy = dead_letter_copy(&topics.dead_letter, &topic, &label, &enc, &refused);
    done(send_dead_letter(&producer, copy, &topic, &label, &refused.why).await)
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
/// when it is sent.
async fn deliver(producer: &FutureProducer, enc: &mut Encoded) -> Result<(), Refused> {
    use rdkafka::types::RDKafkaErrorCode as C;
    let mut pause = Duration::from_millis(100);
    loop {
        match producer.send(enc.record(), Duration::from_secs(30)).await {
            Ok(_) => return Ok(()),
            Err((e, _))
                if e.rdkafka_error_code() == Some(C::InvalidTimestamp)
                    && enc.timestamp.is_some() =>
            {
                tracing::warn!(topic = %enc.topic(), error = %e,
                    "Kafka refused the record's timestamp; sending it again stamped now");
                enc.timestamp = None;
            }
            Err((e, _)) if permanent(&e) => {
                let too_large = matches!(
                    e.rdkafka_error_code(),
                    Some(C::MessageSizeTooLarge | C::MessageBatchTooLarge | C::InvalidMessageSize)
                );
                let why = e.to_string();
                return Err(Refused { why, too_large });
            }
            Err((e, _)) => {
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
    producer: &FutureProducer,
    copy: Encoded,
    topic: &str,
    label: &str,
    why: &str,
) -> Delivery {
    let mut copy = copy;
    match deliver(producer, &mut copy).await {
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

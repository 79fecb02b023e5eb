//! The outbox sender: records are enqueued in outbox order, and every acknowledgement goes
//! back to the core, which deletes the entry. A record Kafka refuses is retried (after a
//! pause) until it is acknowledged; after a crash the core re-sends what is left, with the
//! same event ids.

use super::{client_config, KafkaError};
use crate::broker::records::OutRecord;
use crate::broker::{Cmd, OutboxKey};
use crate::config::{KafkaConfig, OutputMode};
use cloudevents::binding::rdkafka::{FutureRecordExt, MessageRecord};
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
            ("message.timeout.ms", "60000".into()),
        ],
    );
    c.create().map_err(|source| KafkaError::Client {
        what: "producer",
        brokers: cfg.brokers.clone(),
        source,
    })
}

type Ack = (OutboxKey, String, String);

/// Sends outbox batches until the core goes away.
pub async fn run(
    producer: FutureProducer,
    mode: OutputMode,
    work_topic: String,
    mut rx: mpsc::UnboundedReceiver<Vec<(OutboxKey, OutRecord)>>,
    core: mpsc::Sender<Cmd>,
) {
    let work_topic: std::sync::Arc<str> = work_topic.into();
    let mut inflight = FuturesUnordered::new();
    let mut acks: Vec<Ack> = Vec::new();
    loop {
        tokio::select! {
            batch = rx.recv() => match batch {
                Some(batch) => {
                    for (k, rec) in batch {
                        inflight.push(send(producer.clone(), mode, work_topic.clone(), k, rec));
                    }
                }
                None => return,
            },
            Some(ack) = inflight.next(), if !inflight.is_empty() => {
                acks.push(ack);
                while let Some(Some(more)) = futures::FutureExt::now_or_never(inflight.next()) {
                    acks.push(more);
                }
                if core.send(Cmd::Acked(std::mem::take(&mut acks))).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Sends one record, retrying until Kafka acknowledges it.
async fn send(
    producer: FutureProducer,
    mode: OutputMode,
    work_topic: std::sync::Arc<str>,
    k: OutboxKey,
    rec: OutRecord,
) -> Ack {
    let label = rec.label().to_string();
    let topic = rec.topic().to_string();
    let mut pause = Duration::from_millis(100);
    loop {
        let result = match &rec {
            OutRecord::Event { key, event, .. } => match crate::cloudevent::to_sdk(event) {
                Ok(ce) => match mode {
                    OutputMode::Binary => match MessageRecord::from_event(ce) {
                        Ok(mr) => {
                            let r = FutureRecord::to(&topic)
                                .key(key.as_str())
                                .message_record(&mr);
                            producer.send(r, Duration::from_secs(30)).await.map(|_| ())
                        }
                        Err(e) => return poison(k, topic, label, e.to_string()),
                    },
                    OutputMode::Structured => {
                        let body = serde_json::to_vec(&ce).unwrap_or_default();
                        let headers = OwnedHeaders::new().insert(Header {
                            key: "content-type",
                            value: Some("application/cloudevents+json; charset=utf-8"),
                        });
                        let r = FutureRecord::to(&topic)
                            .key(key.as_str())
                            .payload(&body)
                            .headers(headers);
                        producer.send(r, Duration::from_secs(30)).await.map(|_| ())
                    }
                },
                Err(e) => return poison(k, topic, label, e),
            },
            OutRecord::Work { partition, work } => {
                let bytes = work.encode();
                let r = FutureRecord::<(), [u8]>::to(&work_topic)
                    .partition(partition.kafka())
                    .payload(&bytes);
                producer.send(r, Duration::from_secs(30)).await.map(|_| ())
            }
            OutRecord::Raw {
                key,
                payload,
                headers,
                ..
            } => {
                let mut h = OwnedHeaders::new();
                for (name, value) in headers {
                    h = h.insert(Header {
                        key: name.as_str(),
                        value: Some(value.as_slice()),
                    });
                }
                let mut r: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(&topic).headers(h);
                if let Some(key) = key {
                    r = r.key(key.as_slice());
                }
                if let Some(p) = payload {
                    r = r.payload(p.as_slice());
                }
                producer.send(r, Duration::from_secs(30)).await.map(|_| ())
            }
        };
        match result {
            Ok(()) => return (k, topic, label),
            Err((e, _)) => {
                tracing::warn!(topic = %topic, error = %e, retry_in = ?pause, "produce failed; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(10));
            }
        }
    }
}

/// A record that can never be encoded: logged and acknowledged so it does not block the rest.
fn poison(k: OutboxKey, topic: String, label: String, why: String) -> Ack {
    tracing::error!(topic = %topic, r#type = %label, error = %why, "event cannot be encoded as a CloudEvent; dropped");
    (k, topic, label)
}

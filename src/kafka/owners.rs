//! The owners topic (`cluster.owners_topic`): each broker publishes a
//! [`Claim`](crate::cluster::directory::Claim) for every state partition it took over, and
//! tails the topic from the beginning into the [`Directory`](crate::cluster::directory) the
//! API forwards by. Claims are small and keyed by partition (the topic is compacted where the
//! Kafka broker compacts).

use super::sender::{Record, Sender};
use super::KafkaError;
use crate::broker::shared::Shared;
use crate::cluster::directory::Claim;
use crate::cluster::node::NodeId;
use crate::cluster::partition::PartitionId;
use crate::cluster::snapshot::Manifest;
use crate::config::KafkaConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How often claims not yet acknowledged are tried again (they are also sent on every change
/// of the owned partitions).
const RECHECK: Duration = Duration::from_secs(10);

/// Publishes a claim for every partition this broker owns under a fence it has not claimed
/// yet, until the process ends.
pub async fn publish(
    producer: Sender,
    topic: String,
    shared: Arc<Shared>,
    broker: String,
    url: String,
    node: NodeId,
) {
    let mut claimed: BTreeMap<PartitionId, i64> = BTreeMap::new();
    loop {
        let owned = shared.owned();
        claimed.retain(|p, f| owned.get(p) == Some(f));
        for (p, fence) in owned {
            if claimed.get(&p) == Some(&fence) || fence < 0 {
                continue;
            }
            let claim = Claim {
                partition: p,
                fence,
                broker: broker.clone(),
                url: url.clone(),
                node: Some(node.clone()),
            };
            let key = p.0.to_string();
            let payload = claim.encode();
            let record = Record::to(&topic).key(key.as_bytes()).payload(&payload[..]);
            match producer.send(record, Duration::from_secs(5)).await {
                Ok(_) => {
                    claimed.insert(p, fence);
                }
                Err(e) => {
                    tracing::warn!(partition = %p, topic = %topic, error = %e,
                        "could not publish the partition claim; other brokers forward to the \
                         previous owner until it is published");
                }
            }
        }
        let _ = tokio::time::timeout(RECHECK, shared.owned_changed.notified()).await;
    }
}

/// Reads the owners topic from the beginning, forever, on a thread of its own, folding every
/// claim into `shared.directory`.
pub fn tail(cfg: &KafkaConfig, topic: &str, shared: Arc<Shared>) -> Result<(), KafkaError> {
    let consumer: BaseConsumer = super::create(
        cfg,
        &[
            ("group.id", format!("{}.owners", cfg.group_id)),
            ("enable.auto.commit", "false".into()),
            ("enable.auto.offset.store", "false".into()),
            ("fetch.wait.max.ms", "100".into()),
        ],
        "owners reader",
    )?;
    let (cfg, topic) = (cfg.clone(), topic.to_string());
    std::thread::Builder::new()
        .name("flowbroker-owners".into())
        .spawn(move || {
            // the topic may not exist yet when the broker starts: wait for it
            let count = loop {
                if let Some(n) = super::partitions_of(&cfg, &topic) {
                    break n;
                }
                std::thread::sleep(Duration::from_secs(1));
            };
            let mut tpl = TopicPartitionList::new();
            // where the topic ends now: once read that far, every snapshot announced before
            // this broker started is known
            let mut ends: BTreeMap<i32, i64> = BTreeMap::new();
            for p in 0..count as i32 {
                let _ = tpl.add_partition_offset(&topic, p, Offset::Beginning);
                let high = consumer
                    .fetch_watermarks(&topic, p, Duration::from_secs(10))
                    .map(|(_, h)| h)
                    .unwrap_or(0);
                if high > 0 {
                    ends.insert(p, high);
                }
            }
            if ends.is_empty() {
                shared.directory_ready.set();
            }
            if let Err(e) = consumer.assign(&tpl) {
                tracing::error!(topic = %topic, error = %e,
                    "cannot read the owners topic; the API answers only for owned partitions");
                return;
            }
            loop {
                match consumer.poll(Duration::from_millis(500)) {
                    Some(Ok(m)) => {
                        fold(&shared, &topic, &m);
                        if ends
                            .get(&m.partition())
                            .is_some_and(|e| m.offset() + 1 >= *e)
                        {
                            ends.remove(&m.partition());
                            if ends.is_empty() {
                                shared.directory_ready.set();
                            }
                        }
                    }
                    Some(Err(e)) => tracing::debug!(error = %e, "owners topic"),
                    None => {}
                }
            }
        })
        .expect("owners thread");
    Ok(())
}

/// Folds one record of the owners topic: a claim, or (key `snapshot/{p}`) a snapshot manifest.
fn fold(shared: &Shared, topic: &str, m: &rdkafka::message::BorrowedMessage<'_>) {
    let payload = m.payload().unwrap_or_default();
    let snapshot = m.key().is_some_and(|k| k.starts_with(b"snapshot/"));
    let folded = if snapshot {
        Manifest::decode(payload)
            .map(|s| {
                if let Ok(mut d) = shared.directory.write() {
                    d.offer_snapshot(s);
                }
            })
            .map_err(|e| e.to_string())
    } else {
        Claim::decode(payload)
            .map(|c| {
                if shared.directory.write().is_ok_and(|mut d| d.offer(c)) {
                    // requests waiting for a partition's owner to be known look again
                    shared.directory_changed.notify_waiters();
                }
            })
            .map_err(|e| e.to_string())
    };
    if let Err(e) = folded {
        tracing::warn!(topic = %topic, offset = m.offset(), error = %e,
            "skipping a record of the owners topic");
    }
}

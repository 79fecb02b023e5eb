//! The work reader: reads the work topic partitions this broker owns, from the offsets their
//! restored state records (a consumer of its own, assigned by the core, not by the group), and
//! hands their records to the core in batches per partition.

use super::{client_config, KafkaError};
use crate::broker::Cmd;
use crate::cluster::partition::PartitionId;
use crate::cluster::work::{ReadFrom, Work};
use crate::config::Config;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

pub fn create(cfg: &Config) -> Result<StreamConsumer, KafkaError> {
    let k = &cfg.kafka;
    client_config(
        k,
        &[
            // no group membership: the core assigns partitions; the id is only required
            ("group.id", format!("{}.work", k.group_id)),
            ("enable.auto.commit", "false".into()),
            ("enable.auto.offset.store", "false".into()),
            ("auto.offset.reset", "earliest".into()),
            ("fetch.wait.max.ms", k.fetch_wait_max_ms.to_string()),
        ]
        .into_iter()
        .chain(
            super::consumer::PREFETCH
                .iter()
                .map(|(k, v)| (*k, v.to_string())),
        )
        .collect::<Vec<_>>(),
    )
    .create()
    .map_err(|source| KafkaError::Client {
        what: "work reader",
        brokers: k.brokers.clone(),
        source,
    })
}

/// Reads until the core goes away. `ctl` says which partitions to read from which offset
/// (`None`: stop reading it).
pub async fn run(
    consumer: StreamConsumer,
    topic: String,
    mut ctl: mpsc::UnboundedReceiver<(PartitionId, Option<ReadFrom>)>,
    core: mpsc::Sender<Cmd>,
    batch_size: usize,
    mut intake: watch::Receiver<bool>,
    definitions: Option<Arc<super::definitions::Caught>>,
) {
    let mut reading = false;
    let mut paused = false;
    // the epoch of each partition's read, which its batches carry to the core
    let mut epochs: BTreeMap<PartitionId, u64> = BTreeMap::new();
    loop {
        // backpressure: pausing drops what librdkafka fetched ahead; resuming fetches again
        // from the last record handed to the core
        let pause = *intake.borrow_and_update();
        if pause != paused {
            pause_all(&consumer, pause);
            paused = pause;
        }
        let first = tokio::select! {
            r = intake.changed() => match r {
                Ok(()) => continue,
                Err(_) => return,
            },
            c = ctl.recv() => {
                let Some((p, from)) = c else { return };
                let mut tpl = TopicPartitionList::new();
                let r = match from {
                    Some(f) => {
                        epochs.insert(p, f.epoch);
                        tpl.add_partition_offset(&topic, p.kafka(), Offset::Offset(f.offset))
                            .and_then(|_| consumer.incremental_assign(&tpl))
                    }
                    None => {
                        epochs.remove(&p);
                        tpl.add_partition(&topic, p.kafka());
                        consumer.incremental_unassign(&tpl)
                    }
                };
                if let Err(e) = r {
                    tracing::error!(partition = %p, error = %e, "work reader assignment failed");
                }
                if paused {
                    pause_all(&consumer, true);
                }
                reading = consumer.assignment().map(|a| a.count() > 0).unwrap_or(false);
                continue;
            }
            m = consumer.recv(), if reading && !paused => match m {
                Ok(m) => m.detach(),
                Err(e) => {
                    tracing::warn!(error = %e, "work topic consume error");
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                    continue;
                }
            },
        };
        let fetched = std::time::Instant::now();
        let mut batch = vec![first];
        while batch.len() < batch_size {
            use futures::FutureExt;
            match consumer.recv().now_or_never() {
                Some(Ok(m)) => batch.push(m.detach()),
                _ => break,
            }
        }
        let mut by: BTreeMap<PartitionId, Vec<(i64, Work)>> = BTreeMap::new();
        for m in batch {
            let Ok(p) = u16::try_from(m.partition()) else {
                continue;
            };
            match Work::decode(m.payload().unwrap_or_default()) {
                Ok(w) => by.entry(PartitionId(p)).or_default().push((m.offset(), w)),
                Err(e) => tracing::error!(partition = p, offset = m.offset(), error = %e,
                    "unreadable work record skipped"),
            }
        }
        for (partition, records) in by {
            // events are correlated here against every definition known to be published
            if let Some(d) = &definitions {
                d.wait_since(fetched).await;
            }
            // a partition let go meanwhile: its records are not this broker's to apply
            let Some(epoch) = epochs.get(&partition).copied() else {
                continue;
            };
            if core
                .send(Cmd::Work {
                    partition,
                    epoch,
                    records,
                })
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

/// Pauses or resumes every partition the work reader is assigned now.
fn pause_all(consumer: &StreamConsumer, pause: bool) {
    let Ok(assigned) = consumer.assignment() else {
        return;
    };
    let r = if pause {
        consumer.pause(&assigned)
    } else {
        consumer.resume(&assigned)
    };
    if let Err(e) = r {
        tracing::warn!(error = %e, paused = pause, "could not pause or resume the work reader");
    }
}

/// The end offset of each work topic partition, asked of Kafka on every call (a read that
/// waits for its writes: `http::barrier`).
pub fn ends(
    cfg: &crate::config::KafkaConfig,
    topic: &str,
) -> Result<crate::cluster::WorkEnd, KafkaError> {
    let c: rdkafka::consumer::BaseConsumer =
        client_config(cfg, &[])
            .create()
            .map_err(|source| KafkaError::Client {
                what: "work topic offsets",
                brokers: cfg.brokers.clone(),
                source,
            })?;
    let topic = topic.to_string();
    Ok(Arc::new(move |p: PartitionId| {
        c.fetch_watermarks(&topic, p.kafka(), std::time::Duration::from_secs(5))
            .ok()
            .map(|(_, high)| high)
    }))
}

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
/// (`None`: stop reading it); `intake` is the core's backpressure.
pub async fn run(
    consumer: StreamConsumer,
    topic: String,
    mut ctl: mpsc::UnboundedReceiver<(PartitionId, Option<ReadFrom>)>,
    core: mpsc::Sender<Cmd>,
    batch_size: usize,
    mut intake: watch::Receiver<bool>,
    definitions: Option<Arc<super::definitions::Caught>>,
) {
    enum Next {
        Intake,
        Control(PartitionId, Option<ReadFrom>),
        Batch(Batch),
    }
    let mut reader = Reader::new(consumer, topic);
    loop {
        reader.pause(*intake.borrow_and_update());
        let reading = reader.reading();
        let next = tokio::select! {
            r = intake.changed() => match r {
                Ok(()) => Next::Intake,
                Err(_) => return,
            },
            c = ctl.recv() => match c {
                Some((p, from)) => Next::Control(p, from),
                None => return,
            },
            b = reader.batch(batch_size), if reading => match b {
                Ok(b) => Next::Batch(b),
                Err(e) => {
                    tracing::warn!(error = %e, "work topic consume error");
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                    continue;
                }
            },
        };
        let batch = match next {
            Next::Intake => continue,
            Next::Control(p, from) => {
                reader.control(p, from);
                continue;
            }
            Next::Batch(b) => b,
        };
        let fetched = std::time::Instant::now();
        for (partition, (epoch, records)) in batch {
            // events are correlated here against every definition known to be published
            if let Some(d) = &definitions {
                d.wait_since(fetched).await;
            }
            let cmd = Cmd::Work {
                partition,
                epoch,
                records,
            };
            if core.send(cmd).await.is_err() {
                return;
            }
        }
    }
}

/// A batch of work records per partition, with the epoch of the partition's read.
pub type Batch = BTreeMap<PartitionId, (u64, Vec<(i64, Work)>)>;

/// What the work reader reads: per partition the next offset to hand to the core and the
/// epoch of its read. It never pauses a partition in librdkafka: a paused partition stays
/// paused through an unassign and a later assign (librdkafka keeps the flag on the partition),
/// and a pause or resume served after an assign can make that assign's fetch start outdated,
/// so the partition never fetches. Backpressure unassigns everything instead, and assigns it
/// again at each partition's next offset (docs/broker.md "Backpressure").
pub struct Reader {
    consumer: StreamConsumer,
    topic: String,
    wanted: BTreeMap<PartitionId, ReadFrom>,
    /// True while backpressure holds: nothing assigned in librdkafka.
    paused: bool,
}

impl Reader {
    pub fn new(consumer: StreamConsumer, topic: String) -> Reader {
        Reader {
            consumer,
            topic,
            wanted: BTreeMap::new(),
            paused: false,
        }
    }

    /// Reads `p` from `from` (a take-over), or stops reading it (`None`: let go).
    pub fn control(&mut self, p: PartitionId, from: Option<ReadFrom>) {
        let was = match from {
            Some(f) => self.wanted.insert(p, f),
            None => self.wanted.remove(&p),
        };
        if self.paused {
            return;
        }
        if was.is_some() {
            self.assign(&[p], false);
        }
        if from.is_some() {
            self.assign(&[p], true);
        }
    }

    /// Backpressure: unassigns every partition read (librdkafka drops what it fetched ahead),
    /// or assigns them again, each from the next record the core has not been handed.
    pub fn pause(&mut self, pause: bool) {
        if pause == self.paused {
            return;
        }
        self.paused = pause;
        let all: Vec<PartitionId> = self.wanted.keys().copied().collect();
        self.assign(&all, !pause);
    }

    /// True when some partition is being read.
    pub fn reading(&self) -> bool {
        !self.paused && !self.wanted.is_empty()
    }

    /// The next batch of at most `max` records (waits for the first), per partition with its
    /// read's epoch. Records below a partition's next offset (fetched before an unassign) and
    /// records of partitions let go are dropped.
    pub async fn batch(&mut self, max: usize) -> Result<Batch, rdkafka::error::KafkaError> {
        let first = self.consumer.recv().await?.detach();
        let mut batch = vec![first];
        while batch.len() < max {
            use futures::FutureExt;
            match self.consumer.recv().now_or_never() {
                Some(Ok(m)) => batch.push(m.detach()),
                _ => break,
            }
        }
        let mut by = Batch::new();
        for m in batch {
            let Ok(p) = u16::try_from(m.partition()).map(PartitionId) else {
                continue;
            };
            let Some(want) = self.wanted.get_mut(&p) else {
                continue;
            };
            if m.offset() < want.offset {
                continue;
            }
            want.offset = m.offset() + 1;
            let epoch = want.epoch;
            match Work::decode(m.payload().unwrap_or_default()) {
                Ok(w) => by
                    .entry(p)
                    .or_insert((epoch, Vec::new()))
                    .1
                    .push((m.offset(), w)),
                Err(e) => tracing::error!(partition = %p, offset = m.offset(), error = %e,
                    "unreadable work record skipped"),
            }
        }
        Ok(by)
    }

    /// Assigns `ps` at their next offsets, or unassigns them.
    fn assign(&self, ps: &[PartitionId], on: bool) {
        if ps.is_empty() {
            return;
        }
        let mut tpl = TopicPartitionList::new();
        let mut r = Ok(());
        for p in ps {
            r = r.and_then(|_| match self.wanted.get(p).filter(|_| on) {
                Some(f) => {
                    tpl.add_partition_offset(&self.topic, p.kafka(), Offset::Offset(f.offset))
                }
                None => {
                    tpl.add_partition(&self.topic, p.kafka());
                    Ok(())
                }
            });
        }
        let r = r.and_then(|_| match on {
            true => self.consumer.incremental_assign(&tpl),
            false => self.consumer.incremental_unassign(&tpl),
        });
        if let Err(e) = r {
            tracing::error!(partitions = ?ps, assign = on, error = %e,
                "work reader assignment failed");
        }
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

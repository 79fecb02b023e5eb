//! The work reader: reads the work topic partitions this broker owns, from the offsets their
//! restored state records (a consumer of its own, assigned by the core, not by the group), and
//! hands their records to the core in batches per partition.

use super::KafkaError;
use crate::broker::Cmd;
use crate::cluster::partition::PartitionId;
use crate::cluster::work::{ReadFrom, Work};
use crate::config::Config;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::error::KafkaResult;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

pub fn create(cfg: &Config) -> Result<StreamConsumer, KafkaError> {
    let k = &cfg.kafka;
    super::create(
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
        "work reader",
    )
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

/// What the work reader reads: per partition the epoch of its read. Backpressure only stops
/// polling: librdkafka fetches ahead up to [`super::consumer::PREFETCH`] and waits. No
/// partition is paused in librdkafka, since a paused partition stays paused through an
/// unassign and a later assign (librdkafka keeps the flag on the partition): a partition let
/// go while intake was paused and taken back later was never read again (docs/broker.md
/// "Backpressure").
pub struct Reader {
    consumer: StreamConsumer,
    topic: String,
    /// The partitions read, with the epoch of each one's read.
    wanted: BTreeMap<PartitionId, u64>,
    /// True while backpressure holds: nothing is polled.
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
            Some(f) => self.wanted.insert(p, f.epoch),
            None => self.wanted.remove(&p),
        };
        // a partition read again (taken back) is unassigned first: librdkafka then drops
        // whatever the old read fetched
        if was.is_some() {
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition(&self.topic, p.kafka());
            self.report(p, self.consumer.incremental_unassign(&tpl));
        }
        if let Some(f) = from {
            let mut tpl = TopicPartitionList::new();
            let r = tpl
                .add_partition_offset(&self.topic, p.kafka(), Offset::Offset(f.offset))
                .and_then(|_| self.consumer.incremental_assign(&tpl));
            self.report(p, r);
        }
    }

    /// Logs an assignment that failed (a local error: the partition's state in the client).
    fn report(&self, p: PartitionId, r: KafkaResult<()>) {
        if let Err(e) = r {
            tracing::error!(partition = %p, error = %e, "work reader assignment failed");
        }
    }

    /// Backpressure: while paused nothing is polled; librdkafka fetches ahead up to the
    /// prefetch bound and waits.
    pub fn pause(&mut self, pause: bool) {
        self.paused = pause;
    }

    /// True when some partition is being read.
    pub fn reading(&self) -> bool {
        !self.paused && !self.wanted.is_empty()
    }

    /// The next batch of at most `max` records (waits for the first), per partition with its
    /// read's epoch. Records of partitions let go are dropped (librdkafka drops those fetched
    /// before an unassign).
    pub async fn batch(&mut self, max: usize) -> KafkaResult<Batch> {
        let first = self.consumer.recv().await?.detach();
        let mut batch = vec![first];
        while batch.len() < max {
            use futures::FutureExt;
            match self.consumer.recv().now_or_never() {
                Some(Ok(m)) => batch.push(m.detach()),
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "work topic consume error");
                    break;
                }
                None => break,
            }
        }
        let mut by = Batch::new();
        for m in batch {
            let Ok(p) = u16::try_from(m.partition()).map(PartitionId) else {
                continue;
            };
            let Some(&epoch) = self.wanted.get(&p) else {
                continue;
            };
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
}

/// The end offset of each work topic partition, asked of Kafka on every call (a read that
/// waits for its writes: `http::barrier`).
pub fn ends(
    cfg: &crate::config::KafkaConfig,
    topic: &str,
) -> Result<crate::cluster::WorkEnd, KafkaError> {
    let c: rdkafka::consumer::BaseConsumer = super::create(cfg, &[], "work topic offsets")?;
    let topic = topic.to_string();
    Ok(Arc::new(move |p: PartitionId| {
        c.fetch_watermarks(&topic, p.kafka(), std::time::Duration::from_secs(5))
            .ok()
            .map(|(_, high)| high)
    }))
}

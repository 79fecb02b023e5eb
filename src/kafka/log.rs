//! The cluster's [`Log`] on Kafka: changelog appends and fences are produced with `acks=all`
//! and idempotence, one record per state partition, and waited for; a changelog partition is
//! read back with a consumer of its own (no group) from an offset through an offset; work
//! records are forwarded to their work topic partition the same way.

use super::{client_config, KafkaError};
use crate::cluster::changelog::Entry;
use crate::cluster::partition::PartitionId;
use crate::cluster::snapshot::Manifest;
use crate::cluster::work::Work;
use crate::cluster::{Log, LogError};
use crate::config::Config;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use std::time::{Duration, Instant};

pub struct KafkaLog {
    producer: FutureProducer,
    reader: BaseConsumer,
    changelog: String,
    snapshots: String,
    work: String,
    owner: String,
}

/// The largest changelog record (one partition's batch: instances, history, outbox), as the
/// changelog producer's `message.max.bytes` and the topic's `max.message.bytes` when the broker
/// creates it. Larger than any single event, since a batch holds several copies of its data.
pub const CHANGELOG_RECORD_MAX: usize = 64 << 20;

/// How long reading a changelog partition through a fence may take before the core gives up.
const READ_DEADLINE: Duration = Duration::from_secs(120);

impl KafkaLog {
    pub fn new(cfg: &Config, owner: String) -> Result<KafkaLog, KafkaError> {
        let k = &cfg.kafka;
        let producer: FutureProducer = client_config(
            k,
            &[
                ("enable.idempotence", "true".into()),
                // a record that fails for good fails every later one too: with rounds
                // pipelined, no batch may land in the changelog after a lost one
                ("enable.gapless.guarantee", "true".into()),
                ("acks", "all".into()),
                ("linger.ms", "0".into()),
                // an append waits for Kafka as long as it is away (the core waits with it; the
                // HTTP side answers /health with `kafka_down`) instead of failing the core
                // after a minute; librdkafka's own retries keep the record unique
                ("message.timeout.ms", "0".into()),
                ("message.max.bytes", CHANGELOG_RECORD_MAX.to_string()),
            ],
        )
        .create()
        .map_err(|source| KafkaError::Client {
            what: "changelog producer",
            brokers: k.brokers.clone(),
            source,
        })?;
        let reader: BaseConsumer = client_config(
            k,
            &[
                ("group.id", format!("{}.restore", k.group_id)),
                ("enable.auto.commit", "false".into()),
                ("enable.auto.offset.store", "false".into()),
                ("fetch.wait.max.ms", k.fetch_wait_max_ms.to_string()),
                ("auto.offset.reset", "earliest".into()),
            ],
        )
        .create()
        .map_err(|source| KafkaError::Client {
            what: "changelog reader",
            brokers: k.brokers.clone(),
            source,
        })?;
        Ok(KafkaLog {
            producer,
            reader,
            changelog: cfg.cluster.changelog_topic.clone(),
            snapshots: cfg.cluster.snapshot_topic.clone(),
            work: cfg.cluster.work_topic.clone(),
            owner,
        })
    }

    /// Enqueues one record, waiting while librdkafka's queue is full; any other refusal (a
    /// record over the size limit, ...) is an error.
    fn enqueue(
        &self,
        topic: &str,
        p: PartitionId,
        payload: &[u8],
    ) -> Result<DeliveryFuture, (PartitionId, String)> {
        use rdkafka::error::{KafkaError, RDKafkaErrorCode};
        let mut record = FutureRecord::<(), [u8]>::to(topic)
            .partition(p.kafka())
            .payload(payload);
        loop {
            match self.producer.send_result(record) {
                Ok(f) => return Ok(f),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    std::thread::sleep(Duration::from_millis(5));
                    record = r;
                }
                Err((e, _)) => {
                    return Err((p, format!("{e} (a record of {} bytes)", payload.len())))
                }
            }
        }
    }

    fn produce(
        &self,
        topic: &str,
        records: Vec<(PartitionId, Vec<u8>)>,
    ) -> Result<Vec<(PartitionId, i64)>, (PartitionId, String)> {
        let pending: Vec<(PartitionId, DeliveryFuture)> = records
            .iter()
            .map(|(p, bytes)| self.enqueue(topic, *p, bytes).map(|f| (*p, f)))
            .collect::<Result<_, _>>()?;
        let mut out = Vec::with_capacity(pending.len());
        for (p, f) in pending {
            match futures::executor::block_on(f) {
                Ok(Ok(delivery)) => out.push((p, delivery.offset)),
                Ok(Err((e, _))) => return Err((p, e.to_string())),
                Err(_) => return Err((p, "the producer went away".into())),
            }
        }
        Ok(out)
    }
}

/// What [`KafkaLog::scan`] hands each record to: its offset and payload.
type Each<'a> = dyn FnMut(i64, &[u8]) -> Result<(), LogError> + 'a;

impl KafkaLog {
    /// Reads offsets `from..=through` of one partition of `topic` in order, handing each
    /// record's offset and payload to `each`. A broker restart or a dropped connection is
    /// waited out up to [`READ_DEADLINE`]; records deleted from `from` on are an error.
    fn scan(
        &mut self,
        topic: &str,
        partition: PartitionId,
        (from, through): (i64, i64),
        fail: &dyn Fn(String) -> LogError,
        each: &mut Each<'_>,
    ) -> Result<(), LogError> {
        if from > through {
            return Ok(());
        }
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, partition.kafka(), Offset::Offset(from))
            .map_err(|e| fail(e.to_string()))?;
        self.reader.assign(&tpl).map_err(|e| fail(e.to_string()))?;
        let r = self.scan_assigned(partition, (from, through), fail, each);
        let _ = self.reader.unassign();
        r
    }

    fn scan_assigned(
        &mut self,
        partition: PartitionId,
        (from, through): (i64, i64),
        fail: &dyn Fn(String) -> LogError,
        each: &mut Each<'_>,
    ) -> Result<(), LogError> {
        let deadline = Instant::now() + READ_DEADLINE;
        let mut last = from - 1;
        while last < through {
            if Instant::now() > deadline {
                return Err(fail(format!(
                    "could not read offsets {from}..={through} within {READ_DEADLINE:?} (read up to {last})"
                )));
            }
            let Some(m) = self.reader.poll(Duration::from_millis(500)) else {
                continue;
            };
            let m = match m {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(partition = %partition, error = %e,
                        "reading failed; retrying until the read deadline");
                    std::thread::sleep(Duration::from_millis(200));
                    continue;
                }
            };
            if last < from && m.offset() > from {
                return Err(fail(format!(
                    "the records from offset {from} were deleted (the partition starts at {}); \
                     a newer snapshot replaced them: take the partition over again",
                    m.offset()
                )));
            }
            last = m.offset();
            if last < from || last > through {
                continue;
            }
            each(last, m.payload().unwrap_or_default())?;
        }
        Ok(())
    }
}

impl Log for KafkaLog {
    fn append(
        &mut self,
        entries: &[(PartitionId, Entry)],
    ) -> Result<Vec<(PartitionId, i64)>, LogError> {
        let records = entries.iter().map(|(p, e)| (*p, e.encode())).collect();
        let topic = self.changelog.clone();
        self.produce(&topic, records)
            .map_err(|(partition, why)| LogError::Changelog { partition, why })
    }

    fn send(
        &mut self,
        entries: &[(PartitionId, Entry)],
    ) -> Result<crate::cluster::Appending, LogError> {
        let topic = self.changelog.clone();
        let fail = |(partition, why)| LogError::Changelog { partition, why };
        let pending: Vec<(PartitionId, DeliveryFuture)> = entries
            .iter()
            .map(|(p, e)| self.enqueue(&topic, *p, &e.encode()).map(|f| (*p, f)))
            .collect::<Result<_, _>>()
            .map_err(fail)?;
        Ok(Box::pin(async move {
            let mut out = Vec::new();
            for (p, f) in pending {
                match f.await {
                    Ok(Ok(delivery)) => out.push((p, delivery.offset)),
                    Ok(Err((e, _))) => return Err(fail((p, e.to_string()))),
                    Err(_) => return Err(fail((p, "the producer went away".into()))),
                }
            }
            Ok(out)
        }))
    }

    fn read(
        &mut self,
        partition: PartitionId,
        from: i64,
        through: i64,
    ) -> Result<Vec<(i64, Entry)>, LogError> {
        let fail = |why: String| LogError::Changelog { partition, why };
        let topic = self.changelog.clone();
        let mut out = Vec::new();
        self.scan(
            &topic,
            partition,
            (from, through),
            &fail,
            &mut |offset, payload| {
                out.push((
                    offset,
                    Entry::decode(offset, payload).map_err(|e| fail(e.to_string()))?,
                ));
                Ok(())
            },
        )?;
        Ok(out)
    }

    fn end(&mut self, partition: PartitionId) -> Result<i64, LogError> {
        self.reader
            .fetch_watermarks(&self.changelog, partition.kafka(), Duration::from_secs(10))
            .map(|(_, high)| high)
            .map_err(|e| LogError::Changelog {
                partition,
                why: format!("cannot read the changelog's end: {e}"),
            })
    }

    fn start(&mut self, partition: PartitionId) -> Result<i64, LogError> {
        self.reader
            .fetch_watermarks(&self.changelog, partition.kafka(), Duration::from_secs(10))
            .map(|(low, _)| low)
            .map_err(|e| LogError::Changelog {
                partition,
                why: format!("cannot read the changelog's start: {e}"),
            })
    }

    fn read_snapshot(
        &mut self,
        m: &Manifest,
        apply: &mut dyn FnMut(Vec<crate::store::Write>) -> Result<(), LogError>,
    ) -> Result<(), LogError> {
        use crate::cluster::snapshot::{decode_chunk, SnapshotError};
        let partition = m.partition;
        let fail = |why: String| LogError::Snapshot { partition, why };
        let topic = self.snapshots.clone();
        self.scan(
            &topic,
            partition,
            (m.first, m.last),
            &fail,
            &mut |offset, payload| {
                match decode_chunk(offset, m.next, payload) {
                    Ok(writes) => apply(writes),
                    // chunks of another snapshot written in between (a former owner's)
                    Err(SnapshotError::Foreign { .. }) => Ok(()),
                    Err(e) => Err(fail(e.to_string())),
                }
            },
        )
    }

    fn forward(
        &mut self,
        work: Vec<(PartitionId, Work)>,
    ) -> Result<Vec<(PartitionId, i64)>, LogError> {
        let records = work.iter().map(|(p, w)| (*p, w.encode())).collect();
        let topic = self.work.clone();
        self.produce(&topic, records)
            .map_err(|(partition, why)| LogError::Work { partition, why })
    }

    fn owner(&self) -> String {
        self.owner.clone()
    }
}

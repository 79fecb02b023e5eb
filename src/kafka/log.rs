//! The cluster's [`Log`] on Kafka: changelog appends and fences are produced with `acks=all`
//! and idempotence, one record per state partition, and waited for, each state partition always
//! through the same one of a few producers (see [`changelog_producers`]); a changelog partition is
//! read back with a consumer of its own (no group) from an offset through an offset; work
//! records are forwarded to their work topic partition the same way, by a producer of their
//! own (which batches: only the changelog's records go one per produce batch).

use super::polled::{Acked, Acks, Polled};
use super::scan::Each;
use super::{client_config, KafkaError};
use crate::cluster::changelog::Entry;
use crate::cluster::partition::PartitionId;
use crate::cluster::snapshot::Manifest;
use crate::cluster::work::Work;
use crate::cluster::{Log, LogError};
use crate::config::Config;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use std::time::Duration;

pub struct KafkaLog {
    /// Changelog appends and fences: state partition `p` always through `producers[p % len]`,
    /// so each partition's records keep their order and idempotence's sequence.
    producers: Vec<Polled<Acks>>,
    /// Work records forwarded to their owners' partitions.
    forwarder: Polled<Acks>,
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

impl KafkaLog {
    pub fn new(cfg: &Config, owner: String) -> Result<KafkaLog, KafkaError> {
        let k = &cfg.kafka;
        // every changelog record a produce batch of its own: with several appends of a
        // partition on their way, librdkafka would otherwise join them in one batch, after
        // which tansu reports the partition's end as the batch's base offset + 1
        // (docs/kafka.md), and the resume after a restart and the check for a newer fence read
        // that end
        let producers = (0..changelog_producers(&cfg.cluster))
            .map(|_| {
                appender(
                    k,
                    "changelog producer",
                    "poll changelog",
                    &[("batch.num.messages", "1")],
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let forwarder = appender(k, "work producer", "poll work", &[])?;
        let reader: BaseConsumer = super::create(
            k,
            &[
                ("group.id", format!("{}.restore", k.group_id)),
                ("enable.auto.commit", "false".into()),
                ("enable.auto.offset.store", "false".into()),
                ("fetch.wait.max.ms", k.fetch_wait_max_ms.to_string()),
                ("auto.offset.reset", "earliest".into()),
            ],
            "changelog reader",
        )?;
        Ok(KafkaLog {
            producers,
            forwarder,
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
        producer: &Polled<Acks>,
        topic: &str,
        p: PartitionId,
        payload: &[u8],
    ) -> Result<Acked, (PartitionId, String)> {
        producer
            .queue::<(), [u8]>(topic, |r| r.partition(p.kafka()).payload(payload))
            .map_err(|why| (p, why))
    }

    /// The producer state partition `p`'s changelog records and fences go through.
    fn producer(&self, p: PartitionId) -> &Polled<Acks> {
        &self.producers[usize::from(p.0) % self.producers.len()]
    }

    fn produce<'p>(
        producer: &dyn Fn(PartitionId) -> &'p Polled<Acks>,
        topic: &str,
        records: Vec<(PartitionId, Vec<u8>)>,
    ) -> Result<Vec<(PartitionId, i64)>, (PartitionId, String)> {
        let pending: Vec<(PartitionId, Acked)> = records
            .iter()
            .map(|(p, bytes)| Self::enqueue(producer(*p), topic, *p, bytes).map(|f| (*p, f)))
            .collect::<Result<_, _>>()?;
        let mut out = Vec::with_capacity(pending.len());
        for (p, f) in pending {
            out.push((p, f.wait().map_err(|why| (p, why))?));
        }
        Ok(out)
    }
}

/// How many changelog producers a broker runs: `cluster.changelog_producers`, or (0) enough
/// that every state partition's pipelined appends fit in the requests one connection has in
/// flight. librdkafka sends one partition's batch per produce request and an idempotent
/// producer keeps at most 5 requests in flight per broker connection, so with one producer a
/// round's appends to 12 partitions queued behind each other on the connection (50 ms from
/// append to landing at 1,000 inputs/s, docs/performance.md); a producer per few partitions
/// gives each group a connection of its own.
pub fn changelog_producers(c: &crate::config::ClusterConfig) -> usize {
    /// librdkafka's cap on `max.in.flight.requests.per.connection` with idempotence.
    const IN_FLIGHT: usize = 5;
    let partitions = c.partitions.max(1);
    let n = match c.changelog_producers {
        0 => (partitions * crate::broker::core::MAX_FLIGHTS).div_ceil(IN_FLIGHT),
        n => n,
    };
    n.clamp(1, partitions)
}

/// A producer of records the core waits for: idempotent, `acks=all`, sent at once; `forced`
/// settings win over the user's `kafka.properties` too (correctness depends on them).
fn appender(
    k: &crate::config::KafkaConfig,
    what: &'static str,
    thread: &str,
    forced: &[(&str, &str)],
) -> Result<Polled<Acks>, KafkaError> {
    Polled::create(&appender_config(k, forced), Acks, thread).map_err(KafkaError::client(k, what))
}

/// Sets `message.max.bytes` of a client that writes the store's values (changelog records,
/// snapshot chunks) to at least [`CHANGELOG_RECORD_MAX`], also when `kafka.properties`, which
/// every client takes, set it lower for events: a record over it is refused at every try (a
/// large batch would stop the core again at every restart; a snapshot holding a large value
/// would never be written). A larger value stays.
pub fn keep_record_limit(c: &mut ClientConfig) {
    let smaller = c
        .get("message.max.bytes")
        .and_then(|v| v.parse::<usize>().ok())
        .is_none_or(|v| v < CHANGELOG_RECORD_MAX);
    if smaller {
        c.set("message.max.bytes", CHANGELOG_RECORD_MAX.to_string());
    }
}

/// [`appender`]'s settings.
fn appender_config(k: &crate::config::KafkaConfig, forced: &[(&str, &str)]) -> ClientConfig {
    let settings: Vec<(&str, String)> = vec![
        ("enable.idempotence", "true".into()),
        // a record that fails for good fails every later one too: with rounds pipelined, no
        // batch may land in the changelog after a lost one
        ("enable.gapless.guarantee", "true".into()),
        ("acks", "all".into()),
        ("linger.ms", "0".into()),
        // an append waits for Kafka as long as it is away (the core waits with it; the HTTP
        // side answers /health with `kafka_down`) instead of failing the core after a minute;
        // librdkafka's own retries keep the record unique
        ("message.timeout.ms", "0".into()),
        // only brokers read these records back (docs/broker.md "Compression")
        ("compression.type", super::INTERNAL_COMPRESSION.into()),
    ];
    let mut c = client_config(k, &settings);
    keep_record_limit(&mut c);
    for (key, value) in forced {
        c.set(*key, *value);
    }
    c
}

impl KafkaLog {
    fn scan(
        &mut self,
        topic: &str,
        partition: PartitionId,
        range: (i64, i64),
        fail: &dyn Fn(String) -> LogError,
        each: &mut Each<'_>,
    ) -> Result<(), LogError> {
        super::scan::scan(&self.reader, topic, partition, range, fail, each)
    }
}

impl Log for KafkaLog {
    fn append(
        &mut self,
        entries: &[(PartitionId, Entry)],
    ) -> Result<Vec<(PartitionId, i64)>, LogError> {
        let records = entries.iter().map(|(p, e)| (*p, e.encode())).collect();
        Self::produce(&|p| self.producer(p), &self.changelog, records)
            .map_err(|(partition, why)| LogError::Changelog { partition, why })
    }

    fn send(
        &mut self,
        entries: &[(PartitionId, Entry)],
    ) -> Result<crate::cluster::Appending, LogError> {
        let topic = self.changelog.clone();
        let fail = |(partition, why)| LogError::Changelog { partition, why };
        let pending: Vec<(PartitionId, Acked)> = entries
            .iter()
            .map(|(p, e)| {
                Self::enqueue(self.producer(*p), &topic, *p, &e.encode()).map(|f| (*p, f))
            })
            .collect::<Result<_, _>>()
            .map_err(fail)?;
        Ok(Box::pin(async move {
            let mut out = Vec::new();
            for (p, f) in pending {
                out.push((p, f.done().await.map_err(|why| fail((p, why)))?));
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

    /// One ListOffsets request per Kafka broker leading some of them (librdkafka's
    /// `offsets_for_times` with the "latest" timestamp), where [`Log::end`] asks twice per
    /// partition, one partition after the other: with twelve partitions, a slow Kafka held the
    /// core for seconds (docs/performance.md, forty-second session). A partition without a
    /// clean answer is asked again with [`Log::end`]: after a retried request librdkafka
    /// keeps the failed attempt's error beside the answer that followed it, and the first is
    /// what a lookup finds.
    fn ends(&mut self, partitions: &[PartitionId]) -> Result<Vec<i64>, LogError> {
        let mut asked = TopicPartitionList::new();
        for p in partitions {
            // (never refused for End; a partition left out is asked on its own below)
            let _ = asked.add_partition_offset(&self.changelog, p.kafka(), Offset::End);
        }
        let got = match partitions.is_empty() {
            true => None, // librdkafka refuses an empty list
            false => self
                .reader
                .offsets_for_times(asked, Duration::from_secs(10))
                .map_err(|e| {
                    tracing::debug!(error = %e,
                        "the changelog's ends in one request failed: asking a partition at a time")
                })
                .ok(),
        };
        let answered: Vec<Option<i64>> = partitions
            .iter()
            .map(|p| {
                let e = got.as_ref()?.find_partition(&self.changelog, p.kafka())?;
                match (e.offset(), e.error()) {
                    (Offset::Offset(end), Ok(())) => Some(end),
                    _ => None,
                }
            })
            .collect();
        partitions
            .iter()
            .zip(answered)
            .map(|(&p, end)| end.map_or_else(|| self.end(p), Ok))
            .collect()
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
        super::scan::read_snapshot(&self.reader, &self.snapshots, m, apply)
    }

    fn forward(
        &mut self,
        work: Vec<(PartitionId, Work)>,
    ) -> Result<Vec<(PartitionId, i64)>, LogError> {
        let records = work.iter().map(|(p, w)| (*p, w.encode())).collect();
        Self::produce(&|_| &self.forwarder, &self.work, records)
            .map_err(|(partition, why)| LogError::Work { partition, why })
    }

    fn owner(&self) -> String {
        self.owner.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::KafkaConfig;

    #[test]
    fn appends_are_lz4_unless_the_properties_say_otherwise_and_forced_settings_win() {
        let mut k = KafkaConfig::default();
        let c = appender_config(&k, &[("batch.num.messages", "1")]);
        assert_eq!(c.get("compression.type"), Some("lz4"));
        assert_eq!(c.get("acks"), Some("all"));
        k.properties
            .insert("compression.type".into(), "none".into());
        k.properties
            .insert("batch.num.messages".into(), "100".into());
        let c = appender_config(&k, &[("batch.num.messages", "1")]);
        assert_eq!(c.get("compression.type"), Some("none"));
        assert_eq!(c.get("batch.num.messages"), Some("1"));
    }

    #[test]
    fn a_smaller_message_limit_in_the_properties_does_not_shrink_a_changelog_records() {
        let mut k = KafkaConfig::default();
        let limit = |k: &KafkaConfig| {
            let c = appender_config(k, &[]);
            c.get("message.max.bytes").map(str::to_string)
        };
        assert_eq!(limit(&k), Some(CHANGELOG_RECORD_MAX.to_string()));
        k.properties
            .insert("message.max.bytes".into(), "10000000".into());
        assert_eq!(limit(&k), Some(CHANGELOG_RECORD_MAX.to_string()));
        k.properties
            .insert("message.max.bytes".into(), "100000000".into());
        assert_eq!(
            limit(&k).as_deref(),
            Some("100000000"),
            "a larger one stays"
        );
    }

    #[test]
    fn enough_changelog_producers_for_two_appends_per_partition_at_five_per_connection() {
        let cluster = |partitions, changelog_producers| crate::config::ClusterConfig {
            partitions,
            changelog_producers,
            ..Default::default()
        };
        assert_eq!(changelog_producers(&cluster(12, 0)), 5);
        assert_eq!(changelog_producers(&cluster(3, 0)), 2);
        assert_eq!(changelog_producers(&cluster(1, 0)), 1);
        assert_eq!(changelog_producers(&cluster(64, 0)), 26);
        // as set, but never more than one per partition
        assert_eq!(changelog_producers(&cluster(12, 1)), 1);
        assert_eq!(changelog_producers(&cluster(12, 7)), 7);
        assert_eq!(changelog_producers(&cluster(4, 7)), 4);
    }
}

//! The group consumer: membership in the consumer group, which assigns this broker input
//! topic partitions (records are decoded here, off the core, and handed over in batches; the
//! core applies them on the state partitions it owns or forwards them to the work topic, and
//! commits their offsets once the changelog holds the batches and Kafka acknowledged the
//! forwarded records) and work topic partitions (the state partitions this broker owns: they
//! are paused here and read by the work reader from the offsets their state records).

use super::{client_config, decode::decode, KafkaError};
use crate::broker::{Cmd, Record};
use crate::cluster::node::{InputPartition, Inputs};
use crate::cluster::partition::PartitionId;
use crate::config::KafkaConfig;
use rdkafka::consumer::{CommitMode, Consumer, ConsumerContext, Rebalance, StreamConsumer};
use rdkafka::message::{Headers, Message};
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

/// Logs rebalances, reports when partitions are assigned, and turns librdkafka's statistics
/// into the consumer-lag gauge.
pub struct Ctx {
    pub assigned: watch::Sender<usize>,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The work topic: its partitions are the state partitions this broker owns.
    pub work_topic: String,
    /// Tells the core which state partitions it gained or lost.
    pub control: mpsc::UnboundedSender<Cmd>,
    /// `true` while intake is paused (backpressure from the core).
    pub intake: watch::Receiver<bool>,
}

impl Ctx {
    fn work_partitions(&self, tpl: &TopicPartitionList) -> (Vec<PartitionId>, TopicPartitionList) {
        let mut ps = Vec::new();
        let mut list = TopicPartitionList::new();
        for e in tpl.elements() {
            if e.topic() == self.work_topic {
                if let Ok(p) = u16::try_from(e.partition()) {
                    ps.push(PartitionId(p));
                    list.add_partition(e.topic(), e.partition());
                }
            }
        }
        (ps, list)
    }

    /// The input topic partitions of `tpl` (everything but the work topic).
    fn input_partitions(&self, tpl: &TopicPartitionList) -> TopicPartitionList {
        let mut list = TopicPartitionList::new();
        for e in tpl.elements() {
            if e.topic() != self.work_topic {
                list.add_partition(e.topic(), e.partition());
            }
        }
        list
    }
}

impl ClientContext for Ctx {
    /// librdkafka's global errors; "all brokers down" marks Kafka down at once.
    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        if error.rdkafka_error_code() == Some(rdkafka::types::RDKafkaErrorCode::AllBrokersDown) {
            if self.metrics.kafka_up.get() != 0 {
                tracing::warn!(reason, "kafka is down: no broker reachable; retrying");
            }
            self.metrics.kafka_up.set(0);
            return;
        }
        tracing::error!(error = %error, reason, "librdkafka error");
    }

    fn stats(&self, stats: rdkafka::Statistics) {
        // connected while any real broker connection is up
        let up = stats
            .brokers
            .values()
            .any(|b| b.state == "UP" && matches!(b.source.as_str(), "learned" | "configured"));
        if up && self.metrics.kafka_up.get() == 0 {
            tracing::info!("kafka is reachable");
        }
        self.metrics.kafka_up.set(i64::from(up));
        for (topic, t) in &stats.topics {
            for (partition, p) in &t.partitions {
                if *partition >= 0 && p.consumer_lag >= 0 {
                    self.metrics
                        .consumer_lag
                        .with_label_values(&[topic.as_str(), &partition.to_string()])
                        .set(p.consumer_lag);
                }
            }
        }
    }
}

impl ConsumerContext for Ctx {
    fn post_rebalance(&self, c: &rdkafka::consumer::BaseConsumer<Self>, r: &Rebalance<'_>) {
        match r {
            Rebalance::Assign(tpl) => {
                // `tpl` is what this rebalance added (cooperative: only the partitions that
                // changed hands; eager: everything); `all` is what this member has now
                let all = c.assignment().unwrap_or_else(|_| (*tpl).clone());
                let (added, list) = self.work_partitions(tpl);
                let (owned, _) = self.work_partitions(&all);
                tracing::info!(partitions = tpl.count(), state_partitions = ?added,
                    now = all.count(), "partitions assigned");
                // the group only says who owns a state partition; the work reader reads it
                // from the offset its restored state records
                if let Err(e) = c.pause(&list) {
                    tracing::warn!(error = %e, "could not pause work partitions in the group consumer");
                }
                // assigned while intake is paused: they stay paused until it resumes
                if *self.intake.borrow() {
                    if let Err(e) = c.pause(&self.input_partitions(tpl)) {
                        tracing::warn!(error = %e, "could not pause input partitions");
                    }
                }
                let inputs = self
                    .input_partitions(&all)
                    .elements()
                    .iter()
                    .map(|e| InputPartition {
                        topic: e.topic().to_string(),
                        partition: e.partition(),
                    })
                    .collect();
                let _ = self.control.send(Cmd::Inputs(Inputs(inputs)));
                let _ = self.control.send(Cmd::Assignment(owned));
                let _ = self.control.send(Cmd::Assigned(added));
                let _ = self.assigned.send(all.count());
                self.metrics.kafka_up.set(1);
            }
            Rebalance::Revoke(tpl) => {
                let (lost, _) = self.work_partitions(tpl);
                tracing::info!(partitions = tpl.count(), state_partitions = ?lost, "partitions revoked");
                // Wait until the core has stopped writing them: this broker rejoins the group
                // (and so anyone else may get them) only after this returns.
                let (done, stopped) = std::sync::mpsc::sync_channel(1);
                if self.control.send(Cmd::Revoked(lost, Some(done))).is_ok()
                    && stopped.recv_timeout(REVOKE_WAIT).is_err()
                {
                    tracing::warn!(
                        "the core did not release its partitions within {REVOKE_WAIT:?}"
                    );
                }
                // cooperative: what was not revoked stays (eager: nothing)
                let _ = self
                    .assigned
                    .send(c.assignment().map(|a| a.count()).unwrap_or(0));
            }
            Rebalance::Error(e) => tracing::warn!(error = %e, "rebalance error"),
        }
    }
}

pub type KafkaConsumer = StreamConsumer<Ctx>;

/// How long a revocation waits for the core to stop writing the revoked partitions.
const REVOKE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

pub fn create(
    cfg: &KafkaConfig,
    work_topic: &str,
    control: mpsc::UnboundedSender<Cmd>,
    metrics: Arc<crate::metrics::Metrics>,
    intake: watch::Receiver<bool>,
) -> Result<(Arc<KafkaConsumer>, watch::Receiver<usize>), KafkaError> {
    let (tx, rx) = watch::channel(0);
    let consumer = build(cfg, work_topic, control, metrics, intake, tx)?;
    let mut topics: Vec<&str> = cfg.input_topics.iter().map(String::as_str).collect();
    topics.push(work_topic);
    consumer
        .subscribe(&topics)
        .map_err(|source| KafkaError::Client {
            what: "subscribe",
            brokers: cfg.brokers.clone(),
            source,
        })?;
    Ok((Arc::new(consumer), rx))
}

/// A consumer of the group's input partitions `inputs` outside the group, from the offsets
/// the group committed (a restarted broker resuming its inputs before the group assigns
/// them; `kafka::resume`). It takes part in no rebalance.
pub fn create_outside(
    cfg: &KafkaConfig,
    work_topic: &str,
    control: mpsc::UnboundedSender<Cmd>,
    metrics: Arc<crate::metrics::Metrics>,
    intake: watch::Receiver<bool>,
    inputs: &Inputs,
) -> Result<Arc<KafkaConsumer>, KafkaError> {
    let consumer = build(
        cfg,
        work_topic,
        control,
        metrics,
        intake,
        watch::channel(0).0,
    )?;
    let mut tpl = TopicPartitionList::new();
    for i in &inputs.0 {
        let _ = tpl.add_partition_offset(&i.topic, i.partition, Offset::Stored);
    }
    consumer.assign(&tpl).map_err(|source| KafkaError::Client {
        what: "assign",
        brokers: cfg.brokers.clone(),
        source,
    })?;
    Ok(Arc::new(consumer))
}

fn build(
    cfg: &KafkaConfig,
    work_topic: &str,
    control: mpsc::UnboundedSender<Cmd>,
    metrics: Arc<crate::metrics::Metrics>,
    intake: watch::Receiver<bool>,
    assigned: watch::Sender<usize>,
) -> Result<KafkaConsumer, KafkaError> {
    let c = client_config(
        cfg,
        &[
            ("group.id", cfg.group_id.clone()),
            ("enable.auto.commit", "false".into()),
            ("enable.auto.offset.store", "false".into()),
            ("auto.offset.reset", cfg.auto_offset_reset.clone()),
            ("fetch.wait.max.ms", cfg.fetch_wait_max_ms.to_string()),
            ("session.timeout.ms", cfg.session_timeout_ms.to_string()),
            (
                "partition.assignment.strategy",
                cfg.assignment_strategy.clone(),
            ),
            (
                "heartbeat.interval.ms",
                (cfg.session_timeout_ms / 6).max(100).to_string(),
            ),
            ("statistics.interval.ms", "5000".into()),
        ]
        .into_iter()
        .chain(PREFETCH.iter().map(|(k, v)| (*k, v.to_string())))
        .collect::<Vec<_>>(),
    );
    c.create_with_context(Ctx {
        assigned,
        metrics,
        work_topic: work_topic.to_string(),
        control,
        intake,
    })
    .map_err(|source| KafkaError::Client {
        what: "consumer",
        brokers: cfg.brokers.clone(),
        source,
    })
}

/// What librdkafka fetches ahead of the application, per consumer (the group consumer and
/// the work reader): 16 MiB or 10,000 records (defaults: 64 MiB, 100,000), in fetches of at
/// most 16 MiB (default 50 MiB). A paused partition's prefetched records are dropped and
/// fetched again from the application's position on resume.
pub const PREFETCH: [(&str, &str); 3] = [
    ("queued.max.messages.kbytes", "16384"),
    ("queued.min.messages", "10000"),
    ("fetch.max.bytes", "16777216"),
];

/// Pauses or resumes the input topic partitions assigned now (never the work topic's, which
/// stay paused here).
fn pause_inputs(consumer: &KafkaConsumer, pause: bool) {
    let Ok(assigned) = consumer.assignment() else {
        return;
    };
    let inputs = consumer.context().input_partitions(&assigned);
    let r = if pause {
        consumer.pause(&inputs)
    } else {
        consumer.resume(&inputs)
    };
    match r {
        Ok(()) => tracing::debug!(paused = pause, partitions = inputs.count(), "intake"),
        Err(e) => {
            tracing::warn!(error = %e, paused = pause, "could not pause or resume input partitions")
        }
    }
}

/// A function that commits offsets to the group (asynchronously, best effort).
pub fn committer(consumer: Arc<KafkaConsumer>) -> crate::broker::core::CommitOffsets {
    Box::new(move |offsets| {
        // only what the group assigned this member now: records read outside the group
        // (after a restart, `kafka::resume`) are read again by it and dropped by position,
        // and a commit from a member that does not own them is refused (Apache Kafka answers
        // UNKNOWN_MEMBER_ID, which makes librdkafka rejoin)
        let Ok(assigned) = consumer.assignment() else {
            return;
        };
        let mut tpl = TopicPartitionList::new();
        for (t, p, o) in offsets {
            if assigned.find_partition(t, *p).is_some() {
                let _ = tpl.add_partition_offset(t, *p, Offset::Offset(*o));
            }
        }
        drop(assigned);
        if tpl.count() == 0 {
            return;
        }
        if let Err(e) = consumer.commit(&tpl, CommitMode::Async) {
            tracing::debug!(error = %e, "offset commit to the group failed (stored offsets decide)");
        }
    })
}

/// Reads records until the core goes away, in batches of at most `batch_size`; a record over
/// `max_input_bytes` is not decoded (see [`record`]).
pub async fn run(
    consumer: Arc<KafkaConsumer>,
    core: mpsc::Sender<Cmd>,
    batch_size: usize,
    max_input_bytes: usize,
    mut intake: watch::Receiver<bool>,
    definitions: Option<Arc<super::definitions::Caught>>,
) {
    let work_topic = consumer.context().work_topic.clone();
    let mut paused = false;
    loop {
        // backpressure: follow the core's signal. Paused partitions deliver nothing, but recv
        // keeps being awaited, so rebalances are served and the group keeps this member.
        let pause = *intake.borrow_and_update();
        if pause != paused {
            pause_inputs(&consumer, pause);
            paused = pause;
        }
        let next = tokio::select! {
            m = consumer.recv() => m,
            // the core went away (its end of the signal dropped): stop, like a failed send
            r = intake.changed() => match r {
                Ok(()) => continue,
                Err(_) => return,
            },
        };
        let fetched = std::time::Instant::now();
        let first = match next {
            // work topic partitions are paused here; a record fetched before the pause took
            // effect is the work reader's to read
            Ok(m) if m.topic() == work_topic => continue,
            Ok(m) => m.detach(),
            Err(e) => {
                tracing::warn!(error = %e, "kafka consume error");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                continue;
            }
        };
        let mut batch = vec![record(first, max_input_bytes)];
        while batch.len() < batch_size {
            use futures::FutureExt;
            match consumer.recv().now_or_never() {
                Some(Ok(m)) if m.topic() == work_topic => continue,
                Some(Ok(m)) => batch.push(record(m.detach(), max_input_bytes)),
                _ => break,
            }
        }
        // an event is matched against every definition this broker knows is published
        if let Some(d) = &definitions {
            d.wait_since(fetched).await;
        }
        if core.send(Cmd::Records(batch)).await.is_err() {
            return;
        }
    }
}

/// A consumed record. One over `limit` bytes (payload, header names and values) is a
/// `TooLarge` error without its payload, so the dead-letter copy stays small; its headers are
/// kept unless they alone are over the limit.
fn record(m: rdkafka::message::OwnedMessage, limit: usize) -> Record {
    let mut headers: Vec<(String, Vec<u8>)> = m
        .headers()
        .map(|h| {
            h.iter()
                .map(|x| {
                    (
                        x.key.to_string(),
                        x.value.map(<[u8]>::to_vec).unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let header_bytes: usize = headers.iter().map(|(k, v)| k.len() + v.len()).sum();
    let size = header_bytes + m.payload().map_or(0, <[u8]>::len);
    if size > limit {
        if header_bytes > limit {
            headers.clear();
        }
        return Record {
            topic: m.topic().to_string(),
            partition: m.partition(),
            offset: m.offset(),
            event: Err(crate::cloudevent::DecodeError::TooLarge { size, limit }),
            key: m.key().map(<[u8]>::to_vec),
            payload: None,
            headers,
        };
    }
    Record {
        topic: m.topic().to_string(),
        partition: m.partition(),
        offset: m.offset(),
        event: decode(&m),
        key: m.key().map(<[u8]>::to_vec),
        payload: m.payload().map(<[u8]>::to_vec),
        headers,
    }
}

//! The input consumer: membership in the consumer group (`kafka.group_id`), which assigns this
//! broker input topic partitions. Records are decoded here, off the core, and handed over in
//! batches; the core applies them on the state partitions it owns or forwards them to the work
//! topic, and commits their offsets ([`super::commits`]) once the changelog holds the batches
//! and Kafka acknowledged the forwarded records. State partitions are assigned by a group of
//! their own ([`super::membership`]).

use super::{client_config, decode::decode, KafkaError};
use crate::broker::{Cmd, Record};
use crate::cluster::node::{InputPartition, Inputs, NodeId};
use crate::config::KafkaConfig;
use rdkafka::consumer::{Consumer, ConsumerContext, Rebalance, StreamConsumer};
use rdkafka::message::Message;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

/// Logs rebalances, reports when partitions are assigned, and turns librdkafka's statistics
/// into the consumer-lag gauge.
pub struct Ctx {
    /// How many input partitions the group assigned this broker; `None` until it first did
    /// (an assignment of none is `Some(0)`).
    pub assigned: watch::Sender<Option<usize>>,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Tells the core which input partitions this broker reads (remembered for a restart).
    pub control: mpsc::UnboundedSender<Cmd>,
    /// `true` while intake is paused (backpressure from the core).
    pub intake: watch::Receiver<bool>,
    /// Bumped after each assignment, so [`run`] applies its pause state to what was added:
    /// the flag read here can be a value the loop never saw (paused and resumed meanwhile),
    /// and a partition paused on it would stay paused.
    pub rebalanced: watch::Sender<u64>,
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
                tracing::info!(
                    partitions = tpl.count(),
                    now = all.count(),
                    "input partitions assigned"
                );
                // assigned while intake is paused: paused at once, before a fetch; `run`
                // then applies the state it follows to the whole assignment
                if *self.intake.borrow() {
                    if let Err(e) = c.pause(tpl) {
                        tracing::warn!(error = %e, "could not pause input partitions");
                    }
                }
                self.rebalanced.send_modify(|n| *n += 1);
                let inputs = all
                    .elements()
                    .iter()
                    .map(|e| InputPartition {
                        topic: e.topic().to_string(),
                        partition: e.partition(),
                    })
                    .collect();
                let _ = self.control.send(Cmd::Inputs(Inputs(inputs)));
                let _ = self.assigned.send(Some(all.count()));
                self.metrics.kafka_up.set(1);
            }
            Rebalance::Revoke(tpl) => {
                tracing::info!(partitions = tpl.count(), "input partitions revoked");
                // cooperative: what was not revoked stays (eager: nothing)
                let _ = self
                    .assigned
                    .send(Some(c.assignment().map(|a| a.count()).unwrap_or(0)));
            }
            Rebalance::Error(e) => tracing::warn!(error = %e, "rebalance error"),
        }
    }
}

pub type KafkaConsumer = StreamConsumer<Ctx>;

pub fn create(
    cfg: &KafkaConfig,
    node: &NodeId,
    control: mpsc::UnboundedSender<Cmd>,
    metrics: Arc<crate::metrics::Metrics>,
    intake: watch::Receiver<bool>,
) -> Result<(Arc<KafkaConsumer>, watch::Receiver<Option<usize>>), KafkaError> {
    let (tx, rx) = watch::channel(None);
    let consumer = build(cfg, Some(node), control, metrics, intake, tx)?;
    let topics: Vec<&str> = cfg.input_topics.iter().map(String::as_str).collect();
    consumer
        .subscribe(&topics)
        .map_err(KafkaError::client(cfg, "subscribe"))?;
    Ok((Arc::new(consumer), rx))
}

/// A consumer of the group's input partitions `inputs` outside the group, from the offsets
/// the group committed (a restarted broker resuming its inputs before the group assigns
/// them; `kafka::resume`). It takes part in no rebalance.
pub fn create_outside(
    cfg: &KafkaConfig,
    control: mpsc::UnboundedSender<Cmd>,
    metrics: Arc<crate::metrics::Metrics>,
    intake: watch::Receiver<bool>,
    inputs: &Inputs,
) -> Result<Arc<KafkaConsumer>, KafkaError> {
    // no member name: it joins no group
    let consumer = build(cfg, None, control, metrics, intake, watch::channel(None).0)?;
    let mut tpl = TopicPartitionList::new();
    for i in &inputs.0 {
        let _ = tpl.add_partition_offset(&i.topic, i.partition, Offset::Stored);
    }
    consumer
        .assign(&tpl)
        .map_err(KafkaError::client(cfg, "assign"))?;
    Ok(Arc::new(consumer))
}

/// What a member of one of the broker's groups is configured with: the group, no automatic
/// commits, the session and heartbeat, the assignor (`kafka.assignment_strategy`), and with
/// `kafka.static_membership` the member's lasting name, `member` (a static member, KIP-345).
pub fn group_settings(
    cfg: &KafkaConfig,
    group: String,
    member: Option<&NodeId>,
) -> Vec<(&'static str, String)> {
    let mut settings = vec![
        ("group.id", group),
        ("enable.auto.commit", "false".into()),
        ("enable.auto.offset.store", "false".into()),
        ("session.timeout.ms", cfg.session_timeout_ms.to_string()),
        (
            "partition.assignment.strategy",
            cfg.assignment_strategy.clone(),
        ),
        (
            "heartbeat.interval.ms",
            (cfg.session_timeout_ms / 6).max(100).to_string(),
        ),
    ];
    if let Some(node) = member.filter(|_| cfg.static_membership) {
        settings.push(("group.instance.id", node.to_string()));
    }
    settings
}

fn build(
    cfg: &KafkaConfig,
    member: Option<&NodeId>,
    control: mpsc::UnboundedSender<Cmd>,
    metrics: Arc<crate::metrics::Metrics>,
    intake: watch::Receiver<bool>,
    assigned: watch::Sender<Option<usize>>,
) -> Result<KafkaConsumer, KafkaError> {
    let c = client_config(
        cfg,
        &group_settings(cfg, cfg.group_id.clone(), member)
            .into_iter()
            .chain([
                ("auto.offset.reset", cfg.auto_offset_reset.clone()),
                ("fetch.wait.max.ms", cfg.fetch_wait_max_ms.to_string()),
                ("statistics.interval.ms", "5000".into()),
            ])
            .chain(PREFETCH.iter().map(|(k, v)| (*k, v.to_string())))
            .collect::<Vec<_>>(),
    );
    c.create_with_context(Ctx {
        assigned,
        metrics,
        control,
        intake,
        rebalanced: watch::channel(0).0,
    })
    .map_err(KafkaError::client(cfg, "consumer"))
}

/// What librdkafka fetches ahead of the application, per consumer (the input consumer, the
/// state partitions' membership consumer and the work reader): 16 MiB or 10,000 records
/// (defaults: 64 MiB, 100,000), in fetches of at most 16 MiB (default 50 MiB). A paused
/// partition's prefetched records are dropped and fetched again from the application's
/// position on resume. A partition whose prefetch is
/// full is looked at again after 20 ms (`fetch.queue.backoff.ms`, default 1 s): with the
/// default, a backlog worked off (or intake resumed after backpressure) left the partition
/// unfetched for up to a second, and records published then waited for it.
pub const PREFETCH: [(&str, &str); 4] = [
    ("queued.max.messages.kbytes", "16384"),
    ("queued.min.messages", "10000"),
    ("fetch.max.bytes", "16777216"),
    ("fetch.queue.backoff.ms", "20"),
];

/// Pauses or resumes the input topic partitions assigned now; false when that failed (the
/// caller tries again on its next turn).
fn pause_inputs(consumer: &KafkaConsumer, pause: bool) -> bool {
    let Ok(inputs) = consumer.assignment() else {
        return false;
    };
    let r = if pause {
        consumer.pause(&inputs)
    } else {
        consumer.resume(&inputs)
    };
    match r {
        Ok(()) => {
            tracing::debug!(paused = pause, partitions = inputs.count(), "intake");
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, paused = pause, "could not pause or resume input partitions");
            false
        }
    }
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
    let mut paused = false;
    let mut rebalanced = consumer.context().rebalanced.subscribe();
    // (true at first: an assignment announced before this subscribed counts too)
    let mut assigned = true;
    loop {
        // backpressure: follow the core's signal. Paused partitions deliver nothing, but recv
        // keeps being awaited, so rebalances are served and the group keeps this member.
        // After an assignment the state is applied again to every partition assigned.
        let pause = *intake.borrow_and_update();
        if (pause != paused || assigned) && pause_inputs(&consumer, pause) {
            paused = pause;
            assigned = false;
        }
        let next = tokio::select! {
            m = consumer.recv() => m,
            // the core went away (its end of the signal dropped): stop, like a failed send
            r = intake.changed() => match r {
                Ok(()) => continue,
                Err(_) => return,
            },
            Ok(()) = rebalanced.changed() => {
                assigned = true;
                continue;
            }
        };
        let fetched = std::time::Instant::now();
        let first = match next {
            Ok(m) => record(&m, max_input_bytes),
            Err(e) => {
                tracing::warn!(error = %e, "kafka consume error");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                continue;
            }
        };
        // sized once (up to a bound, for a huge `batch_size`): a batch grown by doubling took
        // a fresh page of the heap per step; a batch left mostly empty is shrunk below
        let mut batch = Vec::with_capacity(batch_size.clamp(1, 512));
        batch.push(first);
        while batch.len() < batch_size {
            use futures::FutureExt;
            match consumer.recv().now_or_never() {
                Some(Ok(m)) => batch.push(record(&m, max_input_bytes)),
                _ => break,
            }
        }
        // an event is matched against every definition this broker knows is published
        if let Some(d) = &definitions {
            d.wait_since(fetched).await;
        }
        // (a trickle of input leaves the rest of each batch unused while it waits in the
        // queue to the core)
        if batch.len() * 4 < batch.capacity() {
            batch.shrink_to_fit();
        }
        if core.send(Cmd::Records(batch)).await.is_err() {
            return;
        }
    }
}

/// A consumed record, read from librdkafka's buffer (one copy). One over `limit` bytes
/// (payload, header names and values) is a `TooLarge` error without its payload, so the
/// dead-letter copy stays small; its headers are kept unless they alone are over the limit.
fn record(m: &rdkafka::message::BorrowedMessage<'_>, limit: usize) -> Record {
    let mut headers = super::owned_headers(m);
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
        event: decode(m),
        key: m.key().map(<[u8]>::to_vec),
        payload: m.payload().map(<[u8]>::to_vec),
        headers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member_name(cfg: &KafkaConfig, node: Option<&NodeId>) -> Option<String> {
        group_settings(cfg, "g".into(), node)
            .into_iter()
            .find(|(k, _)| *k == "group.instance.id")
            .map(|(_, v)| v)
    }

    #[test]
    fn a_static_member_is_named_after_its_node() {
        let node = NodeId("n-1".into());
        let mut cfg = KafkaConfig::default();
        assert_eq!(member_name(&cfg, Some(&node)), None, "off by default");
        cfg.static_membership = true;
        assert_eq!(member_name(&cfg, Some(&node)).as_deref(), Some("n-1"));
        assert_eq!(
            member_name(&cfg, None),
            None,
            "a consumer outside the group"
        );
    }
}

//! Kafka at the edges: the input consumer (records -> decoded [`crate::broker::Record`]s in
//! batches; their offsets committed by [`commits`], one commit at a time), the state
//! partition group ([`membership`]: which state partitions this broker owns), the producer
//! (outbox -> records, acknowledged back to the core; [`sender`]: the producer client and its
//! delivery reports; [`binary`]: an event as a binary-mode record; [`polled`]: every
//! producer's polling thread and the acknowledgements waited for), the changelog ([`log`]),
//! the work reader ([`work`]), partition claims ([`owners`]), snapshots ([`snapshots`]),
//! resuming after a restart before the group assigns ([`resume`]), standby replicas
//! ([`standby`]), topic creation, and the client settings built from
//! [`crate::config::KafkaConfig`].

pub mod binary;
pub mod commits;
pub mod consumer;
pub mod decode;
pub mod definitions;
pub mod log;
pub mod membership;
pub mod owners;
pub mod polled;
pub mod producer;
pub mod resume;
mod scan;
pub mod sender;
pub mod snapshots;
pub mod standby;
pub mod work;

use crate::config::KafkaConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::ClientConfig;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum KafkaError {
    #[error("kafka client ({what}): {source}\n  fix: check kafka.brokers ({brokers}) and kafka.properties")]
    Client {
        what: &'static str,
        brokers: String,
        source: rdkafka::error::KafkaError,
    },
    #[error("cannot create topic {topic}: {message}")]
    Topic { topic: String, message: String },
}

/// `compression.type` of the records only brokers read (changelog records and fences, work
/// records, snapshot chunks): a changelog record's values repeat each other's topics, header
/// names and ids, and compressed they cost Kafka about a fifth less CPU per instance
/// (docs/broker.md "Compression"). `kafka.properties` can change it, for these clients and
/// every other.
pub const INTERNAL_COMPRESSION: &str = "lz4";

/// Settings shared by every client, then the client's own `settings`, then the user's
/// `kafka.properties` (which win over both).
pub fn client_config(cfg: &KafkaConfig, settings: &[(&str, String)]) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &cfg.brokers);
    c.set("client.id", "flowbroker");
    c.set("socket.nagle.disable", "true");
    for (k, v) in settings {
        c.set(*k, v);
    }
    for (k, v) in &cfg.properties {
        c.set(k, v);
    }
    c
}

/// A record's headers as owned names and values (a header without a value: empty).
pub fn owned_headers(m: &impl rdkafka::message::Message) -> Vec<(String, Vec<u8>)> {
    use rdkafka::message::Headers;
    m.headers()
        .map(|h| {
            h.iter()
                .map(|x| (x.key.to_string(), x.value.unwrap_or_default().to_vec()))
                .collect()
        })
        .unwrap_or_default()
}

/// A topic to create when missing.
pub struct TopicSpec {
    pub name: String,
    pub partitions: i32,
    /// Topic configs (`retention.ms`, ...).
    pub config: Vec<(&'static str, String)>,
}

/// Creates missing topics (ignores "already exists"); a broker that refuses is logged, not
/// fatal, since topics may be managed elsewhere.
pub async fn ensure_topics(cfg: &KafkaConfig, topics: &[TopicSpec]) -> Result<(), KafkaError> {
    let admin: AdminClient<DefaultClientContext> =
        client_config(cfg, &[])
            .create()
            .map_err(|source| KafkaError::Client {
                what: "admin",
                brokers: cfg.brokers.clone(),
                source,
            })?;
    let new: Vec<NewTopic> = topics
        .iter()
        .map(|t| {
            t.config.iter().fold(
                NewTopic::new(&t.name, t.partitions, TopicReplication::Fixed(1)),
                |n, (k, v)| n.set(k, v),
            )
        })
        .collect();
    let opts = AdminOptions::new()
        .operation_timeout(Some(Duration::from_secs(10)))
        .request_timeout(Some(Duration::from_secs(10)));
    let results = admin
        .create_topics(new.iter(), &opts)
        .await
        .map_err(|source| KafkaError::Client {
            what: "create topics",
            brokers: cfg.brokers.clone(),
            source,
        })?;
    for r in results {
        match r {
            Ok(t) => tracing::info!(topic = %t, "created topic"),
            Err((t, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists)) => {
                tracing::debug!(topic = %t, "topic exists")
            }
            Err((t, code)) => {
                tracing::warn!(topic = %t, error = %code, "could not create topic; create it yourself if it is missing")
            }
        }
    }
    Ok(())
}

/// The number of partitions `topic` has, when Kafka knows the topic.
pub fn partitions_of(cfg: &KafkaConfig, topic: &str) -> Option<usize> {
    let c: rdkafka::consumer::BaseConsumer = client_config(cfg, &[]).create().ok()?;
    use rdkafka::consumer::Consumer;
    let md = c
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .ok()?;
    let t = md.topics().iter().find(|t| t.name() == topic)?;
    (t.error().is_none() && !t.partitions().is_empty()).then(|| t.partitions().len())
}

//! Kafka at the edges: the input consumer (records -> decoded [`crate::broker::Record`]s in
//! batches; their offsets committed by [`commits`], one commit at a time), the state
//! partition group ([`membership`]: which state partitions this broker owns), the producer
//! (outbox -> records, acknowledged back to the core; [`sender`]: the producer client and its
//! delivery reports; [`binary`]: an event as a binary-mode record; [`polled`]: every
//! producer's polling thread and the acknowledgements waited for), the changelog ([`log`]),
//! the work reader ([`work`]), partition claims ([`owners`]), snapshots ([`snapshots`]),
//! resuming after a restart before the group assigns ([`resume`]), standby replicas
//! ([`standby`]), the topics it needs and their creation ([`topics`]), and the client
//! settings built from
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
pub mod topics;
pub mod work;

pub use topics::{ensure_topics, partitions_of, TopicSpec};

use crate::config::KafkaConfig;
use rdkafka::ClientConfig;

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

impl KafkaError {
    /// What a failed call of the client `what`, talking to `cfg`'s brokers, returns.
    pub fn client<'a>(
        cfg: &'a KafkaConfig,
        what: &'static str,
    ) -> impl Fn(rdkafka::error::KafkaError) -> KafkaError + Copy + 'a {
        move |source| KafkaError::Client {
            what,
            brokers: cfg.brokers.clone(),
            source,
        }
    }
}

/// A client of type `C` (a consumer, a producer, an admin client) made with
/// [`client_config`]'s settings; `what` names it in the error if it cannot be made.
pub fn create<C: rdkafka::config::FromClientConfig>(
    cfg: &KafkaConfig,
    settings: &[(&str, String)],
    what: &'static str,
) -> Result<C, KafkaError> {
    client_config(cfg, settings)
        .create()
        .map_err(KafkaError::client(cfg, what))
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

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::consumer::BaseConsumer;

    #[test]
    fn a_client_that_cannot_be_made_names_itself_the_brokers_and_the_fix() {
        let mut cfg = KafkaConfig {
            brokers: "kafka-a:9092".into(),
            ..KafkaConfig::default()
        };
        cfg.properties.insert("no.such.property".into(), "1".into());
        let Err(e) = create::<BaseConsumer>(&cfg, &[], "probe") else {
            panic!("a consumer with an unknown property was made");
        };
        let text = e.to_string();
        assert!(
            matches!(e, KafkaError::Client { what: "probe", .. }),
            "{e:?}"
        );
        assert!(text.contains("kafka-a:9092"), "{text}");
        assert!(text.contains("no.such.property"), "{text}");
        assert!(text.contains("fix: check kafka.brokers"), "{text}");
        // the user's properties win over the client's own settings
        cfg.properties.clear();
        cfg.properties
            .insert("fetch.wait.max.ms".into(), "7".into());
        let c = client_config(&cfg, &[("fetch.wait.max.ms", "100".into())]);
        assert_eq!(c.get("fetch.wait.max.ms"), Some("7"));
        assert_eq!(c.get("bootstrap.servers"), Some("kafka-a:9092"));
    }
}

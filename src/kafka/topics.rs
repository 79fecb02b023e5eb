//! The topics a broker needs: the internal ones (work, changelog, owners, snapshots,
//! definitions), created whatever `kafka.create_topics` says, since their partition count is
//! the number of state partitions; and, with `kafka.create_topics`, the user's (inputs,
//! outputs, lifecycle, dead letters and the `kafka.topics` events are sent to). The work
//! topic, once it exists, decides how many state partitions there are.

use super::{client_config, KafkaError};
use crate::config::{Config, KafkaConfig};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use std::time::Duration;

/// Creates the topics the broker needs ([`wanted`]) where missing, then takes the number of
/// state partitions from the work topic when it exists with another count than configured.
/// Not fatal: the topics may be managed elsewhere, or Kafka may come up later (the clients
/// reconnect on their own).
pub async fn prepare(cfg: &mut Config) {
    let k = cfg.kafka.clone();
    if let Err(e) = ensure_topics(&k, &wanted(cfg)).await {
        tracing::warn!(error = %e, "could not create topics at start; continuing");
    }
    // The work topic decides how many state partitions there are (set when it was created).
    let wt = cfg.cluster.work_topic.clone();
    let existing = tokio::task::spawn_blocking(move || partitions_of(&k, &wt)).await;
    if let Ok(Some(n)) = existing {
        if n != cfg.cluster.partitions {
            tracing::warn!(configured = cfg.cluster.partitions, topic = %cfg.cluster.work_topic, partitions = n,
                "the work topic exists with another partition count; using its count");
            cfg.cluster.partitions = n;
        }
    }
}

/// The configs of a topic kept until the broker trims it (the changelog, snapshots), whose
/// records may be as large as a changelog record.
fn kept_whole() -> Vec<(&'static str, String)> {
    vec![
        ("retention.ms", "-1".into()),
        ("cleanup.policy", "delete".into()),
        (
            "max.message.bytes",
            super::log::CHANGELOG_RECORD_MAX.to_string(),
        ),
    ]
}

/// The topics `cfg` needs. Time retention is off on the changelog: it is trimmed after
/// snapshots instead (docs/scale.md "Snapshots").
pub fn wanted(cfg: &Config) -> Vec<TopicSpec> {
    let (k, c) = (&cfg.kafka, &cfg.cluster);
    let mut topics = vec![
        TopicSpec {
            name: c.work_topic.clone(),
            partitions: c.partitions as i32,
            config: vec![],
        },
        TopicSpec {
            name: c.changelog_topic.clone(),
            partitions: c.partitions as i32,
            config: kept_whole(),
        },
        TopicSpec {
            name: c.owners_topic.clone(),
            partitions: 1,
            config: vec![("cleanup.policy", "compact".into())],
        },
        // a chunk holding one large value is as large as that value
        TopicSpec {
            name: c.snapshot_topic.clone(),
            partitions: c.partitions as i32,
            config: kept_whole(),
        },
    ];
    if !c.definitions_topic.is_empty() {
        topics.push(TopicSpec {
            name: c.definitions_topic.clone(),
            partitions: 1,
            config: vec![("cleanup.policy", "compact".into())],
        });
    }
    if k.create_topics {
        let mut user = k.input_topics.clone();
        user.extend([
            k.output_topic.clone(),
            k.lifecycle_topic.clone(),
            k.dlq_topic.clone(),
        ]);
        user.extend(k.topics.values().cloned());
        user.sort();
        user.dedup();
        topics.extend(user.into_iter().map(|name| TopicSpec {
            name,
            partitions: k.topic_partitions,
            config: vec![],
        }));
    }
    topics
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
    let admin: AdminClient<DefaultClientContext> = super::create(cfg, &[], "admin")?;
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
        .map_err(KafkaError::client(cfg, "create topics"))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names(cfg: &Config) -> Vec<String> {
        wanted(cfg).into_iter().map(|t| t.name).collect()
    }

    #[test]
    fn the_internal_topics_are_always_wanted_and_the_users_only_when_asked() {
        let mut cfg = Config::default();
        cfg.cluster.partitions = 6;
        cfg.kafka.create_topics = false;
        let internal = names(&cfg);
        for t in [
            &cfg.cluster.work_topic,
            &cfg.cluster.changelog_topic,
            &cfg.cluster.owners_topic,
            &cfg.cluster.snapshot_topic,
            &cfg.cluster.definitions_topic,
        ] {
            assert!(internal.contains(t), "{t} in {internal:?}");
        }
        assert!(!internal.contains(&cfg.kafka.output_topic));
        let log = wanted(&cfg)
            .into_iter()
            .find(|t| t.name == cfg.cluster.changelog_topic)
            .unwrap();
        assert_eq!(log.partitions, 6);
        assert!(log.config.contains(&("retention.ms", "-1".to_string())));
        let chunks = wanted(&cfg)
            .into_iter()
            .find(|t| t.name == cfg.cluster.snapshot_topic)
            .unwrap();
        assert_eq!(chunks.config, log.config);

        cfg.kafka.create_topics = true;
        cfg.kafka.input_topics = vec!["a".into(), "a".into()];
        let all = names(&cfg);
        assert_eq!(all.iter().filter(|n| *n == "a").count(), 1, "{all:?}");
        assert!(all.contains(&cfg.kafka.output_topic));
        assert!(all.contains(&cfg.kafka.dlq_topic));

        cfg.cluster.definitions_topic = String::new();
        assert!(!names(&cfg).contains(&String::new()));
    }
}

//! What the broker stores besides the engine's own instance: the records of each table.

use super::produced::Produced;
use crate::cluster::partition::PartitionId;
use crate::cluster::work::Work;
use crate::config::KafkaConfig;
use crate::engine::{Event, Input, Instance};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An instance with what the broker needs around it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InstanceRecord {
    pub instance: Instance,
    /// The deployed version (content hash) the instance runs on, for life.
    pub version: String,
    /// The parent instance, for subflow and foreach children.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Whether the parent waits for this child's result.
    #[serde(default)]
    pub wait: bool,
    /// The workflow and version of the parent, grandparent, ...: a sub-workflow inherits
    /// the function and event definitions it lacks from them (`crate::family`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lineage: Vec<(String, String)>,
    #[serde(serialize_with = "crate::time::stamp::serialize")]
    pub created: DateTime<Utc>,
    #[serde(serialize_with = "crate::time::stamp::serialize")]
    pub updated: DateTime<Utc>,
    /// When the current state was entered (the start of its span).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::time::stamp::serialize_option"
    )]
    pub since: Option<DateTime<Utc>>,
    /// Entries in the history table.
    pub history: u64,
    /// The trace it continues (`crate::trace`): its calls and events carry it on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::TraceContext>,
}

/// One input and the decisions it led to.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    #[serde(serialize_with = "crate::time::stamp::serialize")]
    pub at: DateTime<Utc>,
    pub input: Input,
    /// The engine's actions, or the reason it refused the input.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<crate::engine::Action>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    pub status: crate::engine::Status,
    /// The states entered while applying the input, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entered: Vec<String>,
    /// Payloads kept beside the entry, in the `payloads` table (`broker::history`): payload
    /// `n` belongs where `payloads[n]` points and the entry holds a summary there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub payloads: Vec<PayloadRef>,
}

/// A [`HistoryEntry`] as it is written, borrowing what it holds: the same JSON as the entry
/// with no `payloads` (a copy is written when payloads go beside it, `broker::history`).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntryOf<'a> {
    #[serde(serialize_with = "crate::time::stamp::serialize")]
    pub at: DateTime<Utc>,
    pub input: &'a Input,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub actions: &'a [crate::engine::Action],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<&'a str>,
    pub status: crate::engine::Status,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub entered: &'a [String],
}

/// Where in a history entry a payload kept beside it belongs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PayloadRef {
    /// A JSON pointer into the entry (`/input/event/data`, `/actions/0/parameters`).
    pub pointer: String,
}

/// A record waiting in the outbox until Kafka acknowledges it.
#[derive(Debug, Clone, PartialEq)]
pub enum OutRecord {
    /// A record for Kafka (a CloudEvent, a dead letter), encoded when it entered the outbox.
    Kafka(Produced),
    /// A message to another state partition, on the work topic.
    Work {
        partition: PartitionId,
        work: Box<Work>,
    },
}

/// Outbox values in the store's encoding (`store::codec`): messages between partitions, and
/// every value written before store layout 4 (events and dead letters, encoded by the
/// producer then; JSON).
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Stored<W> {
    Event {
        topic: String,
        key: String,
        event: Box<Event>,
    },
    Raw {
        topic: String,
        key: Option<Vec<u8>>,
        payload: Option<Vec<u8>>,
        headers: Vec<(String, Vec<u8>)>,
    },
    Work {
        partition: PartitionId,
        work: W,
    },
}

impl OutRecord {
    /// What the outbox stores: a Kafka record as [`Produced::encode`] writes it, a message
    /// between partitions as the store encodes its values.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            OutRecord::Kafka(p) => p.as_bytes().to_vec(),
            OutRecord::Work { partition, work } => {
                crate::store::Txn::encode(&Stored::Work::<&Work> {
                    partition: *partition,
                    work,
                })
            }
        }
    }

    /// Reads what [`OutRecord::encode`] (or a broker before store layout 4) stored under
    /// `key`. An event stored by an older broker is encoded now, as `cfg` says; one that
    /// cannot be becomes its dead letter ([`Produced::unencodable`]).
    pub fn decode(cfg: &KafkaConfig, key: &str, bytes: &[u8]) -> crate::store::Result<Self> {
        if Produced::is_encoded(bytes) {
            return Produced::from_stored(bytes.to_vec())
                .map(OutRecord::Kafka)
                .map_err(|e| crate::store::StoreError::Unreadable {
                    table: crate::store::Table::Outbox.name(),
                    key: key.to_string(),
                    why: e.to_string(),
                });
        }
        let stored: Stored<Box<Work>> =
            crate::store::Txn::decode(crate::store::Table::Outbox, key, bytes)?;
        Ok(match stored {
            Stored::Event { topic, key, event } => OutRecord::Kafka(
                Produced::event(cfg.output_mode, &topic, &key, &event).unwrap_or_else(|why| {
                    tracing::error!(topic, r#type = %event.event_type, error = %why,
                        "an event an older broker left in the outbox cannot be encoded as a \
                         CloudEvent; sent to the dead-letter topic instead");
                    Produced::unencodable(&cfg.dlq_topic, &topic, &event.event_type, &why)
                }),
            ),
            Stored::Raw {
                topic,
                key,
                payload,
                headers,
            } => OutRecord::Kafka(Produced::raw(
                &topic,
                key.as_deref(),
                payload.as_deref(),
                &headers,
            )),
            Stored::Work { partition, work } => OutRecord::Work { partition, work },
        })
    }
}

/// What a due timer does.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TimerEntry {
    /// An engine timer (`ArmTimer`).
    Instance { instance: String, id: String },
    /// The gap timeout of a pending all-events start.
    Join { workflow: String, key: String },
    /// The next tick of a cron schedule.
    Schedule { workflow: String },
}

/// A function call in flight (deleted when its result is applied).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Call {
    pub instance: String,
    /// The instance's workflow (an attribute of the call's span).
    #[serde(default)]
    pub workflow: String,
    pub key: String,
    pub function: String,
    pub url: String,
    pub parameters: Value,
    pub attempt: u32,
    /// This call's time limit in seconds, when its language sets one (durable functions'
    /// `invocationTimeout`); else the invoker's `invoke.timeout_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// A broker that takes the partition over sends the call again as it is (the default),
    /// or, when the engine said its request goes stale (`Action::Invoke`), fails it back to
    /// the engine, which asks anew with the current state.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale_on_takeover: bool,
    /// Sent as the `traceparent` header (the span derived from the idempotency key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
    /// The span of the state visit that made the call: the call's span is its child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_span: Option<crate::trace::SpanId>,
}

/// An event kept for an instance that does not wait for it yet.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Buffered {
    pub event: Event,
    #[serde(serialize_with = "crate::time::stamp::serialize")]
    pub expires: DateTime<Utc>,
}

/// A pending `exclusive: false` start: the events received so far for one key.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Join {
    pub names: Vec<String>,
    pub events: Vec<Event>,
}

/// A deployed version as stored, so instances keep running on it after the file changes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredVersion {
    pub file: String,
    pub source: String,
    pub deployed: DateTime<Utc>,
}

impl StoredVersion {
    pub fn of(d: &super::registry::Deployed) -> StoredVersion {
        StoredVersion {
            file: d.file.clone(),
            source: d.source.clone(),
            deployed: d.deployed,
        }
    }

    /// The version as the registry keeps it, parsed again (leniently: it validated when it
    /// was deployed); `None` (logged) when it no longer parses.
    pub fn revive(self, id: &str, version: &str) -> Option<super::registry::Deployed> {
        let format = crate::load::Format::from_path(std::path::Path::new(&self.file))
            .unwrap_or(crate::load::Format::Yaml);
        match crate::definition::Definition::parse_lenient(&self.file, &self.source, format) {
            Ok(def) => Some(super::registry::Deployed {
                id: id.to_string(),
                version: version.to_string(),
                file: self.file,
                source: self.source,
                def: std::sync::Arc::new(def),
                deployed: self.deployed,
            }),
            Err(e) => {
                tracing::error!(workflow = id, version, errors = ?e.diagnostics,
                    "a stored workflow version no longer validates; its instances cannot run");
                None
            }
        }
    }
}

/// Where a schedule is: the last tick that started an instance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleState {
    /// The cron expression the ticks were computed from.
    pub cron: String,
    pub timezone: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tick: Option<DateTime<Utc>>,
    /// When the current expression was first planned: ticks after it belong to the schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// Instances started by the schedule.
    #[serde(default)]
    pub fired: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::work::Source;
    use serde_json::json;

    fn event(source: &str) -> Event {
        serde_json::from_value(json!({
            "id": "e1", "source": source, "type": "order.done", "data": {"n": 1}
        }))
        .unwrap()
    }

    /// Outbox values as brokers of store layout 3 and earlier wrote them are still read: an
    /// event is encoded on the way, as the configuration says.
    #[test]
    fn json_outbox_values_of_older_brokers_are_read() {
        let cfg = KafkaConfig::default();
        let old = json!({"kind": "event", "topic": "out", "key": "i1", "event": event("/s")});
        let rec = OutRecord::decode(&cfg, "k", old.to_string().as_bytes()).unwrap();
        let want = Produced::event(cfg.output_mode, "out", "i1", &event("/s")).unwrap();
        assert_eq!(rec, OutRecord::Kafka(want.clone()));
        assert_eq!(
            want.read_event(),
            Some(event("/s")).map(|mut e| {
                e.datacontenttype = Some("application/json".into());
                e
            })
        );
        // one the SDK refuses (an empty source) becomes its dead letter
        let old = json!({"kind": "event", "topic": "out", "key": "i1", "event": event("")});
        let OutRecord::Kafka(dl) =
            OutRecord::decode(&cfg, "k", old.to_string().as_bytes()).unwrap()
        else {
            panic!("a Kafka record");
        };
        let dl = dl.parts();
        assert_eq!(dl.topic, cfg.dlq_topic);
        let kind = dl.headers.iter().find(|(n, _)| *n == "flowbroker-dlq-kind");
        assert_eq!(kind.map(|(_, v)| v.as_ref()), Some(&b"unencodable"[..]));
        // a dead letter copied as it was
        let old = json!({"kind": "raw", "topic": "dlq", "key": [107], "payload": [123, 125],
            "headers": [["flowbroker-dlq-kind", [120]]]});
        let rec = OutRecord::decode(&cfg, "k", old.to_string().as_bytes()).unwrap();
        let headers = [("flowbroker-dlq-kind".to_string(), b"x".to_vec())];
        let want = Produced::raw("dlq", Some(b"k"), Some(b"{}"), &headers);
        assert_eq!(rec, OutRecord::Kafka(want));
    }

    /// Messages between partitions stay JSON, as older brokers wrote them; Kafka records are
    /// binary and read back as written.
    #[test]
    fn outbox_values_round_trip() {
        let cfg = KafkaConfig::default();
        let work = Work::Event {
            event: event("/s"),
            only: None,
            sole: true,
            returned: false,
            source: Source::Http,
        };
        let rec = OutRecord::Work {
            partition: PartitionId(2),
            work: Box::new(work.clone()),
        };
        let bytes = rec.encode();
        let old = json!({"kind": "work", "partition": 2, "work": work});
        assert_eq!(
            crate::store::Txn::decode::<Value>(crate::store::Table::Outbox, "k", &bytes).unwrap(),
            old,
            "the same record as the JSON older brokers wrote"
        );
        assert_eq!(OutRecord::decode(&cfg, "k", &bytes).unwrap(), rec);
        let json = serde_json::to_vec(&old).unwrap();
        assert_eq!(
            OutRecord::decode(&cfg, "k", &json).unwrap(),
            rec,
            "JSON is still read"
        );
        let p = Produced::event(cfg.output_mode, "out", "i1", &event("/s")).unwrap();
        let rec = OutRecord::Kafka(p);
        assert_eq!(OutRecord::decode(&cfg, "k", &rec.encode()).unwrap(), rec);
        let mut newer = rec.encode();
        newer[1] += 1;
        let e = OutRecord::decode(&cfg, "k", &newer).unwrap_err();
        assert!(e.to_string().contains("newer flowbroker"), "{e}");
    }
}

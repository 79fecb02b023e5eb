//! What the broker stores besides the engine's own instance: the records of each table.

use crate::cluster::partition::PartitionId;
use crate::cluster::work::Work;
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
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum OutRecord {
    /// A CloudEvent.
    Event {
        topic: String,
        key: String,
        event: Box<Event>,
    },
    /// A record copied as it was (dead letters), with extra headers.
    Raw {
        topic: String,
        key: Option<Vec<u8>>,
        payload: Option<Vec<u8>>,
        headers: Vec<(String, Vec<u8>)>,
    },
    /// A message to another state partition, on the work topic.
    Work {
        partition: PartitionId,
        work: Box<Work>,
    },
}

impl OutRecord {
    /// The topic it goes to (`work` stands for the configured work topic).
    pub fn topic(&self) -> &str {
        match self {
            OutRecord::Event { topic, .. } | OutRecord::Raw { topic, .. } => topic,
            OutRecord::Work { .. } => "work",
        }
    }

    /// The event type for metrics (`dead-letter` for raw records, `work` for messages
    /// between partitions).
    pub fn label(&self) -> &str {
        match self {
            OutRecord::Event { event, .. } => &event.event_type,
            OutRecord::Raw { .. } => "dead-letter",
            OutRecord::Work { .. } => "work",
        }
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

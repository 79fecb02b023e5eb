//! The stored state of one SWF execution (one run): its configuration, its history, and
//! what is open in it (the decision task, activity tasks, timers), so every input is
//! checked without reading the history back.

use crate::swf::history::HistoryEvent;
use crate::swf::registry::TypeId;
use crate::swf::{RunKey, Timeout};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How an execution closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CloseStatus {
    Completed,
    Failed,
    Canceled,
    Terminated,
    ContinuedAsNew,
    TimedOut,
}

impl CloseStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CloseStatus::Completed => "COMPLETED",
            CloseStatus::Failed => "FAILED",
            CloseStatus::Canceled => "CANCELED",
            CloseStatus::Terminated => "TERMINATED",
            CloseStatus::ContinuedAsNew => "CONTINUED_AS_NEW",
            CloseStatus::TimedOut => "TIMED_OUT",
        }
    }
}

/// The execution's decision task: none, scheduled, or handed to a decider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum DecisionTask {
    #[default]
    None,
    Scheduled {
        scheduled: i64,
    },
    Started {
        scheduled: i64,
        started: i64,
    },
}

/// An activity task that has not closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenActivity {
    pub activity_id: String,
    pub activity_type: TypeId,
    pub scheduled: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<i64>,
    pub task_list: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    pub schedule_to_start: Timeout,
    pub schedule_to_close: Timeout,
    pub start_to_close: Timeout,
    pub heartbeat: Timeout,
    /// The `ActivityTaskCancelRequested` event, once the decider asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_requested: Option<i64>,
    /// The last heartbeat's details (reported with a heartbeat timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// When the heartbeat timeout falls due, pushed on by every heartbeat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_due: Option<DateTime<Utc>>,
}

/// The run that started this one as its child.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentLink {
    pub instance: String,
    pub initiated: i64,
}

/// A child run this one started that has not closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenChild {
    pub workflow_id: String,
    pub workflow_type: TypeId,
    pub instance: String,
    pub initiated: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<String>,
    /// The decision task that started it (reported with a refused start).
    pub decided: i64,
}

/// An external signal or cancel request on its way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenExternal {
    pub signal: bool,
    pub workflow_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<String>,
    pub decided: i64,
}

/// A Lambda task being called.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenLambda {
    pub scheduled: i64,
    pub started: i64,
}

/// A timer the decider started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenTimer {
    pub started: i64,
}

/// One run of an execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    pub domain: String,
    pub workflow_id: String,
    pub run_id: String,
    pub workflow_type: TypeId,
    pub task_list: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_priority: Option<String>,
    pub execution_timeout: Timeout,
    pub task_timeout: Timeout,
    pub child_policy: String,
    #[serde(default)]
    pub tag_list: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_role: Option<String>,
    pub started_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed: Option<(DateTime<Utc>, CloseStatus)>,
    pub events: Vec<HistoryEvent>,
    #[serde(default)]
    pub decision: DecisionTask,
    /// Something happened that the decider has not seen in a task yet: a decision task is
    /// scheduled when the current one completes.
    #[serde(default)]
    pub decide_again: bool,
    /// The `DecisionTaskStarted` of the last completed decision task (0 before any).
    #[serde(default)]
    pub previous_started: i64,
    #[serde(default)]
    pub activities: BTreeMap<String, OpenActivity>,
    #[serde(default)]
    pub timers: BTreeMap<String, OpenTimer>,
    #[serde(default)]
    pub cancel_requested: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_activity_at: Option<DateTime<Utc>>,
    /// The cluster's state partition count: where a child's run lives (0: unknown, no
    /// children).
    #[serde(default)]
    pub partitions: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentLink>,
    /// Open children by workflow id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub children: BTreeMap<String, OpenChild>,
    /// Lambda tasks being called, by their id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lambdas: BTreeMap<String, OpenLambda>,
    /// External signals and cancel requests on their way, by their initiated event.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        with = "string_keys"
    )]
    pub externals: BTreeMap<i64, OpenExternal>,
}

/// Integer keys written as strings, as JSON writes them, so a stored execution reads into a
/// `serde_json::Value` whatever the store's encoding (MessagePack would write integer keys,
/// which a `Value` cannot hold).
pub(crate) mod string_keys {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<V: Serialize, S: Serializer>(
        map: &BTreeMap<i64, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(map.iter().map(|(k, v)| (k.to_string(), v)))
    }

    pub fn deserialize<'de, V: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<i64, V>, D::Error> {
        BTreeMap::<String, V>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| match k.parse() {
                Ok(n) => Ok((n, v)),
                Err(_) => Err(D::Error::custom(format!(
                    "an event id that is not a number: {k:?}"
                ))),
            })
            .collect()
    }
}

impl Execution {
    pub fn key(&self) -> RunKey {
        RunKey {
            domain: self.domain.clone(),
            workflow_id: self.workflow_id.clone(),
        }
    }

    pub fn is_open(&self) -> bool {
        self.closed.is_none()
    }

    /// The open activity scheduled by event `scheduled`.
    pub fn activity_by_event(&self, scheduled: i64) -> Option<&OpenActivity> {
        self.activities.values().find(|a| a.scheduled == scheduled)
    }

    /// The `WorkflowExecution` shape.
    pub fn wire_id(&self) -> serde_json::Value {
        serde_json::json!({"workflowId": self.workflow_id, "runId": self.run_id})
    }
}

//! Actions: function calls (`functionRef`) and event request/reply (`eventRef`).

use super::common::{ActionDataFilter, Extra};
use crate::time::{Duration, Written};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One action of an event, operation, callback, parallel branch or foreach state.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_ref: Option<FunctionRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_ref: Option<EventRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Written<Duration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_data_filter: Option<ActionDataFilter>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `functionRef`: which function to call and with what parameters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FunctionRef {
    pub ref_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `eventRef`: produce `triggerEventRef`, wait for `resultEventRef`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EventRef {
    pub trigger_event_ref: String,
    pub result_event_ref: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_attributes: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// How a list of actions runs. (The capitalised aliases serve fragments read on their own;
/// whole definitions are rewritten to the spec's spelling with a warning first, `spelling`.)
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
pub enum ActionMode {
    #[default]
    #[serde(rename = "sequential", alias = "Sequential", alias = "SEQUENTIAL")]
    Sequential,
    #[serde(rename = "parallel", alias = "Parallel", alias = "PARALLEL")]
    Parallel,
}

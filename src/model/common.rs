//! Definitions shared by several states: start, end, transitions, produced events, data filters,
//! error handling and retries.

use super::lenient::{Count, Text};
use crate::time::{Duration, RepeatingInterval, TimeInterval, Written};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Unknown fields, kept so they can be reported as warnings (never fatal).
pub type Extra = Map<String, Value>;

/// `start`: how instances of the workflow begin.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Start {
    pub kind: StartKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StartKind {
    Default,
    Scheduled,
}

/// `schedule` of a scheduled start.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Schedule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Written<TimeInterval>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// Absent means `allow` (docs/semantics.md), with a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_invoke: Option<DirectInvoke>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DirectInvoke {
    Allow,
    Exclusive,
}

/// `end`: how the workflow finishes after this state.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct End {
    pub kind: EndKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub produce_event: Option<ProduceEvent>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EndKind {
    Default,
    Terminate,
    Event,
}

/// An event produced at a transition or at the end.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProduceEvent {
    pub event_ref: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// An object, or an array of objects, of extension attributes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_attributes: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `transition`: the next state, optionally guarded and producing an event.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Transition {
    pub next_state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub produce_event: Option<ProduceEvent>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `stateDataFilter`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct StateDataFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_input_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_output_path: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `actionDataFilter`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ActionDataFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_input_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_results_path: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `eventDataFilter`. The spec's own examples write `dataInputPath` or `inputPath` here; both
/// are read as `dataOutputPath` with a warning.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct EventDataFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_output_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_input_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_path: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl EventDataFilter {
    /// The selector, whichever of the accepted names carries it.
    pub fn selector(&self) -> Option<&str> {
        self.data_output_path
            .as_deref()
            .or(self.data_input_path.as_deref())
            .or(self.input_path.as_deref())
    }
}

/// `errorDataFilter`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ErrorDataFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_output_path: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `onError` entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ErrorDef {
    pub expression: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_data_filter: Option<ErrorDataFilter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transition: Option<Transition>,
    /// Not in the spec's table; accepted so an error can end the workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<End>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `retry` entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RetryDef {
    pub expression: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Written<RepeatingInterval>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiplier: Option<Written<Duration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<Count>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Free-form `metadata` (string values in the spec; any JSON is kept).
pub type Metadata = Map<String, Value>;

/// Optional descriptive text kept as written.
pub type OptText = Option<Text>;

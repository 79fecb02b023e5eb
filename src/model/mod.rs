//! The workflow definition as data: every object of the August 2020 Serverless Workflow draft.
//! Parsing is lenient where the spec's own examples are (see docs/semantics.md); semantic checks
//! live in `validate`.

pub mod action;
pub mod common;
pub mod lenient;
pub mod spelling;
pub mod state;

pub use action::{Action, ActionMode, EventRef, FunctionRef};
pub use common::*;
pub use state::*;

use lenient::Text;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A workflow definition.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Workflow {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<Text>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<Text>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_input_schema: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_output_schema: Option<String>,
    pub events: Vec<EventDef>,
    pub functions: Vec<FunctionDef>,
    pub states: Vec<State>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// The top level as read, with events, functions and states left raw so that each element is
/// checked on its own and every problem is reported, not only the first.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawWorkflow {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub version: Option<Text>,
    #[serde(default)]
    pub schema_version: Option<Text>,
    #[serde(default)]
    pub data_input_schema: Option<String>,
    #[serde(default)]
    pub data_output_schema: Option<String>,
    // The arrays are type-checked here and read element by element by `load`.
    #[serde(default, rename = "events")]
    pub _events: Vec<Value>,
    #[serde(default, rename = "functions")]
    pub _functions: Vec<Value>,
    #[serde(rename = "states")]
    pub _states: Vec<Value>,
    #[serde(default)]
    pub metadata: Option<Metadata>,
}

/// A function definition.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FunctionDef {
    pub name: String,
    pub resource: String,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// An event definition.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EventDef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Absent means the event's `name` (with a warning).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
    #[serde(default)]
    pub kind: EventKind,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub correlation: Vec<CorrelationDef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// `metadata.bufferTtl`, parsed when the definition is read ([`EventDef::read_buffer_ttl`]);
    /// `None` when absent or not a duration (validation warns at its path), and the broker's
    /// `buffer_ttl` applies.
    #[serde(skip)]
    pub buffer_ttl: Option<crate::time::Duration>,
}

impl EventDef {
    /// Parses `metadata.bufferTtl` into [`EventDef::buffer_ttl`] (once, as the definition is
    /// read).
    pub fn read_buffer_ttl(&mut self) {
        self.buffer_ttl = self
            .metadata
            .as_ref()
            .and_then(|m| m.get("bufferTtl"))
            .and_then(|v| v.as_str())
            .and_then(|t| crate::time::Duration::parse(t).ok());
    }

    /// The CloudEvent `type` this definition matches or produces.
    pub fn ce_type(&self) -> &str {
        self.event_type.as_deref().unwrap_or(&self.name)
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    #[default]
    Consumed,
    Produced,
}

/// One correlation rule.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CorrelationDef {
    pub context_attribute_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_attribute_value: Option<String>,
}

/// A field-level deserialization error with the JSON path of the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Path relative to the deserialized value, e.g. `transition.nextState`.
    pub path: String,
    pub message: String,
}

/// Deserializes `value` into `T`, reporting unknown fields to `unknown` and the first error with
/// its path.
pub(crate) fn deserialize<T: serde::de::DeserializeOwned>(
    value: Value,
    unknown: &mut dyn FnMut(String),
) -> Result<T, FieldError> {
    let mut on_unknown = |p: serde_ignored::Path<'_>| unknown(p.to_string());
    let ignored = serde_ignored::Deserializer::new(value, &mut on_unknown);
    serde_path_to_error::deserialize(ignored).map_err(|e| FieldError {
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

impl Workflow {
    /// The state named (or with id) `name`.
    pub fn state(&self, name: &str) -> Option<&State> {
        self.states
            .iter()
            .find(|s| s.name() == name)
            .or_else(|| self.states.iter().find(|s| s.common().id == Some(name)))
    }

    /// Index of the state named (or with id) `name`.
    pub fn state_index(&self, name: &str) -> Option<usize> {
        self.states
            .iter()
            .position(|s| s.name() == name)
            .or_else(|| self.states.iter().position(|s| s.common().id == Some(name)))
    }

    pub fn function(&self, name: &str) -> Option<&FunctionDef> {
        self.functions.iter().find(|f| f.name == name)
    }

    pub fn event(&self, name: &str) -> Option<&EventDef> {
        self.events.iter().find(|e| e.name == name)
    }

    /// The start state (the first state declaring `start`).
    pub fn start_state(&self) -> Option<&State> {
        self.states.iter().find(|s| s.common().start.is_some())
    }
}

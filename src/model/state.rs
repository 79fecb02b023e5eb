//! The nine state types. Every state struct carries the shared fields (name, filters,
//! transition, end, start, error handling) through the `state!` macro, so serde reports missing
//! or mistyped fields at their exact JSON path.

use super::action::{Action, ActionMode};
use super::common::{
    End, ErrorDef, EventDataFilter, Metadata, RetryDef, Start, StateDataFilter, Transition,
};
use super::lenient::Count;
use crate::time::{Duration, Written};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

macro_rules! state {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $field:ident : $ty:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub id: Option<String>,
            pub name: String,
            #[serde(rename = "type")]
            pub kind: String,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub state_data_filter: Option<StateDataFilter>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub data_input_schema: Option<String>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub data_output_schema: Option<String>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub transition: Option<Transition>,
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub retry: Vec<RetryDef>,
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub on_error: Vec<ErrorDef>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub start: Option<Start>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub end: Option<End>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub metadata: Option<Metadata>,
            $($(#[$fm])* pub $field: $ty,)*
        }
    };
}

state!(
    /// Waits for events, then runs actions.
    EventState {
        #[serde(default = "yes")]
        exclusive: bool,
        events_actions: Vec<EventActions>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<Written<Duration>>,
    }
);

state!(
    /// Runs actions.
    OperationState {
        #[serde(default)]
        action_mode: ActionMode,
        actions: Vec<Action>,
    }
);

state!(
    /// Chooses a transition by data conditions or by the first of several events.
    SwitchState {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data_conditions: Option<Vec<DataCondition>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        event_conditions: Option<Vec<EventCondition>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        event_timeout: Option<Written<Duration>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<Transition>,
    }
);

state!(
    /// Waits for a duration.
    DelayState {
        time_delay: Written<Duration>,
    }
);

state!(
    /// Runs branches concurrently.
    ParallelState {
        branches: Vec<Branch>,
        #[serde(default)]
        completion_type: CompletionType,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        n: Option<Count>,
    }
);

state!(
    /// Runs another workflow.
    SubflowState {
        /// Absent means `true` (docs/semantics.md), with a warning.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wait_for_completion: Option<bool>,
        workflow_id: String,
    }
);

state!(
    /// Merges static data into the state data.
    InjectState {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Map<String, Value>>,
    }
);

state!(
    /// Runs actions (or a workflow) once per element of a collection.
    ForEachState {
        input_collection: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_collection: Option<String>,
        iteration_param: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<Count>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        actions: Option<Vec<Action>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workflow_id: Option<String>,
    }
);

state!(
    /// Runs an action, then waits for a callback event.
    CallbackState {
        action: Action,
        event_ref: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<Written<Duration>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        event_data_filter: Option<EventDataFilter>,
    }
);

fn yes() -> bool {
    true
}

impl SubflowState {
    /// Whether the parent waits for the child: `waitForCompletion`, `true` when absent.
    pub fn waits(&self) -> bool {
        self.wait_for_completion.unwrap_or(true)
    }
}

/// One entry of an event state's `eventsActions`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EventActions {
    pub event_refs: Vec<String>,
    #[serde(default)]
    pub action_mode: ActionMode,
    #[serde(default)]
    pub actions: Vec<Action>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_data_filter: Option<EventDataFilter>,
}

/// A switch data condition.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DataCondition {
    pub condition: String,
    pub transition: Transition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// A switch event condition.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EventCondition {
    pub event_ref: String,
    pub transition: Transition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_data_filter: Option<EventDataFilter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// A parallel branch: actions, or a workflow to run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Branch {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<Action>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
}

/// When a parallel state completes.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum CompletionType {
    #[default]
    And,
    Xor,
    NOfM,
}

/// Any state. Variants differ in size; states are parsed once per deployment, so boxing
/// would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(untagged)]
pub enum State {
    Event(EventState),
    Operation(OperationState),
    Switch(SwitchState),
    Delay(DelayState),
    Parallel(ParallelState),
    Subflow(SubflowState),
    Inject(InjectState),
    ForEach(ForEachState),
    Callback(CallbackState),
}

/// The accepted `type` values.
pub const STATE_TYPES: [&str; 9] = [
    "event",
    "operation",
    "switch",
    "delay",
    "parallel",
    "subflow",
    "inject",
    "foreach",
    "callback",
];

/// Read-only view of the fields every state has.
pub struct Common<'a> {
    pub id: Option<&'a str>,
    pub name: &'a str,
    pub kind: &'a str,
    pub state_data_filter: Option<&'a StateDataFilter>,
    pub transition: Option<&'a Transition>,
    pub retry: &'a [RetryDef],
    pub on_error: &'a [ErrorDef],
    pub start: Option<&'a Start>,
    pub end: Option<&'a End>,
}

macro_rules! each {
    ($self:expr, $s:ident => $body:expr) => {
        match $self {
            State::Event($s) => $body,
            State::Operation($s) => $body,
            State::Switch($s) => $body,
            State::Delay($s) => $body,
            State::Parallel($s) => $body,
            State::Subflow($s) => $body,
            State::Inject($s) => $body,
            State::ForEach($s) => $body,
            State::Callback($s) => $body,
        }
    };
}

impl State {
    pub fn common(&self) -> Common<'_> {
        each!(self, s => Common {
            id: s.id.as_deref(),
            name: &s.name,
            kind: &s.kind,
            state_data_filter: s.state_data_filter.as_ref(),
            transition: s.transition.as_ref(),
            retry: &s.retry,
            on_error: &s.on_error,
            start: s.start.as_ref(),
            end: s.end.as_ref(),
        })
    }

    pub fn name(&self) -> &str {
        each!(self, s => &s.name)
    }

    /// Deserializes one state, choosing the struct by its `type`; `None` for an unknown type.
    /// `unknown` receives the path of every field the struct does not know.
    pub fn from_value(
        kind: &str,
        value: Value,
        unknown: &mut dyn FnMut(String),
    ) -> Option<Result<State, super::FieldError>> {
        use super::deserialize as de;
        Some(match kind {
            "event" => de(value, unknown).map(State::Event),
            "operation" => de(value, unknown).map(State::Operation),
            "switch" => de(value, unknown).map(State::Switch),
            "delay" => de(value, unknown).map(State::Delay),
            "parallel" => de(value, unknown).map(State::Parallel),
            "subflow" => de(value, unknown).map(State::Subflow),
            "inject" => de(value, unknown).map(State::Inject),
            "foreach" => de(value, unknown).map(State::ForEach),
            "callback" => de(value, unknown).map(State::Callback),
            _ => return None,
        })
    }
}

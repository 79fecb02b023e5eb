//! History events as SWF records them: an id counting from 1, a timestamp, a type, and the
//! type's attributes under `<eventType in lower camel case>EventAttributes`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// One event of an execution's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEvent {
    pub id: i64,
    pub at: DateTime<Utc>,
    /// The event type (`ActivityTaskScheduled`).
    pub kind: String,
    /// The attributes, as SWF names them (absent ones left out).
    pub attrs: Map<String, Value>,
}

impl HistoryEvent {
    /// The event as the API answers it.
    pub fn wire(&self) -> Value {
        let mut v = json!({
            "eventId": self.id,
            "eventTimestamp": epoch(self.at),
            "eventType": self.kind,
        });
        v[attributes_field(&self.kind)] = Value::Object(self.attrs.clone());
        v
    }

    pub fn attr_str(&self, name: &str) -> Option<&str> {
        self.attrs.get(name).and_then(Value::as_str)
    }

    pub fn attr_i64(&self, name: &str) -> Option<i64> {
        self.attrs.get(name).and_then(Value::as_i64)
    }
}

/// A page of `events` as the API answers it: `max` (at most 1000) from index `from`, oldest
/// first or newest first; and the index the next page starts at.
pub fn page(
    events: &[HistoryEvent],
    from: usize,
    max: usize,
    reverse: bool,
) -> (Vec<Value>, Option<usize>) {
    let n = events.len();
    let end = (from + max.clamp(1, 1000)).min(n);
    let page = (from.min(n)..end)
        .map(|i| {
            if reverse {
                &events[n - 1 - i]
            } else {
                &events[i]
            }
            .wire()
        })
        .collect();
    (page, (end < n).then_some(end))
}

/// `ActivityTaskScheduled` -> `activityTaskScheduledEventAttributes`.
pub fn attributes_field(kind: &str) -> String {
    let mut s = String::with_capacity(kind.len() + 15);
    let mut chars = kind.chars();
    if let Some(c) = chars.next() {
        s.push(c.to_ascii_lowercase());
    }
    s.extend(chars);
    s.push_str("EventAttributes");
    s
}

/// A timestamp as JSON 1.0 carries it: epoch seconds with milliseconds.
pub fn epoch(t: DateTime<Utc>) -> Value {
    json!(t.timestamp_millis() as f64 / 1000.0)
}

/// Builds an attribute map, leaving out nulls (SWF omits absent members).
pub fn attrs(pairs: Vec<(&str, Value)>) -> Map<String, Value> {
    pairs
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// The events that make SWF schedule a decision task (the decider has something new to
/// decide on). Starting, recording and cancelling requests do not.
pub fn wakes_decider(kind: &str) -> bool {
    matches!(
        kind,
        "WorkflowExecutionStarted"
            | "WorkflowExecutionSignaled"
            | "WorkflowExecutionCancelRequested"
            | "ActivityTaskCompleted"
            | "ActivityTaskFailed"
            | "ActivityTaskTimedOut"
            | "ActivityTaskCanceled"
            | "TimerFired"
            | "DecisionTaskTimedOut"
            | "ScheduleActivityTaskFailed"
            | "RequestCancelActivityTaskFailed"
            | "StartTimerFailed"
            | "CancelTimerFailed"
            | "RecordMarkerFailed"
            | "CompleteWorkflowExecutionFailed"
            | "FailWorkflowExecutionFailed"
            | "CancelWorkflowExecutionFailed"
            | "ContinueAsNewWorkflowExecutionFailed"
            | "StartChildWorkflowExecutionFailed"
            | "ChildWorkflowExecutionStarted"
            | "ChildWorkflowExecutionCompleted"
            | "ChildWorkflowExecutionFailed"
            | "ChildWorkflowExecutionTimedOut"
            | "ChildWorkflowExecutionCanceled"
            | "ChildWorkflowExecutionTerminated"
            | "SignalExternalWorkflowExecutionFailed"
            | "ExternalWorkflowExecutionSignaled"
            | "RequestCancelExternalWorkflowExecutionFailed"
            | "ExternalWorkflowExecutionCancelRequested"
            | "ScheduleLambdaFunctionFailed"
            | "StartLambdaFunctionFailed"
            | "LambdaFunctionCompleted"
            | "LambdaFunctionFailed"
            | "LambdaFunctionTimedOut"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_answers_as_swf_spells_it() {
        let e = HistoryEvent {
            id: 2,
            at: DateTime::from_timestamp_millis(1_326_592_619_474).unwrap(),
            kind: "DecisionTaskScheduled".into(),
            attrs: attrs(vec![
                ("startToCloseTimeout", json!("600")),
                ("taskList", json!({"name": "specialTaskList"})),
                ("taskPriority", Value::Null),
            ]),
        };
        assert_eq!(
            e.wire(),
            json!({
                "eventId": 2,
                "eventTimestamp": 1326592619.474,
                "eventType": "DecisionTaskScheduled",
                "decisionTaskScheduledEventAttributes": {
                    "startToCloseTimeout": "600",
                    "taskList": {"name": "specialTaskList"}
                }
            })
        );
    }
}

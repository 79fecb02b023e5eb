//! Decisions as a decider returns them (`RespondDecisionTaskCompleted`): a type and its
//! attributes under `<decisionType in lower camel case>DecisionAttributes`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The thirteen decision types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DecisionType {
    ScheduleActivityTask,
    RequestCancelActivityTask,
    CompleteWorkflowExecution,
    FailWorkflowExecution,
    CancelWorkflowExecution,
    ContinueAsNewWorkflowExecution,
    RecordMarker,
    StartTimer,
    CancelTimer,
    SignalExternalWorkflowExecution,
    RequestCancelExternalWorkflowExecution,
    StartChildWorkflowExecution,
    ScheduleLambdaFunction,
}

impl DecisionType {
    pub const ALL: [DecisionType; 13] = [
        DecisionType::ScheduleActivityTask,
        DecisionType::RequestCancelActivityTask,
        DecisionType::CompleteWorkflowExecution,
        DecisionType::FailWorkflowExecution,
        DecisionType::CancelWorkflowExecution,
        DecisionType::ContinueAsNewWorkflowExecution,
        DecisionType::RecordMarker,
        DecisionType::StartTimer,
        DecisionType::CancelTimer,
        DecisionType::SignalExternalWorkflowExecution,
        DecisionType::RequestCancelExternalWorkflowExecution,
        DecisionType::StartChildWorkflowExecution,
        DecisionType::ScheduleLambdaFunction,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DecisionType::ScheduleActivityTask => "ScheduleActivityTask",
            DecisionType::RequestCancelActivityTask => "RequestCancelActivityTask",
            DecisionType::CompleteWorkflowExecution => "CompleteWorkflowExecution",
            DecisionType::FailWorkflowExecution => "FailWorkflowExecution",
            DecisionType::CancelWorkflowExecution => "CancelWorkflowExecution",
            DecisionType::ContinueAsNewWorkflowExecution => "ContinueAsNewWorkflowExecution",
            DecisionType::RecordMarker => "RecordMarker",
            DecisionType::StartTimer => "StartTimer",
            DecisionType::CancelTimer => "CancelTimer",
            DecisionType::SignalExternalWorkflowExecution => "SignalExternalWorkflowExecution",
            DecisionType::RequestCancelExternalWorkflowExecution => {
                "RequestCancelExternalWorkflowExecution"
            }
            DecisionType::StartChildWorkflowExecution => "StartChildWorkflowExecution",
            DecisionType::ScheduleLambdaFunction => "ScheduleLambdaFunction",
        }
    }

    /// Whether the decision closes the execution (it must be the last of its task).
    pub fn closes(self) -> bool {
        matches!(
            self,
            DecisionType::CompleteWorkflowExecution
                | DecisionType::FailWorkflowExecution
                | DecisionType::CancelWorkflowExecution
                | DecisionType::ContinueAsNewWorkflowExecution
        )
    }

    /// `scheduleActivityTaskDecisionAttributes`.
    pub fn attributes_field(self) -> String {
        let s = self.as_str();
        format!(
            "{}{}DecisionAttributes",
            s[..1].to_ascii_lowercase(),
            &s[1..]
        )
    }
}

/// One decision: its type and attributes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub kind: DecisionType,
    pub attrs: Map<String, Value>,
}

impl Decision {
    pub fn str(&self, name: &str) -> Option<&str> {
        self.attrs.get(name).and_then(Value::as_str)
    }
}

/// Reads the `decisions` list: each needs a known `decisionType`, and a closing decision
/// must be the last (SWF refuses the request otherwise).
pub fn parse(decisions: Option<&Value>) -> Result<Vec<Decision>, String> {
    let Some(list) = decisions else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or("decisions must be a list of Decision structures")?;
    let mut out = Vec::with_capacity(list.len());
    for (i, d) in list.iter().enumerate() {
        let name = d
            .get("decisionType")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("decisions[{i}].decisionType is required"))?;
        let kind = DecisionType::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| {
                format!(
                    "decisions[{i}].decisionType {name:?} is not one of {}",
                    DecisionType::ALL.map(DecisionType::as_str).join(", ")
                )
            })?;
        let attrs = match d.get(kind.attributes_field()) {
            Some(Value::Object(m)) => m.clone(),
            None => Map::new(),
            Some(_) => {
                return Err(format!(
                    "decisions[{i}].{} must be an object",
                    kind.attributes_field()
                ))
            }
        };
        out.push(Decision { kind, attrs });
    }
    if let Some(i) = out.iter().position(|d| d.kind.closes()) {
        if i + 1 != out.len() {
            return Err(format!(
                "decisions[{i}] ({}) closes the workflow execution and must be the last \
                 decision",
                out[i].kind.as_str()
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decisions_read_with_their_attributes_and_a_close_must_be_last() {
        let d = parse(Some(&json!([
            {"decisionType": "StartTimer",
             "startTimerDecisionAttributes": {"timerId": "t", "startToFireTimeout": "5"}},
            {"decisionType": "CompleteWorkflowExecution"}
        ])))
        .unwrap();
        assert_eq!(d[0].kind, DecisionType::StartTimer);
        assert_eq!(d[0].str("timerId"), Some("t"));
        assert!(d[1].attrs.is_empty());
        assert!(parse(Some(&json!([
            {"decisionType": "CompleteWorkflowExecution"},
            {"decisionType": "RecordMarker"}
        ])))
        .unwrap_err()
        .contains("must be the last"));
        assert!(parse(Some(&json!([{"decisionType": "Nope"}]))).is_err());
    }
}

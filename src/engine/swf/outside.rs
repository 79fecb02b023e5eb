//! What reaches an execution from outside its decider: signals, cancellation requests and
//! termination.

use super::cx::Cx;
use super::execution::CloseStatus;
use super::{Call, ExternalRef};
use crate::engine::{Action, Input};
use serde_json::{json, Value};

/// `SignalWorkflowExecution`, a signal CloudEvent, or another run's signal (`from`, told
/// that it arrived).
pub fn signal(cx: &mut Cx, name: String, input: Option<String>, from: Option<ExternalRef>) {
    if !cx.exec.is_open() {
        return;
    }
    let (external, initiated) = from_attrs(&from);
    cx.record(
        "WorkflowExecutionSignaled",
        vec![
            ("signalName", json!(name)),
            ("input", json!(input)),
            ("externalWorkflowExecution", external),
            ("externalInitiatedEventId", initiated),
        ],
    );
    confirm(cx, from);
}

/// `RequestCancelWorkflowExecution` (or another run's): recorded for the decider, which
/// decides how to stop.
pub fn request_cancel(cx: &mut Cx, from: Option<ExternalRef>) {
    if !cx.exec.is_open() {
        return;
    }
    if !cx.exec.cancel_requested {
        cx.exec.cancel_requested = true;
        let (external, initiated) = from_attrs(&from);
        cx.record(
            "WorkflowExecutionCancelRequested",
            vec![
                ("externalWorkflowExecution", external),
                ("externalInitiatedEventId", initiated),
            ],
        );
    }
    confirm(cx, from);
}

fn from_attrs(from: &Option<ExternalRef>) -> (Value, Value) {
    match from {
        Some(f) => (
            json!({"workflowId": f.workflow_id, "runId": f.run_id}),
            json!(f.initiated),
        ),
        None => (Value::Null, Value::Null),
    }
}

/// Tells the run behind an external signal or cancel request that it arrived.
fn confirm(cx: &mut Cx, from: Option<ExternalRef>) {
    if let Some(f) = from {
        let call = Call::ExternalDone {
            initiated: f.initiated,
            run_id: cx.exec.run_id.clone(),
        };
        cx.out.push(Action::Send {
            to: f.instance,
            input: Box::new(Input::Swf { call }),
        });
    }
}

/// `TerminateWorkflowExecution`: closes the run at once.
pub fn terminate(
    cx: &mut Cx,
    reason: Option<String>,
    details: Option<String>,
    child_policy: Option<String>,
) {
    if !cx.exec.is_open() {
        return;
    }
    let policy = child_policy.unwrap_or_else(|| cx.exec.child_policy.clone());
    cx.record(
        "WorkflowExecutionTerminated",
        vec![
            ("reason", json!(reason)),
            ("details", json!(details)),
            ("childPolicy", json!(policy)),
            ("cause", json!(null)),
        ],
    );
    cx.close(CloseStatus::Terminated, details.as_deref(), None);
}

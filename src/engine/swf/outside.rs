//! What reaches an execution from outside its decider: signals, cancellation requests and
//! termination.

use super::cx::Cx;
use super::execution::CloseStatus;
use serde_json::json;

/// `SignalWorkflowExecution` (or a signal CloudEvent).
pub fn signal(cx: &mut Cx, name: String, input: Option<String>) {
    if cx.exec.is_open() {
        cx.record(
            "WorkflowExecutionSignaled",
            vec![("signalName", json!(name)), ("input", json!(input))],
        );
    }
}

/// `RequestCancelWorkflowExecution`: recorded for the decider, which decides how to stop.
pub fn request_cancel(cx: &mut Cx) {
    if cx.exec.is_open() && !cx.exec.cancel_requested {
        cx.exec.cancel_requested = true;
        cx.record("WorkflowExecutionCancelRequested", vec![]);
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

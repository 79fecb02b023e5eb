//! A run's relatives: the child runs it starts (`StartChildWorkflowExecution`), the runs it
//! signals or asks to cancel (`SignalExternalWorkflowExecution`,
//! `RequestCancelExternalWorkflowExecution`), and its parent. They may live on other state
//! partitions: they are told with `Action::Send` / `Action::SendToRun`, and answer the same
//! way, so each side records its events as SWF records them. When a run closes, its parent
//! learns how, and its open children get what its child policy says.

use super::cx::Cx;
use super::execution::{CloseStatus, OpenChild, OpenExternal};
use super::start::{default_cause, start_attributes};
use super::{Call, ExternalRef, SwfError};
use crate::engine::instance::ErrorInfo;
use crate::engine::{Action, Input};
use crate::swf::decision::{Decision, DecisionType};
use crate::swf::registry::{Registered, RegistrationStatus, TypeId};
use crate::swf::RunKey;
use serde_json::{json, Value};

/// `StartChildWorkflowExecution`: `StartChildWorkflowExecutionInitiated`, then the child's
/// start on its workflow id's partition (or `StartChildWorkflowExecutionFailed`).
pub fn start_child(cx: &mut Cx, d: &Decision, done: i64, types: &[Registered]) {
    let workflow_id = d.str("workflowId").unwrap_or_default().to_string();
    let type_value = d.attrs.get("workflowType").cloned().unwrap_or(Value::Null);
    let control = d.str("control").map(str::to_string);
    let fail = |cx: &mut Cx, cause: &str, initiated: i64| {
        cx.record(
            "StartChildWorkflowExecutionFailed",
            vec![
                ("workflowType", type_value.clone()),
                ("cause", json!(cause)),
                ("workflowId", json!(workflow_id)),
                ("initiatedEventId", json!(initiated)),
                ("decisionTaskCompletedEventId", json!(done)),
                ("control", json!(control)),
            ],
        );
    };
    let Some(type_id) = TypeId::from_wire(&type_value) else {
        return fail(cx, "WORKFLOW_TYPE_DOES_NOT_EXIST", 0);
    };
    let t = match types.iter().find(|t| t.id == type_id) {
        None => return fail(cx, "WORKFLOW_TYPE_DOES_NOT_EXIST", 0),
        Some(t) if t.status == RegistrationStatus::Deprecated => {
            return fail(cx, "WORKFLOW_TYPE_DEPRECATED", 0)
        }
        Some(t) => t,
    };
    if cx.exec.children.contains_key(&workflow_id) {
        return fail(cx, "WORKFLOW_ALREADY_RUNNING", 0);
    }
    let Ok(parts) = crate::cluster::partition::Partitions::new(usize::from(cx.exec.partitions))
    else {
        return fail(cx, "OPERATION_NOT_PERMITTED", 0);
    };
    let mut attrs = match start_attributes(&d.attrs, t, &cx.exec.domain, &workflow_id) {
        Ok(a) => a,
        Err(SwfError::DefaultUndefined(m)) => return fail(cx, default_cause(&m), 0),
        Err(_) => return fail(cx, "OPERATION_NOT_PERMITTED", 0),
    };
    let initiated = cx.record(
        "StartChildWorkflowExecutionInitiated",
        vec![
            ("workflowId", json!(workflow_id)),
            ("workflowType", type_id.wire()),
            ("control", json!(control)),
            ("input", attrs.get("input").cloned().unwrap_or(Value::Null)),
            (
                "executionStartToCloseTimeout",
                attrs["executionStartToCloseTimeout"].clone(),
            ),
            ("taskList", attrs["taskList"].clone()),
            (
                "taskPriority",
                attrs.get("taskPriority").cloned().unwrap_or(Value::Null),
            ),
            ("decisionTaskCompletedEventId", json!(done)),
            ("childPolicy", attrs["childPolicy"].clone()),
            (
                "taskStartToCloseTimeout",
                attrs["taskStartToCloseTimeout"].clone(),
            ),
            (
                "tagList",
                attrs.get("tagList").cloned().unwrap_or(Value::Null),
            ),
            (
                "lambdaRole",
                attrs.get("lambdaRole").cloned().unwrap_or(Value::Null),
            ),
        ],
    );
    attrs["parentWorkflowExecution"] = cx.exec.wire_id();
    attrs["parentInitiatedEventId"] = json!(initiated);
    attrs["parentInstance"] = json!(cx.inst.id);
    attrs["partitions"] = json!(cx.exec.partitions);
    let key = RunKey {
        domain: cx.exec.domain.clone(),
        workflow_id: workflow_id.clone(),
    };
    let seed = format!("{}/child/{initiated}", cx.inst.id);
    let uuid = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, seed.as_bytes());
    let instance = key.instance(parts, uuid).to_string();
    cx.exec.children.insert(
        workflow_id.clone(),
        OpenChild {
            workflow_id,
            workflow_type: type_id,
            instance: instance.clone(),
            initiated,
            started: None,
            run_id: None,
            control,
            decided: done,
        },
    );
    cx.out.push(Action::StartChild {
        id: instance,
        workflow_id: crate::swf::EXECUTIONS.into(),
        input: attrs,
        // a refused start comes back as `ChildFailed`
        wait: true,
    });
}

/// `SignalExternalWorkflowExecution` / `RequestCancelExternalWorkflowExecution`.
pub fn external(cx: &mut Cx, d: &Decision, done: i64) {
    let signal = d.kind == DecisionType::SignalExternalWorkflowExecution;
    let workflow_id = d.str("workflowId").unwrap_or_default().to_string();
    let run_id = d.str("runId").filter(|r| !r.is_empty()).map(str::to_string);
    let control = d.str("control").map(str::to_string);
    let mut pairs = vec![
        ("workflowId", json!(workflow_id)),
        ("runId", json!(run_id)),
        ("decisionTaskCompletedEventId", json!(done)),
        ("control", json!(control)),
    ];
    if signal {
        pairs.push(("signalName", json!(d.str("signalName"))));
        pairs.push(("input", json!(d.str("input"))));
    }
    let kind = if signal {
        "SignalExternalWorkflowExecutionInitiated"
    } else {
        "RequestCancelExternalWorkflowExecutionInitiated"
    };
    let initiated = cx.record(kind, pairs);
    cx.exec.externals.insert(
        initiated,
        OpenExternal {
            signal,
            workflow_id: workflow_id.clone(),
            run_id: run_id.clone(),
            control,
            decided: done,
        },
    );
    let from = ExternalRef {
        instance: cx.inst.id.clone(),
        initiated,
        workflow_id: cx.exec.workflow_id.clone(),
        run_id: cx.exec.run_id.clone(),
    };
    let call = if signal {
        Call::ExternalSignal {
            name: d.str("signalName").unwrap_or_default().to_string(),
            input: d.str("input").map(str::to_string),
            from,
        }
    } else {
        Call::ExternalCancel { from }
    };
    cx.out.push(Action::SendToRun {
        key: RunKey {
            domain: cx.exec.domain.clone(),
            workflow_id,
        },
        run_id,
        call: Box::new(call),
        failed: Box::new(Input::Swf {
            call: Call::ExternalFailed { initiated },
        }),
    });
}

/// The run an external signal or cancel request went to took it.
pub fn external_done(cx: &mut Cx, initiated: i64, run_id: String) {
    let Some(e) = cx.exec.externals.remove(&initiated) else {
        return;
    };
    let kind = if e.signal {
        "ExternalWorkflowExecutionSignaled"
    } else {
        "ExternalWorkflowExecutionCancelRequested"
    };
    cx.record(
        kind,
        vec![
            (
                "workflowExecution",
                json!({"workflowId": e.workflow_id, "runId": run_id}),
            ),
            ("initiatedEventId", json!(initiated)),
        ],
    );
}

/// No open run took an external signal or cancel request.
pub fn external_failed(cx: &mut Cx, initiated: i64) {
    let Some(e) = cx.exec.externals.remove(&initiated) else {
        return;
    };
    let kind = if e.signal {
        "SignalExternalWorkflowExecutionFailed"
    } else {
        "RequestCancelExternalWorkflowExecutionFailed"
    };
    cx.record(
        kind,
        vec![
            ("workflowId", json!(e.workflow_id)),
            ("runId", json!(e.run_id)),
            ("cause", json!("UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION")),
            ("initiatedEventId", json!(initiated)),
            ("decisionTaskCompletedEventId", json!(e.decided)),
            ("control", json!(e.control)),
        ],
    );
}

fn child_by_initiated(cx: &Cx, initiated: i64) -> Option<String> {
    cx.exec
        .children
        .values()
        .find(|c| c.initiated == initiated)
        .map(|c| c.workflow_id.clone())
}

/// A child started: `ChildWorkflowExecutionStarted`.
pub fn child_started(cx: &mut Cx, initiated: i64, run_id: String) {
    let Some(wid) = child_by_initiated(cx, initiated) else {
        return;
    };
    let c = &cx.exec.children[&wid];
    if c.started.is_some() {
        return;
    }
    let attrs = vec![
        (
            "workflowExecution",
            json!({"workflowId": wid, "runId": run_id}),
        ),
        ("workflowType", c.workflow_type.wire()),
        ("initiatedEventId", json!(initiated)),
    ];
    let started = cx.record("ChildWorkflowExecutionStarted", attrs);
    if let Some(c) = cx.exec.children.get_mut(&wid) {
        c.started = Some(started);
        c.run_id = Some(run_id);
    }
}

/// A child's start was refused (its workflow id has an open run).
pub fn child_refused(cx: &mut Cx, instance: &str, error: &ErrorInfo) {
    let Some(wid) = cx
        .exec
        .children
        .values()
        .find(|c| c.instance == instance && c.started.is_none())
        .map(|c| c.workflow_id.clone())
    else {
        return;
    };
    let c = cx.exec.children.remove(&wid).expect("found above");
    let cause = if error.message.contains("is open") {
        "WORKFLOW_ALREADY_RUNNING"
    } else {
        "OPERATION_NOT_PERMITTED"
    };
    cx.record(
        "StartChildWorkflowExecutionFailed",
        vec![
            ("workflowType", c.workflow_type.wire()),
            ("cause", json!(cause)),
            ("workflowId", json!(wid)),
            ("initiatedEventId", json!(c.initiated)),
            ("decisionTaskCompletedEventId", json!(c.decided)),
            ("control", json!(c.control)),
        ],
    );
}

/// A child closed: `ChildWorkflowExecution<Completed|Failed|Canceled|Terminated|TimedOut>`.
pub fn child_closed(
    cx: &mut Cx,
    initiated: i64,
    status: CloseStatus,
    result: Option<String>,
    reason: Option<String>,
    details: Option<String>,
) {
    let Some(wid) = child_by_initiated(cx, initiated) else {
        return;
    };
    let c = cx.exec.children.remove(&wid).expect("found above");
    let mut pairs = vec![
        (
            "workflowExecution",
            json!({"workflowId": wid, "runId": c.run_id}),
        ),
        ("workflowType", c.workflow_type.wire()),
        ("initiatedEventId", json!(initiated)),
        ("startedEventId", json!(c.started.unwrap_or(0))),
    ];
    let kind = match status {
        CloseStatus::Completed => {
            pairs.push(("result", json!(result)));
            "ChildWorkflowExecutionCompleted"
        }
        CloseStatus::Failed => {
            pairs.push(("reason", json!(reason)));
            pairs.push(("details", json!(details)));
            "ChildWorkflowExecutionFailed"
        }
        CloseStatus::Canceled => {
            pairs.push(("details", json!(details)));
            "ChildWorkflowExecutionCanceled"
        }
        CloseStatus::Terminated => "ChildWorkflowExecutionTerminated",
        CloseStatus::TimedOut => {
            pairs.push(("timeoutType", json!("START_TO_CLOSE")));
            "ChildWorkflowExecutionTimedOut"
        }
        // the chain goes on as a new run of the same workflow id (docs/swf.md)
        CloseStatus::ContinuedAsNew => return,
    };
    cx.record(kind, pairs);
}

/// When the run closed during this input: its parent learns how, and its open children get
/// what its child policy says (`TERMINATE`, `REQUEST_CANCEL`, or nothing for `ABANDON`).
pub fn on_close(cx: &mut Cx) {
    if !cx.closed_now {
        return;
    }
    let Some((_, status)) = cx.exec.closed else {
        return;
    };
    if let Some(p) = cx.exec.parent.clone() {
        let last = cx
            .exec
            .events
            .iter()
            .rev()
            .find(|e| e.kind.starts_with("WorkflowExecution"));
        let text = |name: &str| last.and_then(|e| e.attr_str(name)).map(str::to_string);
        let call = Call::ChildClosed {
            initiated: p.initiated,
            status,
            result: text("result"),
            reason: text("reason"),
            details: text("details"),
        };
        cx.out.push(Action::Send {
            to: p.instance,
            input: Box::new(Input::Swf { call }),
        });
    }
    let policy = cx.exec.child_policy.clone();
    for c in std::mem::take(&mut cx.exec.children).into_values() {
        let call = match policy.as_str() {
            "TERMINATE" => Call::Terminate {
                reason: Some("the parent closed (child policy TERMINATE)".into()),
                details: None,
                child_policy: None,
            },
            "REQUEST_CANCEL" => Call::RequestCancel,
            _ => continue,
        };
        cx.out.push(Action::Send {
            to: c.instance,
            input: Box::new(Input::Swf { call }),
        });
    }
}

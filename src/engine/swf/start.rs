//! A run from its start attributes: `WorkflowExecutionStarted`, the first decision task,
//! the execution's deadline. [`start_attributes`] resolves a request against its type's
//! registered defaults (for `StartWorkflowExecution`, and for the runs a decision starts).

use super::cx::Cx;
use super::execution::{DecisionTask, Execution};
use super::SwfError;
use crate::engine::instance::Instance;
use crate::engine::EngineError;
use crate::swf::registry::{Registered, TypeId};
use crate::swf::Timeout;
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

/// The start attributes of a run of type `t`: the request's members, each missing one
/// taken from the type's `default*` registration (`DefaultUndefinedFault` when neither
/// sets it). The result is what [`start`] reads.
pub fn start_attributes(
    req: &Map<String, Value>,
    t: &Registered,
    domain: &str,
    workflow_id: &str,
) -> Result<Value, SwfError> {
    let pick = |name: &str, default: &str| -> Option<Value> {
        req.get(name)
            .filter(|v| !v.is_null())
            .cloned()
            .or_else(|| t.defaults.get(default).cloned())
    };
    let need = |name: &str, default: &str| {
        pick(name, default).ok_or_else(|| {
            SwfError::DefaultUndefined(format!(
                "{name} is not set in the request and workflow type {}/{} registers no {default}",
                t.id.name, t.id.version
            ))
        })
    };
    let task_list = need("taskList", "defaultTaskList")?;
    let exec_timeout = need(
        "executionStartToCloseTimeout",
        "defaultExecutionStartToCloseTimeout",
    )?;
    let task_timeout = need("taskStartToCloseTimeout", "defaultTaskStartToCloseTimeout")?;
    let child_policy = need("childPolicy", "defaultChildPolicy")?;
    if task_list
        .get("name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(SwfError::Validation("taskList needs a name".into()));
    }
    if !child_policy.is_string() {
        return Err(SwfError::Validation(
            "childPolicy is one of TERMINATE, REQUEST_CANCEL, ABANDON".into(),
        ));
    }
    for (name, v) in [
        ("executionStartToCloseTimeout", &exec_timeout),
        ("taskStartToCloseTimeout", &task_timeout),
    ] {
        let text = v.as_str().unwrap_or_default();
        Timeout::parse(text).map_err(|e| SwfError::Validation(format!("{name}: {e}")))?;
    }
    if exec_timeout.as_str() == Some("NONE") {
        return Err(SwfError::Validation(
            "executionStartToCloseTimeout cannot be NONE: an execution must have a deadline".into(),
        ));
    }
    let mut out = json!({
        "domain": domain,
        "workflowId": workflow_id,
        "workflowType": t.id.wire(),
        "taskList": task_list,
        "executionStartToCloseTimeout": exec_timeout,
        "taskStartToCloseTimeout": task_timeout,
        "childPolicy": child_policy,
    });
    for (name, default) in [
        ("taskPriority", "defaultTaskPriority"),
        ("lambdaRole", "defaultLambdaRole"),
    ] {
        if let Some(v) = pick(name, default) {
            out[name] = v;
        }
    }
    for name in ["input", "tagList", "continuedExecutionRunId"] {
        if let Some(v) = req.get(name).filter(|v| !v.is_null()) {
            out[name] = v.clone();
        }
    }
    Ok(out)
}

/// The `...Failed` cause for a start attribute neither the decision nor the registration
/// sets (from [`SwfError::DefaultUndefined`]'s message).
pub fn default_cause(message: &str) -> &'static str {
    if message.starts_with("taskList") {
        "DEFAULT_TASK_LIST_UNDEFINED"
    } else if message.starts_with("executionStartToCloseTimeout") {
        "DEFAULT_EXECUTION_START_TO_CLOSE_TIMEOUT_UNDEFINED"
    } else if message.starts_with("taskStartToCloseTimeout") {
        "DEFAULT_TASK_START_TO_CLOSE_TIMEOUT_UNDEFINED"
    } else {
        "DEFAULT_CHILD_POLICY_UNDEFINED"
    }
}

fn text(v: &Value, name: &str) -> Result<String, SwfError> {
    v.get(name)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| SwfError::Validation(format!("{name} is required")))
}

fn timeout(v: &Value, name: &str) -> Result<Timeout, SwfError> {
    Timeout::parse(&text(v, name)?).map_err(|e| SwfError::Validation(format!("{name}: {e}")))
}

/// Starts the run held by `inst` from its resolved start attributes.
pub fn start(inst: Instance, a: Value, now: DateTime<Utc>) -> Result<Cx, EngineError> {
    let workflow_type = a
        .get("workflowType")
        .and_then(TypeId::from_wire)
        .ok_or_else(|| SwfError::Validation("workflowType is required".into()))?;
    let task_list = a
        .pointer("/taskList/name")
        .and_then(Value::as_str)
        .ok_or_else(|| SwfError::Validation("taskList.name is required".into()))?
        .to_string();
    let exec = Execution {
        domain: text(&a, "domain")?,
        workflow_id: text(&a, "workflowId")?,
        run_id: crate::swf::run_id_of(&inst.id).to_string(),
        workflow_type,
        task_list,
        task_priority: a
            .get("taskPriority")
            .and_then(Value::as_str)
            .map(str::to_string),
        execution_timeout: timeout(&a, "executionStartToCloseTimeout")?,
        task_timeout: timeout(&a, "taskStartToCloseTimeout")?,
        child_policy: text(&a, "childPolicy")?,
        tag_list: a
            .get("tagList")
            .and_then(|t| serde_json::from_value(t.clone()).ok())
            .unwrap_or_default(),
        lambda_role: a
            .get("lambdaRole")
            .and_then(Value::as_str)
            .map(str::to_string),
        started_at: now,
        closed: None,
        events: Vec::new(),
        decision: DecisionTask::None,
        decide_again: false,
        previous_started: 0,
        activities: Default::default(),
        timers: Default::default(),
        cancel_requested: false,
        latest_context: None,
        latest_activity_at: None,
        partitions: a
            .get("partitions")
            .and_then(Value::as_u64)
            .and_then(|n| u16::try_from(n).ok())
            .unwrap_or(0),
        parent: match (
            a.get("parentInstance").and_then(Value::as_str),
            a.get("parentInitiatedEventId").and_then(Value::as_i64),
        ) {
            (Some(instance), Some(initiated)) => Some(super::execution::ParentLink {
                instance: instance.to_string(),
                initiated,
            }),
            _ => None,
        },
        children: Default::default(),
        lambdas: Default::default(),
        externals: Default::default(),
    };
    let mut inst = inst;
    inst.data = a.get("input").cloned().unwrap_or(Value::Null);
    let mut cx = Cx::new(inst, exec, now);
    let started: Vec<(&str, Value)> = vec![
        ("input", a.get("input").cloned().unwrap_or(Value::Null)),
        (
            "executionStartToCloseTimeout",
            json!(cx.exec.execution_timeout.wire()),
        ),
        (
            "taskStartToCloseTimeout",
            json!(cx.exec.task_timeout.wire()),
        ),
        ("childPolicy", json!(cx.exec.child_policy)),
        ("taskList", json!({"name": cx.exec.task_list})),
        ("taskPriority", json!(cx.exec.task_priority)),
        ("workflowType", cx.exec.workflow_type.wire()),
        (
            "tagList",
            if cx.exec.tag_list.is_empty() {
                Value::Null
            } else {
                json!(cx.exec.tag_list)
            },
        ),
        (
            "continuedExecutionRunId",
            a.get("continuedExecutionRunId")
                .cloned()
                .unwrap_or(Value::Null),
        ),
        (
            "parentWorkflowExecution",
            a.get("parentWorkflowExecution")
                .cloned()
                .unwrap_or(Value::Null),
        ),
        (
            "parentInitiatedEventId",
            a.get("parentInitiatedEventId").cloned().unwrap_or(json!(0)),
        ),
        ("lambdaRole", json!(cx.exec.lambda_role)),
    ];
    cx.record("WorkflowExecutionStarted", started);
    if let Some(secs) = cx.exec.execution_timeout.0 {
        cx.arm("wf", secs);
    }
    if let Some(p) = cx.exec.parent.clone() {
        let call = super::Call::ChildStarted {
            initiated: p.initiated,
            run_id: cx.exec.run_id.clone(),
        };
        cx.out.push(crate::engine::Action::Send {
            to: p.instance,
            input: Box::new(crate::engine::Input::Swf { call }),
        });
    }
    Ok(cx)
}

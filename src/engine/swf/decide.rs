//! A decision task's decisions, carried out in order as SWF carries them out: each records
//! its event, or its `...Failed` event with a cause, linked to the task's
//! `DecisionTaskCompleted`. A closing decision fails with `UNHANDLED_DECISION` when
//! something the decider has not seen happened while it decided.

use super::cx::Cx;
use super::execution::{CloseStatus, DecisionTask, OpenActivity};
use super::{start_attributes, SwfError};
use crate::engine::instance::ErrorInfo;
use crate::engine::{Action, EngineError};
use crate::swf::decision::{Decision, DecisionType};
use crate::swf::registry::{Registered, RegistrationStatus, TypeId};
use crate::swf::task::{TaskKind, TaskQueue};
use crate::swf::Timeout;
use serde_json::{json, Value};

/// `RespondDecisionTaskCompleted` for the task scheduled by `scheduled` and started by
/// `started`.
pub fn completed(
    cx: &mut Cx,
    scheduled: i64,
    started: i64,
    decisions: Vec<Decision>,
    context: Option<String>,
    types: &[Registered],
) -> Result<(), EngineError> {
    if !cx.exec.is_open() || cx.exec.decision != (DecisionTask::Started { scheduled, started }) {
        return Err(cx.unknown("decision task"));
    }
    for (i, d) in decisions.iter().enumerate() {
        check(d).map_err(|e| SwfError::Validation(format!("decisions[{i}]: {e}")))?;
    }
    cx.disarm(&format!("d{scheduled}"));
    let done = cx.record(
        "DecisionTaskCompleted",
        vec![
            ("executionContext", json!(context)),
            ("scheduledEventId", json!(scheduled)),
            ("startedEventId", json!(started)),
        ],
    );
    cx.exec.previous_started = started;
    if context.is_some() {
        cx.exec.latest_context = context;
    }
    let unhandled = cx.exec.decide_again;
    cx.exec.decision = DecisionTask::None;
    cx.deciding = true;
    for d in decisions {
        if !cx.exec.is_open() {
            break;
        }
        decide(cx, d, done, unhandled, types);
    }
    Ok(())
}

/// The attributes a decision cannot go without (a `ValidationException` for the request).
fn check(d: &Decision) -> Result<(), String> {
    let required: &[&str] = match d.kind {
        DecisionType::ScheduleActivityTask => &["activityType", "activityId"],
        DecisionType::RequestCancelActivityTask => &["activityId"],
        DecisionType::RecordMarker => &["markerName"],
        DecisionType::StartTimer => &["timerId", "startToFireTimeout"],
        DecisionType::CancelTimer => &["timerId"],
        DecisionType::SignalExternalWorkflowExecution => &["workflowId", "signalName"],
        DecisionType::RequestCancelExternalWorkflowExecution => &["workflowId"],
        DecisionType::StartChildWorkflowExecution => &["workflowType", "workflowId"],
        DecisionType::ScheduleLambdaFunction => &["id", "name"],
        _ => &[],
    };
    for name in required {
        if d.attrs.get(*name).is_none_or(Value::is_null) {
            return Err(format!("{}.{name} is required", d.kind.attributes_field()));
        }
    }
    if d.kind == DecisionType::ScheduleActivityTask
        && TypeId::from_wire(&d.attrs["activityType"]).is_none()
    {
        return Err("activityType needs a name and a version".into());
    }
    if d.kind == DecisionType::StartTimer {
        let t = d.str("startToFireTimeout").unwrap_or_default();
        if t.parse::<u64>().is_err() {
            return Err(format!(
                "startToFireTimeout {t:?} is not a number of seconds"
            ));
        }
    }
    Ok(())
}

fn decide(cx: &mut Cx, d: Decision, done: i64, unhandled: bool, types: &[Registered]) {
    let link = ("decisionTaskCompletedEventId", json!(done));
    match d.kind {
        DecisionType::ScheduleActivityTask => schedule_activity(cx, &d, done, types),
        DecisionType::RequestCancelActivityTask => {
            let id = d.str("activityId").unwrap_or_default().to_string();
            let Some(a) = cx.exec.activities.get(&id).cloned() else {
                cx.record(
                    "RequestCancelActivityTaskFailed",
                    vec![
                        ("activityId", json!(id)),
                        ("cause", json!("ACTIVITY_ID_UNKNOWN")),
                        link,
                    ],
                );
                return;
            };
            let req = cx.record(
                "ActivityTaskCancelRequested",
                vec![link, ("activityId", json!(id))],
            );
            if a.started.is_none() {
                super::tasks::close_activity(cx, &id);
                cx.record(
                    "ActivityTaskCanceled",
                    vec![
                        ("scheduledEventId", json!(a.scheduled)),
                        ("startedEventId", json!(0)),
                        ("latestCancelRequestedEventId", json!(req)),
                    ],
                );
            } else if let Some(open) = cx.exec.activities.get_mut(&id) {
                open.cancel_requested = Some(req);
            }
        }
        DecisionType::StartTimer => {
            let id = d.str("timerId").unwrap_or_default().to_string();
            if cx.exec.timers.contains_key(&id) {
                cx.record(
                    "StartTimerFailed",
                    vec![
                        ("timerId", json!(id)),
                        ("cause", json!("TIMER_ID_ALREADY_IN_USE")),
                        link,
                    ],
                );
                return;
            }
            let secs = d
                .str("startToFireTimeout")
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            let started = cx.record(
                "TimerStarted",
                vec![
                    ("timerId", json!(id)),
                    ("control", json!(d.str("control"))),
                    ("startToFireTimeout", json!(secs.to_string())),
                    link,
                ],
            );
            cx.exec
                .timers
                .insert(id.clone(), super::execution::OpenTimer { started });
            cx.arm(&format!("t/{id}"), secs);
        }
        DecisionType::CancelTimer => {
            let id = d.str("timerId").unwrap_or_default().to_string();
            match cx.exec.timers.remove(&id) {
                None => {
                    cx.record(
                        "CancelTimerFailed",
                        vec![
                            ("timerId", json!(id)),
                            ("cause", json!("TIMER_ID_UNKNOWN")),
                            link,
                        ],
                    );
                }
                Some(t) => {
                    cx.disarm(&format!("t/{id}"));
                    cx.record(
                        "TimerCanceled",
                        vec![
                            ("timerId", json!(id)),
                            ("startedEventId", json!(t.started)),
                            link,
                        ],
                    );
                }
            }
        }
        DecisionType::RecordMarker => {
            cx.record(
                "MarkerRecorded",
                vec![
                    ("markerName", json!(d.str("markerName"))),
                    ("details", json!(d.str("details"))),
                    link,
                ],
            );
        }
        DecisionType::CompleteWorkflowExecution
        | DecisionType::FailWorkflowExecution
        | DecisionType::CancelWorkflowExecution
        | DecisionType::ContinueAsNewWorkflowExecution
            if unhandled =>
        {
            let failed = format!("{}Failed", d.kind.as_str());
            cx.record(&failed, vec![("cause", json!("UNHANDLED_DECISION")), link]);
        }
        DecisionType::CompleteWorkflowExecution => {
            let result = d.str("result").map(str::to_string);
            cx.record(
                "WorkflowExecutionCompleted",
                vec![("result", json!(result)), link],
            );
            cx.close(CloseStatus::Completed, result.as_deref(), None);
        }
        DecisionType::FailWorkflowExecution => {
            let (reason, details) = (d.str("reason"), d.str("details"));
            cx.record(
                "WorkflowExecutionFailed",
                vec![("reason", json!(reason)), ("details", json!(details)), link],
            );
            let error = ErrorInfo::new(reason.unwrap_or("FAILED"), details.unwrap_or_default());
            cx.close(CloseStatus::Failed, None, Some(error));
        }
        DecisionType::CancelWorkflowExecution => {
            cx.record(
                "WorkflowExecutionCanceled",
                vec![("details", json!(d.str("details"))), link],
            );
            cx.close(CloseStatus::Canceled, None, None);
        }
        DecisionType::ContinueAsNewWorkflowExecution => continue_as_new(cx, &d, done, types),
        DecisionType::StartChildWorkflowExecution => {
            super::relatives::start_child(cx, &d, done, types)
        }
        DecisionType::SignalExternalWorkflowExecution
        | DecisionType::RequestCancelExternalWorkflowExecution => {
            super::relatives::external(cx, &d, done)
        }
        DecisionType::ScheduleLambdaFunction => super::lambda::schedule(cx, &d, done),
    }
}

fn schedule_activity(cx: &mut Cx, d: &Decision, done: i64, types: &[Registered]) {
    let type_id = TypeId::from_wire(&d.attrs["activityType"]).expect("checked");
    let activity_id = d.str("activityId").unwrap_or_default().to_string();
    let fail = |cx: &mut Cx, cause: &str| {
        cx.record(
            "ScheduleActivityTaskFailed",
            vec![
                ("activityType", type_id.wire()),
                ("activityId", json!(activity_id)),
                ("cause", json!(cause)),
                ("decisionTaskCompletedEventId", json!(done)),
            ],
        );
    };
    let Some(t) = types.iter().find(|t| t.id == type_id) else {
        return fail(cx, "ACTIVITY_TYPE_DOES_NOT_EXIST");
    };
    if t.status == RegistrationStatus::Deprecated {
        return fail(cx, "ACTIVITY_TYPE_DEPRECATED");
    }
    if cx.exec.activities.contains_key(&activity_id) {
        return fail(cx, "ACTIVITY_ID_ALREADY_IN_USE");
    }
    let value = |name: &str, default: &str| -> Option<Value> {
        d.attrs
            .get(name)
            .filter(|v| !v.is_null())
            .or_else(|| t.defaults.get(default))
            .cloned()
    };
    let Some(task_list) = value("taskList", "defaultTaskList")
        .and_then(|l| l.get("name").and_then(Value::as_str).map(str::to_string))
    else {
        return fail(cx, "DEFAULT_TASK_LIST_UNDEFINED");
    };
    let mut timeouts = [Timeout(None); 4];
    let names = [
        (
            "scheduleToStartTimeout",
            "defaultTaskScheduleToStartTimeout",
            "DEFAULT_SCHEDULE_TO_START_TIMEOUT_UNDEFINED",
        ),
        (
            "scheduleToCloseTimeout",
            "defaultTaskScheduleToCloseTimeout",
            "DEFAULT_SCHEDULE_TO_CLOSE_TIMEOUT_UNDEFINED",
        ),
        (
            "startToCloseTimeout",
            "defaultTaskStartToCloseTimeout",
            "DEFAULT_START_TO_CLOSE_TIMEOUT_UNDEFINED",
        ),
        (
            "heartbeatTimeout",
            "defaultTaskHeartbeatTimeout",
            "DEFAULT_HEARTBEAT_TIMEOUT_UNDEFINED",
        ),
    ];
    for (i, (name, default, cause)) in names.iter().enumerate() {
        let parsed = value(name, default)
            .and_then(|v| v.as_str().map(str::to_string))
            .and_then(|t| Timeout::parse(&t).ok());
        match parsed {
            Some(t) => timeouts[i] = t,
            None => return fail(cx, cause),
        }
    }
    let [s2s, s2c, st2c, hb] = timeouts;
    let priority = value("taskPriority", "defaultTaskPriority");
    let input = d.str("input").map(str::to_string);
    let scheduled = cx.record(
        "ActivityTaskScheduled",
        vec![
            ("activityType", type_id.wire()),
            ("activityId", json!(activity_id)),
            ("input", json!(input)),
            ("control", json!(d.str("control"))),
            ("scheduleToStartTimeout", json!(s2s.wire())),
            ("scheduleToCloseTimeout", json!(s2c.wire())),
            ("startToCloseTimeout", json!(st2c.wire())),
            ("taskList", json!({"name": task_list})),
            ("taskPriority", priority.unwrap_or(Value::Null)),
            ("decisionTaskCompletedEventId", json!(done)),
            ("heartbeatTimeout", json!(hb.wire())),
        ],
    );
    cx.exec.activities.insert(
        activity_id.clone(),
        OpenActivity {
            activity_id,
            activity_type: type_id,
            scheduled,
            started: None,
            task_list: task_list.clone(),
            input,
            schedule_to_start: s2s,
            schedule_to_close: s2c,
            start_to_close: st2c,
            heartbeat: hb,
            cancel_requested: None,
            details: None,
            heartbeat_due: None,
        },
    );
    if let Some(secs) = s2s.0 {
        cx.arm(&format!("a{scheduled}/s2s"), secs);
    }
    if let Some(secs) = s2c.0 {
        cx.arm(&format!("a{scheduled}/s2c"), secs);
    }
    let queue = TaskQueue {
        kind: TaskKind::Activity,
        domain: cx.exec.domain.clone(),
        list: task_list,
    };
    cx.out.push(Action::Offer { queue, scheduled });
}

/// Closes this run and starts the next of the same workflow id (a child instance of this
/// one on the same partition, its run id derived from this run's).
fn continue_as_new(cx: &mut Cx, d: &Decision, done: i64, types: &[Registered]) {
    let link = ("decisionTaskCompletedEventId", json!(done));
    let version = d
        .str("workflowTypeVersion")
        .unwrap_or(&cx.exec.workflow_type.version)
        .to_string();
    let type_id = TypeId {
        name: cx.exec.workflow_type.name.clone(),
        version,
    };
    // the run's own configuration is the default for what the decision leaves out
    let own = Registered {
        id: type_id.clone(),
        description: None,
        status: RegistrationStatus::Registered,
        created: cx.now,
        deprecated: None,
        defaults: [
            ("defaultTaskList", json!({"name": cx.exec.task_list})),
            (
                "defaultExecutionStartToCloseTimeout",
                json!(cx.exec.execution_timeout.wire()),
            ),
            (
                "defaultTaskStartToCloseTimeout",
                json!(cx.exec.task_timeout.wire()),
            ),
            ("defaultChildPolicy", json!(cx.exec.child_policy)),
            ("defaultTaskPriority", json!(cx.exec.task_priority)),
            ("defaultLambdaRole", json!(cx.exec.lambda_role)),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
    };
    let registered = if type_id == cx.exec.workflow_type {
        Some(&own)
    } else {
        types.iter().find(|t| t.id == type_id)
    };
    let cause = match registered {
        None => Some("WORKFLOW_TYPE_DOES_NOT_EXIST"),
        Some(t) if t.status == RegistrationStatus::Deprecated => Some("WORKFLOW_TYPE_DEPRECATED"),
        _ => None,
    };
    let mut req = d.attrs.clone();
    req.insert("continuedExecutionRunId".into(), json!(cx.exec.run_id));
    if req.get("tagList").is_none() && !cx.exec.tag_list.is_empty() {
        req.insert("tagList".into(), json!(cx.exec.tag_list));
    }
    let attrs = match (cause, registered) {
        (None, Some(t)) => start_attributes(&req, t, &cx.exec.domain, &cx.exec.workflow_id)
            .map_err(|e| match e {
                SwfError::DefaultUndefined(m) => super::start::default_cause(&m),
                _ => "OPERATION_NOT_PERMITTED",
            }),
        (c, _) => Err(c.unwrap_or("OPERATION_NOT_PERMITTED")),
    };
    let mut attrs = match attrs {
        Ok(a) => a,
        Err(cause) => {
            cx.record(
                "ContinueAsNewWorkflowExecutionFailed",
                vec![("cause", json!(cause)), link],
            );
            return;
        }
    };
    attrs["partitions"] = json!(cx.exec.partitions);
    let next = next_run(&cx.inst.id);
    let run_id = crate::swf::run_id_of(&next).to_string();
    cx.record(
        "WorkflowExecutionContinuedAsNew",
        vec![
            ("input", attrs.get("input").cloned().unwrap_or(Value::Null)),
            link,
            ("newExecutionRunId", json!(run_id)),
            (
                "executionStartToCloseTimeout",
                attrs["executionStartToCloseTimeout"].clone(),
            ),
            ("taskList", attrs["taskList"].clone()),
            (
                "taskPriority",
                attrs.get("taskPriority").cloned().unwrap_or(Value::Null),
            ),
            (
                "taskStartToCloseTimeout",
                attrs["taskStartToCloseTimeout"].clone(),
            ),
            ("childPolicy", attrs["childPolicy"].clone()),
            (
                "tagList",
                attrs.get("tagList").cloned().unwrap_or(Value::Null),
            ),
            ("workflowType", type_id.wire()),
            (
                "lambdaRole",
                attrs.get("lambdaRole").cloned().unwrap_or(Value::Null),
            ),
        ],
    );
    cx.close(CloseStatus::ContinuedAsNew, None, None);
    cx.out.push(Action::StartChild {
        id: next,
        workflow_id: crate::swf::EXECUTIONS.into(),
        input: attrs,
        wait: false,
    });
}

/// The instance id of the run that continues run `id`: same partition, a UUID derived from
/// this run's (deterministic, so a replayed input starts the same run).
pub fn next_run(id: &str) -> String {
    use std::str::FromStr;
    let uuid = uuid::Uuid::new_v5(
        &uuid::Uuid::NAMESPACE_URL,
        format!("{id}/continued").as_bytes(),
    );
    match crate::cluster::partition::InstanceId::from_str(id) {
        Ok(i) => crate::cluster::partition::InstanceId::new(i.partition(), uuid).to_string(),
        Err(_) => format!("{id}-next"),
    }
}

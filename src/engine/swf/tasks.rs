//! Tasks handed to pollers, what activity workers report, and every timeout: decision task
//! start-to-close, the four activity timeouts, the execution's own, and the decider's
//! timers.

use super::cx::Cx;
use super::execution::DecisionTask;
use super::ActivityOutcome;
use crate::engine::EngineError;
use crate::swf::task::TaskKind;
use serde_json::{json, Value};

/// A poller takes the task scheduled by event `scheduled`.
pub fn started(
    cx: &mut Cx,
    kind: TaskKind,
    scheduled: i64,
    identity: Option<String>,
) -> Result<(), EngineError> {
    if !cx.exec.is_open() {
        return Err(cx.unknown("task"));
    }
    match kind {
        TaskKind::Decision => {
            if cx.exec.decision != (DecisionTask::Scheduled { scheduled }) {
                return Err(cx.unknown("decision task"));
            }
            let started = cx.record(
                "DecisionTaskStarted",
                vec![
                    ("identity", json!(identity)),
                    ("scheduledEventId", json!(scheduled)),
                ],
            );
            cx.exec.decision = DecisionTask::Started { scheduled, started };
            if let Some(secs) = cx.exec.task_timeout.0 {
                cx.arm(&format!("d{scheduled}"), secs);
            }
        }
        TaskKind::Activity => {
            let Some(id) = cx
                .exec
                .activity_by_event(scheduled)
                .filter(|a| a.started.is_none())
                .map(|a| a.activity_id.clone())
            else {
                return Err(cx.unknown("activity task"));
            };
            let started = cx.record(
                "ActivityTaskStarted",
                vec![
                    ("identity", json!(identity)),
                    ("scheduledEventId", json!(scheduled)),
                ],
            );
            cx.disarm(&format!("a{scheduled}/s2s"));
            let (st2c, hb) = {
                let a = cx.exec.activities.get_mut(&id).expect("found above");
                a.started = Some(started);
                (a.start_to_close.0, a.heartbeat.0)
            };
            if let Some(secs) = st2c {
                cx.arm(&format!("a{scheduled}/st2c"), secs);
            }
            if let Some(secs) = hb {
                let due = cx.now + chrono::Duration::seconds(secs as i64);
                cx.exec
                    .activities
                    .get_mut(&id)
                    .expect("found above")
                    .heartbeat_due = Some(due);
                cx.arm_at(&format!("a{scheduled}/hb"), due);
            }
            cx.exec.latest_activity_at = Some(cx.now);
        }
    }
    Ok(())
}

/// An activity worker's report on the task its token names.
pub fn reported(
    cx: &mut Cx,
    scheduled: i64,
    started: i64,
    outcome: ActivityOutcome,
) -> Result<(), EngineError> {
    let Some(id) = cx
        .exec
        .activity_by_event(scheduled)
        .filter(|a| a.started == Some(started) && cx.exec.is_open())
        .map(|a| a.activity_id.clone())
    else {
        return Err(cx.unknown("activity task"));
    };
    cx.exec.latest_activity_at = Some(cx.now);
    let ids = [
        ("scheduledEventId", json!(scheduled)),
        ("startedEventId", json!(started)),
    ];
    match outcome {
        ActivityOutcome::Heartbeat { details } => {
            let a = cx.exec.activities.get_mut(&id).expect("found above");
            a.details = details;
            if let Some(secs) = a.heartbeat.0 {
                // the armed timer finds the later due time and waits on for it
                a.heartbeat_due = Some(cx.now + chrono::Duration::seconds(secs as i64));
            }
            return Ok(());
        }
        ActivityOutcome::Completed { result } => {
            close_activity(cx, &id);
            let mut a = vec![("result", json!(result))];
            a.extend(ids);
            cx.record("ActivityTaskCompleted", a);
        }
        ActivityOutcome::Failed { reason, details } => {
            close_activity(cx, &id);
            let mut a = vec![("reason", json!(reason)), ("details", json!(details))];
            a.extend(ids);
            cx.record("ActivityTaskFailed", a);
        }
        ActivityOutcome::Canceled { details } => {
            let requested = close_activity(cx, &id).and_then(|a| a.cancel_requested);
            let mut a = vec![
                ("details", json!(details)),
                ("latestCancelRequestedEventId", json!(requested)),
            ];
            a.extend(ids);
            cx.record("ActivityTaskCanceled", a);
        }
    }
    Ok(())
}

/// Removes activity `id` and its timers.
pub fn close_activity(cx: &mut Cx, id: &str) -> Option<super::OpenActivity> {
    let a = cx.exec.activities.remove(id)?;
    for t in ["s2s", "s2c", "st2c", "hb"] {
        cx.disarm(&format!("a{}/{t}", a.scheduled));
    }
    Some(a)
}

/// One of the execution's timers is due.
pub fn timer(cx: &mut Cx, id: &str) {
    cx.inst.timers.remove(id);
    let prefix = format!("{}/swf/", cx.inst.id);
    let Some(what) = id.strip_prefix(&prefix) else {
        return;
    };
    if !cx.exec.is_open() {
        return;
    }
    if what == "wf" {
        let policy = json!(cx.exec.child_policy);
        cx.record(
            "WorkflowExecutionTimedOut",
            vec![
                ("timeoutType", json!("START_TO_CLOSE")),
                ("childPolicy", policy),
            ],
        );
        cx.close(super::CloseStatus::TimedOut, None, None);
    } else if let Some(n) = what.strip_prefix('d').and_then(|n| n.parse::<i64>().ok()) {
        if let DecisionTask::Started { scheduled, started } = cx.exec.decision {
            if scheduled == n {
                cx.exec.decision = DecisionTask::None;
                cx.record(
                    "DecisionTaskTimedOut",
                    vec![
                        ("timeoutType", json!("START_TO_CLOSE")),
                        ("scheduledEventId", json!(scheduled)),
                        ("startedEventId", json!(started)),
                    ],
                );
            }
        }
    } else if let Some(n) = what.strip_prefix('l').and_then(|n| n.parse::<i64>().ok()) {
        super::lambda::timed_out(cx, n);
    } else if let Some(t) = what.strip_prefix("t/") {
        if let Some(open) = cx.exec.timers.remove(t) {
            cx.record(
                "TimerFired",
                vec![
                    ("timerId", json!(t)),
                    ("startedEventId", json!(open.started)),
                ],
            );
        }
    } else if let Some((n, kind)) = what.strip_prefix('a').and_then(|r| r.split_once('/')) {
        let Ok(n) = n.parse::<i64>() else { return };
        activity_timeout(cx, n, kind);
    }
}

fn activity_timeout(cx: &mut Cx, scheduled: i64, kind: &str) {
    let Some(a) = cx.exec.activity_by_event(scheduled).cloned() else {
        return;
    };
    let timeout_type = match (kind, a.started) {
        ("s2s", None) => "SCHEDULE_TO_START",
        ("s2c", _) => "SCHEDULE_TO_CLOSE",
        ("st2c", Some(_)) => "START_TO_CLOSE",
        ("hb", Some(_)) => {
            if let Some(due) = a.heartbeat_due.filter(|d| *d > cx.now) {
                cx.arm_at(&format!("a{scheduled}/hb"), due);
                return;
            }
            "HEARTBEAT"
        }
        _ => return,
    };
    close_activity(cx, &a.activity_id);
    cx.record(
        "ActivityTaskTimedOut",
        vec![
            ("timeoutType", json!(timeout_type)),
            ("scheduledEventId", json!(scheduled)),
            ("startedEventId", json!(a.started.unwrap_or(0))),
            (
                "details",
                a.details.map(Value::String).unwrap_or(Value::Null),
            ),
        ],
    );
}

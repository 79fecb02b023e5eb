//! Tasks: long polls (up to 60 s, holding no thread), the decider's and activity workers'
//! answers, heartbeats and the pending counts. A poll takes a ready task off this broker's
//! board and asks its instance to record it started; a task that went stale meanwhile is
//! skipped. Responses carry the token, which names the instance, so they are relayed to
//! its owner.

use super::{apply, invalid, ok, relay, stored, unknown, Answer, Fault, Req};
use crate::engine::swf::{execution_of, ActivityOutcome, Call, DecisionTask, Execution};
use crate::engine::Input;
use crate::http::AppState;
use crate::swf::registry::{TypeId, TypeKind};
use crate::swf::task::{TaskKind, TaskQueue, TaskToken};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use std::time::Duration;

/// How long a poll waits for a task, as SWF holds it.
pub const POLL: Duration = Duration::from_secs(60);

fn queue(r: &Req, kind: TaskKind) -> Result<TaskQueue, Fault> {
    let list = r
        .get("taskList")
        .and_then(|l| l.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("taskList.name is required"))?;
    Ok(TaskQueue {
        kind,
        domain: r.need("domain")?.to_string(),
        list: list.to_string(),
    })
}

fn kind_of(action: &str) -> TaskKind {
    if action.contains("Decision") {
        TaskKind::Decision
    } else {
        TaskKind::Activity
    }
}

/// `PollForDecisionTask` / `PollForActivityTask`.
pub async fn poll(s: &AppState, r: &Req) -> Answer {
    let kind = kind_of(&r.action);
    if let (TaskKind::Decision, Some(page)) = (kind, r.str("nextPageToken")) {
        return next_page(s, r, page).await;
    }
    let q = queue(r, kind)?;
    let deadline = tokio::time::Instant::now() + POLL;
    let peers = !r.forwarded && !super::remote_owners(s).is_empty();
    loop {
        // with other brokers, the local wait is cut in slices; between them the poll asks
        // each of them for a task ready there
        let until = match peers {
            true => deadline.min(tokio::time::Instant::now() + PEER_SLICE),
            false => deadline,
        };
        if let Some(answer) = take(s, r, kind, &q, Some(until)).await? {
            return Ok(answer);
        }
        if peers {
            if let Some(answer) = take_from_peers(s, r, kind).await {
                return Ok(answer);
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return ok(empty(kind));
        }
    }
}

/// How long a poll waits on its own broker's board before it asks the other brokers.
pub const PEER_SLICE: Duration = Duration::from_secs(1);

/// The answer to a poll that found no task.
fn empty(kind: TaskKind) -> Value {
    match kind {
        TaskKind::Decision => {
            json!({"taskToken": "", "startedEventId": 0, "previousStartedEventId": 0, "events": []})
        }
        TaskKind::Activity => json!({"taskToken": "", "startedEventId": 0}),
    }
}

/// A task of this broker's board, recorded started: waiting until `until` for one, or
/// taking only one ready now (`None`).
async fn take(
    s: &AppState,
    r: &Req,
    kind: TaskKind,
    q: &TaskQueue,
    until: Option<tokio::time::Instant>,
) -> Result<Option<axum::response::Response>, Fault> {
    let identity = r.str("identity").map(str::to_string);
    loop {
        let ready = match until {
            Some(until) => s.shared.board.wait(q, until).await,
            None => s.shared.board.take(q),
        };
        let Some(ready) = ready else {
            return Ok(None);
        };
        let call = Call::TaskStarted {
            kind,
            scheduled: ready.scheduled,
            identity: identity.clone(),
        };
        // refused when the task went stale (timed out, cancelled, the run closed): the poll
        // takes the next; any other failure puts the task back for another poll
        let rec = match apply(s, &ready.instance, Input::Swf { call }).await {
            Ok(rec) => rec,
            Err(f) if f.1 == "UnknownResourceFault" => continue,
            Err(f) => {
                s.shared.board.offer(q.clone(), ready);
                return Err(f);
            }
        };
        let Some(x) = execution_of(&rec.instance) else {
            continue;
        };
        return match kind {
            TaskKind::Decision => decision_task(r, &rec.instance.id, x, 0),
            TaskKind::Activity => activity_task(&rec.instance.id, x, ready.scheduled),
        }
        .map(Some);
    }
}

/// Internal (`FlowbrokerTake{Decision,Activity}Task`, asked by another broker's poll): a
/// task ready on this broker's board now, recorded started, or the empty answer.
pub async fn take_now(s: &AppState, r: &Req) -> Answer {
    let kind = kind_of(&r.action);
    let q = queue(r, kind)?;
    match take(s, r, kind, &q, None).await? {
        Some(answer) => Ok(answer),
        None => ok(empty(kind)),
    }
}

/// Asks every other broker, one at a time, for a task ready there: the first one's answer.
async fn take_from_peers(
    s: &AppState,
    r: &Req,
    kind: TaskKind,
) -> Option<axum::response::Response> {
    let action = match kind {
        TaskKind::Decision => super::TAKE_DECISION,
        TaskKind::Activity => super::TAKE_ACTIVITY,
    };
    let target = format!("{}{action}", super::TARGET);
    for url in super::remote_owners(s) {
        let Some(v) = super::gather::ask(s, &url, r, &target).await else {
            continue;
        };
        if v["taskToken"].as_str().is_some_and(|t| !t.is_empty()) {
            return ok(v).ok();
        }
    }
    None
}

/// A page token: the instance, the task's started event, where the next page starts, and
/// the order.
fn page_token(instance: &str, started: i64, from: usize, reverse: bool) -> String {
    URL_SAFE_NO_PAD.encode(format!(
        "{instance}\x1f{started}\x1f{from}\x1f{}",
        u8::from(reverse)
    ))
}

fn read_page_token(t: &str) -> Option<(String, i64, usize, bool)> {
    let raw = String::from_utf8(URL_SAFE_NO_PAD.decode(t).ok()?).ok()?;
    let mut it = raw.split('\x1f');
    let (i, s, f, r) = (it.next()?, it.next()?, it.next()?, it.next()?);
    Some((i.to_string(), s.parse().ok()?, f.parse().ok()?, r == "1"))
}

fn decision_task(r: &Req, id: &str, x: &Execution, from: usize) -> Answer {
    let DecisionTask::Started { scheduled, started } = x.decision else {
        return Err(unknown("the decision task is no longer open"));
    };
    let reverse = r.get("reverseOrder").and_then(Value::as_bool) == Some(true);
    let max = r
        .get("maximumPageSize")
        .and_then(Value::as_u64)
        .filter(|m| *m > 0)
        .unwrap_or(1000) as usize;
    // the task's history ends at its DecisionTaskStarted
    let upto = &x.events[..(started as usize).min(x.events.len())];
    let (events, next) = crate::swf::history::page(upto, from, max, reverse);
    let token = TaskToken {
        instance: id.to_string(),
        kind: TaskKind::Decision,
        scheduled,
        started,
    };
    let mut answer = json!({
        "taskToken": token.encode(),
        "startedEventId": started,
        "workflowExecution": x.wire_id(),
        "workflowType": x.workflow_type.wire(),
        "events": events,
        "previousStartedEventId": x.previous_started,
    });
    if let Some(n) = next {
        answer["nextPageToken"] = json!(page_token(id, started, n, reverse));
    }
    ok(answer)
}

async fn next_page(s: &AppState, r: &Req, t: &str) -> Answer {
    let bad = || invalid("nextPageToken is not one this service issued");
    let (id, started, from, reverse) = read_page_token(t).ok_or_else(bad)?;
    let p = s.peers.parts.of_instance(&id).map_err(|_| bad())?;
    if let Some(answer) = relay(s, r, p).await? {
        return Ok(answer);
    }
    let rec = stored(s, &id)?.ok_or_else(|| unknown("the execution is gone"))?;
    let x = execution_of(&rec.instance).ok_or_else(bad)?;
    match x.decision {
        DecisionTask::Started { started: now, .. } if now == started => {}
        _ => return Err(unknown("the decision task is no longer open")),
    }
    let mut body = r.body.clone();
    body.insert("reverseOrder".into(), json!(reverse));
    let r2 = Req {
        action: r.action.clone(),
        body,
        raw: r.raw.clone(),
        forwarded: r.forwarded,
    };
    decision_task(&r2, &id, x, from)
}

fn activity_task(id: &str, x: &Execution, scheduled: i64) -> Answer {
    let a = x
        .activity_by_event(scheduled)
        .ok_or_else(|| unknown("the activity task is no longer open"))?;
    let started = a.started.unwrap_or_default();
    let token = TaskToken {
        instance: id.to_string(),
        kind: TaskKind::Activity,
        scheduled,
        started,
    };
    let mut answer = json!({
        "taskToken": token.encode(),
        "activityId": a.activity_id,
        "startedEventId": started,
        "workflowExecution": x.wire_id(),
        "activityType": a.activity_type.wire(),
    });
    if let Some(i) = &a.input {
        answer["input"] = json!(i);
    }
    ok(answer)
}

/// `RespondDecisionTaskCompleted`, `RespondActivityTask*`, `RecordActivityTaskHeartbeat`.
pub async fn respond(s: &AppState, r: &Req) -> Answer {
    let raw = r.need("taskToken")?;
    let token = TaskToken::decode(raw).map_err(|e| unknown(e.to_string()))?;
    let want = kind_of(&r.action);
    if token.kind != want {
        return Err(unknown(
            "the task token is not a token of this kind of task",
        ));
    }
    let p = s
        .peers
        .parts
        .of_instance(&token.instance)
        .map_err(|e| unknown(e.to_string()))?;
    if let Some(answer) = relay(s, r, p).await? {
        return Ok(answer);
    }
    let call = match r.action.as_str() {
        "RespondDecisionTaskCompleted" => {
            let decisions = crate::swf::decision::parse(r.get("decisions")).map_err(invalid)?;
            let types = types_named(s, &token, &decisions).await?;
            Call::DecisionCompleted {
                scheduled: token.scheduled,
                started: token.started,
                decisions,
                context: r.str("executionContext").map(str::to_string),
                types,
            }
        }
        action => {
            let text = |n: &str| r.str(n).map(str::to_string);
            let outcome = match action {
                "RespondActivityTaskCompleted" => ActivityOutcome::Completed {
                    result: text("result"),
                },
                "RespondActivityTaskFailed" => ActivityOutcome::Failed {
                    reason: text("reason"),
                    details: text("details"),
                },
                "RespondActivityTaskCanceled" => ActivityOutcome::Canceled {
                    details: text("details"),
                },
                _ => ActivityOutcome::Heartbeat {
                    details: text("details"),
                },
            };
            Call::Activity {
                scheduled: token.scheduled,
                started: token.started,
                outcome,
            }
        }
    };
    let heartbeat = r.action == "RecordActivityTaskHeartbeat";
    let rec = apply(s, &token.instance, Input::Swf { call }).await?;
    if heartbeat {
        let requested = execution_of(&rec.instance)
            .and_then(|x| x.activity_by_event(token.scheduled))
            .is_some_and(|a| a.cancel_requested.is_some());
        return ok(json!({"cancelRequested": requested}));
    }
    ok(json!({}))
}

/// The registrations of the types the decisions name (activity types to schedule,
/// workflow types to continue as), read from the execution's domain.
async fn types_named(
    s: &AppState,
    token: &TaskToken,
    decisions: &[crate::swf::decision::Decision],
) -> Result<Vec<crate::swf::registry::Registered>, Fault> {
    use crate::swf::decision::DecisionType;
    let wanted: Vec<(TypeKind, Value)> = decisions
        .iter()
        .filter_map(|d| match d.kind {
            DecisionType::ScheduleActivityTask => {
                Some((TypeKind::Activity, d.attrs.get("activityType")?.clone()))
            }
            DecisionType::ContinueAsNewWorkflowExecution => d
                .str("workflowTypeVersion")
                .map(|v| (TypeKind::Workflow, json!({"version": v}))),
            DecisionType::StartChildWorkflowExecution => {
                Some((TypeKind::Workflow, d.attrs.get("workflowType")?.clone()))
            }
            _ => None,
        })
        .collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let rec = stored(s, &token.instance)?.ok_or_else(|| unknown("Unknown execution"))?;
    let x = execution_of(&rec.instance).ok_or_else(|| unknown("Unknown execution"))?;
    let domain = super::registry::domain(s, &x.domain).await?;
    let mut out = Vec::new();
    for (kind, v) in wanted {
        let id = match kind {
            TypeKind::Activity => TypeId::from_wire(&v),
            // a child's type, or the version this run continues as
            TypeKind::Workflow => TypeId::from_wire(&v).or_else(|| {
                Some(TypeId {
                    name: x.workflow_type.name.clone(),
                    version: v["version"].as_str()?.to_string(),
                })
            }),
        };
        if let Some(t) = id.and_then(|id| domain.find(kind, &id)) {
            out.push(t.clone());
        }
    }
    Ok(out)
}

/// `CountPendingDecisionTasks` / `CountPendingActivityTasks` (this broker's board).
pub fn count(s: &AppState, r: &Req) -> Answer {
    let q = queue(r, kind_of(&r.action))?;
    ok(json!({"count": s.shared.board.count(&q), "truncated": false}))
}

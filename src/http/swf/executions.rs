//! Executions: `StartWorkflowExecution`, signals, cancel requests, termination,
//! `DescribeWorkflowExecution`, `GetWorkflowExecutionHistory`, and the open and closed
//! lists and counts. A call about an execution is served by the owner of its workflow id's
//! partition.

use super::gather::{from_peers, local_instances};
use super::{apply, invalid, ok, relay, start_instance, unknown, Answer, Fault, Req};
use crate::broker::index::open_run;
use crate::broker::records::InstanceRecord;
use crate::engine::swf::{execution_of, start_attributes, Call, DecisionTask, Execution};
use crate::engine::Input;
use crate::http::{ApiError, AppState};
use crate::store::Scope;
use crate::swf::registry::{RegistrationStatus, TypeId, TypeKind};
use crate::swf::{run_id_of, RunKey};
use serde_json::{json, Value};

pub async fn start(s: &AppState, r: &Req) -> Answer {
    let domain = r.need("domain")?.to_string();
    let workflow_id = r.need("workflowId")?.to_string();
    crate::swf::check_name("workflowId", &workflow_id).map_err(invalid)?;
    let type_id = r
        .get("workflowType")
        .and_then(TypeId::from_wire)
        .ok_or_else(|| invalid("workflowType with a name and a version is required"))?;
    let key = RunKey {
        domain: domain.clone(),
        workflow_id: workflow_id.clone(),
    };
    // served by the owner, so the start is applied (or refused as a duplicate) before the
    // answer
    if let Some(answer) = relay(s, r, key.partition(s.peers.parts)).await? {
        return Ok(answer);
    }
    let d = super::registry::domain(s, &domain).await?;
    if d.status == RegistrationStatus::Deprecated {
        return Err(super::fault(
            "DomainDeprecatedFault",
            format!("Domain is deprecated: {domain}"),
        ));
    }
    let t = d
        .usable(TypeKind::Workflow, &type_id)
        .map_err(crate::engine::swf::SwfError::from)?;
    let mut attrs = start_attributes(&r.body, t, &domain, &workflow_id)?;
    attrs["partitions"] = json!(s.peers.parts.count());
    let at = key.instance(s.peers.parts, uuid::Uuid::new_v4());
    match start_instance(s, crate::swf::EXECUTIONS, attrs, at).await {
        Ok(id) => ok(json!({"runId": run_id_of(&id)})),
        Err(crate::broker::AdminError::Refused(m)) => {
            Err(super::fault("WorkflowExecutionAlreadyStartedFault", m))
        }
        Err(e) => Err(Fault::from(ApiError::from(e))),
    }
}

/// The instance of run `run_id` of `key`, or of its open run (on a partition owned here).
fn resolve(s: &AppState, key: &RunKey, run_id: Option<&str>) -> Result<InstanceRecord, Fault> {
    let missing = || {
        unknown(format!(
            "Unknown execution: WorkflowExecution=[workflowId={}, runId={}]",
            key.workflow_id,
            run_id.unwrap_or("")
        ))
    };
    let p = key.partition(s.peers.parts);
    let id = match run_id.filter(|r| !r.is_empty()) {
        Some(run) => {
            let uuid = uuid::Uuid::parse_str(run).map_err(|_| missing())?;
            key.instance(s.peers.parts, uuid).to_string()
        }
        None => {
            let tx = crate::http::snapshot::read(&s.store).map_err(ApiError::from)?;
            tx.read_in(Scope::Partition(p.0), &open_run(key))
                .map_err(ApiError::from)?
                .ok_or_else(missing)?
        }
    };
    let rec = super::stored(s, &id)?.ok_or_else(missing)?;
    match execution_of(&rec.instance) {
        Some(x) if x.domain == key.domain && x.workflow_id == key.workflow_id => Ok(rec),
        _ => Err(missing()),
    }
}

/// Signal, cancel request, termination, describe and history: the execution named by
/// `workflowId`/`runId` (or `execution`).
pub async fn call(s: &AppState, r: &Req) -> Answer {
    let domain = r.need("domain")?.to_string();
    let (workflow_id, run_id) = match r.get("execution") {
        Some(e) => (
            e.get("workflowId").and_then(Value::as_str),
            e.get("runId").and_then(Value::as_str),
        ),
        None => (r.str("workflowId"), r.str("runId")),
    };
    let workflow_id = workflow_id
        .ok_or_else(|| invalid("workflowId is required"))?
        .to_string();
    let key = RunKey {
        domain,
        workflow_id,
    };
    if let Some(answer) = relay(s, r, key.partition(s.peers.parts)).await? {
        return Ok(answer);
    }
    let rec = resolve(s, &key, run_id)?;
    let id = rec.instance.id.clone();
    let call = match r.action.as_str() {
        "SignalWorkflowExecution" => Call::Signal {
            name: r.need("signalName")?.to_string(),
            input: r.str("input").map(str::to_string),
        },
        "RequestCancelWorkflowExecution" => Call::RequestCancel,
        "TerminateWorkflowExecution" => Call::Terminate {
            reason: r.str("reason").map(str::to_string),
            details: r.str("details").map(str::to_string),
            child_policy: r.str("childPolicy").map(str::to_string),
        },
        "DescribeWorkflowExecution" => return ok(describe(&rec)),
        _ => return history(&rec, r),
    };
    let x = execution_of(&rec.instance).expect("resolved");
    if !x.is_open() {
        return Err(unknown(format!(
            "Unknown execution: WorkflowExecution=[workflowId={}, runId={}] is closed",
            x.workflow_id, x.run_id
        )));
    }
    apply(s, &id, Input::Swf { call }).await?;
    ok(json!({}))
}

fn history(rec: &InstanceRecord, r: &Req) -> Answer {
    let x = execution_of(&rec.instance).expect("resolved");
    let from = match r.str("nextPageToken") {
        Some(t) => t
            .parse()
            .map_err(|_| invalid("nextPageToken is not one this service issued"))?,
        None => 0,
    };
    let max = r
        .get("maximumPageSize")
        .and_then(Value::as_u64)
        .filter(|m| *m > 0)
        .unwrap_or(1000) as usize;
    let reverse = r.get("reverseOrder").and_then(Value::as_bool) == Some(true);
    let (events, next) = crate::swf::history::page(&x.events, from, max, reverse);
    let mut answer = json!({"events": events});
    if let Some(n) = next {
        answer["nextPageToken"] = json!(n.to_string());
    }
    ok(answer)
}

/// The `WorkflowExecutionInfo` shape.
pub fn info(x: &Execution) -> Value {
    let mut v = json!({
        "execution": x.wire_id(),
        "workflowType": x.workflow_type.wire(),
        "startTimestamp": crate::swf::history::epoch(x.started_at),
        "executionStatus": if x.is_open() { "OPEN" } else { "CLOSED" },
        "cancelRequested": x.cancel_requested,
    });
    if let Some((at, status)) = x.closed {
        v["closeTimestamp"] = crate::swf::history::epoch(at);
        v["closeStatus"] = json!(status.as_str());
    }
    if !x.tag_list.is_empty() {
        v["tagList"] = json!(x.tag_list);
    }
    if let Some(p) = x
        .events
        .first()
        .and_then(|e| e.attrs.get("parentWorkflowExecution"))
    {
        v["parent"] = p.clone();
    }
    v
}

fn describe(rec: &InstanceRecord) -> Value {
    let x = execution_of(&rec.instance).expect("resolved");
    let mut config = json!({
        "taskStartToCloseTimeout": x.task_timeout.wire(),
        "executionStartToCloseTimeout": x.execution_timeout.wire(),
        "taskList": {"name": x.task_list},
        "childPolicy": x.child_policy,
    });
    if let Some(p) = &x.task_priority {
        config["taskPriority"] = json!(p);
    }
    if let Some(l) = &x.lambda_role {
        config["lambdaRole"] = json!(l);
    }
    let open = x.is_open();
    let mut v = json!({
        "executionInfo": info(x),
        "executionConfiguration": config,
        "openCounts": {
            "openActivityTasks": if open { x.activities.len() } else { 0 },
            "openDecisionTasks": usize::from(open && x.decision != DecisionTask::None),
            "openTimers": if open { x.timers.len() } else { 0 },
            "openChildWorkflowExecutions": 0,
            "openLambdaFunctions": if open { x.lambdas.len() } else { 0 },
        },
    });
    if let Some(t) = x.latest_activity_at {
        v["latestActivityTaskTimestamp"] = crate::swf::history::epoch(t);
    }
    if let Some(c) = &x.latest_context {
        v["latestExecutionContext"] = json!(c);
    }
    v
}

/// `List*WorkflowExecutions` and `Count*WorkflowExecutions`: the domain's executions on
/// every broker, filtered as SWF filters them.
pub async fn list(s: &AppState, r: &Req) -> Answer {
    let domain = r.need("domain")?.to_string();
    let open = r.action.contains("Open");
    let counting = r.action.starts_with("Count");
    let time_filter = |name: &str| {
        r.get(name).map(|f| {
            let bound = |k: &str| f.get(k).and_then(Value::as_f64);
            (bound("oldestDate"), bound("latestDate"))
        })
    };
    let start = time_filter("startTimeFilter");
    let close = time_filter("closeTimeFilter");
    if open && start.is_none() {
        return Err(invalid("startTimeFilter is required"));
    }
    if !open && start.is_none() == close.is_none() {
        return Err(invalid(
            "exactly one of startTimeFilter and closeTimeFilter is required",
        ));
    }
    let in_range = |t: f64, (lo, hi): (Option<f64>, Option<f64>)| {
        lo.is_none_or(|lo| t >= lo) && hi.is_none_or(|hi| t <= hi)
    };
    let member = |filter: &str, name: &str| r.get(filter)?.get(name)?.as_str();
    let wid = member("executionFilter", "workflowId");
    let type_name = member("typeFilter", "name");
    let type_version = member("typeFilter", "version");
    let tag = member("tagFilter", "tag");
    let close_status = member("closeStatusFilter", "status");
    let mut infos = Vec::new();
    for rec in local_instances(s, crate::swf::EXECUTIONS)? {
        let Some(x) = execution_of(&rec.instance) else {
            continue;
        };
        let secs = |t: chrono::DateTime<chrono::Utc>| t.timestamp_millis() as f64 / 1000.0;
        let keep = x.domain == domain
            && x.is_open() == open
            && start.is_none_or(|f| in_range(secs(x.started_at), f))
            && close.is_none_or(|f| x.closed.is_some_and(|(at, _)| in_range(secs(at), f)))
            && wid.is_none_or(|w| w == x.workflow_id)
            && type_name.is_none_or(|n| n == x.workflow_type.name)
            && type_version.is_none_or(|v| v == x.workflow_type.version)
            && tag.is_none_or(|t| x.tag_list.iter().any(|g| g == t))
            && close_status.is_none_or(|c| x.closed.is_some_and(|(_, st)| st.as_str() == c));
        if keep {
            infos.push(info(x));
        }
    }
    let mut count = infos.len() as u64;
    if !r.forwarded {
        for v in from_peers(s, r, "executionInfos").await {
            match v.as_u64() {
                Some(n) => count += n,
                None => infos.push(v),
            }
        }
    }
    if counting {
        return ok(json!({"count": count, "truncated": false}));
    }
    let by = if open || close.is_none() {
        "startTimestamp"
    } else {
        "closeTimestamp"
    };
    infos.sort_by(|a, b| {
        b[by]
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&a[by].as_f64().unwrap_or(0.0))
    });
    if r.get("reverseOrder").and_then(Value::as_bool) == Some(true) {
        infos.reverse();
    }
    ok(json!({"executionInfos": infos}))
}

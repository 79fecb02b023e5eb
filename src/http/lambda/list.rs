//! Reads over many operations or executions: `GetDurableExecutionHistory` (events derived
//! from the operations: a started and an end event each, in time order) and
//! `ListDurableExecutionsByFunction` (the instances of a durable function on every broker,
//! through `GET /v1/instances`).

use super::execution::lambda_status;
use super::{invalid, ok, query, stored, AwsError};
use crate::durable::arn;
use crate::durable::wire::{OpStatus, OpType, Operation};
use crate::http::query::{list, ListQuery};
use crate::http::AppState;
use axum::extract::{OriginalUri, Query, State};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

/// `MaxItems` (0 or absent: `default`), at most 1000 as AWS caps it.
fn max_items(q: &std::collections::HashMap<String, String>, default: usize) -> usize {
    q.get("MaxItems")
        .and_then(|m| m.parse().ok())
        .filter(|m| *m > 0)
        .unwrap_or(default)
        .min(1000)
}

fn secs(t: DateTime<Utc>) -> Value {
    json!(t.timestamp_millis() as f64 / 1000.0)
}

/// The history of execution `id`: for each operation its started event and, once it ended,
/// its end event (`StepSucceeded`, `WaitSucceeded`, `CallbackTimedOut`, ...).
pub async fn history(s: &AppState, uri: &Uri, id: String) -> Result<Response, AwsError> {
    let q = query(uri);
    let data = q.get("IncludeExecutionData").map(String::as_str) != Some("false");
    let (_, run) = stored(s, &id)?;
    let mut events: Vec<(DateTime<Utc>, usize, Value)> = Vec::new();
    for (n, o) in run.ops.iter().enumerate() {
        let op = &o.op;
        events.push((
            op.start_timestamp,
            2 * n,
            event(op, "Started", op.start_timestamp, data),
        ));
        if let Some(end) = op.end_timestamp.filter(|_| op.status.is_final()) {
            events.push((end, 2 * n + 1, event(op, phase(op.status), end, data)));
        }
    }
    events.sort_by_key(|(t, n, _)| (*t, *n));
    if q.get("ReverseOrder").map(String::as_str) == Some("true") {
        events.reverse();
    }
    let from: usize = match q.get("Marker").filter(|m| !m.is_empty()) {
        Some(m) => m.parse().map_err(|_| invalid("Invalid marker"))?,
        None => 0,
    };
    let max = max_items(&q, 100);
    let page: Vec<Value> = events
        .into_iter()
        .enumerate()
        .skip(from)
        .take(max)
        .map(|(i, (_, _, mut e))| {
            e["EventId"] = json!(i + 1);
            e
        })
        .collect();
    let mut answer = json!({"Events": page});
    if from + max < run.ops.len() * 2 && page.len() == max {
        answer["NextMarker"] = json!((from + max).to_string());
    }
    ok(answer)
}

fn phase(status: OpStatus) -> &'static str {
    match status {
        OpStatus::Succeeded => "Succeeded",
        OpStatus::Failed => "Failed",
        OpStatus::Cancelled => "Cancelled",
        OpStatus::TimedOut => "TimedOut",
        OpStatus::Stopped => "Stopped",
        OpStatus::Started | OpStatus::Pending | OpStatus::Ready => "Started",
    }
}

fn event(op: &Operation, phase: &str, at: DateTime<Utc>, data: bool) -> Value {
    let kind = match op.op_type {
        OpType::Execution => "Execution",
        OpType::Context => "Context",
        OpType::Step => "Step",
        OpType::Wait => "Wait",
        OpType::Callback => "Callback",
        OpType::ChainedInvoke => "ChainedInvoke",
    };
    let mut details = Map::new();
    let payload = |p: &Option<String>| json!({"Payload": p, "Truncated": false});
    let error =
        |e: Option<&crate::durable::wire::ErrorObject>| json!({"Payload": e, "Truncated": false});
    let (result, err) = match op.op_type {
        OpType::Step => op
            .step_details
            .as_ref()
            .map(|d| (d.result.clone(), d.error.clone()))
            .unwrap_or_default(),
        OpType::Context | OpType::ChainedInvoke => op
            .context_details
            .as_ref()
            .or(op.chained_invoke_details.as_ref())
            .map(|d| (d.result.clone(), d.error.clone()))
            .unwrap_or_default(),
        OpType::Callback => op
            .callback_details
            .as_ref()
            .map(|d| (d.result.clone(), d.error.clone()))
            .unwrap_or_default(),
        OpType::Execution | OpType::Wait => (None, None),
    };
    match (op.op_type, phase) {
        (OpType::Execution, "Started") if data => {
            let input = op
                .execution_details
                .as_ref()
                .and_then(|d| d.input_payload.clone());
            details.insert("Input".into(), payload(&input));
        }
        (OpType::Wait, "Started") => {
            if let Some(end) = op
                .wait_details
                .as_ref()
                .and_then(|d| d.scheduled_end_timestamp)
            {
                details.insert("ScheduledEndTimestamp".into(), secs(end));
                details.insert(
                    "Duration".into(),
                    json!((end - op.start_timestamp).num_seconds()),
                );
            }
        }
        (OpType::Callback, "Started") => {
            let id = op
                .callback_details
                .as_ref()
                .and_then(|d| d.callback_id.clone());
            details.insert("CallbackId".into(), json!(id));
        }
        (_, "Succeeded") if data => {
            details.insert("Result".into(), payload(&result));
        }
        (_, "Failed" | "TimedOut" | "Stopped" | "Cancelled") if data => {
            details.insert("Error".into(), error(err.as_ref()));
        }
        _ => {}
    }
    let mut e = json!({
        "EventType": format!("{kind}{phase}"),
        "Id": op.id,
        "EventTimestamp": secs(at),
    });
    for (k, v) in [
        ("SubType", &op.sub_type),
        ("Name", &op.name),
        ("ParentId", &op.parent_id),
    ] {
        if let Some(v) = v {
            e[k] = json!(v);
        }
    }
    e[format!("{kind}{phase}Details")] = Value::Object(details);
    e
}

/// The executions of durable function `function` (a name or an ARN), every broker's.
pub async fn by_function(
    s: &AppState,
    function: &str,
    uri: &Uri,
    headers: &HeaderMap,
) -> Result<Response, AwsError> {
    let q = query(uri);
    let workflow = arn::function_of(function).to_string();
    let max = max_items(&q, 1000);
    let statuses: Vec<String> = Query::<Vec<(String, String)>>::try_from_uri(uri)
        .map(|q| q.0)
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| k == "Statuses")
        .map(|(_, v)| v)
        .collect();
    let name = q.get("DurableExecutionName").cloned();
    let mut all = Vec::new();
    let mut after = q.get("Marker").filter(|m| !m.is_empty()).cloned();
    loop {
        let lq = ListQuery {
            workflow_id: Some(workflow.clone()),
            status: None,
            limit: Some(1000),
            after: after.clone(),
        };
        let path = format!("/v1/instances?workflowId={workflow}&limit=1000");
        let local: Uri = path.parse().map_err(|_| invalid("bad function name"))?;
        let page = list(
            State(s.clone()),
            Query(lq),
            OriginalUri(local),
            headers.clone(),
        )
        .await
        .map_err(AwsError::from)?
        .0;
        for v in page["instances"].as_array().into_iter().flatten() {
            let Some(exec) = execution_of(&workflow, v) else {
                continue;
            };
            if !statuses.is_empty() && !statuses.iter().any(|st| exec["Status"] == json!(st)) {
                continue;
            }
            if name
                .as_ref()
                .is_some_and(|n| exec["DurableExecutionName"] != json!(n))
            {
                continue;
            }
            all.push(exec);
        }
        after = page["next"].as_str().map(str::to_string);
        if after.is_none() || all.len() >= max {
            break;
        }
    }
    if q.get("ReverseOrder").map(String::as_str) == Some("true") {
        all.reverse();
    }
    let next = (all.len() > max).then(|| all[max - 1]["DurableExecutionArn"].clone());
    all.truncate(max);
    let mut answer = json!({"DurableExecutions": all});
    if let Some(Value::String(arn_of_last)) = next {
        if let Ok(id) = arn::instance_of_arn(&arn_of_last) {
            answer["NextMarker"] = json!(id);
        }
    }
    ok(answer)
}

/// An instance of `GET /v1/instances` as Lambda's `Execution`.
fn execution_of(workflow: &str, v: &Value) -> Option<Value> {
    let arn = v["durableExecutionArn"].as_str()?;
    let id = v["id"].as_str()?;
    let status = lambda_status(
        v["status"].as_str().unwrap_or_default(),
        v["error"]["name"].as_str(),
    );
    let name = arn.split('/').nth(2).unwrap_or(id);
    let ts = |f: &str| {
        v[f].as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| secs(t.with_timezone(&Utc)))
    };
    let mut e = json!({
        "DurableExecutionArn": arn,
        "DurableExecutionName": name,
        "FunctionArn": arn::function_arn(workflow),
        "Status": status,
        "StartTimestamp": ts("created"),
    });
    if status != "RUNNING" {
        e["EndTimestamp"] = json!(ts("updated"));
    }
    Some(e)
}

//! An execution's API: `CheckpointDurableExecution`, `GetDurableExecutionState`,
//! `GetDurableExecution` and `StopDurableExecution`.

use super::{apply, invalid, ok, query, run_of, stale, stored, AwsError};
use crate::durable::arn;
use crate::durable::wire::Operation;
use crate::engine::{EngineError, Input};
use crate::http::AppState;
use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{json, Value};

pub async fn checkpoint(
    s: &AppState,
    headers: &HeaderMap,
    body: &Bytes,
    id: String,
) -> Result<Response, AwsError> {
    let req: Value =
        serde_json::from_slice(body).map_err(|e| invalid(format!("the body is not JSON: {e}")))?;
    let token = req
        .get("CheckpointToken")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("CheckpointToken is required"))?
        .to_string();
    let input = Input::Checkpoint {
        token,
        client_token: req
            .get("ClientToken")
            .and_then(Value::as_str)
            .map(str::to_string),
        updates: req.get("Updates").cloned().unwrap_or_else(|| json!([])),
    };
    let rec = match apply(s, &id, input).await? {
        Ok(rec) => rec,
        Err(e @ (EngineError::InvalidCheckpointToken(_) | EngineError::Finished { .. })) => {
            return Err(stale(headers, &e))
        }
        Err(e) => return Err(invalid(e.to_string())),
    };
    let (_, run) = run_of(*rec)?;
    let last = run
        .last
        .as_ref()
        .ok_or_else(|| invalid("the checkpoint was not recorded"))?;
    let ops: Vec<&Operation> = last.ops.iter().filter_map(|o| run.get(o)).collect();
    let mut answer = json!({"NewExecutionState": {"Operations": ops}});
    if let Some(t) = &last.outbound {
        answer["CheckpointToken"] = json!(t);
    }
    ok(answer)
}

pub async fn state(s: &AppState, uri: &axum::http::Uri, id: String) -> Result<Response, AwsError> {
    let q = query(uri);
    let (_, run) = stored(s, &id)?;
    let token = q.get("CheckpointToken").map(String::as_str).unwrap_or("");
    match arn::read_token(token) {
        Ok((i, seq)) if i == id && seq <= run.token => {}
        _ => return Err(invalid("Invalid checkpoint token")),
    }
    let marker = match q.get("Marker").filter(|m| !m.is_empty()) {
        Some(m) => m.parse().map_err(|_| invalid("Invalid marker"))?,
        None => 0,
    };
    let max = q
        .get("MaxItems")
        .and_then(|m| m.parse().ok())
        .unwrap_or(100usize);
    let (page, next) = run.page(marker, max);
    let mut answer = json!({"Operations": page});
    if let Some(n) = next {
        answer["NextMarker"] = json!(n.to_string());
    }
    ok(answer)
}

/// The execution's status as Lambda reports it, from the instance's status and error.
pub fn lambda_status(status: &str, error: Option<&str>) -> &'static str {
    match status {
        "COMPLETED" | "TERMINATED" => "SUCCEEDED",
        "FAILED" if error == Some(crate::engine::durable::EXECUTION_TIMEOUT) => "TIMED_OUT",
        "FAILED" => "FAILED",
        "CANCELLED" => "STOPPED",
        _ => "RUNNING",
    }
}

pub async fn execution(
    s: &AppState,
    uri: &axum::http::Uri,
    id: String,
) -> Result<Response, AwsError> {
    let include = query(uri).get("IncludeExecutionData").map(String::as_str) != Some("false");
    let (rec, run) = stored(s, &id)?;
    let exec = run.ops.first().map(|o| &o.op);
    let mut answer = json!({
        "DurableExecutionArn": run.arn,
        "DurableExecutionName": run.name,
        "FunctionArn": arn::function_arn(&rec.instance.workflow_id),
        "Status": lambda_status(
            rec.instance.status.as_str(),
            rec.instance.error.as_ref().map(|e| e.name.as_str()),
        ),
        "StartTimestamp": exec.map(|e| e.start_timestamp.timestamp_millis() as f64 / 1000.0),
        "Version": "$LATEST",
        "ExecutionDataIncluded": include,
    });
    if let Some(end) = exec.and_then(|e| e.end_timestamp) {
        answer["EndTimestamp"] = json!(end.timestamp_millis() as f64 / 1000.0);
    }
    if include {
        answer["InputPayload"] = json!(rec.instance.data.to_string());
        if let Some(out) = &rec.instance.output {
            answer["Result"] = json!(out.to_string());
        }
        if let Some(e) = &rec.instance.error {
            answer["Error"] = json!(crate::engine::durable::error_object(e));
        }
    }
    ok(answer)
}

pub async fn stop(s: &AppState, id: String) -> Result<Response, AwsError> {
    match apply(s, &id, Input::Cancel).await? {
        Ok(_) | Err(EngineError::Finished { .. }) => {}
        Err(e) => return Err(invalid(e.to_string())),
    }
    let (_, run) = stored(s, &id)?;
    let end = run
        .ops
        .first()
        .and_then(|o| o.op.end_timestamp)
        .unwrap_or_else(chrono::Utc::now);
    ok(json!({"StopTimestamp": end.timestamp_millis() as f64 / 1000.0}))
}

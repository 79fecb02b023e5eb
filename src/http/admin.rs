//! The admin API: start, inspect, list and cancel instances; list workflows and schedules;
//! health and metrics.

use super::{ask, ApiError, AppState};
use crate::broker::records::{HistoryEntry, InstanceRecord, ScheduleState};
use crate::broker::Cmd;
use crate::store::{key, split_at, Scope, Table, SEP};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

pub async fn start(
    State(s): State<AppState>,
    Path(workflow): Path<String>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    // a retried request with the same key starts (and answers) the same instance
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_string);
    let input: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            ApiError(
                StatusCode::BAD_REQUEST,
                format!("the body must be the workflow input as a JSON object: {e}"),
            )
        })?
    };
    let id = ask(&s.core, |reply| Cmd::Start {
        workflow: workflow.clone(),
        input,
        key,
        reply,
    })
    .await?;
    let location = format!("/v1/instances/{id}");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(json!({"id": id, "workflowId": workflow})),
    ))
}

fn view(rec: &InstanceRecord, history: Option<Vec<HistoryEntry>>) -> Value {
    let i = &rec.instance;
    let mut v = json!({
        "id": i.id,
        "workflowId": i.workflow_id,
        "version": rec.version,
        "status": i.status,
        "state": i.state,
        "data": i.data,
        "output": i.output,
        "error": i.error,
        "correlation": i.correlation,
        "parentId": rec.parent,
        "created": rec.created,
        "updated": rec.updated,
    });
    if let Some(h) = history {
        v["history"] = serde_json::to_value(h).unwrap_or_default();
    }
    v
}

pub async fn instance(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let tx = s.store.read()?;
    let missing = || ApiError(StatusCode::NOT_FOUND, format!("no instance {id:?}"));
    // the id carries the state partition whose keys hold the instance
    let scope = crate::cluster::partition::scope_of(&id).ok_or_else(missing)?;
    let rec: InstanceRecord = tx
        .get_in(scope, Table::Instances, &id)?
        .ok_or_else(missing)?;
    let history: Vec<HistoryEntry> = tx
        .prefix_in::<HistoryEntry>(scope, Table::History, &format!("{id}{SEP}"))?
        .into_iter()
        .map(|(_, h)| h)
        .collect();
    Ok(Json(view(&rec, Some(history))))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    workflow_id: Option<String>,
    status: Option<String>,
    limit: Option<usize>,
}

pub async fn list(
    State(s): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let tx = s.store.read()?;
    let limit = q.limit.unwrap_or(1000);
    let want = q.status.map(|s| s.to_ascii_uppercase());
    let items: Vec<Value> = tx
        .prefix::<InstanceRecord>(Table::Instances, "")?
        .into_iter()
        .map(|(_, r)| r)
        .filter(|r| {
            q.workflow_id
                .as_ref()
                .is_none_or(|w| *w == r.instance.workflow_id)
        })
        .filter(|r| {
            want.as_ref()
                .is_none_or(|w| w == r.instance.status.as_str())
        })
        .take(limit)
        .map(|r| view(&r, None))
        .collect();
    Ok(Json(json!({"instances": items})))
}

/// `POST /v1/instances/{id}/cancel` (the id may contain `/`).
pub async fn instance_action(
    state: State<AppState>,
    Path(path): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    match path.strip_suffix("/cancel") {
        Some(id) if !id.is_empty() => cancel(state, id.to_string()).await,
        _ => Err(ApiError(
            StatusCode::NOT_FOUND,
            format!("no such action: POST /v1/instances/{path} (try .../cancel)"),
        )),
    }
}

async fn cancel(
    State(s): State<AppState>,
    id: String,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    ask(&s.core, |reply| Cmd::Cancel {
        id: id.clone(),
        reply,
    })
    .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": id, "status": "CANCELLED"})),
    ))
}

pub async fn workflows(State(s): State<AppState>) -> Json<Value> {
    let v = s
        .shared
        .workflows
        .read()
        .map(|w| w.clone())
        .unwrap_or_default();
    Json(v)
}

pub async fn schedules(State(s): State<AppState>) -> Result<Json<Value>, ApiError> {
    let tx = s.store.read()?;
    let mut out = Vec::new();
    for (p, wf, st) in tx.partitioned::<ScheduleState>(Table::Schedules)? {
        let scope = p.map_or(Scope::Node, Scope::Partition);
        let timer: Option<String> = tx.get_in(scope, Table::TimerIds, &key(&["cron", &wf]))?;
        let next = timer.and_then(|k| split_at(&k).map(|(t, _)| t));
        out.push(json!({
            "workflowId": wf,
            "cron": st.cron,
            "timezone": st.timezone,
            "active": next.is_some(),
            "nextFireTime": next,
            "lastFiredTick": st.last_tick,
            "fired": st.fired,
        }));
    }
    Ok(Json(json!({"schedules": out})))
}

pub async fn health(State(s): State<AppState>) -> Json<Value> {
    let partitions = *s.assigned.borrow();
    let owned = s.shared.owned.read().map(|o| o.clone()).unwrap_or_default();
    Json(json!({
        "status": "ok",
        "kafka": {"assignedPartitions": partitions},
        "statePartitions": owned,
    }))
}

pub async fn metrics(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let gauges = crate::broker::gauges::gauges(&s.store)?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        s.metrics.render(&gauges),
    ))
}

//! The read side of the admin API: one instance, lists of instances and schedules. Each state
//! partition is answered by the broker that owns it (this one, or the owner the request is
//! forwarded to, [`super::forward`]); a list says which partitions answered.

use super::forward::{forwarded, unavailable, Route};
use super::{ApiError, AppState};
use crate::broker::entries::{InstanceOf, TimerIdOf};
use crate::broker::history;
use crate::broker::history_entries::HistoryAt;
use crate::broker::records::{HistoryEntry, InstanceRecord, ScheduleState};
use crate::cluster::partition::PartitionId;
use crate::store::{key, split_at, Scope, Snapshot, Table};
use axum::extract::{OriginalUri, Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn view(rec: &InstanceRecord, history: Option<Vec<Value>>) -> Value {
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
    if let crate::engine::Activity::Durable { durable } = &i.activity {
        // a durable execution's record: its ARN and its operations, oldest first
        v["durableExecutionArn"] = json!(durable.arn);
        v["operations"] = json!(durable.ops.iter().map(|o| &o.op).collect::<Vec<_>>());
    }
    if let Some(h) = history {
        v["history"] = Value::Array(h);
    }
    v
}

#[derive(Deserialize, Default)]
pub struct InstanceQuery {
    /// `full`: history payloads kept beside their entries are put back in place.
    payloads: Option<String>,
    /// Of `.../graph`: `svg` (default), `dot` or `mermaid`.
    format: Option<String>,
    /// The work topic offset of the request that created the instance (a start's 202
    /// `Location`): the owner applies its partition through it before answering.
    position: Option<i64>,
}

/// What `GET /v1/instances/{path}` asks for.
enum Asked<'a> {
    /// The instance with its history.
    Instance(&'a str),
    /// One history entry, with its payloads (`{id}/history/{seq}`).
    Entry(&'a str, u64),
    /// The workflow's graph with the instance's path marked (`{id}/graph`).
    Graph(&'a str),
}

fn asked(path: &str) -> Asked<'_> {
    if let Some(id) = path.strip_suffix("/graph") {
        return Asked::Graph(id);
    }
    if let Some((id, seq)) = path.rsplit_once("/history/") {
        if let Ok(seq) = seq.parse() {
            return Asked::Entry(id, seq);
        }
    }
    Asked::Instance(path)
}

/// A history entry as the API shows it: with its `seq`, payloads in full or as summaries.
fn entry_view(
    tx: &Snapshot<'_>,
    scope: Scope,
    id: &str,
    seq: u64,
    entry: HistoryEntry,
    full: bool,
) -> Result<Value, ApiError> {
    let refs = entry.payloads.clone();
    let mut v = serde_json::to_value(entry).unwrap_or_default();
    if full {
        history::expand(tx, scope, id, seq, &mut v, &refs)?;
        if let Some(o) = v.as_object_mut() {
            o.remove("payloads");
        }
    }
    v["seq"] = json!(seq);
    Ok(v)
}

/// Instance `id` of partition `p` as stored here.
pub(super) fn stored(
    s: &AppState,
    p: PartitionId,
    id: &str,
) -> Result<Option<InstanceRecord>, ApiError> {
    Ok(super::snapshot::read(&s.store)?.read_in(Scope::Partition(p.0), &InstanceOf(id))?)
}

/// `GET /v1/instances/{id}` (`?payloads=full` puts back the payloads kept beside history
/// entries), `GET /v1/instances/{id}/history/{seq}` (one entry, payloads in full) and
/// `GET /v1/instances/{id}/graph` (its workflow's graph, its path marked).
pub async fn instance(
    State(s): State<AppState>,
    Path(path): Path<String>,
    Query(q): Query<InstanceQuery>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let asked = asked(&path);
    let id = match asked {
        Asked::Instance(id) | Asked::Entry(id, _) | Asked::Graph(id) => id,
    };
    let missing = || ApiError(StatusCode::NOT_FOUND, format!("no instance {id:?}"));
    // the id carries the state partition whose keys hold the instance
    let p = s.peers.parts.of_instance(id).map_err(|_| missing())?;
    match s.peers.route(&s.shared, p, forwarded(&headers)) {
        Route::Local => {}
        Route::Remote(url) => {
            return Ok(s
                .peers
                .relay(Method::GET, &url, &uri.to_string(), None)
                .await)
        }
        Route::Unavailable(why) => return Ok(unavailable(why)),
    }
    let scope = Scope::Partition(p.0);
    let rec = match stored(&s, p, id)? {
        Some(rec) => rec,
        // a start may be on its way here through the work topic: apply it before saying no
        None => match super::barrier::caught_up(&s, p, q.position).await {
            Ok(()) => stored(&s, p, id)?.ok_or_else(missing)?,
            Err(e) => return Ok(unavailable(format!("{e}; retry"))),
        },
    };
    let tx = super::snapshot::read(&s.store)?;
    if let Asked::Graph(_) = asked {
        return super::definitions::instance_graph(&tx, scope, &rec, q.format.as_deref());
    }
    if let Asked::Entry(_, seq) = asked {
        let entry = tx
            .read_in(scope, &HistoryAt::new(id, seq))?
            .ok_or_else(|| {
                ApiError(
                    StatusCode::NOT_FOUND,
                    format!(
                        "instance {id:?} has no history entry {seq} (it has {} entries, \
                         the oldest dropped past history.max_entries)",
                        rec.history
                    ),
                )
            })?;
        return Ok(Json(entry_view(&tx, scope, id, seq, entry, true)?).into_response());
    }
    let full = match q.payloads.as_deref() {
        None | Some("summary") => false,
        Some("full") => true,
        Some(other) => {
            return Err(ApiError(
                StatusCode::BAD_REQUEST,
                format!("payloads = {other:?}: use \"full\" or \"summary\" (the default)"),
            ))
        }
    };
    let mut history = Vec::new();
    for (k, h) in tx.scan_in::<HistoryAt>(scope, &HistoryAt::of(id))? {
        let seq = HistoryAt::seq_in(&k).unwrap_or_default();
        history.push(entry_view(&tx, scope, id, seq, h, full)?);
    }
    Ok(Json(view(&rec, Some(history))).into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    pub workflow_id: Option<String>,
    pub status: Option<String>,
    pub limit: Option<usize>,
    /// The cursor: list the instances after this id (the `next` of the previous page).
    pub after: Option<String>,
}

/// The largest page `GET /v1/instances` answers (a larger `limit` is capped).
const MAX_PAGE: usize = 10_000;

/// `"statePartitions": {"answered": [...], "unavailable": [...]}`.
fn coverage(answered: &BTreeSet<PartitionId>, unavailable: &BTreeSet<PartitionId>) -> Value {
    json!({"answered": answered, "unavailable": unavailable})
}

/// `GET /v1/instances`: the owned partitions' instances from this store, the others' from
/// their owners; ordered by partition, then id.
pub async fn list(
    State(s): State<AppState>,
    Query(q): Query<ListQuery>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let limit = q.limit.unwrap_or(1000).min(MAX_PAGE);
    let want = q.status.map(|s| s.to_ascii_uppercase());
    let parts = s.peers.parts;
    // the cursor: the last id of the previous page (ids carry their state partition)
    let after = match &q.after {
        Some(id) => Some((
            parts
                .of_instance(id)
                .map_err(|e| ApiError(StatusCode::BAD_REQUEST, format!("after = {id:?}: {e}")))?,
            id.as_str(),
        )),
        None => None,
    };
    let owned: BTreeSet<PartitionId> = s.shared.owned().into_keys().collect();
    let mut items: Vec<Value> = Vec::new();
    {
        let tx = super::snapshot::read(&s.store)?;
        for p in &owned {
            let from = match after {
                Some((ap, _)) if *p < ap => continue,
                Some((ap, id)) if *p == ap => Some(id),
                _ => None,
            };
            let page = tx.page_in::<InstanceRecord>(
                Scope::Partition(p.0),
                Table::Instances,
                from,
                limit - items.len(),
                |r| {
                    q.workflow_id
                        .as_ref()
                        .is_none_or(|w| *w == r.instance.workflow_id)
                        && want
                            .as_ref()
                            .is_none_or(|w| w == r.instance.status.as_str())
                },
            )?;
            items.extend(page.into_iter().map(|(_, r)| view(&r, None)));
            if items.len() >= limit {
                break;
            }
        }
    }
    let of = |v: &Value| v["id"].as_str().and_then(|id| parts.of_instance(id).ok());
    let mut missing = BTreeSet::new();
    let mut answered = owned.clone();
    if !forwarded(&headers) {
        let (more, m) = s
            .peers
            .gather(&s.shared, &owned, &uri.to_string(), "instances", of)
            .await;
        items.extend(more);
        answered = parts.all().filter(|p| !m.contains(p)).collect();
        missing = m;
    }
    items.sort_by_cached_key(|v| (of(v), v["id"].as_str().map(str::to_string)));
    items.truncate(limit);
    // a full page may have more after it: its last id is the next page's cursor
    let next = (items.len() == limit)
        .then(|| {
            items
                .last()
                .and_then(|v| v["id"].as_str().map(str::to_string))
        })
        .flatten();
    Ok(Json(json!({
        "instances": items,
        "next": next,
        "statePartitions": coverage(&answered, &missing),
    })))
}

/// `GET /v1/schedules`: each schedule's progress, from the owner of its partition.
pub async fn schedules(
    State(s): State<AppState>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let owned: BTreeSet<PartitionId> = s.shared.owned().into_keys().collect();
    let mut out = Vec::new();
    {
        let tx = super::snapshot::read(&s.store)?;
        for (p, wf, st) in tx.partitioned::<ScheduleState>(Table::Schedules)? {
            if p.is_some_and(|p| !owned.contains(&PartitionId(p))) {
                continue;
            }
            let scope = p.map_or(Scope::Node, Scope::Partition);
            let timer = tx.read_in(scope, &TimerIdOf(&key(&["cron", &wf])))?;
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
    }
    let parts = s.peers.parts;
    let of = |v: &Value| v["workflowId"].as_str().map(|w| parts.of_key(w, ""));
    let mut missing = BTreeSet::new();
    let mut answered = owned.clone();
    if !forwarded(&headers) {
        let (more, m) = s
            .peers
            .gather(&s.shared, &owned, &uri.to_string(), "schedules", of)
            .await;
        out.extend(more);
        answered = parts.all().filter(|p| !m.contains(p)).collect();
        missing = m;
    }
    out.sort_by_cached_key(|v| v["workflowId"].as_str().map(str::to_string));
    Ok(Json(json!({
        "schedules": out,
        "statePartitions": coverage(&answered, &missing),
    })))
}

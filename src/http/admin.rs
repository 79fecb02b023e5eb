//! The admin API's writes (start and cancel instances), the deployed workflows, health and
//! metrics; the reads are in [`super::query`].

use super::barrier::WAIT_AT_MOST;
use super::forward::{forwarded, Route};
use super::{ask, ApiError, AppState};
use crate::broker::{Cmd, StartRequest};
use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
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
                format!("the body must be the workflow input as JSON (an object for a Serverless Workflow, any value for an ASL machine): {e}"),
            )
        })?
    };
    // W3C trace context: the instance continues the caller's trace
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let trace = header("traceparent").map(|traceparent| crate::trace::Carrier {
        traceparent,
        tracestate: header("tracestate"),
    });
    let started = ask(&s.core, |reply| Cmd::Start {
        start: StartRequest {
            workflow: workflow.clone(),
            input,
            key,
            trace,
            at: None,
        },
        reply,
    })
    .await?;
    let id = started.id;
    // another broker's partition applies it: the start is in Kafka at `position`; answer once
    // that owner shows it, so the client reads what it wrote (202 while it does not yet,
    // with a location that waits for it)
    let (location, shown) = match started.position {
        Some((p, offset)) if !s.shared.owns(p) => {
            let location = format!("/v1/instances/{id}?position={offset}");
            let shown = shown(&s, p, &id, &location).await;
            (location, shown)
        }
        _ => (format!("/v1/instances/{id}"), Ok(())),
    };
    let (code, body) = match shown {
        Ok(()) => (
            StatusCode::CREATED,
            json!({"id": id, "workflowId": workflow}),
        ),
        Err(why) => {
            tracing::info!(instance = %id, %why, "a start answered 202: its owner does not show it yet");
            (
                StatusCode::ACCEPTED,
                json!({"id": id, "workflowId": workflow, "status": "PENDING", "pending": why}),
            )
        }
    };
    Ok((code, [(header::LOCATION, location)], Json(body)))
}

/// Whether instance `id` of partition `p` can be read at `location` (which names the work
/// topic position of its start): its owner has applied the start. Right after a hand-off the
/// new owner may not have announced itself here yet, or the broker asked may have just let
/// the partition go: the owner is looked up again as claims arrive. Everything, the owner's
/// own wait included, ends by [`WAIT_AT_MOST`]. The error says why not (the owner's answer).
async fn shown(
    s: &AppState,
    p: crate::cluster::partition::PartitionId,
    id: &str,
    location: &str,
) -> Result<(), String> {
    let until = tokio::time::Instant::now() + WAIT_AT_MOST;
    let late = || format!("its owner did not show it within {WAIT_AT_MOST:?}");
    // the owner that answered 503 last: asked again only once the claims name another
    let mut refused: Option<String> = None;
    let mut why = late();
    loop {
        if tokio::time::Instant::now() >= until {
            return Err(why);
        }
        let claimed = s.shared.directory_changed.notified();
        match s.peers.route(&s.shared, p, false) {
            Route::Remote(url) if refused.as_deref() == Some(url.as_str()) => {}
            Route::Remote(url) => {
                match tokio::time::timeout_at(until, owner_shows(s, &url, location)).await {
                    Err(_) => return Err(late()),
                    Ok(Ok(())) => return Ok(()),
                    // it does not own `p` (any more) or could not catch up yet: a newer
                    // claim may name the owner
                    Ok(Err((StatusCode::SERVICE_UNAVAILABLE, w))) => {
                        why = w;
                        refused = Some(url);
                    }
                    Ok(Err((_, w))) => return Err(w),
                }
            }
            Route::Local => {
                let position = location
                    .rsplit_once("position=")
                    .and_then(|(_, o)| o.parse().ok());
                let caught = super::barrier::caught_up(s, p, position);
                match tokio::time::timeout_at(until, caught).await {
                    Err(_) => return Err(late()),
                    // let go meanwhile: the next claim names the new owner
                    Ok(Err(e @ super::barrier::NotCaughtUp::Moved(_))) => why = e.to_string(),
                    Ok(Err(e)) => return Err(e.to_string()),
                    Ok(Ok(())) => {
                        return match super::query::stored(s, p, id) {
                            Ok(Some(_)) => Ok(()),
                            Ok(None) => Err(format!("state partition {p} does not hold it")),
                            Err(e) => Err(e.1),
                        }
                    }
                }
            }
            Route::Unavailable(w) => why = w,
        }
        if tokio::time::timeout_at(until, claimed).await.is_err() {
            return Err(why);
        }
    }
}

/// Asks the broker at `url` for `location`: `Ok` when it answers 200, else its status and
/// what it said.
async fn owner_shows(s: &AppState, url: &str, location: &str) -> Result<(), (StatusCode, String)> {
    match s.peers.ask(Method::GET, url, location, None, &[]).await {
        Ok(a) if a.status == StatusCode::OK => Ok(()),
        Ok(a) => Err((
            a.status,
            format!("its owner at {url} answered {}: {}", a.status, a.error()),
        )),
        Err(e) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            format!("its owner at {url} did not answer: {e}"),
        )),
    }
}

/// `POST /v1/instances/{id}/cancel` (the id may contain `/`).
pub async fn instance_action(
    state: State<AppState>,
    Path(path): Path<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    match path.strip_suffix("/cancel") {
        Some(id) if !id.is_empty() => {
            // the owner answers (404 for an instance it does not have); while the partition
            // has no reachable owner the cancel goes through the work topic and is accepted
            if let Ok(p) = state.peers.parts.of_instance(id) {
                if let Route::Remote(url) = state.peers.route(&state.shared, p, forwarded(&headers))
                {
                    let to = uri.to_string();
                    let r = state
                        .peers
                        .relay(Method::POST, &url, &to, Some(b"{}".to_vec()))
                        .await;
                    if r.status() != StatusCode::SERVICE_UNAVAILABLE {
                        return Ok(r);
                    }
                }
            }
            Ok(cancel(state, id.to_string()).await?.into_response())
        }
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

/// `GET /health`: always 200 while the process serves (a liveness probe must not restart a
/// broker because Kafka is away); `status` is `kafka_down` while no Kafka broker is reachable.
pub async fn health(State(s): State<AppState>) -> Json<Value> {
    let (inputs, state) = (*s.assigned.inputs.borrow(), *s.assigned.state.borrow());
    let total = inputs.unwrap_or(0) + state;
    let owned: Vec<u16> = s.shared.owned().into_keys().map(|p| p.0).collect();
    let connected = s.metrics.kafka_up.get() == 1;
    Json(json!({
        "status": if connected { "ok" } else { "kafka_down" },
        // what the two groups assigned: input topic partitions (null until that group first
        // assigned), and state partitions (the work topic's, in the `.state` group)
        "kafka": {"connected": connected, "assignedPartitions": total,
            "assignedInputPartitions": inputs, "assignedStatePartitions": state},
        "statePartitions": owned,
        // standby copies: partition -> the changelog offset the copy has reached
        "standby": s.shared.standby.positions().into_iter()
            .map(|(p, next)| (p.0.to_string(), Value::from(next)))
            .collect::<serde_json::Map<String, Value>>(),
    }))
}

/// `GET /ready`: 200 while Kafka is reachable, else 503 (a readiness probe takes the broker
/// out of a load balancer while it cannot accept events).
pub async fn ready(State(s): State<AppState>) -> Response {
    if s.metrics.kafka_up.get() == 1 {
        (StatusCode::OK, Json(json!({"status": "ok"}))).into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "kafka_down", "error": "no Kafka broker is reachable"})),
        )
            .into_response()
    }
}

pub async fn metrics(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let owned: Vec<_> = s.shared.owned().into_keys().collect();
    let latest = crate::broker::gauges::latest_snapshots(&s.shared.directory, &owned);
    // counting tables and waiting out a tombstone merge are for a blocking thread
    let (store, shared, last) = (s.store.clone(), s.shared.clone(), s.last_scrape.clone());
    let mut gauges = tokio::task::spawn_blocking(move || {
        crate::broker::gauges::gauges(&store, &owned, &|p| shared.outbox_held(p), &last)
    })
    .await
    .map_err(|e| {
        ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the metrics task failed: {e}"),
        )
    })??;
    gauges.push_str(&latest);
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        s.metrics.render(&gauges),
    ))
}

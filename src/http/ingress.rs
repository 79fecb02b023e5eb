//! `POST /v1/events`: the CloudEvents HTTP binding (binary mode with `ce-` headers, structured
//! mode with `application/cloudevents+json`), routed exactly like a Kafka record.

use super::{ask, ApiError, AppState};
use crate::broker::Cmd;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde_json::Value;

pub async fn post_event(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let event = crate::cloudevent::from_http(&headers, body.to_vec())
        .map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
    let routed = ask(&s.core, |reply| Cmd::Event { event, reply }).await?;
    let body = serde_json::to_value(&routed).unwrap_or_default();
    Ok((StatusCode::ACCEPTED, Json(body)))
}

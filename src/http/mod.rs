//! The HTTP side: CloudEvents ingress (`POST /v1/events`), the admin API ([`query`] reads,
//! [`definitions`] and their drawings), the web console ([`ui`]), `/health` and `/metrics`. Writes go to the core as commands; reads use store snapshots directly ([`snapshot`]: a wait for a tombstone merge leaves the async worker). A
//! request about a state partition another broker owns is forwarded to it ([`forward`]); an owner
//! reads what was written to it before it says an instance does not exist ([`barrier`]). With
//! `http.auth_token` set, every route but `/health` needs the token ([`auth`]). The AWS durable
//! execution API lives at AWS's paths ([`lambda`]), where SigV4-signed requests are admitted
//! too ([`sigv4`]).

mod admin;
pub mod auth;
pub mod barrier;
mod definitions;
mod forward;
mod ingress;
pub(crate) mod lambda;
pub(crate) mod query;
pub mod sigv4;
mod snapshot;
pub mod swf;
mod ui;

pub use forward::Peers;

use crate::broker::core::Shared;
use crate::broker::{AdminError, Cmd};
use crate::metrics::Metrics;
use crate::store::Store;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use std::sync::Arc;
use tokio::sync::mpsc;

#[derive(Clone)]
pub struct AppState {
    pub core: mpsc::Sender<Cmd>,
    pub store: Arc<Store>,
    pub metrics: Arc<Metrics>,
    pub shared: Arc<Shared>,
    /// Partitions the broker's groups assigned it.
    pub assigned: crate::broker::shared::Assigned,
    /// The other brokers: requests about their partitions are forwarded to them.
    pub peers: Peers,
    /// The work topic's end per partition (reads wait for their writes: [`barrier`]).
    pub work_end: Option<barrier::WorkEnd>,
    /// The store-kept gauges `/metrics` read last (served during a tombstone merge).
    pub last_scrape: Arc<crate::broker::gauges::LastScrape>,
}

/// The routes, behind the token check and the body limit of `gate`.
pub fn router(state: AppState, gate: auth::Gate) -> Router {
    let limit = axum::extract::DefaultBodyLimit::max(gate.max_body_bytes);
    Router::new()
        .route("/v1/events", post(ingress::post_event))
        .route("/v1/workflows", get(admin::workflows))
        .route("/v1/workflows/{id}", get(definitions::workflow))
        .route("/v1/workflows/{id}/graph", get(definitions::workflow_graph))
        .route("/v1/workflows/{id}/instances", post(admin::start))
        .route("/v1/instances", get(query::list))
        // child instance ids contain `/` (`{parent}/{visit}/i0`): match the rest of the path
        .route(
            "/v1/instances/{*id}",
            get(query::instance).post(admin::instance_action),
        )
        .route("/v1/schedules", get(query::schedules))
        .route("/health", get(admin::health))
        .route("/ready", get(admin::ready))
        .route("/metrics", get(admin::metrics))
        .route("/", post(swf::endpoint))
        .with_state(state.clone())
        .merge(lambda::routes(state))
        .merge(ui::routes(gate.clone()))
        .layer(axum::middleware::from_fn_with_state(gate, auth::check))
        .layer(limit)
}

/// An API error as JSON `{"error": …}` with the status its kind implies.
pub struct ApiError(pub StatusCode, pub String);

impl From<AdminError> for ApiError {
    fn from(e: AdminError) -> Self {
        let code = match e {
            AdminError::NotFound(_) => StatusCode::NOT_FOUND,
            AdminError::Refused(_) => StatusCode::CONFLICT,
            AdminError::Invalid(_) => StatusCode::BAD_REQUEST,
            AdminError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            AdminError::Moved(_) => StatusCode::SERVICE_UNAVAILABLE,
        };
        ApiError(code, e.to_string())
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

/// Sends a command with a reply channel and waits for the reply.
pub async fn ask<T>(
    core: &mpsc::Sender<Cmd>,
    make: impl FnOnce(crate::broker::Reply<T>) -> Cmd,
) -> Result<T, ApiError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let down = || {
        ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            "the broker is shutting down".into(),
        )
    };
    core.send(make(tx)).await.map_err(|_| down())?;
    let r = rx.await.map_err(|_| down())?;
    r.map_err(ApiError::from)
}

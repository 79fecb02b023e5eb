//! Workflow definitions and their drawings: `GET /v1/workflows/{id}` (the current version's
//! source), `GET /v1/workflows/{id}/graph` and an instance's graph with the states it visited
//! and the one it is in (`GET /v1/instances/{id}/graph`, called from [`super::query`]).

use super::{ApiError, AppState};
use crate::broker::compound::VersionOf;
use crate::broker::history_entries::HistoryAt;
use crate::broker::records::InstanceRecord;
use crate::definition::Body;
use crate::graph::{Graph, Marks};
use crate::store::{Scope, Snapshot};
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, Default)]
pub struct GraphQuery {
    /// `svg` (default), `dot` or `mermaid`.
    format: Option<String>,
}

/// `GET /v1/workflows/{id}`.
pub async fn workflow(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let d = s.shared.definition(&id).ok_or_else(|| unknown(&id))?;
    let w = &d.def.workflow;
    Ok(Json(json!({
        "id": d.id,
        "name": w.name,
        "version": d.version,
        "workflowVersion": w.version.as_ref().map(|v| v.0.clone()),
        "description": w.description,
        "file": d.file,
        "deployed": d.deployed,
        "source": d.source,
        "language": d.def.language().as_str(),
        "states": states_of(&d.def),
        "warnings": d.def.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
    }))
    .into_response())
}

/// `GET /v1/workflows/{id}/graph?format=svg|dot|mermaid`.
pub async fn workflow_graph(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<GraphQuery>,
) -> Result<Response, ApiError> {
    let d = s.shared.definition(&id).ok_or_else(|| unknown(&id))?;
    draw(&d.def, &Marks::default(), q.format.as_deref())
}

fn unknown(id: &str) -> ApiError {
    ApiError(
        StatusCode::NOT_FOUND,
        format!("no workflow {id:?} is deployed (GET /v1/workflows lists them)"),
    )
}

/// The graph of the version instance `rec` runs, marked with its path (from its history).
pub fn instance_graph(
    tx: &Snapshot<'_>,
    scope: Scope,
    rec: &InstanceRecord,
    format: Option<&str>,
) -> Result<Response, ApiError> {
    let wf = &rec.instance.workflow_id;
    let vk = VersionOf::new(wf, &rec.version);
    let stored = match tx.read_in(scope, &vk)? {
        Some(v) => Some(v),
        None => tx.read_in(Scope::Node, &vk)?,
    };
    let deployed = stored
        .and_then(|v| v.revive(wf, &rec.version))
        .ok_or_else(|| {
            ApiError(
                StatusCode::NOT_FOUND,
                format!(
                    "version {} of workflow {wf:?} is not stored here",
                    rec.version
                ),
            )
        })?;
    let mut marks = Marks {
        finished: rec.instance.status.is_final(),
        ..Marks::default()
    };
    let id = &rec.instance.id;
    for (_, h) in tx.scan_in::<HistoryAt>(scope, &HistoryAt::of(id))? {
        marks.visited.extend(h.entered);
        marks.visited.extend(h.state);
    }
    if !marks.finished {
        marks.current = rec.instance.state.clone();
    }
    draw(&deployed.def, &marks, format)
}

/// The top-level states of a definition: name and type.
fn states_of(def: &crate::definition::Definition) -> Vec<serde_json::Value> {
    match &def.body {
        Body::Machine(m) => m
            .body
            .states
            .iter()
            .map(|s| json!({"name": s.name, "type": s.kind.type_name()}))
            .collect(),
        Body::Durable(_) | Body::Swf => Vec::new(),
        Body::Workflow => def
            .workflow
            .states
            .iter()
            .map(|s| json!({"name": s.name(), "type": s.common().kind}))
            .collect(),
    }
}

fn draw(
    def: &crate::definition::Definition,
    marks: &Marks,
    format: Option<&str>,
) -> Result<Response, ApiError> {
    let g = Graph::of_definition(def);
    let (body, kind) = match format.unwrap_or("svg") {
        "svg" => (
            crate::graph::svg(&g, marks)
                .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?,
            "image/svg+xml",
        ),
        "dot" => (
            crate::graph::dot(&g, marks),
            "text/vnd.graphviz; charset=utf-8",
        ),
        "mermaid" => (crate::graph::mermaid_of(&g), "text/plain; charset=utf-8"),
        other => {
            return Err(ApiError(
                StatusCode::BAD_REQUEST,
                format!("format = {other:?}: use svg, dot or mermaid"),
            ))
        }
    };
    Ok(([(header::CONTENT_TYPE, kind)], body).into_response())
}

//! Reading what every broker holds: the instances of a built-in workflow on the partitions
//! owned here, and the answers of the other brokers to the same request (lists and counts
//! gathered, a task taken from the first broker that has one).

use super::{Fault, Req};
use crate::broker::records::InstanceRecord;
use crate::http::{ApiError, AppState};
use crate::store::{Scope, Table};
use axum::http::Method;
use serde_json::{json, Value};

/// Every instance of built-in workflow `workflow` on the partitions owned here.
pub fn local_instances(s: &AppState, workflow: &str) -> Result<Vec<InstanceRecord>, Fault> {
    let tx = crate::http::snapshot::read(&s.store).map_err(ApiError::from)?;
    let mut out = Vec::new();
    for p in s.shared.owned().into_keys() {
        let all: Vec<(String, InstanceRecord)> = tx
            .prefix_in(Scope::Partition(p.0), Table::Instances, "")
            .map_err(ApiError::from)?;
        out.extend(
            all.into_iter()
                .map(|(_, r)| r)
                .filter(|r| r.instance.workflow_id == workflow),
        );
    }
    Ok(out)
}

/// The `field` items every other broker answers to this request (relayed to each once).
pub async fn from_peers(s: &AppState, r: &Req, field: &str) -> Vec<Value> {
    let target = format!("{}{}", super::TARGET, r.action);
    let mut out = Vec::new();
    for url in super::remote_owners(s) {
        if let Some(v) = ask(s, &url, r, &target).await {
            if let Some(items) = v.get(field).and_then(Value::as_array) {
                out.extend(items.iter().cloned());
            }
            if let Some(n) = v.get("count").and_then(Value::as_u64) {
                out.push(json!(n));
            }
        }
    }
    out
}

/// The JSON answer of the broker at `url` to this request's body under `target` (the
/// `x-amz-target` action); `None` when it failed or is not JSON (the caller goes on with
/// the others).
pub async fn ask(s: &AppState, url: &str, r: &Req, target: &str) -> Option<Value> {
    let resp = s
        .peers
        .relay_with(
            Method::POST,
            url,
            "/",
            Some(r.raw.to_vec()),
            &[("x-amz-target", target)],
        )
        .await;
    if !resp.status().is_success() {
        return None;
    }
    let bytes = axum::body::to_bytes(resp.into_body(), 64 << 20)
        .await
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

//! Function calls over HTTP: `POST` the parameters as JSON with an `Idempotency-Key` header
//! (instance, state visit and action position; the same across retries and restarts), and
//! hand the outcome back to the core as an engine input.
//!
//! Outcome rules (SEMANTICS.md "Errors and retries"): a 2xx answer's JSON body is the result
//! (empty: `null`; not JSON: the text); a non-2xx answer fails with the `name` (or `error`, or
//! `type`) and `message` of its JSON body when present, else `FunctionExecutionError` with the
//! status and body; a transport failure is `FunctionExecutionError` too.

use crate::broker::records::Call;
use crate::broker::Cmd;
use crate::engine::ErrorInfo;
use crate::metrics::Metrics;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Semaphore};

/// Makes calls until the core goes away, at most `concurrency` at once.
pub async fn run(
    mut rx: mpsc::UnboundedReceiver<Call>,
    core: mpsc::Sender<Cmd>,
    metrics: Arc<Metrics>,
    timeout: Duration,
    concurrency: usize,
) {
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .expect("http client");
    let limit = Arc::new(Semaphore::new(concurrency.max(1)));
    while let Some(call) = rx.recv().await {
        let Ok(permit) = limit.clone().acquire_owned().await else {
            return;
        };
        let (client, core, metrics) = (client.clone(), core.clone(), metrics.clone());
        tokio::spawn(async move {
            let t0 = Instant::now();
            let outcome = call_once(&client, &call).await;
            let label = if outcome.is_ok() { "ok" } else { "error" };
            metrics
                .function_seconds
                .with_label_values(&[&call.function, label])
                .observe(t0.elapsed().as_secs_f64());
            drop(permit);
            let _ = core.send(Cmd::CallDone { call, outcome }).await;
        });
    }
}

async fn call_once(client: &reqwest::Client, call: &Call) -> Result<Value, ErrorInfo> {
    let mut req = client
        .post(&call.url)
        .header("Idempotency-Key", &call.key)
        .header("X-Flowbroker-Instance", &call.instance)
        .header("X-Flowbroker-Attempt", call.attempt.to_string());
    if let Some(tp) = &call.traceparent {
        req = req.header("traceparent", tp);
    }
    if let Some(ts) = &call.tracestate {
        req = req.header("tracestate", ts);
    }
    let resp = req.json(&call.parameters).send().await.map_err(|e| {
        ErrorInfo::new(
            "FunctionExecutionError",
            format!("calling {} at {}: {e}", call.function, call.url),
        )
    })?;
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    let body: Option<Value> = serde_json::from_str(&text).ok();
    if status.is_success() {
        return Ok(match body {
            Some(v) => v,
            None if text.trim().is_empty() => Value::Null,
            None => Value::String(text),
        });
    }
    let field = |names: &[&str]| {
        body.as_ref().and_then(|b| {
            names
                .iter()
                .find_map(|n| b.get(*n).and_then(Value::as_str).map(str::to_string))
        })
    };
    match field(&["name", "error", "type"]) {
        Some(name) => Err(ErrorInfo::new(
            name,
            field(&["message"]).unwrap_or_else(|| format!("HTTP {status}")),
        )),
        None => Err(ErrorInfo::new(
            "FunctionExecutionError",
            format!("{} answered HTTP {status}: {text}", call.url),
        )),
    }
}

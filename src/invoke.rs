//! Function calls over HTTP: `POST` the parameters as JSON with an `Idempotency-Key` header
//! (instance, state visit and action position; the same across retries and restarts), and
//! hand the outcome back to the core as an engine input.
//!
//! Outcome rules (SEMANTICS.md "Errors and retries"): a 2xx answer's JSON body is the result
//! (empty: `null`; not JSON: the text), unless it carries Lambda's `X-Amz-Function-Error`
//! header (the function raised: its `errorType` and `errorMessage`); a non-2xx answer fails with the `name` (or `error`, or
//! `type`) and `message` of its JSON body when present, else `FunctionExecutionError` with the
//! status and body; a transport failure is `FunctionExecutionError` too.
//!
//! With span export on (`crate::otel`), each attempt is a client span timed around the
//! request: the span the `traceparent` header names, the child of the state visit's span.

use crate::broker::records::Call;
use crate::broker::Cmd;
use crate::engine::ErrorInfo;
use crate::metrics::Metrics;
use crate::otel::Exporter;
use crate::trace::span::{key, SpanKind, SpanRecord};
use crate::trace::Upstream;
use chrono::{DateTime, Utc};
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
    spans: Option<Exporter>,
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
        let spans = spans.clone();
        tokio::spawn(async move {
            let (t0, started) = (Instant::now(), Utc::now());
            let (outcome, status) = call_once(&client, &call).await;
            let label = if outcome.is_ok() { "ok" } else { "error" };
            metrics
                .function_seconds
                .with_label_values(&[&call.function, label])
                .observe(t0.elapsed().as_secs_f64());
            drop(permit);
            if let Some(x) = &spans {
                x.export(span_of(&call, &outcome, status, (started, Utc::now())));
            }
            let _ = core.send(Cmd::CallDone { call, outcome }).await;
        });
    }
}

/// The client span of one attempt, when the call carries a trace.
fn span_of(
    call: &Call,
    outcome: &Result<Value, ErrorInfo>,
    status: Option<u16>,
    (start, end): (DateTime<Utc>, DateTime<Utc>),
) -> Option<SpanRecord> {
    let tp = Upstream::parse(call.traceparent.as_deref()?, None)?;
    let mut s = SpanRecord {
        name: format!("call {}", call.function),
        kind: SpanKind::Client,
        trace_id: tp.trace_id,
        span_id: tp.span_id,
        parent: call.parent_span,
        sampled: tp.sampled,
        start,
        end: end.max(start),
        attributes: Vec::new(),
        error: None,
    }
    .attr(key::INSTANCE, call.instance.as_str())
    .attr(key::WORKFLOW, call.workflow.as_str())
    .attr(key::FUNCTION, call.function.as_str())
    .attr(key::IDEMPOTENCY_KEY, call.key.as_str())
    .attr(key::ATTEMPT, i64::from(call.attempt))
    .attr(key::HTTP_METHOD, "POST")
    .attr(key::URL, call.url.as_str());
    if let Some(code) = status {
        s = s.attr(key::HTTP_STATUS, i64::from(code));
    }
    if let Err(e) = outcome {
        s = s.failed(format!("{}: {}", e.name, e.message));
    }
    Some(s)
}

/// The outcome of one request, and the HTTP status when an answer came.
async fn call_once(
    client: &reqwest::Client,
    call: &Call,
) -> (Result<Value, ErrorInfo>, Option<u16>) {
    let resp = match send(client, call).await {
        Ok(r) => r,
        Err(e) => return (Err(e), None),
    };
    let status = resp.status();
    (outcome_of(call, resp).await, Some(status.as_u16()))
}

async fn send(client: &reqwest::Client, call: &Call) -> Result<reqwest::Response, ErrorInfo> {
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
    if let Some(secs) = call.timeout_secs {
        req = req.timeout(Duration::from_secs(secs));
    }
    req.json(&call.parameters).send().await.map_err(|e| {
        ErrorInfo::new(
            "FunctionExecutionError",
            format!("calling {} at {}: {e}", call.function, call.url),
        )
    })
}

async fn outcome_of(call: &Call, resp: reqwest::Response) -> Result<Value, ErrorInfo> {
    let status = resp.status();
    // a Lambda-compatible endpoint answers a function's error with 200 and this header
    let function_error = resp
        .headers()
        .get("x-amz-function-error")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = resp.text().await.unwrap_or_default();
    let body: Option<Value> = serde_json::from_str(&text).ok();
    if let Some(kind) = function_error {
        let field = |n: &str| body.as_ref().and_then(|b| b.get(n)).and_then(Value::as_str);
        return Err(ErrorInfo::new(
            field("errorType").unwrap_or(&kind),
            field("errorMessage").map_or_else(|| text.clone(), str::to_string),
        ));
    }
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

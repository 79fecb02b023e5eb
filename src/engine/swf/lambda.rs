//! `ScheduleLambdaFunction`: a function configured in flowbroker (the `[functions]` table,
//! or an http(s) URL as the name) called over HTTP like any function, with the decision's
//! input as its payload. `startToCloseTimeout` (default 300 s) is a durable timer; the result
//! or error comes back to the run as SWF records it.

use super::cx::Cx;
use super::execution::OpenLambda;
use crate::engine::instance::ErrorInfo;
use crate::engine::Action;
use crate::swf::decision::Decision;
use serde_json::{json, Value};

/// SWF's default `startToCloseTimeout` for a Lambda task.
const DEFAULT_TIMEOUT: u64 = 300;

/// The idempotency key of the call scheduled by event `scheduled`.
fn key(cx: &Cx, scheduled: i64) -> String {
    format!("{}/swf/l{scheduled}", cx.inst.id)
}

pub fn schedule(cx: &mut Cx, d: &Decision, done: i64) {
    let id = d.str("id").unwrap_or_default().to_string();
    let name = d.str("name").unwrap_or_default().to_string();
    if cx.exec.lambdas.contains_key(&id) {
        cx.record(
            "ScheduleLambdaFunctionFailed",
            vec![
                ("id", json!(id)),
                ("name", json!(name)),
                ("cause", json!("ID_ALREADY_IN_USE")),
                ("decisionTaskCompletedEventId", json!(done)),
            ],
        );
        return;
    }
    let secs = d
        .str("startToCloseTimeout")
        .and_then(|t| t.parse().ok())
        .unwrap_or(DEFAULT_TIMEOUT);
    let input = d.str("input").map(str::to_string);
    let scheduled = cx.record(
        "LambdaFunctionScheduled",
        vec![
            ("id", json!(id)),
            ("name", json!(name)),
            ("control", json!(d.str("control"))),
            ("input", json!(input)),
            ("startToCloseTimeout", json!(secs.to_string())),
            ("decisionTaskCompletedEventId", json!(done)),
        ],
    );
    let started = cx.record(
        "LambdaFunctionStarted",
        vec![("scheduledEventId", json!(scheduled))],
    );
    cx.exec
        .lambdas
        .insert(id, OpenLambda { scheduled, started });
    cx.arm(&format!("l{scheduled}"), secs);
    // the name as Lambda takes it: a function name or its ARN's
    let function = name.rsplit(":function:").next().unwrap_or(&name);
    let function = function.split(':').next().unwrap_or(function).to_string();
    let parameters = match &input {
        Some(text) => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone())),
        None => Value::Null,
    };
    cx.out.push(Action::Invoke {
        key: key(cx, scheduled),
        function,
        resource: name,
        parameters,
        attempt: 1,
        // the durable timer decides the timeout; the request is cut a second later
        timeout_secs: Some(secs + 1),
        stale_on_takeover: false,
    });
}

/// The open Lambda task whose call has idempotency key `k`.
fn by_key(cx: &Cx, k: &str) -> Option<String> {
    let scheduled: i64 = k
        .strip_prefix(&format!("{}/swf/l", cx.inst.id))?
        .parse()
        .ok()?;
    cx.exec
        .lambdas
        .iter()
        .find(|(_, l)| l.scheduled == scheduled)
        .map(|(id, _)| id.clone())
}

fn ids(l: &OpenLambda) -> [(&'static str, Value); 2] {
    [
        ("scheduledEventId", json!(l.scheduled)),
        ("startedEventId", json!(l.started)),
    ]
}

pub fn result(cx: &mut Cx, k: &str, result: Value) {
    let Some(id) = by_key(cx, k) else { return };
    let l = cx.exec.lambdas.remove(&id).expect("found above");
    cx.disarm(&format!("l{}", l.scheduled));
    let text = match result {
        Value::Null => Value::Null,
        Value::String(s) => Value::String(s),
        v => Value::String(v.to_string()),
    };
    let mut pairs = ids(&l).to_vec();
    pairs.push(("result", text));
    cx.record("LambdaFunctionCompleted", pairs);
}

pub fn failed(cx: &mut Cx, k: &str, error: ErrorInfo) {
    let Some(id) = by_key(cx, k) else { return };
    let l = cx.exec.lambdas.remove(&id).expect("found above");
    cx.disarm(&format!("l{}", l.scheduled));
    let mut pairs = ids(&l).to_vec();
    pairs.push(("reason", json!(error.name)));
    pairs.push(("details", json!(error.message)));
    cx.record("LambdaFunctionFailed", pairs);
}

/// The task's `startToCloseTimeout` passed (timer `l{scheduled}`).
pub fn timed_out(cx: &mut Cx, scheduled: i64) {
    let Some(id) = cx
        .exec
        .lambdas
        .iter()
        .find(|(_, l)| l.scheduled == scheduled)
        .map(|(id, _)| id.clone())
    else {
        return;
    };
    let l = cx.exec.lambdas.remove(&id).expect("found above");
    let mut pairs = ids(&l).to_vec();
    pairs.push(("timeoutType", json!("START_TO_CLOSE")));
    cx.record("LambdaFunctionTimedOut", pairs);
}

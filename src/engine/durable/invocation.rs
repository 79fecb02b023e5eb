//! Invoking the function: one invocation in flight at a time, with the operations the
//! handler replays against and a fresh checkpoint token; its answer (`SUCCEEDED`, `FAILED`,
//! `PENDING`) read; failed invocations retried with backoff, a bounded number of times.

use super::cx::Cx;
use super::keys::{self, Timer};
use super::run::{invocation_json, PAGE};
use crate::durable::arn;
use crate::durable::wire::{ErrorObject, OpStatus, OpType};
use crate::engine::instance::ErrorInfo;
use crate::engine::Action;
use chrono::Duration;
use serde_json::{json, Value};

/// Failed invocations in a row before the execution fails with the last error.
pub const MAX_INVOCATION_FAILURES: u32 = 5;

/// Invokes the function now: the whole visible state up to a page (the SDK pages through
/// the rest), the operations changed since the last invocation, a token only this
/// invocation holds.
pub fn invoke(cx: &mut Cx) {
    let run = &mut cx.run;
    run.invocations += 1;
    run.token += 1;
    let key = keys::invocation(&cx.inst.id, run.invocations);
    let updated: Vec<&str> = run
        .ops
        .iter()
        .filter(|o| o.touched > run.seen && o.op.op_type != OpType::Execution)
        .map(|o| o.op.id.as_str())
        .collect();
    let (page, next) = run.page(0, PAGE);
    let parameters = json!({
        "DurableExecutionArn": run.arn,
        "CheckpointToken": arn::token(&cx.inst.id, run.token),
        "InitialExecutionState": {
            "Operations": page.into_iter().map(invocation_json).collect::<Vec<_>>(),
            "NextMarker": next.map(|n| n.to_string()).unwrap_or_default(),
        },
        "UpdatedOperationIds": updated,
    });
    run.seen = run.seq;
    run.invoking = Some(key.clone());
    cx.path.push(format!("invocation {}", run.invocations));
    cx.out.push(Action::Invoke {
        key,
        function: cx.f.id.clone(),
        resource: cx.f.invocation_url(),
        parameters,
        attempt: run.invocations as u32,
        timeout_secs: Some(cx.f.invocation_timeout),
        stale_on_takeover: true,
    });
}

/// Invokes again if nothing is in flight and something changed that the handler has not
/// seen (a wait ended, a retry is due, a callback was answered, a child finished).
pub fn wake(cx: &mut Cx) {
    if cx.run.invoking.is_none() && cx.run.unseen() && !cx.inst.status.is_final() {
        invoke(cx);
    }
}

/// The function answered invocation `key`.
pub fn on_result(cx: &mut Cx, key: &str, result: Value) {
    if cx.run.invoking.as_deref() != Some(key) {
        return; // an earlier invocation's late answer: its checkpoints already counted
    }
    cx.run.invoking = None;
    let status = result.get("Status").and_then(Value::as_str).unwrap_or("");
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    };
    match status {
        "SUCCEEDED" => {
            cx.run.failures = 0;
            cx.complete(text(result.get("Result")));
        }
        "FAILED" => {
            cx.run.failures = 0;
            let error = result
                .get("Error")
                .and_then(|e| serde_json::from_value::<ErrorObject>(e.clone()).ok())
                .unwrap_or_default();
            cx.fail(&error, OpStatus::Failed);
        }
        "PENDING" if cx.run.unseen() => {
            cx.run.failures = 0;
            invoke(cx);
        }
        "PENDING" if cx.run.waiting() => cx.run.failures = 0,
        "PENDING" => retry(
            cx,
            ErrorInfo::new(
                "InvalidParameterValueException",
                "Cannot return PENDING status with no pending operations.",
            ),
        ),
        _ => {
            let error = ErrorObject::new(
                "InvalidParameterValueException",
                format!(
                    "the function's answer is not a durable execution output ({{\"Status\": \
                     \"SUCCEEDED\"|\"FAILED\"|\"PENDING\"}}): {}",
                    truncate(&result.to_string(), 200)
                ),
            );
            cx.fail(&error, OpStatus::Failed);
        }
    }
}

/// Invocation `key` failed: no answer, an HTTP error, a function error (the SDK raises for
/// what a new invocation can fix, such as a stale token).
pub fn on_failed(cx: &mut Cx, key: &str, error: ErrorInfo) {
    if cx.run.invoking.as_deref() != Some(key) {
        return;
    }
    cx.run.invoking = None;
    retry(cx, error);
}

/// Invokes again after 1, 2, 4, 8 s, then fails the execution with `error`.
fn retry(cx: &mut Cx, error: ErrorInfo) {
    cx.run.failures += 1;
    if cx.run.failures >= MAX_INVOCATION_FAILURES {
        let e = super::cx::object_of(&error);
        cx.fail(&e, OpStatus::Failed);
        return;
    }
    let delay = Duration::seconds(1 << (cx.run.failures - 1));
    let n = cx.run.invocations;
    cx.arm(&Timer::Reinvoke(n), cx.now + delay);
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

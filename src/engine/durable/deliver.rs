//! Inputs other than a start finding what they answer: checkpoints, the function's answers,
//! timers (waits, retries, callback timeouts, re-invocations, the deadline), callback
//! answers by event, chained-invoke children finishing, and stop.

use super::checkpoint;
use super::cx::{info_of, object_of, Cx, EXECUTION_TIMEOUT, STOPPED};
use super::invocation::{self, wake};
use super::keys::{
    self, Timer, CALLBACK_ATTR, CALLBACK_FAILURE, CALLBACK_HEARTBEAT, CALLBACK_SUCCESS,
};
use super::run::Heartbeat;
use crate::durable::arn;
use crate::durable::wire::{ErrorObject, OpStatus, OpType, Outcome};
use crate::engine::instance::{Event, Status};
use crate::engine::{Action, EngineError, Input};
use chrono::Duration;
use serde_json::Value;

pub fn input(cx: &mut Cx, input: Input) -> Result<(), EngineError> {
    match input {
        Input::Start { .. } => return Err(EngineError::AlreadyStarted(cx.inst.id.clone())),
        Input::Swf { .. } => {
            return Err(crate::engine::swf::SwfError::Validation(
                "an SWF call goes to an SWF execution".into(),
            )
            .into())
        }
        Input::Checkpoint {
            token,
            client_token,
            updates,
        } => {
            let updates = serde_json::from_value(updates).map_err(|e| {
                EngineError::InvalidUpdate(format!(
                    "Updates is not a list of operation updates: {e}"
                ))
            })?;
            checkpoint::apply(cx, &token, client_token, updates)?
        }
        Input::ActionResult { key, result } => invocation::on_result(cx, &key, result),
        Input::ActionFailed { key, error } => invocation::on_failed(cx, &key, error),
        Input::TimerFired { id } => {
            if cx.inst.timers.remove(&id) {
                if let Some(t) = keys::parse_timer(&cx.inst.id, &id) {
                    fired(cx, t);
                }
            }
        }
        Input::Event { event } => answer(cx, &event)?,
        Input::ChildCompleted { id, output, .. } => {
            child_done(cx, &id, OpStatus::Succeeded, Some(output.to_string()), None)
        }
        Input::ChildFailed { id, error } => {
            child_done(cx, &id, OpStatus::Failed, None, Some(object_of(&error)))
        }
        Input::Cancel => {
            cx.close(OpStatus::Stopped);
            cx.inst.status = Status::Cancelled;
            cx.inst.error = Some(info_of(
                &ErrorObject::new(STOPPED, "Execution stopped by user request"),
                STOPPED,
            ));
            cx.out.push(Action::Cancelled);
        }
    }
    Ok(())
}

fn fired(cx: &mut Cx, t: Timer) {
    match t {
        Timer::Deadline => {
            let e = ErrorObject::new(
                EXECUTION_TIMEOUT,
                format!(
                    "Execution timed out after {} seconds.",
                    cx.f.execution_timeout
                ),
            );
            cx.fail(&e, OpStatus::TimedOut);
            return;
        }
        Timer::Reinvoke(_) => {
            if cx.run.invoking.is_none() {
                invocation::invoke(cx);
            }
            return;
        }
        Timer::Wait(op) => {
            if let Some(i) = started(cx, &op, OpType::Wait) {
                cx.end(i, OpStatus::Succeeded);
            }
        }
        Timer::Retry(op) => {
            if let Some(i) = cx.run.find(&op) {
                if cx.run.ops[i].op.status == OpStatus::Pending {
                    checkpoint::ready(cx, i);
                }
            }
        }
        Timer::CallbackTimeout(op) => {
            let e = ErrorObject::new("Callback.Timeout", "Callback timed out");
            callback_ends(cx, &op, OpStatus::TimedOut, None, Some(e));
        }
        Timer::Heartbeat(op, n) => {
            if cx.run.heartbeats.get(&op).is_some_and(|h| h.n == n) {
                let e = ErrorObject::new("Callback.Heartbeat", "Callback timed out on heartbeat");
                callback_ends(cx, &op, OpStatus::TimedOut, None, Some(e));
            }
        }
    }
    wake(cx);
}

/// The index of operation `op` if it is a `kind` in progress.
fn started(cx: &Cx, op: &str, kind: OpType) -> Option<usize> {
    cx.run.find(op).filter(|&i| {
        cx.run.ops[i].op.op_type == kind && cx.run.ops[i].op.status == OpStatus::Started
    })
}

/// A callback answered by an event: `flowbroker.callback.success` (data: the result; a
/// string whose content type is not JSON is kept verbatim), `.failure` (data: an error
/// object), `.heartbeat`.
fn answer(cx: &mut Cx, event: &Event) -> Result<(), EngineError> {
    let not_waiting = || EngineError::NotWaiting {
        id: cx.inst.id.clone(),
        event_type: event.event_type.clone(),
        event_source: event.source.clone(),
    };
    let Some(cb) = event.attribute(CALLBACK_ATTR) else {
        return Err(not_waiting());
    };
    let op = match arn::read_callback(&cb) {
        Ok((inst, op)) if inst == cx.inst.id => op,
        _ => return Err(EngineError::CallbackNotActive(cb)),
    };
    if started(cx, &op, OpType::Callback).is_none() {
        return Err(EngineError::CallbackNotActive(cb));
    }
    match event.event_type.as_str() {
        CALLBACK_SUCCESS => {
            let result = result_text(event);
            callback_ends(cx, &op, OpStatus::Succeeded, result, None);
        }
        CALLBACK_FAILURE => {
            let e = error_of(event.data.as_ref());
            callback_ends(cx, &op, OpStatus::Failed, None, Some(e));
        }
        CALLBACK_HEARTBEAT => {
            if let Some(h) = cx.run.heartbeats.get(&op).cloned() {
                cx.disarm(&Timer::Heartbeat(op.clone(), h.n));
                let n = h.n + 1;
                cx.run.heartbeats.insert(
                    op.clone(),
                    Heartbeat {
                        seconds: h.seconds,
                        n,
                    },
                );
                let due = cx.now + Duration::seconds(h.seconds as i64);
                cx.arm(&Timer::Heartbeat(op, n), due);
            }
            return Ok(());
        }
        _ => return Err(not_waiting()),
    }
    wake(cx);
    Ok(())
}

/// A success's result as the SDK gets it back: the data's JSON text, or the data itself
/// when it is a string sent as something other than JSON (the callback API's raw body).
fn result_text(event: &Event) -> Option<String> {
    let json_type = event
        .datacontenttype
        .as_deref()
        .is_none_or(|t| t.contains("json"));
    match &event.data {
        None | Some(Value::Null) if !json_type => None,
        None => None,
        Some(Value::String(s)) if !json_type => Some(s.clone()),
        Some(v) => Some(v.to_string()),
    }
}

/// An error object from a failure's data: Lambda's `ErrorObject` fields, or `error` /
/// `errorType` and `message` / `cause` / `errorMessage`.
fn error_of(data: Option<&Value>) -> ErrorObject {
    let Some(Value::Object(m)) = data else {
        return ErrorObject::default();
    };
    let field = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| m.get(*n).and_then(Value::as_str).map(str::to_string))
    };
    ErrorObject {
        error_type: field(&["ErrorType", "errorType", "error", "name"]),
        error_message: field(&["ErrorMessage", "errorMessage", "message", "cause"]),
        error_data: field(&["ErrorData", "errorData"]),
        stack_trace: m
            .get("StackTrace")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn callback_ends(
    cx: &mut Cx,
    op: &str,
    status: OpStatus,
    result: Option<String>,
    error: Option<ErrorObject>,
) {
    let Some(i) = started(cx, op, OpType::Callback) else {
        return;
    };
    cx.quiet(op);
    cx.run.heartbeats.remove(op);
    let d = cx.run.ops[i]
        .op
        .callback_details
        .get_or_insert_with(Default::default);
    d.result = result;
    d.error = error;
    cx.end(i, status);
}

fn child_done(
    cx: &mut Cx,
    child: &str,
    status: OpStatus,
    result: Option<String>,
    error: Option<ErrorObject>,
) {
    cx.inst.children.remove(child);
    let Some(op) = cx.run.children.get(child).cloned() else {
        return;
    };
    let Some(i) = started(cx, &op, OpType::ChainedInvoke) else {
        return;
    };
    cx.run.ops[i].op.chained_invoke_details = Some(Outcome {
        replay_children: None,
        result,
        error,
    });
    cx.end(i, status);
    wake(cx);
}

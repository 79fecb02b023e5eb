//! A checkpoint (`CheckpointDurableExecution`): the token checked, the updates checked and
//! applied in order, the token advanced, due waits and retries completed, and the answer
//! (the operations the handler has not seen) kept for a client that retries the call.

use super::cx::Cx;
use super::keys::{self, Timer};
use super::run::{new_op, Heartbeat, LastCheckpoint, Op};
use crate::durable::arn;
use crate::durable::wire::{
    CallbackDetails, OpAction, OpStatus, OpType, OperationUpdate, Outcome, StepDetails, WaitDetails,
};
use crate::engine::{Action, EngineError};
use chrono::Duration;
use serde_json::Value;
use std::collections::HashSet;

/// Applies checkpoint `updates` presented with `token`.
pub fn apply(
    cx: &mut Cx,
    token: &str,
    client_token: Option<String>,
    updates: Vec<OperationUpdate>,
) -> Result<(), EngineError> {
    if let Some(last) = &cx.run.last {
        if client_token.is_some() && last.client_token == client_token && last.inbound == token {
            return Ok(()); // a retried call: the broker answers with `last` again
        }
    }
    let stale = || EngineError::InvalidCheckpointToken(cx.inst.id.clone());
    match arn::read_token(token) {
        Ok((id, seq)) if id == cx.inst.id && seq == cx.run.token => {}
        _ => return Err(stale()),
    }
    if cx.run.invoking.is_none() {
        return Err(stale()); // no invocation holds a token now
    }
    let mut seen_ids: HashSet<String> = HashSet::new();
    let count = updates.len();
    for (n, u) in updates.into_iter().enumerate() {
        let again = !seen_ids.insert(u.id.clone());
        if again
            && !(matches!(u.op_type, OpType::Step | OpType::Context) && u.action != OpAction::Start)
        {
            return Err(invalid(
                "Cannot checkpoint multiple operations with the same ID.",
            ));
        }
        if u.op_type == OpType::Execution && n + 1 != count {
            return Err(invalid("EXECUTION checkpoint must be the last update."));
        }
        update(cx, u)?;
        if cx.inst.status.is_final() {
            break;
        }
    }
    let finished = cx.inst.status.is_final();
    if !finished {
        cx.run.token += 1;
        complete_due(cx);
    }
    let ops: Vec<String> = cx
        .run
        .ops
        .iter()
        .filter(|o| o.touched > cx.run.seen)
        .map(|o| o.op.id.clone())
        .collect();
    cx.run.seen = cx.run.seq;
    cx.run.last = Some(LastCheckpoint {
        client_token,
        inbound: token.to_string(),
        outbound: (!finished).then(|| arn::token(&cx.inst.id, cx.run.token)),
        ops,
    });
    Ok(())
}

fn invalid(msg: &str) -> EngineError {
    EngineError::InvalidUpdate(msg.to_string())
}

/// The largest operation payload (`OperationPayload`'s limit in the Lambda model).
pub const MAX_PAYLOAD: usize = 6 * 1024 * 1024;

fn update(cx: &mut Cx, u: OperationUpdate) -> Result<(), EngineError> {
    if let Some(p) = u.payload.as_ref().filter(|p| p.len() > MAX_PAYLOAD) {
        return Err(invalid(&format!(
            "The payload of operation {} is {} bytes; the limit is {MAX_PAYLOAD}.",
            u.id,
            p.len()
        )));
    }
    if u.op_type == OpType::Execution {
        match u.action {
            OpAction::Succeed => cx.complete(u.payload),
            OpAction::Fail => cx.fail(&u.error.unwrap_or_default(), OpStatus::Failed),
            _ => return Err(invalid("Invalid action for the given operation type.")),
        }
        return Ok(());
    }
    if let Some(p) = &u.parent_id {
        match cx.run.get(p) {
            Some(parent) if parent.op_type == OpType::Context => {}
            _ => return Err(invalid("Invalid parent operation id.")),
        }
    }
    let current = cx.run.find(&u.id);
    if let Some(i) = current {
        let op = &cx.run.ops[i].op;
        if op.op_type != u.op_type {
            return Err(invalid("Inconsistent operation type."));
        }
        if op.status.is_final() {
            return Err(invalid(&format!(
                "Operation {} has already finished ({:?}).",
                u.id, op.status
            )));
        }
    }
    let i = match (u.op_type, u.action, current) {
        (_, OpAction::Start, None) => create(cx, &u, OpStatus::Started),
        (OpType::Step | OpType::Context, OpAction::Succeed | OpAction::Fail, None) => {
            create(cx, &u, OpStatus::Started)
        }
        (OpType::Step, OpAction::Retry, None) => create(cx, &u, OpStatus::Started),
        (OpType::Step, OpAction::Start, Some(i)) => i,
        (OpType::Step, OpAction::Succeed | OpAction::Fail | OpAction::Retry, Some(i)) => i,
        (OpType::Context, OpAction::Succeed | OpAction::Fail, Some(i)) => i,
        (OpType::Wait, OpAction::Cancel, Some(i)) => i,
        (_, OpAction::Start, Some(_)) => {
            return Err(invalid(&format!(
                "Cannot start {:?} operation {}: it already exists.",
                u.op_type, u.id
            )))
        }
        _ => return Err(invalid("Invalid action for the given operation type.")),
    };
    match (u.op_type, u.action) {
        (OpType::Step, OpAction::Start) => {
            let op = &mut cx.run.ops[i].op;
            op.status = OpStatus::Started;
            op.step_details
                .get_or_insert_with(StepDetails::default)
                .next_attempt_timestamp = None;
            cx.run.touch(i);
        }
        (OpType::Step, OpAction::Retry) => {
            let delay = u
                .step_options
                .as_ref()
                .and_then(|o| o.next_attempt_delay_seconds)
                .unwrap_or(1)
                .max(1);
            let due = cx.now + Duration::seconds(delay as i64);
            let op = &mut cx.run.ops[i].op;
            let d = op.step_details.get_or_insert_with(StepDetails::default);
            d.attempt += 1;
            d.next_attempt_timestamp = Some(due);
            d.result = u.payload;
            d.error = u.error;
            op.status = OpStatus::Pending;
            cx.run.touch(i);
            cx.arm(&Timer::Retry(u.id.clone()), due);
        }
        (OpType::Step, OpAction::Succeed | OpAction::Fail) => {
            let op = &mut cx.run.ops[i].op;
            let d = op.step_details.get_or_insert_with(StepDetails::default);
            d.attempt += 1;
            d.next_attempt_timestamp = None;
            let status = if u.action == OpAction::Succeed {
                d.result = u.payload;
                d.error = None;
                OpStatus::Succeeded
            } else {
                d.error = Some(u.error.unwrap_or_default());
                OpStatus::Failed
            };
            cx.quiet(&u.id);
            cx.end(i, status);
        }
        (OpType::Context, OpAction::Start) => {}
        (OpType::Context, OpAction::Succeed | OpAction::Fail) => {
            let replay = u.context_options.as_ref().and_then(|o| o.replay_children);
            let op = &mut cx.run.ops[i].op;
            let d = op.context_details.get_or_insert_with(Outcome::default);
            if replay.is_some() {
                d.replay_children = replay;
            }
            let status = if u.action == OpAction::Succeed {
                d.result = u.payload;
                OpStatus::Succeeded
            } else {
                d.error = Some(u.error.unwrap_or_default());
                OpStatus::Failed
            };
            cx.end(i, status);
        }
        (OpType::Wait, OpAction::Start) => {
            let secs = u
                .wait_options
                .as_ref()
                .and_then(|o| o.wait_seconds)
                .filter(|s| *s >= 1)
                .ok_or_else(|| invalid("A WAIT needs WaitOptions.WaitSeconds of at least 1."))?;
            let due = cx.now + Duration::seconds(secs as i64);
            cx.run.ops[i].op.wait_details = Some(WaitDetails {
                scheduled_end_timestamp: Some(due),
            });
            cx.arm(&Timer::Wait(u.id.clone()), due);
        }
        (OpType::Wait, OpAction::Cancel) => {
            cx.quiet(&u.id);
            cx.end(i, OpStatus::Cancelled);
        }
        (OpType::Callback, OpAction::Start) => {
            let id = arn::callback_id(&cx.inst.id, &u.id);
            cx.run.ops[i].op.callback_details = Some(CallbackDetails {
                callback_id: Some(id),
                ..CallbackDetails::default()
            });
            let opts = u.callback_options.clone().unwrap_or_default();
            if let Some(t) = opts.timeout_seconds.filter(|t| *t > 0) {
                let due = cx.now + Duration::seconds(t as i64);
                cx.arm(&Timer::CallbackTimeout(u.id.clone()), due);
            }
            if let Some(h) = opts.heartbeat_timeout_seconds.filter(|h| *h > 0) {
                cx.run
                    .heartbeats
                    .insert(u.id.clone(), Heartbeat { seconds: h, n: 0 });
                let due = cx.now + Duration::seconds(h as i64);
                cx.arm(&Timer::Heartbeat(u.id.clone(), 0), due);
            }
        }
        (OpType::ChainedInvoke, OpAction::Start) => {
            let opts = u.chained_invoke_options.as_ref().ok_or_else(|| {
                invalid("A CHAINED_INVOKE needs ChainedInvokeOptions.FunctionName.")
            })?;
            let target = arn::function_of(&opts.function_name).to_string();
            cx.run.ops[i].op.chained_invoke_details = Some(Outcome::default());
            let child = keys::child(&cx.inst.id, cx.run.children.len() + 1);
            let input = match &u.payload {
                Some(p) => serde_json::from_str(p).unwrap_or_else(|_| Value::String(p.clone())),
                None => Value::Null,
            };
            cx.run.children.insert(child.clone(), u.id.clone());
            cx.inst.children.insert(child.clone());
            cx.out.push(Action::StartChild {
                id: child,
                workflow_id: target,
                input,
                wait: true,
            });
        }
        _ => return Err(invalid("Invalid action for the given operation type.")),
    }
    Ok(())
}

/// A new operation from an update's common fields.
fn create(cx: &mut Cx, u: &OperationUpdate, status: OpStatus) -> usize {
    let mut op = new_op(&u.id, u.op_type, status, cx.now);
    op.parent_id = u.parent_id.clone();
    op.name = u.name.clone();
    op.sub_type = u.sub_type.clone();
    if u.op_type == OpType::Step {
        op.step_details = Some(StepDetails::default());
    }
    if u.op_type == OpType::Context {
        op.context_details = Some(Outcome {
            replay_children: u.context_options.as_ref().and_then(|o| o.replay_children),
            ..Outcome::default()
        });
    }
    cx.path
        .push(op.name.clone().unwrap_or_else(|| op.id.clone()));
    cx.run.ops.push(Op { op, touched: 0 });
    let i = cx.run.ops.len() - 1;
    cx.run.touch(i);
    i
}

/// Completes the waits that have ended and readies the retries that are due (their timers
/// may not have fired yet), so a running invocation sees them at once.
pub fn complete_due(cx: &mut Cx) {
    for i in 0..cx.run.ops.len() {
        let op = &cx.run.ops[i].op;
        let id = op.id.clone();
        match (op.op_type, op.status) {
            (OpType::Wait, OpStatus::Started)
                if op
                    .wait_details
                    .as_ref()
                    .and_then(|d| d.scheduled_end_timestamp)
                    .is_some_and(|t| t <= cx.now) =>
            {
                cx.disarm(&Timer::Wait(id));
                cx.end(i, OpStatus::Succeeded);
            }
            (OpType::Step, OpStatus::Pending)
                if op
                    .step_details
                    .as_ref()
                    .and_then(|d| d.next_attempt_timestamp)
                    .is_some_and(|t| t <= cx.now) =>
            {
                cx.disarm(&Timer::Retry(id));
                ready(cx, i);
            }
            _ => {}
        }
    }
}

/// A pending STEP's retry is due.
pub fn ready(cx: &mut Cx, i: usize) {
    let op = &mut cx.run.ops[i].op;
    op.status = OpStatus::Ready;
    if let Some(d) = op.step_details.as_mut() {
        d.next_attempt_timestamp = None;
    }
    cx.run.touch(i);
}

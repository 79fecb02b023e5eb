//! A durable execution as the instance stores it: the operations in the order they were
//! created, the sequence that marks what changed since the handler last saw the state, the
//! checkpoint token's sequence, the invocation in flight and the last checkpoint's answer
//! (replayed to a client that retries it).

use crate::durable::wire::{OpStatus, OpType, Operation};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The most operations one invocation's input or one state page carries; the SDK pages
/// through the rest with `GetDurableExecutionState`.
pub const PAGE: usize = 1000;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    /// The execution's name (`DurableExecutionName`) and ARN.
    pub name: String,
    pub arn: String,
    /// The function the definition names at its Invoke endpoint.
    pub function: String,
    pub ops: Vec<Op>,
    /// Bumped by every change to an operation; an operation keeps the value of its last.
    pub seq: u64,
    /// The highest `seq` the handler has been given.
    pub seen: u64,
    /// The checkpoint token's sequence: a token is valid while it carries this.
    pub token: u64,
    /// Invocations made so far (each has its own key).
    pub invocations: u64,
    /// The invocation in flight, by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invoking: Option<String>,
    /// Invocations that failed in a row (transport errors, function errors).
    #[serde(default)]
    pub failures: u32,
    /// CHAINED_INVOKE children: child instance id -> operation id.
    #[serde(default)]
    pub children: BTreeMap<String, String>,
    /// CALLBACKs with a heartbeat timeout, by operation id.
    #[serde(default)]
    pub heartbeats: BTreeMap<String, Heartbeat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<LastCheckpoint>,
}

/// One operation and when it last changed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Op {
    #[serde(flatten)]
    pub op: Operation,
    #[serde(rename = "touched")]
    pub touched: u64,
}

/// A callback's heartbeat timeout and how many times its timer was armed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Heartbeat {
    pub seconds: u64,
    pub n: u64,
}

/// The answer to the last checkpoint, kept so a retried call (same client token, same
/// inbound token) gets it again instead of "Invalid checkpoint token".
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LastCheckpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_token: Option<String>,
    pub inbound: String,
    /// The next token; none once the checkpoint finished the execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbound: Option<String>,
    /// The operations it returned, by id (their current state is sent on a replay).
    pub ops: Vec<String>,
}

impl Run {
    pub fn find(&self, id: &str) -> Option<usize> {
        self.ops.iter().position(|o| o.op.id == id)
    }

    pub fn get(&self, id: &str) -> Option<&Operation> {
        self.find(id).map(|i| &self.ops[i].op)
    }

    /// Marks operation `i` changed now.
    pub fn touch(&mut self, i: usize) {
        self.seq += 1;
        self.ops[i].touched = self.seq;
    }

    /// Whether something changed that the handler has not been given.
    pub fn unseen(&self) -> bool {
        self.ops.iter().any(|o| o.touched > self.seen)
    }

    /// Whether anything can still move the execution on without the handler: a step retry
    /// or a wait, callback or chained invoke in progress.
    pub fn waiting(&self) -> bool {
        self.ops.iter().any(|o| match o.op.op_type {
            OpType::Step => o.op.status == OpStatus::Pending,
            OpType::Wait | OpType::Callback | OpType::ChainedInvoke => {
                o.op.status == OpStatus::Started
            }
            OpType::Execution | OpType::Context => false,
        })
    }

    /// The operations a state load returns: all but the children of a finished CONTEXT
    /// that did not ask `ReplayChildren` (they are not needed to replay it).
    pub fn visible(&self) -> impl Iterator<Item = &Operation> {
        self.ops
            .iter()
            .map(|o| &o.op)
            .filter(|o| !self.hidden(o.parent_id.as_deref()))
    }

    fn hidden<'s>(&'s self, mut parent: Option<&'s str>) -> bool {
        let mut depth = 0;
        while let Some(p) = parent {
            let Some(op) = self.get(p) else { return false };
            let replay = op
                .context_details
                .as_ref()
                .and_then(|d| d.replay_children)
                .unwrap_or(false);
            if op.op_type == OpType::Context && op.status.is_final() && !replay {
                return true;
            }
            parent = op.parent_id.as_deref();
            depth += 1;
            if depth > self.ops.len() {
                return false; // a cycle through ParentId: show it rather than loop
            }
        }
        false
    }

    /// One page of the visible operations from `marker` (an index), as the API returns
    /// them, and the marker of the next page.
    pub fn page(&self, marker: usize, max: usize) -> (Vec<&Operation>, Option<usize>) {
        let max = if max == 0 { PAGE } else { max.min(PAGE) };
        let mut all = self.visible().skip(marker);
        let page: Vec<_> = all.by_ref().take(max).collect();
        let next = all.next().map(|_| marker + page.len());
        (page, next)
    }
}

/// An operation as the invocation input carries it: timestamps in epoch milliseconds (the
/// SDKs read the input with `from_json_dict`), where the API's answers carry seconds.
pub fn invocation_json(op: &Operation) -> Value {
    let mut v = serde_json::to_value(op).unwrap_or(Value::Null);
    let ms = |v: &mut Value| {
        if let Some(s) = v.as_f64() {
            *v = json!((s * 1000.0).round() as i64);
        }
    };
    for path in [
        "/StartTimestamp",
        "/EndTimestamp",
        "/StepDetails/NextAttemptTimestamp",
        "/WaitDetails/ScheduledEndTimestamp",
    ] {
        if let Some(t) = v.pointer_mut(path) {
            ms(t);
        }
    }
    v
}

/// A new operation, started now.
pub fn new_op(id: &str, op_type: OpType, status: OpStatus, now: DateTime<Utc>) -> Operation {
    Operation {
        id: id.to_string(),
        parent_id: None,
        name: None,
        op_type,
        sub_type: None,
        status,
        start_timestamp: now,
        end_timestamp: None,
        execution_details: None,
        context_details: None,
        step_details: None,
        wait_details: None,
        callback_details: None,
        chained_invoke_details: None,
    }
}

//! The Amazon States Language interpreter: the second language behind the same
//! [`Instance`], [`Input`] and [`Action`] types as Serverless Workflow, so the durable core
//! (store, timers, calls, routing) does not care which one an instance speaks. Pure: no
//! I/O, no clock; time comes in with the input. docs/asl.md "How machines run".
//!
//! Layout, each file using only those before it: `thread` (the stored run: threads of
//! control and what each state is doing), `keys` (call keys, task tokens, timer ids, the
//! token event types), `outcome` (what a state did), `cx` (the working context), `fields` (the `...Path` fields read at run time), `fork`
//! (Parallel and Map lanes built and finished), `states` (what each state type does when
//! entered), `flow` (entering states, transitions, starting lanes, Retry and Catch),
//! `deliver` (results, failures, timers and token events finding their thread).

mod cx;
mod deliver;
mod fields;
mod flow;
mod fork;
pub mod keys;
mod outcome;
mod states;
pub mod thread;

pub use keys::{TASK_EVENT, TASK_FAILURE, TASK_HEARTBEAT, TASK_SUCCESS};

use super::instance::{Activity, Instance, Status};
use super::{EngineError, Input, Limits, Step};
use crate::asl::Machine;
use chrono::{DateTime, Utc};
use cx::Cx;
use serde_json::Value;
use thread::{Doing, MachineRun};

/// Applies one input to an instance of machine `m` (the checks common to both languages
/// are done by [`super::apply_with`]).
pub fn apply(
    m: &Machine,
    mut inst: Instance,
    input: Input,
    now: DateTime<Utc>,
    limits: Limits,
) -> Result<Step, EngineError> {
    let run = match std::mem::take(&mut inst.activity) {
        Activity::Machine { machine } => Some(*machine),
        _ => None,
    };
    let mut cx = Cx {
        m,
        inst,
        now,
        out: Vec::new(),
        path: Vec::new(),
        entered: 0,
        limits,
        outer: Vec::new(),
        input: Value::Null,
        started: String::new(),
    };
    let root = match (input, run) {
        (Input::Start { input, .. }, _) => flow::start(&mut cx, input),
        (input, Some(run)) => {
            cx.input = run.input;
            cx.started = run.started;
            deliver::input(&mut cx, run.root, input)?
        }
        (_, None) => return Err(EngineError::NotStarted(cx.inst.id.clone())),
    };
    cx.inst.state = Some(root.state.clone());
    cx.inst.data = root.input.clone();
    if !cx.inst.status.is_final() {
        cx.inst.status = if root.walk().iter().any(|t| t.doing == Doing::Call) {
            Status::Running
        } else {
            Status::Waiting
        };
        cx.inst.activity = Activity::Machine {
            machine: Box::new(MachineRun {
                input: cx.input,
                started: cx.started,
                root,
            }),
        };
    }
    Ok(Step {
        instance: cx.inst,
        actions: cx.out,
        entered: cx.path,
    })
}

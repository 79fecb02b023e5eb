//! The Amazon States Language interpreter: the second language behind the same
//! [`Instance`], [`Input`] and [`Action`] types as Serverless Workflow, so the durable core
//! (store, timers, calls, routing) does not care which one an instance speaks. Pure: no
//! I/O, no clock; time comes in with the input. docs/asl.md "How machines run".
//!
//! Layout: `thread` (the stored run: threads of control and what each state is doing),
//! `keys` (call keys, task tokens and timer ids), `flow` (entering states, transitions,
//! Retry and Catch), `states` (what each state type does when entered), `fork` (Parallel
//! and Map lanes), `deliver` (results, failures, timers and token events finding their
//! thread).

mod deliver;
mod flow;
mod fork;
pub mod keys;
mod states;
pub mod thread;

use super::instance::{Activity, ErrorInfo, Instance, Status};
use super::{Action, EngineError, Input, Limits, Step};
use crate::asl::data::Failure;
use crate::asl::Machine;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};
use thread::{Doing, MachineRun, Thread};

/// The event type a `.waitForTaskToken` Task sends: its data is the effective input, its
/// `tasktoken` attribute the token to answer with.
pub const TASK_EVENT: &str = "flowbroker.task.requested";
/// Answers to a task token (attribute `tasktoken`): the data is the task's result.
pub const TASK_SUCCESS: &str = "flowbroker.task.success";
/// The data is `{"error": ..., "cause": ...}`.
pub const TASK_FAILURE: &str = "flowbroker.task.failure";
/// Restarts the task's `HeartbeatSeconds` clock.
pub const TASK_HEARTBEAT: &str = "flowbroker.task.heartbeat";

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

/// Working context of one `apply`.
pub(crate) struct Cx<'a> {
    pub m: &'a Machine,
    /// The instance, its activity taken out while the threads run.
    pub inst: Instance,
    pub now: DateTime<Utc>,
    pub out: Vec<Action>,
    /// The states entered during this apply, in order.
    pub path: Vec<String>,
    pub entered: u32,
    pub limits: Limits,
    /// `$$.Execution.Input` and `.StartTime`.
    pub input: Value,
    pub started: String,
}

impl Cx<'_> {
    pub fn stamp(&self) -> String {
        self.now.to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    pub fn arm(&mut self, id: String, due: DateTime<Utc>) {
        self.inst.timers.insert(id.clone());
        self.out.push(Action::ArmTimer { id, due });
    }

    pub fn disarm(&mut self, id: &str) {
        if self.inst.timers.remove(id) {
            self.out.push(Action::CancelTimer { id: id.to_string() });
        }
    }

    /// Disarms every timer of `th` and of the threads below it (a state left, a fork's
    /// lanes stopped).
    pub fn quiet(&mut self, th: &Thread) {
        let visits: std::collections::HashSet<u64> = th.walk().iter().map(|t| t.visit).collect();
        let mine: Vec<String> = self
            .inst
            .timers
            .iter()
            .filter(|id| {
                keys::parse_timer(&self.inst.id, id).is_some_and(|(v, _, _)| visits.contains(&v))
            })
            .cloned()
            .collect();
        for id in mine {
            self.disarm(&id);
        }
    }

    /// The context object (`$$`) as a state of `th` sees it (`null` when no path of the
    /// machine reads it).
    pub fn context(&self, th: &Thread) -> Value {
        if !self.m.uses_context {
            return Value::Null;
        }
        json!({
            "Execution": {
                "Id": self.inst.id,
                "Name": self.inst.id,
                "Input": self.input,
                "StartTime": self.started,
            },
            "StateMachine": {"Id": self.inst.workflow_id, "Name": self.inst.workflow_id},
            "State": {"Name": th.state, "EnteredTime": th.entered, "RetryCount": th.attempt},
        })
    }

    /// Ends the run: the machine's output.
    pub fn complete(&mut self, output: Value) {
        self.inst.status = Status::Completed;
        self.inst.output = Some(output.clone());
        self.out.push(Action::Complete { output });
    }

    /// Ends the run failed: every timer goes.
    pub fn fail(&mut self, f: Failure) {
        for id in std::mem::take(&mut self.inst.timers) {
            self.out.push(Action::CancelTimer { id });
        }
        let error = ErrorInfo::new(f.error, f.cause);
        self.inst.status = Status::Failed;
        self.inst.error = Some(error.clone());
        self.out.push(Action::Fail { error });
    }
}

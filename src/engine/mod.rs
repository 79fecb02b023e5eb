//! The pure, deterministic engine: `apply(definition, instance, input, now)` returns the next
//! instance and the actions to carry out. No I/O, no clock, no randomness: time and ids come in
//! with the input, so an instance can be replayed from its recorded inputs.
//!
//! Layout: `instance` (the stored state), `activity` (what the current state is doing: runs of
//! actions, lanes, slots, read back without serde's buffering), `data` (merge and filter rules), `flow` (entering,
//! completing and leaving states), `run` (action lists, retries), `lanes` (parallel branches
//! and foreach iterations), `events` (what an instance waits for and consuming events),
//! `errors` (onError and failing), `produce` (produced events with deterministic ids),
//! `timers` (the instance's timer set and the actions, in step);
//! [`asl`], the Amazon States Language interpreter a machine's inputs go to; [`durable`],
//! the Lambda durable functions interpreter (the record of a function's operations).

mod activity;
pub mod asl;
pub mod data;
pub mod durable;
mod errors;
mod events;
mod flow;
pub mod instance;
mod lanes;
mod produce;
mod run;
pub mod swf;
pub(crate) mod timers;

pub use events::{correlates, expected, waits_for};
pub use instance::{Activity, ErrorInfo, Event, Instance, Lane, Run, Slot, Source, Status};
pub use produce::event_id as produce_event_id;

use crate::definition::{Body, Definition};
use crate::model::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// Something that happened to an instance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Input {
    /// Create the instance with `input`; `events` are the start events that created it (all of
    /// them for an `exclusive: false` start), consumed by the start state at once.
    Start {
        input: Value,
        #[serde(default)]
        events: Vec<Event>,
    },
    /// A consumed CloudEvent routed to this instance.
    Event { event: Event },
    /// A function call (by idempotency key) returned.
    ActionResult { key: String, result: Value },
    /// A function call failed.
    ActionFailed { key: String, error: ErrorInfo },
    /// A timer armed by `ArmTimer` is due.
    TimerFired { id: String },
    /// A child instance finished.
    ChildCompleted {
        id: String,
        output: Value,
        #[serde(default)]
        terminated: bool,
    },
    /// A child instance failed.
    ChildFailed { id: String, error: ErrorInfo },
    /// Stop the instance.
    Cancel,
    /// A durable function's checkpoint (`CheckpointDurableExecution`): the token the
    /// caller holds, botocore's idempotency token, the operation updates in order.
    Checkpoint {
        token: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client_token: Option<String>,
        /// The `Updates` array as sent (read by the interpreter; kept as JSON so history
        /// stores large payloads beside their entry).
        updates: Value,
    },
    /// An Amazon SWF API call on an execution or a domain.
    Swf { call: swf::Call },
}

/// A side effect the caller carries out after committing the new instance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Action {
    /// Send a CloudEvent.
    Produce {
        event: Event,
    },
    /// Call a function; `key` is the idempotency key (stable across retries and restarts) and
    /// comes back with the result.
    Invoke {
        key: String,
        function: String,
        resource: String,
        parameters: Value,
        attempt: u32,
        /// This call's time limit, when the language sets one (else `invoke.timeout_ms`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
        /// The request carries state that goes stale (a durable function's operations and
        /// checkpoint token): a broker taking the partition over does not send it again but
        /// fails it back (`ActionFailed`), so the language asks anew.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        stale_on_takeover: bool,
    },
    ArmTimer {
        id: String,
        due: DateTime<Utc>,
    },
    CancelTimer {
        id: String,
    },
    /// Start a child instance `id` of `workflow_id`; `wait` means the parent expects
    /// `ChildCompleted`/`ChildFailed` back.
    StartChild {
        id: String,
        workflow_id: String,
        input: Value,
        wait: bool,
    },
    CancelChild {
        id: String,
    },
    Complete {
        output: Value,
    },
    Terminate {
        output: Value,
    },
    Fail {
        error: ErrorInfo,
    },
    Cancelled,
    /// Apply `input` to instance `to` (on any partition): an SWF run telling its parent or
    /// its children.
    Send {
        to: String,
        input: Box<Input>,
    },
    /// An SWF call for run `run_id` of `key`, or its open run: `failed` comes back to this
    /// instance when no such run is open (external signals and cancel requests).
    SendToRun {
        key: crate::swf::RunKey,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
        call: Box<swf::Call>,
        failed: Box<Input>,
    },
    /// An SWF task is ready for a poller on `queue` (the event `scheduled` scheduled it).
    Offer {
        queue: crate::swf::task::TaskQueue,
        scheduled: i64,
    },
}

/// The outcome of one `apply`.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub instance: Instance,
    pub actions: Vec<Action>,
    /// The states entered while applying the input, in order (the instance's path, for
    /// history and the console's graph).
    pub entered: Vec<String>,
}

/// Inputs the engine refuses; the instance is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("instance {id} has already finished ({status:?})")]
    Finished { id: String, status: Status },
    #[error("instance {0} has not started: send Start first")]
    NotStarted(String),
    #[error("instance {0} has already started")]
    AlreadyStarted(String),
    #[error(
        "a Serverless Workflow's input must be a JSON object, found {0} (ASL machines take any JSON)"
    )]
    InputNotObject(&'static str),
    #[error(
        "instance {id} is not waiting for an event of type {event_type:?} from {event_source:?}"
    )]
    NotWaiting {
        id: String,
        event_type: String,
        event_source: String,
    },
    #[error("workflow {0} has no start state")]
    NoStartState(String),
    #[error("instance is in state {0:?}, which the definition does not have (was it redeployed?)")]
    UnknownState(String),
    #[error(
        "task token {0:?} is not awaited: its task already finished, failed, timed out or was \
         retried (each attempt has its own token)"
    )]
    TokenNotAwaited(String),
    #[error("Invalid checkpoint token for execution {0}: it was used already, belongs to an earlier invocation, or the execution has finished")]
    InvalidCheckpointToken(String),
    #[error("{0}")]
    InvalidUpdate(String),
    #[error("callback {0:?} is not active: it was answered, timed out, or is not this broker's")]
    CallbackNotActive(String),
    #[error("{0} is an input only a durable function takes")]
    NotDurable(&'static str),
    #[error(transparent)]
    Swf(#[from] swf::SwfError),
}

/// Applies one input to an instance, which it takes: the next instance is built in place
/// (a caller that keeps the previous one clones it first). On an error the instance is
/// dropped unchanged; the stored copy is the caller's.
pub fn apply(
    def: &Definition,
    instance: Instance,
    input: Input,
    now: DateTime<Utc>,
) -> Result<Step, EngineError> {
    apply_with(def, instance, input, now, Limits::default())
}

/// What the broker's configuration bounds in the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest produced event, as JSON; a larger one is the error `EventTooLarge`.
    pub max_event_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_event_bytes: 900_000,
        }
    }
}

/// [`apply`] with the broker's [`Limits`].
pub fn apply_with(
    def: &Definition,
    instance: Instance,
    input: Input,
    now: DateTime<Utc>,
    limits: Limits,
) -> Result<Step, EngineError> {
    if instance.status.is_final() {
        return Err(EngineError::Finished {
            id: instance.id.clone(),
            status: instance.status,
        });
    }
    let started = instance.visit > 0;
    match (&input, started) {
        (Input::Start { .. }, true) => {
            return Err(EngineError::AlreadyStarted(instance.id.clone()))
        }
        (Input::Start { .. }, false) => {}
        (_, false) => return Err(EngineError::NotStarted(instance.id.clone())),
        _ => {}
    }
    match &def.body {
        Body::Machine(m) => return asl::apply(m, instance, input, now, limits),
        Body::Durable(f) => return durable::apply(f, instance, input, now, limits),
        Body::Swf => return swf::apply(instance, input, now),
        Body::Workflow => {}
    }
    if let Some(name) = &instance.state {
        if def.workflow.state(name).is_none() {
            return Err(EngineError::UnknownState(name.clone()));
        }
    }
    let mut cx = Cx {
        def,
        inst: instance,
        now,
        out: Vec::new(),
        entered: 0,
        path: Vec::new(),
        next: None,
        limits,
        handling_error: false,
    };
    match input {
        Input::Start { input, events } => flow::start(&mut cx, input, events)?,
        Input::Event { event } => events::consume(&mut cx, event)?,
        Input::ActionResult { key, result } => run::on_result(&mut cx, &key, result),
        Input::ActionFailed { key, error } => run::on_failed(&mut cx, &key, error),
        Input::TimerFired { id } => flow::on_timer(&mut cx, &id),
        Input::ChildCompleted {
            id,
            output,
            terminated,
        } => lanes::on_child_done(&mut cx, &id, output, terminated),
        Input::ChildFailed { id, error } => lanes::on_child_failed(&mut cx, &id, error),
        Input::Cancel => flow::cancel(&mut cx),
        Input::Checkpoint { .. } => return Err(EngineError::NotDurable("a checkpoint")),
        Input::Swf { .. } => {
            return Err(
                swf::SwfError::Validation("an SWF call goes to an SWF execution".into()).into(),
            )
        }
    }
    flow::settle(&mut cx);
    if !cx.inst.status.is_final() {
        cx.inst.status = status_of(&cx.inst);
    }
    Ok(Step {
        instance: cx.inst,
        actions: cx.out,
        entered: cx.path,
    })
}

/// RUNNING while actions or children are in flight, WAITING when only events or timers can
/// move the instance on.
fn status_of(inst: &Instance) -> Status {
    let busy_run = |r: &Run| {
        r.slots
            .iter()
            .any(|s| matches!(s, Slot::Invoked { .. } | Slot::Pending))
    };
    let busy_lane = |l: &Lane| match l {
        Lane::Actions { run } => busy_run(run),
        Lane::Child { .. } => true,
        Lane::NotStarted | Lane::Done { .. } => false,
    };
    let busy = match &inst.activity {
        Activity::Operation { run }
        | Activity::EventActions { run, .. }
        | Activity::CallbackAction { run } => busy_run(run),
        Activity::Parallel { lanes, .. } | Activity::ForEach { lanes, .. } => {
            lanes.iter().any(busy_lane)
        }
        Activity::Subflow { .. }
        | Activity::Idle
        | Activity::Machine { .. }
        | Activity::Durable { .. }
        | Activity::Swf { .. }
        | Activity::SwfDomain { .. } => true,
        Activity::AwaitEvents { .. }
        | Activity::SwitchWait
        | Activity::Delay
        | Activity::CallbackWait => false,
    };
    if busy {
        Status::Running
    } else {
        Status::Waiting
    }
}

/// Working context of one `apply`.
pub(crate) struct Cx<'a> {
    pub def: &'a Definition,
    pub inst: Instance,
    pub now: DateTime<Utc>,
    pub out: Vec<Action>,
    /// States entered during this apply (bounded by [`MAX_STATES_PER_INPUT`]).
    pub entered: u32,
    /// The names of the states entered during this apply, in order.
    pub path: Vec<String>,
    /// The state to enter next and its input (see `flow::goto`); no input: the state data
    /// (`flow::take`).
    pub next: Option<(String, Option<Value>)>,
    pub limits: Limits,
    /// An `onError` handler is being followed: an error on its way fails the instance
    /// instead of being handled again (no loop).
    pub handling_error: bool,
}

/// How many states one input may enter. A definition that loops without ever waiting (for
/// an event, a timer or a function) would otherwise never return; it fails with
/// `TransitionLimitExceeded` instead.
pub const MAX_STATES_PER_INPUT: u32 = 10_000;

impl<'a> Cx<'a> {
    /// The definition of the current state.
    pub fn state(&self) -> &'a State {
        let name = self.inst.state.as_deref().unwrap_or_default();
        self.def
            .workflow
            .state(name)
            .expect("apply checks the current state exists")
    }

    pub fn arm(&mut self, id: String, due: DateTime<Utc>) {
        timers::arm(&mut self.inst, &mut self.out, id, due);
    }

    pub fn disarm(&mut self, id: &str) {
        timers::disarm(&mut self.inst, &mut self.out, id);
    }

    /// A compiled path for an expression field validated at deploy time.
    pub fn path(&self, source: &str) -> Option<Cow<'a, crate::expr::Path>> {
        match self.def.expr(source).ok()? {
            Cow::Borrowed(e) => e.paths().next().map(Cow::Borrowed),
            Cow::Owned(e) => e.paths().next().cloned().map(Cow::Owned),
        }
    }

    /// Evaluates a condition; a broken expression counts as false.
    pub fn is_true(&self, source: &str, data: &Value) -> bool {
        self.def.expr(source).is_ok_and(|e| e.is_true(data))
    }

    /// Evaluates a value whose strings may embed expressions.
    pub fn eval_value(&self, template: &Value, data: &Value) -> Value {
        crate::expr::eval_value(template, data, &|s| self.def.template(s))
            .unwrap_or_else(|_| template.clone())
    }
}

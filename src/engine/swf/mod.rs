//! The Amazon SWF interpreter: the fourth language behind the same [`Instance`], [`Input`]
//! and [`Action`] types. The decider and the activity workers are the user's code; this
//! keeps each execution's history, schedules one decision task at a time, carries out the
//! decisions a decider returns (recording what SWF records, failures with their causes),
//! and drives every timeout as a durable timer. A domain's registry is an instance too.
//! Pure: no I/O, no clock. docs/swf.md.
//!
//! Layout, each file using only those before it: `execution` (the stored run), `cx` (the
//! working context: recording events, scheduling decision tasks, closing), `start` (a run
//! from its start attributes), `lambda` (Lambda tasks called as functions), `tasks` (tasks
//! handed to pollers, activity results, heartbeats, timeouts), `outside` (signals, cancel
//! requests, termination), `relatives` (child runs, external signals and cancel requests,
//! telling a parent, child policies), `decide` (a decision task's decisions), `domain` (the
//! registry's inputs).

mod cx;
mod decide;
mod domain;
pub mod execution;
mod lambda;
mod outside;
mod relatives;
mod start;
mod tasks;

pub use execution::{CloseStatus, DecisionTask, Execution, OpenActivity};
pub use start::start_attributes;

use super::instance::{Activity, Instance};
use super::{EngineError, Input, Step};
use crate::swf::decision::Decision;
use crate::swf::registry::{Domain, Registered, RegistryError, TypeId, TypeKind};
use crate::swf::task::TaskKind;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// An SWF API call on an execution or a domain (`Input::Swf`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "camelCase")]
pub enum Call {
    /// `RegisterWorkflowType` / `RegisterActivityType`.
    RegisterType {
        kind: TypeKind,
        registered: Registered,
    },
    /// `Deprecate*Type` (`deprecate`) or `Undeprecate*Type`.
    SetTypeStatus {
        kind: TypeKind,
        id: TypeId,
        deprecate: bool,
    },
    /// `DeprecateDomain` (`deprecate`) or `UndeprecateDomain`.
    SetDomainStatus { deprecate: bool },
    /// A poller takes the task scheduled by event `scheduled`.
    TaskStarted {
        kind: TaskKind,
        scheduled: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        identity: Option<String>,
    },
    /// `RespondDecisionTaskCompleted`; `types` are the registrations of the activity types
    /// the decisions name (resolved by the caller; absent ones are unknown).
    DecisionCompleted {
        scheduled: i64,
        started: i64,
        decisions: Vec<Decision>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context: Option<String>,
        #[serde(default)]
        types: Vec<Registered>,
    },
    /// `RespondActivityTaskCompleted|Failed|Canceled` and `RecordActivityTaskHeartbeat`.
    Activity {
        scheduled: i64,
        started: i64,
        outcome: ActivityOutcome,
    },
    /// `SignalWorkflowExecution`.
    Signal {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<String>,
    },
    /// `RequestCancelWorkflowExecution`.
    RequestCancel,
    /// Another run's `SignalExternalWorkflowExecution` decision.
    ExternalSignal {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<String>,
        from: ExternalRef,
    },
    /// Another run's `RequestCancelExternalWorkflowExecution` decision.
    ExternalCancel { from: ExternalRef },
    /// To a run that asked: its signal or cancel request `initiated` reached run `run_id`.
    ExternalDone { initiated: i64, run_id: String },
    /// To a run that asked: no open run took its signal or cancel request `initiated`.
    ExternalFailed { initiated: i64 },
    /// To a parent: its child `initiated` started as run `run_id`.
    ChildStarted { initiated: i64, run_id: String },
    /// To a parent: its child `initiated` closed.
    ChildClosed {
        initiated: i64,
        status: CloseStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<String>,
    },
    /// `TerminateWorkflowExecution`.
    Terminate {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        child_policy: Option<String>,
    },
}

/// The run behind an external signal or cancel request: its instance, the event that
/// initiated it there, and its ids as SWF names them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalRef {
    pub instance: String,
    pub initiated: i64,
    pub workflow_id: String,
    pub run_id: String,
}

/// What an activity worker reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum ActivityOutcome {
    Completed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
    },
    Failed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<String>,
    },
    Canceled {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<String>,
    },
    Heartbeat {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<String>,
    },
}

/// What SWF refuses, named by its fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwfError {
    /// `UnknownResourceFault`: a stale or foreign task token, a closed execution, an
    /// unknown domain.
    #[error("{0}")]
    UnknownResource(String),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// `DefaultUndefinedFault`: neither the request nor the type's registration sets it.
    #[error("{0}")]
    DefaultUndefined(String),
    /// `WorkflowExecutionAlreadyStartedFault`.
    #[error("{0}")]
    AlreadyStarted(String),
    /// `ValidationException`.
    #[error("{0}")]
    Validation(String),
}

impl SwfError {
    pub fn fault(&self) -> &'static str {
        match self {
            SwfError::UnknownResource(_) => "UnknownResourceFault",
            SwfError::Registry(e) => e.fault(),
            SwfError::DefaultUndefined(_) => "DefaultUndefinedFault",
            SwfError::AlreadyStarted(_) => "WorkflowExecutionAlreadyStartedFault",
            SwfError::Validation(_) => "ValidationException",
        }
    }
}

/// Applies one input to an SWF execution or domain (the checks common to every language
/// are done by [`super::apply_with`]).
pub fn apply(inst: Instance, input: Input, now: DateTime<Utc>) -> Result<Step, EngineError> {
    let is_domain = matches!(inst.activity, Activity::SwfDomain { .. })
        || (inst.workflow_id == crate::swf::DOMAINS && inst.visit == 0);
    if is_domain {
        return domain::apply(inst, input, now);
    }
    let mut cx = match input {
        Input::Start { input, .. } => start::start(inst, input, now)?,
        input => {
            let mut cx = cx::Cx::load(inst, now)?;
            match input {
                Input::Swf { call } => match call {
                    Call::TaskStarted {
                        kind,
                        scheduled,
                        identity,
                    } => tasks::started(&mut cx, kind, scheduled, identity)?,
                    Call::DecisionCompleted {
                        scheduled,
                        started,
                        decisions,
                        context,
                        types,
                    } => {
                        decide::completed(&mut cx, scheduled, started, decisions, context, &types)?
                    }
                    Call::Activity {
                        scheduled,
                        started,
                        outcome,
                    } => tasks::reported(&mut cx, scheduled, started, outcome)?,
                    Call::Signal { name, input } => outside::signal(&mut cx, name, input, None),
                    Call::RequestCancel => outside::request_cancel(&mut cx, None),
                    Call::ExternalSignal { name, input, from } => {
                        outside::signal(&mut cx, name, input, Some(from))
                    }
                    Call::ExternalCancel { from } => outside::request_cancel(&mut cx, Some(from)),
                    Call::ExternalDone { initiated, run_id } => {
                        relatives::external_done(&mut cx, initiated, run_id)
                    }
                    Call::ExternalFailed { initiated } => {
                        relatives::external_failed(&mut cx, initiated)
                    }
                    Call::ChildStarted { initiated, run_id } => {
                        relatives::child_started(&mut cx, initiated, run_id)
                    }
                    Call::ChildClosed {
                        initiated,
                        status,
                        result,
                        reason,
                        details,
                    } => {
                        relatives::child_closed(&mut cx, initiated, status, result, reason, details)
                    }
                    Call::Terminate {
                        reason,
                        details,
                        child_policy,
                    } => outside::terminate(&mut cx, reason, details, child_policy),
                    Call::RegisterType { .. }
                    | Call::SetTypeStatus { .. }
                    | Call::SetDomainStatus { .. } => {
                        return Err(SwfError::Validation(
                            "a registry call goes to a domain, not an execution".into(),
                        )
                        .into())
                    }
                },
                Input::TimerFired { id } => tasks::timer(&mut cx, &id),
                // a child's start refused (the broker's word); its other outcomes come as
                // `ChildClosed` from the child itself
                Input::ChildFailed { id, error } => relatives::child_refused(&mut cx, &id, &error),
                Input::ChildCompleted { .. } => {}
                Input::ActionResult { key, result } => lambda::result(&mut cx, &key, result),
                Input::ActionFailed { key, error } => lambda::failed(&mut cx, &key, error),
                Input::Cancel => outside::terminate(
                    &mut cx,
                    Some("cancelled through flowbroker's API".into()),
                    None,
                    None,
                ),
                _ => {
                    return Err(SwfError::Validation(
                        "an SWF execution takes SWF calls, timers and cancellation".into(),
                    )
                    .into())
                }
            }
            cx
        }
    };
    relatives::on_close(&mut cx);
    cx.settle();
    Ok(cx.finish())
}

/// The domain registry an instance holds, if it is one.
pub fn domain_of(inst: &Instance) -> Option<&Domain> {
    match &inst.activity {
        Activity::SwfDomain { domain } => Some(domain),
        _ => None,
    }
}

/// The execution an instance holds, if it is one.
pub fn execution_of(inst: &Instance) -> Option<&Execution> {
    match &inst.activity {
        Activity::Swf { swf } => Some(swf),
        _ => None,
    }
}

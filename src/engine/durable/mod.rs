//! The Lambda durable functions interpreter: the third language behind the same
//! [`Instance`], [`Input`] and [`Action`] types. The logic is the user's code; this keeps its
//! record (the operations the SDK checkpoints), decides when to invoke it again, and drives
//! what the SDK leaves to the backend: waits and step retries as durable timers, callbacks
//! with their timeouts, chained invokes as child instances, the execution's deadline. Pure:
//! no I/O, no clock. docs/durable.md.
//!
//! Layout, each file using only those before it: `run` (the stored execution: operations,
//! change sequence, tokens), `keys` (invocation keys, timer ids, child ids), `cx` (the
//! working context: touching operations, finishing the execution), `invocation` (invoking
//! the function and reading its answer), `checkpoint` (a checkpoint's updates checked and
//! applied), `deliver` (timers, callback answers, children, stop).

mod checkpoint;
mod cx;
mod deliver;
mod invocation;
pub mod keys;
pub mod run;

pub use cx::{object_of as error_object, EXECUTION_TIMEOUT, STOPPED};
pub use run::{LastCheckpoint, Op, Run};

use super::instance::{Activity, Instance, Status};
use super::{EngineError, Input, Limits, Step};
use crate::durable::Function;
use chrono::{DateTime, Utc};
use cx::Cx;

pub use keys::{CALLBACK_ATTR, CALLBACK_FAILURE, CALLBACK_HEARTBEAT, CALLBACK_SUCCESS};

/// Applies one input to an execution of `f` (the checks common to every language are done
/// by [`super::apply_with`]).
pub fn apply(
    f: &Function,
    mut inst: Instance,
    input: Input,
    now: DateTime<Utc>,
    _limits: Limits,
) -> Result<Step, EngineError> {
    // operations keep milliseconds (epoch seconds on the wire): so does everything stamped
    let now = crate::time::whole_millis(now);
    let run = match std::mem::take(&mut inst.activity) {
        Activity::Durable { durable } => Some(*durable),
        _ => None,
    };
    let mut cx = match (input, run) {
        (Input::Start { input, .. }, _) => {
            let mut cx = Cx::start(f, inst, now, input);
            invocation::invoke(&mut cx);
            cx
        }
        (input, Some(run)) => {
            let mut cx = Cx::new(f, inst, now, run);
            deliver::input(&mut cx, input)?;
            cx
        }
        (_, None) => return Err(EngineError::NotStarted(inst.id.clone())),
    };
    if !cx.inst.status.is_final() {
        cx.inst.status = if cx.run.invoking.is_some() {
            Status::Running
        } else {
            Status::Waiting
        };
    }
    Ok(cx.finish())
}

//! Inputs after the start: a call's result or failure, a fired timer, an event answering a
//! task token, a cancel. Each names the state visit it is for; it is delivered to the thread
//! in that visit (down through the forks), and whatever that state does next is followed up
//! to the root. An input for a visit or attempt that is over is ignored.

use super::cx::Cx;
use super::fields;
use super::flow;
use super::fork;
use super::keys::{self, Timer, TASK_FAILURE, TASK_HEARTBEAT, TASK_SUCCESS};
use super::outcome::{go, Ended, Outcome};
use super::states;
use super::thread::{Doing, Lane, Thread, Tolerated};
use crate::asl::data::{assign, effective_output, Failure};
use crate::asl::model::{Kind, State, States};
use crate::engine::instance::{Event, Status};
use crate::engine::{Action, EngineError, Input};
use serde_json::Value;

/// What reached a state.
#[derive(Debug)]
enum Delivery {
    /// A Task's result (from the call, or a token's success event).
    Result {
        attempt: u32,
        value: Value,
    },
    /// A Task's failure (from the call, or a token's failure event).
    Failed {
        attempt: u32,
        failure: Failure,
    },
    Heartbeat {
        attempt: u32,
    },
    Timer {
        timer: Timer,
        attempt: u32,
    },
}

impl Delivery {
    fn attempt(&self) -> u32 {
        match self {
            Delivery::Result { attempt, .. }
            | Delivery::Failed { attempt, .. }
            | Delivery::Heartbeat { attempt }
            | Delivery::Timer { attempt, .. } => *attempt,
        }
    }
}

/// Applies an input other than `Start` to the machine's root thread.
pub fn input(cx: &mut Cx, root: Thread, input: Input) -> Result<Thread, EngineError> {
    let id = cx.inst.id.clone();
    let mut token = None;
    let (visit, d) = match input {
        Input::Start { .. } => return Err(EngineError::AlreadyStarted(id)),
        Input::ActionResult { key, result } => match keys::parse_call(&id, &key) {
            Some((visit, attempt)) => (
                visit,
                Delivery::Result {
                    attempt,
                    value: result,
                },
            ),
            None => return Ok(root),
        },
        Input::ActionFailed { key, error } => match keys::parse_call(&id, &key) {
            Some((visit, attempt)) => (
                visit,
                Delivery::Failed {
                    attempt,
                    failure: Failure {
                        error: error.name,
                        cause: error.message,
                    },
                },
            ),
            None => return Ok(root),
        },
        Input::TimerFired { id: timer } => {
            if !cx.inst.timers.remove(&timer) {
                return Ok(root); // disarmed already
            }
            match keys::parse_timer(&id, &timer) {
                Some((_, Timer::Deadline, _)) => {
                    let secs = cx.m.timeout_seconds.unwrap_or_default();
                    cx.fail(Failure::new(
                        "States.Timeout",
                        format!("the machine ran longer than its TimeoutSeconds ({secs} s)"),
                    ));
                    return Ok(root);
                }
                Some((visit, timer, attempt)) => (visit, Delivery::Timer { timer, attempt }),
                None => return Ok(root),
            }
        }
        Input::Event { event } => {
            let (t, visit, d) = answer(&id, event)?;
            token = Some(t);
            (visit, d)
        }
        Input::Cancel => {
            cx.disarm_all();
            cx.inst.status = Status::Cancelled;
            cx.out.push(Action::Cancelled);
            return Ok(root);
        }
        // a machine starts no child instances
        Input::ChildCompleted { .. } | Input::ChildFailed { .. } => return Ok(root),
        Input::Checkpoint { .. } => return Err(EngineError::NotDurable("a checkpoint")),
        Input::Swf { .. } => {
            return Err(crate::engine::swf::SwfError::Validation(
                "an SWF call goes to an SWF execution".into(),
            )
            .into())
        }
    };
    let m = cx.m;
    let mut root = root;
    match find(cx, &m.body, &mut root, visit, &d) {
        Some(o) => Ok(flow::finish_root(cx, root, o)),
        None => match token {
            Some(t) => Err(EngineError::TokenNotAwaited(t)),
            None => Ok(root),
        },
    }
}

/// An event answering a task token: `(token, visit, delivery)`.
fn answer(id: &str, event: Event) -> Result<(String, u64, Delivery), EngineError> {
    let not_waiting = || EngineError::NotWaiting {
        id: id.to_string(),
        event_type: event.event_type.clone(),
        event_source: event.source.clone(),
    };
    let token = event.attribute("tasktoken").ok_or_else(not_waiting)?;
    let (visit, attempt) =
        keys::parse_call(id, &token).ok_or_else(|| EngineError::TokenNotAwaited(token.clone()))?;
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let d = match event.event_type.as_str() {
        TASK_SUCCESS => Delivery::Result {
            attempt,
            value: event.data.clone().unwrap_or(Value::Null),
        },
        TASK_FAILURE => {
            let data = event.data.as_ref();
            Delivery::Failed {
                attempt,
                failure: Failure {
                    error: text(data.and_then(|d| d.get("error"))),
                    cause: text(data.and_then(|d| d.get("cause"))),
                },
            }
        }
        TASK_HEARTBEAT => Delivery::Heartbeat { attempt },
        _ => return Err(not_waiting()),
    };
    Ok((token, visit, d))
}

/// Delivers `d` to the thread in state visit `visit` at or below `th`; the outcome for
/// `th`'s own state, if `d` moved anything.
fn find(cx: &mut Cx, scope: &States, th: &mut Thread, visit: u64, d: &Delivery) -> Option<Outcome> {
    if th.visit == visit {
        return at(cx, scope, th, d);
    }
    let st = scope.get(&th.state)?;
    let vars = th.vars.clone();
    let Doing::Fork {
        lanes, tolerate, ..
    } = &mut th.doing
    else {
        return None;
    };
    // the lane reads this thread's variables (and those above it)
    cx.outer.push(vars);
    let moved = into_lane(cx, st, lanes, tolerate, visit, d);
    cx.outer.pop();
    match moved? {
        None => Some(Outcome::Waiting),
        Some(Ok(())) => Some(Outcome::Lanes),
        Some(Err(f)) => Some(fork::failed(cx, th, f)),
    }
}

/// Delivers `d` to the lane of fork state `st` whose threads hold visit `visit`: `None` when
/// it moved nothing; else whether that lane still runs (`None`), is done (`Ok`), or failed
/// the state (`Err`).
fn into_lane(
    cx: &mut Cx,
    st: &State,
    lanes: &mut [Lane],
    tolerate: &mut Option<Tolerated>,
    visit: u64,
    d: &Delivery,
) -> Option<Option<Result<(), Failure>>> {
    let total = lanes.len();
    let mut moved = None;
    for (i, lane) in lanes.iter_mut().enumerate() {
        let Lane::Running { thread } = lane else {
            continue;
        };
        if !thread.walk().iter().any(|t| t.visit == visit) {
            continue;
        }
        let lscope = fork::scope(st, i)?;
        let o = find(cx, lscope, thread, visit, d)?;
        moved = Some(match flow::settle(cx, lscope, thread, o) {
            Ended::No => None,
            Ended::Output(output) => {
                *lane = Lane::Done { output };
                Some(Ok(()))
            }
            Ended::Failed(f) => match fork::lane_failed(tolerate, total, lane, f) {
                Some(f) => Some(Err(f)),
                None => Some(Ok(())),
            },
        });
        break;
    }
    moved
}

/// `d` at the state of `th` itself.
fn at(cx: &mut Cx, scope: &States, th: &mut Thread, d: &Delivery) -> Option<Outcome> {
    let st = scope.get(&th.state)?;
    let current = d.attempt() == th.attempt;
    let tasking = matches!(th.doing, Doing::Call | Doing::Token) && current;
    match d {
        Delivery::Result { value, .. } if tasking => {
            cx.quiet(th);
            th.doing = Doing::Entering;
            let ctx = cx.context(th);
            let done = effective_output(&st.io, &th.input, value.clone(), &ctx).and_then(|v| {
                let ctx = ctx.with("result", value);
                assign(st.assign.as_ref(), value, &ctx, &mut th.vars).map(|()| v)
            });
            Some(match done {
                Ok(v) => go(st, v),
                Err(f) => Outcome::error(f),
            })
        }
        Delivery::Failed { failure, .. } if tasking => {
            cx.quiet(th);
            th.doing = Doing::Entering;
            Some(Outcome::error(failure.clone()))
        }
        Delivery::Heartbeat { attempt } if tasking => {
            if let Kind::Task(t) = &st.kind {
                let scope = cx.context(th);
                if let Some(Ok(due)) = t.heartbeat.as_ref().map(|h| {
                    fields::seconds(h, &th.input, &scope, "HeartbeatSeconds")
                        .and_then(|s| fields::due(cx.now, s, "HeartbeatSeconds"))
                }) {
                    let id = keys::timer(&cx.inst.id, th.visit, Timer::Heartbeat, *attempt);
                    cx.disarm(&id);
                    cx.arm(id, due);
                }
            }
            Some(Outcome::Waiting)
        }
        Delivery::Timer {
            timer: Timer::Timeout | Timer::Heartbeat,
            ..
        } if tasking => {
            let what = match d {
                Delivery::Timer {
                    timer: Timer::Heartbeat,
                    ..
                } => "sent no heartbeat within its HeartbeatSeconds",
                _ => "ran longer than its TimeoutSeconds",
            };
            cx.quiet(th);
            th.doing = Doing::Entering;
            Some(Outcome::error(Failure::new(
                "States.Timeout",
                format!("Task {:?} {what}", th.state),
            )))
        }
        Delivery::Timer {
            timer: Timer::Wait, ..
        } if th.doing == Doing::Wait => {
            th.doing = Doing::Entering;
            Some(states::after_wait(cx, st, th))
        }
        Delivery::Timer {
            timer: Timer::Retry,
            ..
        } if th.doing == Doing::Retry && current => Some(states::run(cx, scope, th)),
        _ => None,
    }
}

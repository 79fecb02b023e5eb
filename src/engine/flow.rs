//! Entering, completing and leaving states; transitions, ends, timers and cancellation.

use super::data;
use super::instance::{Activity, ErrorInfo, Event, Status};
use super::{errors, events, lanes, produce, run, Action, Cx, EngineError};
use crate::model::{End, EndKind, State, Transition};
use crate::time::{Duration, Written};
use serde_json::Value;

/// `Start`: validates the input, enters the start state and consumes the start events.
pub fn start(cx: &mut Cx, input: Value, events: Vec<Event>) -> Result<(), EngineError> {
    let input = match input {
        Value::Null => Value::Object(Default::default()),
        Value::Object(m) => Value::Object(m),
        other => {
            return Err(EngineError::InputNotObject(crate::model::lenient::kind(
                &other,
            )))
        }
    };
    let start = cx
        .def
        .workflow
        .start_state()
        .ok_or_else(|| EngineError::NoStartState(cx.def.id().to_string()))?;
    cx.inst.version = cx.def.workflow.version.as_ref().map(|v| v.0.clone());
    goto(cx, start.name(), input);
    settle(cx);
    for e in events {
        if cx.inst.status.is_final() {
            break;
        }
        events::consume(cx, e)?;
        settle(cx);
    }
    Ok(())
}

/// Schedules entering state `name` with `input`; [`settle`] does it. Transitions go through
/// this queue instead of recursing, so a long chain of states that never wait uses no stack.
pub fn goto(cx: &mut Cx, name: &str, input: Value) {
    cx.next = Some((name.to_string(), Some(input)));
}

/// Enters scheduled states until the instance waits for something (or finishes).
pub fn settle(cx: &mut Cx) {
    while let Some((name, input)) = cx.next.take() {
        if cx.inst.status.is_final() {
            break;
        }
        enter(cx, &name, input);
    }
}

/// Enters state `name` with `input` (`None`: the state data the transition left, moved in
/// once the state is known to be entered): applies `dataInputPath`, then starts the state's
/// work. A state that cannot be entered fails the instance with its data as it was.
fn enter(cx: &mut Cx, name: &str, input: Option<Value>) {
    let Some(state) = cx.def.workflow.state(name) else {
        errors::fail(
            cx,
            ErrorInfo::new("UnknownState", format!("no state named {name:?}")),
        );
        return;
    };
    cx.entered += 1;
    if cx.entered > super::MAX_STATES_PER_INPUT {
        errors::fail(
            cx,
            ErrorInfo::new(
                "TransitionLimitExceeded",
                format!(
                    "more than {} states entered without waiting for anything (last: {name:?}); the workflow loops",
                    super::MAX_STATES_PER_INPUT
                ),
            ),
        );
        return;
    }
    let input = input.unwrap_or_else(|| std::mem::take(&mut cx.inst.data));
    cx.inst.visit += 1;
    cx.inst.state = Some(state.name().to_string());
    cx.path.push(state.name().to_string());
    cx.inst.activity = Activity::Idle;
    let filter = state
        .common()
        .state_data_filter
        .and_then(|f| f.data_input_path.as_deref())
        .and_then(|p| cx.path(p));
    let selected = data::filter(input, filter.as_deref());
    cx.inst.data = data::state_data(selected, filter.as_deref());
    begin(cx, state);
}

fn state_timer(cx: &Cx) -> String {
    format!("{}/timeout", cx.inst.visit_key())
}

/// Arms the state-level timer for `duration` (parsed when the definition was read; a
/// definition with one that did not parse was refused).
fn arm_state_timer(cx: &mut Cx, duration: &Written<Duration>) {
    if let Some(d) = duration.get() {
        let id = state_timer(cx);
        let due = d.after(cx.now);
        cx.arm(id, due);
    }
}

fn begin(cx: &mut Cx, state: &State) {
    match state {
        State::Event(e) => {
            cx.inst.activity = Activity::AwaitEvents { received: vec![] };
            if let Some(t) = &e.timeout {
                // As a start state with `exclusive: true` the timeout is ignored (spec); for an
                // instance already created it runs from state entry.
                if !(e.start.is_some() && e.exclusive) {
                    arm_state_timer(cx, t);
                }
            }
        }
        State::Operation(o) => {
            let r = run::new_run(cx, "", super::Source::Operation, o.action_mode);
            cx.inst.activity = Activity::Operation { run: r };
            run::drive(cx, None);
        }
        State::Switch(sw) => {
            if let Some(conds) = &sw.data_conditions {
                let chosen = conds
                    .iter()
                    .find(|c| cx.is_true(&c.condition, &cx.inst.data))
                    .map(|c| &c.transition)
                    .or(sw.default.as_ref());
                match chosen {
                    Some(t) => complete_with(cx, Some(t), None),
                    None => errors::state_error(
                        cx,
                        ErrorInfo::new(
                            "NoMatchingCondition",
                            format!(
                                "no condition of switch state {:?} matched and it has no default",
                                sw.name
                            ),
                        ),
                    ),
                }
            } else {
                cx.inst.activity = Activity::SwitchWait;
                if let Some(t) = &sw.event_timeout {
                    arm_state_timer(cx, t);
                }
            }
        }
        State::Delay(d) => {
            cx.inst.activity = Activity::Delay;
            arm_state_timer(cx, &d.time_delay);
        }
        State::Inject(i) => {
            if let Some(m) = &i.data {
                data::deep_merge(&mut cx.inst.data, Value::Object(m.clone()));
            }
            complete(cx);
        }
        State::Parallel(_) | State::ForEach(_) | State::Subflow(_) => lanes::begin(cx, state),
        State::Callback(_) => {
            let r = run::new_run(cx, "", super::Source::Callback, Default::default());
            cx.inst.activity = Activity::CallbackAction { run: r };
            run::drive(cx, None);
        }
    }
}

/// The state finished its work: apply `dataOutputPath`, then transition or end.
pub fn complete(cx: &mut Cx) {
    let c = cx.state().common();
    complete_with(cx, c.transition, c.end);
}

/// Completes the current state through `transition` (or `end`).
pub fn complete_with(cx: &mut Cx, transition: Option<&Transition>, end: Option<&End>) {
    let filter = cx
        .state()
        .common()
        .state_data_filter
        .and_then(|f| f.data_output_path.as_deref())
        .and_then(|p| cx.path(p));
    let mut output = data::filter(std::mem::take(&mut cx.inst.data), filter.as_deref());
    if transition.is_some() {
        // the output becomes the next state's data; a workflow's final output stays as is
        output = data::state_data(output, filter.as_deref());
    }
    leave(cx);
    cx.inst.data = output;
    match (transition, end) {
        (Some(t), _) => take(cx, t),
        (None, Some(e)) => finish(cx, e, cx.inst.data.clone()),
        (None, None) => {
            // Validation forbids this; end by default rather than hang.
            finish_default(cx, cx.inst.data.clone());
        }
    }
}

/// Follows a transition out of the current state, whose output the state data already is:
/// checks its restricting expression, produces its event, enters (with that data).
pub fn take(cx: &mut Cx, t: &Transition) {
    if let Some(expr) = &t.expression {
        if !cx.is_true(expr, &cx.inst.data) {
            let from = cx.inst.state.clone().unwrap_or_default();
            errors::fail(
                cx,
                ErrorInfo::new(
                    "TransitionConditionFailed",
                    format!("transition from state {from:?} to {:?} is not allowed: its expression {expr:?} selected nothing in the state output", t.next_state),
                ),
            );
            return;
        }
    }
    if let Some(p) = &t.produce_event {
        let output = std::mem::take(&mut cx.inst.data);
        let produced = produce::produce_event(cx, p, &output);
        cx.inst.data = output;
        if let Err(e) = produced {
            return produce_failed(cx, e);
        }
    }
    cx.next = Some((t.next_state.clone(), None));
}

/// A transition's or an end's event could not be produced: the state's `onError` handles it
/// like any other error, unless a handler is being followed already (then it fails).
fn produce_failed(cx: &mut Cx, error: ErrorInfo) {
    if cx.handling_error {
        errors::fail(cx, error);
    } else {
        errors::state_error(cx, error);
    }
}

/// Ends the workflow the way `end` says.
pub fn finish(cx: &mut Cx, end: &End, output: Value) {
    match end.kind {
        EndKind::Default => finish_default(cx, output),
        EndKind::Event => {
            if let Some(p) = &end.produce_event {
                if let Err(e) = produce::produce_event(cx, p, &output) {
                    return produce_failed(cx, e);
                }
            }
            finish_default(cx, output);
        }
        EndKind::Terminate => terminate(cx, output),
    }
}

fn finish_default(cx: &mut Cx, output: Value) {
    cx.inst.status = Status::Completed;
    cx.inst.output = Some(output.clone());
    cx.inst.activity = Activity::Idle;
    cx.out.push(Action::Complete { output });
}

/// `end: terminate` (or a terminated child): stops everything still running.
pub fn terminate(cx: &mut Cx, output: Value) {
    leave(cx);
    cx.inst.status = Status::Terminated;
    cx.inst.output = Some(output.clone());
    cx.out.push(Action::Terminate { output });
}

/// Leaves the current state: disarms its timers and cancels the children it waits for.
pub fn leave(cx: &mut Cx) {
    super::timers::disarm_all(&mut cx.inst, &mut cx.out);
    for id in std::mem::take(&mut cx.inst.children) {
        cx.out.push(Action::CancelChild { id });
    }
    cx.inst.activity = Activity::Idle;
}

/// `Cancel`: stop, cancel what is outstanding.
pub fn cancel(cx: &mut Cx) {
    leave(cx);
    cx.inst.status = Status::Cancelled;
    cx.out.push(Action::Cancelled);
}

/// `TimerFired`: a state timeout, an action timeout or a retry wait.
pub fn on_timer(cx: &mut Cx, id: &str) {
    if !cx.inst.timers.remove(id) {
        return; // disarmed or from an earlier visit: ignored
    }
    if id == state_timer(cx) {
        match (cx.state(), &cx.inst.activity) {
            // Event state timeout: transition without running actions.
            (State::Event(_), Activity::AwaitEvents { .. }) => complete(cx),
            // Delay elapsed.
            (State::Delay(_), Activity::Delay) => complete(cx),
            // Event conditions timed out: take `default`.
            (State::Switch(sw), Activity::SwitchWait) => {
                complete_with(cx, sw.default.as_ref(), None)
            }
            // Callback event never came: move on without it.
            (State::Callback(_), Activity::CallbackWait) => complete(cx),
            // The timer outlived the phase it guarded: nothing to do.
            _ => {}
        }
        return;
    }
    run::on_timer(cx, id);
}

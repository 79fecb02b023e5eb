//! Action lists: starting actions in sequence or in parallel, taking their results, retrying
//! failed ones. Every action has an idempotency key `{instance}/{visit}/{prefix}a{index}` that
//! does not change across retries or restarts.

use super::data;
use super::instance::{Activity, ErrorInfo, Lane, Run, Slot, Source};
use super::{errors, flow, lanes, produce, Action, Cx};
use crate::model::{Action as ActionDef, ActionMode, State};
use crate::time::Written;
use serde_json::{Map, Value};

/// The action list a run executes.
pub fn actions_of(state: &State, source: Source) -> &[ActionDef] {
    match (state, source) {
        (State::Operation(o), Source::Operation) => &o.actions,
        (State::Event(e), Source::EventGroup(g)) => &e.events_actions[g].actions,
        (State::Callback(c), Source::Callback) => std::slice::from_ref(&c.action),
        (State::Parallel(p), Source::Branch(i)) => p.branches[i].actions.as_deref().unwrap_or(&[]),
        (State::ForEach(f), Source::ForEach) => f.actions.as_deref().unwrap_or(&[]),
        _ => &[],
    }
}

/// A run of the current state's `source` actions over a copy of the state data.
pub fn new_run(cx: &Cx, prefix: &str, source: Source, mode: ActionMode) -> Run {
    new_run_with(cx, prefix, source, mode, cx.inst.data.clone())
}

pub fn new_run_with(cx: &Cx, prefix: &str, source: Source, mode: ActionMode, data: Value) -> Run {
    let n = actions_of(cx.state(), source).len();
    Run {
        prefix: prefix.to_string(),
        source,
        parallel: mode == ActionMode::Parallel,
        data,
        results: Value::Object(Map::new()),
        slots: vec![Slot::Pending; n],
    }
}

/// The run at `lane` (`None`: the state's own run).
pub fn run_mut(activity: &mut Activity, lane: Option<usize>) -> Option<&mut Run> {
    match (activity, lane) {
        (Activity::Operation { run }, None)
        | (Activity::EventActions { run, .. }, None)
        | (Activity::CallbackAction { run }, None) => Some(run),
        (Activity::Parallel { lanes, .. } | Activity::ForEach { lanes, .. }, Some(i)) => {
            match lanes.get_mut(i) {
                Some(Lane::Actions { run }) => Some(run),
                _ => None,
            }
        }
        _ => None,
    }
}

fn run_ref(activity: &Activity, lane: Option<usize>) -> Option<&Run> {
    runs(activity)
        .into_iter()
        .find_map(|(l, r)| (l == lane).then_some(r))
}

/// Every run of the current activity, with its lane.
pub fn runs(activity: &Activity) -> Vec<(Option<usize>, &Run)> {
    match activity {
        Activity::Operation { run }
        | Activity::EventActions { run, .. }
        | Activity::CallbackAction { run } => vec![(None, run)],
        Activity::Parallel { lanes, .. } | Activity::ForEach { lanes, .. } => lanes
            .iter()
            .enumerate()
            .filter_map(|(i, l)| match l {
                Lane::Actions { run } => Some((Some(i), run)),
                _ => None,
            })
            .collect(),
        _ => vec![],
    }
}

pub fn key(cx: &Cx, run: &Run, idx: usize) -> String {
    format!("{}/{}a{idx}", cx.inst.visit_key(), run.prefix)
}

/// Finds the action with idempotency key `key` in the current visit.
pub fn find(cx: &Cx, key: &str) -> Option<(Option<usize>, usize)> {
    runs(&cx.inst.activity).into_iter().find_map(|(lane, run)| {
        (0..run.slots.len())
            .find(|&i| self::key(cx, run, i) == key)
            .map(|i| (lane, i))
    })
}

/// Starts what can start; finishes the run when every action is done.
pub fn drive(cx: &mut Cx, lane: Option<usize>) {
    let Some(run) = run_ref(&cx.inst.activity, lane) else {
        return;
    };
    let in_flight = run
        .slots
        .iter()
        .any(|s| !matches!(s, Slot::Pending | Slot::Done));
    let pending: Vec<usize> = (0..run.slots.len())
        .filter(|&i| run.slots[i] == Slot::Pending)
        .collect();
    if pending.is_empty() && !in_flight {
        finished(cx, lane);
        return;
    }
    let to_start = if run.parallel {
        pending
    } else if in_flight {
        vec![]
    } else {
        pending.into_iter().take(1).collect()
    };
    for idx in to_start {
        start(cx, lane, idx, 0);
    }
}

/// Starts (or retries) action `idx` of the run at `lane`.
pub fn start(cx: &mut Cx, lane: Option<usize>, idx: usize, attempt: u32) {
    let Some(run) = run_ref(&cx.inst.activity, lane) else {
        return;
    };
    let action = &actions_of(cx.state(), run.source)[idx];
    let key = key(cx, run, idx);
    let input_filter = action
        .action_data_filter
        .as_ref()
        .and_then(|f| f.data_input_path.as_deref())
        .and_then(|p| cx.path(p));
    let input = data::filtered(&run.data, input_filter.as_deref());
    let mut trigger_failed = None;
    let slot = if let Some(f) = &action.function_ref {
        let parameters = f
            .parameters
            .as_ref()
            .map(|p| cx.eval_value(p, &input))
            .unwrap_or_else(|| Value::Object(Map::new()));
        let resource = cx
            .def
            .workflow
            .function(&f.ref_name)
            .map(|d| d.resource.clone())
            .unwrap_or_default();
        cx.out.push(Action::Invoke {
            key: key.clone(),
            function: f.ref_name.clone(),
            resource,
            parameters,
            attempt,
            timeout_secs: None,
            stale_on_takeover: false,
        });
        Slot::Invoked { attempt }
    } else if let Some(e) = &action.event_ref {
        let input = input.into_owned();
        trigger_failed = produce::produce(
            cx,
            &e.trigger_event_ref,
            e.data.as_ref(),
            e.context_attributes.as_ref(),
            &input,
        )
        .err();
        Slot::AwaitingEvent {
            attempt,
            event: e.result_event_ref.clone(),
        }
    } else {
        Slot::Done
    };
    if let Some(t) = action.timeout.as_ref().and_then(Written::get) {
        let due = t.after(cx.now);
        cx.arm(format!("{key}/timeout"), due);
    }
    if let Some(run) = run_mut(&mut cx.inst.activity, lane) {
        run.slots[idx] = slot;
    }
    // a trigger event that cannot be produced fails the action (retried, then onError)
    if let Some(error) = trigger_failed {
        errors::action_error(cx, lane, idx, attempt, error);
    }
}

/// The run finished: hand its data to whatever owns it.
fn finished(cx: &mut Cx, lane: Option<usize>) {
    if let Some(i) = lane {
        let output = match run_ref(&cx.inst.activity, lane) {
            Some(run) if run.source == Source::ForEach => run.results.clone(),
            Some(run) => run.data.clone(),
            None => return,
        };
        lanes::lane_done(cx, i, output);
        return;
    }
    match std::mem::take(&mut cx.inst.activity) {
        Activity::Operation { run } => {
            cx.inst.data = run.data;
            flow::complete(cx);
        }
        Activity::EventActions { run, mut groups } => {
            cx.inst.data = run.data;
            if groups.is_empty() {
                flow::complete(cx);
            } else {
                let g = groups.remove(0);
                start_group(cx, g, groups);
            }
        }
        Activity::CallbackAction { run } => {
            cx.inst.data = run.data;
            cx.inst.activity = Activity::CallbackWait;
            if let State::Callback(cb) = cx.state() {
                if let Some(d) = cb.timeout.as_ref().and_then(Written::get) {
                    let id = format!("{}/timeout", cx.inst.visit_key());
                    let due = d.after(cx.now);
                    cx.arm(id, due);
                }
            }
        }
        other => cx.inst.activity = other,
    }
}

/// Runs the actions of event group `g` of the current event state, then `rest`.
pub fn start_group(cx: &mut Cx, g: usize, rest: Vec<usize>) {
    let mode = match cx.state() {
        State::Event(e) => e.events_actions[g].action_mode,
        _ => ActionMode::Sequential,
    };
    let run = new_run(cx, &format!("e{g}."), Source::EventGroup(g), mode);
    cx.inst.activity = Activity::EventActions { run, groups: rest };
    drive(cx, None);
}

/// `ActionResult`.
pub fn on_result(cx: &mut Cx, key: &str, result: Value) {
    let Some((lane, idx)) = find(cx, key) else {
        return; // not this visit's action: a late answer, ignored
    };
    let invoked = run_ref(&cx.inst.activity, lane)
        .is_some_and(|r| matches!(r.slots[idx], Slot::Invoked { .. }));
    if invoked {
        complete_slot(cx, lane, idx, result);
    }
}

/// A result (function answer or result event data) for action `idx`.
pub fn complete_slot(cx: &mut Cx, lane: Option<usize>, idx: usize, result: Value) {
    let Some(run) = run_ref(&cx.inst.activity, lane) else {
        return;
    };
    let action = &actions_of(cx.state(), run.source)[idx];
    let key = key(cx, run, idx);
    let filter = action
        .action_data_filter
        .as_ref()
        .and_then(|f| f.data_results_path.as_deref())
        .and_then(|p| cx.path(p));
    if let Some(run) = run_mut(&mut cx.inst.activity, lane) {
        data::merge_result(&mut run.data, result.clone(), filter.as_deref());
        data::merge_result(&mut run.results, result, filter.as_deref());
        run.slots[idx] = Slot::Done;
    }
    cx.disarm(&format!("{key}/timeout"));
    drive(cx, lane);
}

/// `ActionFailed`.
pub fn on_failed(cx: &mut Cx, key: &str, error: ErrorInfo) {
    let Some((lane, idx)) = find(cx, key) else {
        return;
    };
    let attempt = match run_ref(&cx.inst.activity, lane).map(|r| &r.slots[idx]) {
        Some(Slot::Invoked { attempt }) | Some(Slot::AwaitingEvent { attempt, .. }) => *attempt,
        _ => return,
    };
    cx.disarm(&format!("{key}/timeout"));
    errors::action_error(cx, lane, idx, attempt, error);
}

/// Action timers: `{key}/retry` restarts the action, `{key}/timeout` fails it.
pub fn on_timer(cx: &mut Cx, id: &str) {
    if let Some(key) = id.strip_suffix("/retry") {
        if let Some((lane, idx)) = find(cx, key) {
            if let Some(Slot::RetryWait { attempt }) =
                run_ref(&cx.inst.activity, lane).map(|r| r.slots[idx].clone())
            {
                start(cx, lane, idx, attempt);
            }
        }
    } else if let Some(key) = id.strip_suffix("/timeout") {
        if let Some((lane, idx)) = find(cx, key) {
            let attempt = match run_ref(&cx.inst.activity, lane).map(|r| &r.slots[idx]) {
                Some(Slot::Invoked { attempt }) | Some(Slot::AwaitingEvent { attempt, .. }) => {
                    *attempt
                }
                _ => return,
            };
            let error = ErrorInfo::new(
                "TimeoutError",
                format!("action {key} did not complete within its timeout"),
            );
            errors::action_error(cx, lane, idx, attempt, error);
        }
    }
}

/// Marks action `idx` as waiting for a retry.
pub fn set_slot(cx: &mut Cx, lane: Option<usize>, idx: usize, slot: Slot) {
    if let Some(run) = run_mut(&mut cx.inst.activity, lane) {
        run.slots[idx] = slot;
    }
}

/// The data an action's errors are evaluated against (its run's data).
pub fn run_data(cx: &Cx, lane: Option<usize>) -> Value {
    run_ref(&cx.inst.activity, lane)
        .map(|r| r.data.clone())
        .unwrap_or_else(|| cx.inst.data.clone())
}

/// The key of action `idx` of the run at `lane`.
pub fn key_of(cx: &Cx, lane: Option<usize>, idx: usize) -> Option<String> {
    run_ref(&cx.inst.activity, lane).map(|r| key(cx, r, idx))
}

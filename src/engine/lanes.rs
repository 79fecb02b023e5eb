//! Concurrent work: parallel branches, foreach iterations and subflows (child instances).

use super::data;
use super::instance::{Activity, ErrorInfo, Lane, Source};
use super::{errors, flow, run, Action, Cx};
use crate::model::{ActionMode, CompletionType, State};
use serde_json::Value;

/// Starts a parallel, foreach or subflow state.
pub fn begin(cx: &mut Cx, state: &State) {
    match state {
        State::Parallel(p) => {
            let lanes = vec![Lane::NotStarted; p.branches.len()];
            cx.inst.activity = Activity::Parallel {
                lanes,
                finished: vec![],
            };
            start_lanes(cx, usize::MAX);
        }
        State::ForEach(f) => {
            let items = match collection(cx, &f.input_collection) {
                Some(items) => items,
                None => {
                    errors::state_error(
                        cx,
                        ErrorInfo::new(
                            "InvalidInputCollection",
                            format!(
                                "inputCollection {:?} of state {:?} did not select an array",
                                f.input_collection, f.name
                            ),
                        ),
                    );
                    return;
                }
            };
            let lanes = vec![Lane::NotStarted; items.len()];
            cx.inst.activity = Activity::ForEach { items, lanes };
            let max = f
                .max
                .map(|m| m.0 as usize)
                .filter(|&m| m > 0)
                .unwrap_or(usize::MAX);
            if !start_lanes(cx, max) {
                foreach_done(cx);
            }
        }
        State::Subflow(s) => {
            let id = format!("{}/sub", cx.inst.visit_key());
            cx.out.push(Action::StartChild {
                id: id.clone(),
                workflow_id: s.workflow_id.clone(),
                input: cx.inst.data.clone(),
                wait: s.waits(),
            });
            if s.waits() {
                cx.inst.children.insert(id.clone());
                cx.inst.activity = Activity::Subflow { child: id };
            } else {
                flow::complete(cx);
            }
        }
        _ => {}
    }
}

/// The array `source` selects: a single array match, or the matches of an indefinite path.
fn collection(cx: &Cx, source: &str) -> Option<Vec<Value>> {
    let path = cx.path(source)?;
    let mut found = path.matches(&cx.inst.data);
    if found.len() == 1 && found[0].is_array() {
        return match found.pop() {
            Some(Value::Array(items)) => Some(items),
            _ => None,
        };
    }
    (!path.is_definite()).then_some(found)
}

/// Starts not-yet-started lanes while fewer than `max` are running. Returns whether any lane
/// exists that is not done.
fn start_lanes(cx: &mut Cx, max: usize) -> bool {
    let count = lanes(&cx.inst.activity).map_or(0, |l| l.len());
    for i in 0..count {
        let Some(ls) = lanes(&cx.inst.activity) else {
            return true; // a lane finished (or failed) the state: it has moved on
        };
        let running = ls
            .iter()
            .filter(|l| matches!(l, Lane::Actions { .. } | Lane::Child { .. }))
            .count();
        if running >= max {
            break;
        }
        if ls[i] != Lane::NotStarted {
            continue;
        }
        start_lane(cx, i);
    }
    lanes(&cx.inst.activity).is_some_and(|ls| ls.iter().any(|l| !matches!(l, Lane::Done { .. })))
}

fn lanes(a: &Activity) -> Option<&Vec<Lane>> {
    match a {
        Activity::Parallel { lanes, .. } | Activity::ForEach { lanes, .. } => Some(lanes),
        _ => None,
    }
}

fn set_lane(cx: &mut Cx, i: usize, lane: Lane) {
    if let Activity::Parallel { lanes, .. } | Activity::ForEach { lanes, .. } =
        &mut cx.inst.activity
    {
        lanes[i] = lane;
    }
}

fn start_lane(cx: &mut Cx, i: usize) {
    let state = cx.state();
    let (workflow_id, prefix, lane_data, source) = match (state, &cx.inst.activity) {
        (State::Parallel(p), _) => (
            p.branches[i].workflow_id.clone(),
            format!("b{i}."),
            cx.inst.data.clone(),
            Source::Branch(i),
        ),
        (State::ForEach(f), Activity::ForEach { items, .. }) => {
            let mut d = cx.inst.data.clone();
            data::put(&mut d, &f.iteration_param, items[i].clone());
            (f.workflow_id.clone(), format!("i{i}."), d, Source::ForEach)
        }
        _ => return,
    };
    match workflow_id {
        Some(wf) => {
            let id = format!("{}/{}", cx.inst.visit_key(), prefix.trim_end_matches('.'));
            cx.out.push(Action::StartChild {
                id: id.clone(),
                workflow_id: wf,
                input: lane_data,
                wait: true,
            });
            cx.inst.children.insert(id.clone());
            set_lane(cx, i, Lane::Child { id });
        }
        None => {
            let run = run::new_run_with(cx, &prefix, source, ActionMode::Sequential, lane_data);
            set_lane(cx, i, Lane::Actions { run });
            run::drive(cx, Some(i));
        }
    }
}

/// Lane `i` produced `output`.
pub fn lane_done(cx: &mut Cx, i: usize, output: Value) {
    set_lane(cx, i, Lane::Done { output });
    match cx.state() {
        State::Parallel(p) => {
            let needed = match p.completion_type {
                CompletionType::And => p.branches.len(),
                CompletionType::Xor => 1,
                CompletionType::NOfM => p.n.map_or(p.branches.len(), |n| n.0 as usize),
            };
            let done = if let Activity::Parallel { finished, .. } = &mut cx.inst.activity {
                finished.push(i);
                finished.len() >= needed
            } else {
                false
            };
            if done {
                parallel_done(cx);
            }
        }
        State::ForEach(f) => {
            let max = f
                .max
                .map(|m| m.0 as usize)
                .filter(|&m| m > 0)
                .unwrap_or(usize::MAX);
            if !start_lanes(cx, max) && matches!(cx.inst.activity, Activity::ForEach { .. }) {
                foreach_done(cx);
            }
        }
        _ => {}
    }
}

/// Merges the finished branches' outputs in declaration order; unfinished ones are cancelled.
fn parallel_done(cx: &mut Cx) {
    let Activity::Parallel {
        lanes,
        mut finished,
    } = std::mem::take(&mut cx.inst.activity)
    else {
        return;
    };
    finished.sort_unstable();
    for i in finished {
        if let Lane::Done { output } = &lanes[i] {
            data::deep_merge(&mut cx.inst.data, output.clone());
        }
    }
    flow::complete(cx);
}

/// Appends every iteration's result, in input order, to `outputCollection`.
fn foreach_done(cx: &mut Cx) {
    let Activity::ForEach { lanes, .. } = std::mem::take(&mut cx.inst.activity) else {
        return;
    };
    if let State::ForEach(f) = cx.state() {
        if let Some(chain) = f
            .output_collection
            .as_deref()
            .and_then(|o| cx.path(o))
            .and_then(|p| p.member_chain())
        {
            let mut collected = match data::get_path(&cx.inst.data, &chain) {
                Some(Value::Array(a)) => a.clone(),
                _ => vec![],
            };
            collected.extend(lanes.into_iter().map(|l| match l {
                Lane::Done { output } => output,
                _ => Value::Null,
            }));
            data::set_path(&mut cx.inst.data, &chain, Value::Array(collected));
        }
    }
    flow::complete(cx);
}

fn lane_of_child(cx: &Cx, id: &str) -> Option<usize> {
    lanes(&cx.inst.activity)?
        .iter()
        .position(|l| matches!(l, Lane::Child { id: c } if c == id))
}

/// `ChildCompleted`.
pub fn on_child_done(cx: &mut Cx, id: &str, output: Value, terminated: bool) {
    if !cx.inst.children.remove(id) {
        return; // not a child this visit waits for
    }
    if terminated {
        // A terminate end inside a subflow, branch or iteration ends the whole instance.
        let data = cx.inst.data.clone();
        flow::terminate(cx, data);
        return;
    }
    if matches!(cx.inst.activity, Activity::Subflow { .. }) {
        data::deep_merge(&mut cx.inst.data, output);
        flow::complete(cx);
    } else if let Some(i) = lane_of_child(cx, id) {
        lane_done(cx, i, output);
    }
}

/// `ChildFailed`: the child's unhandled error is the state's error.
pub fn on_child_failed(cx: &mut Cx, id: &str, error: ErrorInfo) {
    if !cx.inst.children.remove(id) {
        return;
    }
    errors::state_error(cx, error);
}

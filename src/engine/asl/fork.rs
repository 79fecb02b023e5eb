//! Parallel and Map states: one lane per branch or item, each a thread of its own over the
//! branch's (iterator's) states, inside the same instance. The state is done when every lane
//! is, with their outputs in order; the first lane to fail stops the others and fails the
//! state (docs/semantics.md "Amazon States Language").

use super::cx::Cx;
use super::fields;
use super::outcome::{go, Fault, Outcome};
use super::thread::{Doing, Lane, Thread, Tolerated};
use crate::asl::data::{
    assign, effective_input, effective_output, error_output, fill, input_path, select, Failure,
};
use crate::asl::model::{Kind, PathField, State, States, Tolerance};
use crate::asl::path::Scope;
use serde_json::{json, Value};

/// The states lane `i` of fork state `st` runs.
pub fn scope(st: &State, i: usize) -> Option<&States> {
    match &st.kind {
        Kind::Parallel(p) => p.branches.get(i),
        Kind::Map(m) => Some(&m.iterator),
        _ => None,
    }
}

/// Enters a Parallel or Map state: one waiting lane per branch or item (`flow` starts them
/// as far as `MaxConcurrency` allows).
pub fn start(st: &State, th: &mut Thread, ctx: &Scope) -> Result<Outcome, Failure> {
    let (lanes, limit) = match &st.kind {
        Kind::Parallel(p) => {
            let eff = effective_input(&st.io, &th.input, ctx)?;
            let lanes = p
                .branches
                .iter()
                .map(|_| Lane::Waiting { input: eff.clone() })
                .collect();
            (lanes, 0)
        }
        Kind::Map(m) => {
            let selected = input_path(&st.io, &th.input, ctx)?;
            let items = match (&m.items, &m.items_path) {
                (Some(t), _) => fill(t, &selected, ctx, "Items")?,
                (None, PathField::Path(p)) => select(p, &selected, ctx, "ItemsPath")?,
                (None, PathField::Default | PathField::Null) => selected.clone(),
            };
            let Value::Array(items) = items else {
                return Err(Failure::new(
                    "States.Runtime",
                    format!(
                        "the items of Map state {:?} are not an array (ItemsPath selects {})",
                        st.name,
                        crate::asl::out::kind(&items)
                    ),
                ));
            };
            let mut lanes = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let input = match &st.io.parameters {
                    Some(t) => {
                        let mut c = ctx.clone();
                        c.seed = format!("{}/item{i}", ctx.seed);
                        let map = json!({"Item": {"Index": i, "Value": item}});
                        if let Some(sc) = c.states.get_mut("context") {
                            sc["Map"] = map.clone();
                        }
                        c.context["Map"] = map;
                        fill(t, &selected, &c, "ItemSelector")?
                    }
                    None => item,
                };
                lanes.push(Lane::Waiting { input });
            }
            let limit = fields::count(&m.max_concurrency, &th.input, ctx, "MaxConcurrency")?;
            let tolerate = tolerated(&m.tolerated, &th.input, ctx)?;
            th.doing = Doing::Fork {
                lanes,
                limit,
                tolerate,
            };
            return Ok(Outcome::Lanes);
        }
        _ => unreachable!("fork::start is called for Parallel and Map states"),
    };
    th.doing = Doing::Fork {
        lanes,
        limit,
        tolerate: None,
    };
    Ok(Outcome::Lanes)
}

/// A Map's `ToleratedFailure...` fields as its input gives them (`None`: not one failure).
fn tolerated(t: &Tolerance, input: &Value, ctx: &Scope) -> Result<Option<Tolerated>, Failure> {
    if !t.any() {
        return Ok(None);
    }
    let count = match &t.count {
        Some(c) => Some(fields::count(c, input, ctx, "ToleratedFailureCount")?),
        None => None,
    };
    let percentage = match &t.percentage {
        Some(p) => Some(fields::share(p, input, ctx, "ToleratedFailurePercentage")?),
        None => None,
    };
    Ok(Some(Tolerated {
        count,
        percentage,
        failed: 0,
    }))
}

/// Lane `lane` of a fork of `total` failed with `f`: its place in the result holds the Error
/// Output. The error that fails the state, if the fork does not tolerate it: `f` itself
/// without `ToleratedFailure...`, `States.ExceedToleratedFailureThreshold` past them.
pub fn lane_failed(
    tolerate: &mut Option<Tolerated>,
    total: usize,
    lane: &mut Lane,
    f: Failure,
) -> Option<Failure> {
    *lane = Lane::Done {
        output: error_output(&f.error, &f.cause),
    };
    let Some(t) = tolerate else {
        return Some(f);
    };
    t.failed += 1;
    t.exceeded(total).then(|| {
        Failure::new(
            "States.ExceedToleratedFailureThreshold",
            format!(
                "The specified tolerated failure threshold was exceeded: {} of {total} iterations failed, the last with {}: {}",
                t.failed, f.error, f.cause
            ),
        )
    })
}

/// The state's outcome once its lanes have been started as far as they can be: done, with
/// the lanes' outputs in order, when every lane is; else waiting.
pub fn finish(cx: &mut Cx, st: &State, th: &mut Thread) -> Outcome {
    let Doing::Fork { lanes, .. } = &mut th.doing else {
        return Outcome::Waiting;
    };
    if !lanes.iter().all(|l| matches!(l, Lane::Done { .. })) {
        return Outcome::Waiting;
    }
    let results = std::mem::take(lanes)
        .into_iter()
        .map(|l| match l {
            Lane::Done { output } => output,
            _ => Value::Null,
        })
        .collect();
    th.doing = Doing::Entering;
    let ctx = cx.context(th);
    let results = Value::Array(results);
    let done = effective_output(&st.io, &th.input, results.clone(), &ctx).and_then(|v| {
        let ctx = ctx.with("result", &results);
        assign(st.assign.as_ref(), &results, &ctx, &mut th.vars).map(|()| v)
    });
    match done {
        Ok(v) => go(st, v),
        Err(f) => Outcome::error(f),
    }
}

/// A lane failed: the others stop (their timers go; late answers to them are ignored) and
/// the state fails with the lane's error.
pub fn failed(cx: &mut Cx, th: &mut Thread, f: Failure) -> Outcome {
    cx.quiet(th);
    th.doing = Doing::Entering;
    Outcome::Error(Fault {
        failure: f,
        branch: true,
    })
}

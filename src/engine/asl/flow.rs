//! Entering states and following transitions until a thread waits or ends; what an error
//! does to a state (its Retry, then its Catch, else the thread fails).

use super::cx::Cx;
use super::fields;
use super::fork;
use super::keys::{self, Timer};
use super::outcome::{Ended, Fault, Outcome};
use super::states;
use super::thread::{Doing, Lane, Thread};
use crate::asl::data::{assign, error_output, fill, place, Failure};
use crate::asl::intrinsic::Dice;
use crate::asl::model::{Errors, Flow, Retrier, State, States};
use crate::engine::MAX_STATES_PER_INPUT;
use serde_json::Value;

/// `Start`: the execution's input and start time, the machine's deadline, the first state.
pub fn start(cx: &mut Cx, input: Value) -> Thread {
    cx.input = input.clone();
    cx.started = cx.stamp();
    let m = cx.m;
    // a deadline past the last representable time is no deadline
    if let Some(due) = m
        .timeout_seconds
        .and_then(|s| fields::due(cx.now, s, "TimeoutSeconds").ok())
    {
        let id = keys::timer(&cx.inst.id, 0, Timer::Deadline, 0);
        cx.arm(id, due);
    }
    let mut root = Thread::blank();
    let o = enter(cx, &m.body, &mut root, &m.body.start_at, input);
    finish_root(cx, root, o)
}

/// Settles the root thread after `o`; its end is the machine's.
pub fn finish_root(cx: &mut Cx, mut root: Thread, o: Outcome) -> Thread {
    let m = cx.m;
    match settle(cx, &m.body, &mut root, o) {
        Ended::No => {}
        Ended::Output(v) => cx.complete(v),
        Ended::Failed(f) => cx.fail(f),
    }
    root
}

/// Enters state `name` of `scope` on thread `th` and starts its work.
pub fn enter(cx: &mut Cx, scope: &States, th: &mut Thread, name: &str, input: Value) -> Outcome {
    cx.inst.visit += 1;
    cx.entered += 1;
    cx.path.push(name.to_string());
    *th = Thread {
        state: name.to_string(),
        visit: cx.inst.visit,
        entered: cx.stamp(),
        input,
        attempt: 0,
        retries: Vec::new(),
        doing: Doing::Entering,
        vars: std::mem::take(&mut th.vars),
    };
    states::run(cx, scope, th)
}

/// Follows `o` until the thread waits, ends, or fails with nothing to handle it.
pub fn settle(cx: &mut Cx, scope: &States, th: &mut Thread, o: Outcome) -> Ended {
    let mut o = o;
    loop {
        o = match o {
            Outcome::Waiting => return Ended::No,
            Outcome::Go(Flow::End, v) => return Ended::Output(v),
            Outcome::Go(Flow::Next(next), v) => {
                if cx.entered >= MAX_STATES_PER_INPUT {
                    return Ended::Failed(Failure::new(
                        "States.Runtime",
                        format!(
                            "more than {MAX_STATES_PER_INPUT} states entered without waiting for \
                             anything (a loop that never waits?)"
                        ),
                    ));
                }
                enter(cx, scope, th, &next, v)
            }
            Outcome::Error(fault) => match recover(cx, scope, th, fault) {
                Ok(o) => o,
                Err(f) => return Ended::Failed(f),
            },
            Outcome::Lanes => match scope.get(&th.state) {
                Some(st) => pump(cx, st, th),
                None => return Ended::No,
            },
        }
    }
}

/// Starts a fork's waiting lanes while `MaxConcurrency` allows (each runs until it waits or
/// ends), then finishes the state if every lane is done, or fails it if one failed.
pub fn pump(cx: &mut Cx, st: &State, th: &mut Thread) -> Outcome {
    cx.outer.push(th.vars.clone());
    let failure = start_lanes(cx, st, th);
    cx.outer.pop();
    if let Some(f) = failure {
        return fork::failed(cx, th, f);
    }
    fork::finish(cx, st, th)
}

/// Starts the waiting lanes of `th`'s fork as far as `MaxConcurrency` allows; the error that
/// fails the state, if one of them failed past what it tolerates.
fn start_lanes(cx: &mut Cx, st: &State, th: &mut Thread) -> Option<Failure> {
    let Doing::Fork {
        lanes,
        limit,
        tolerate,
    } = &mut th.doing
    else {
        return None;
    };
    let limit = *limit;
    let total = lanes.len();
    let mut running = lanes
        .iter()
        .filter(|l| matches!(l, Lane::Running { .. }))
        .count() as u64;
    let mut failure = None;
    for (i, lane) in lanes.iter_mut().enumerate() {
        if limit != 0 && running >= limit {
            break;
        }
        let Lane::Waiting { input } = lane else {
            continue;
        };
        let input = input.take();
        let Some(scope) = fork::scope(st, i) else {
            continue;
        };
        let mut t = Thread::blank();
        let o = enter(cx, scope, &mut t, &scope.start_at, input);
        match settle(cx, scope, &mut t, o) {
            Ended::No => {
                *lane = Lane::Running {
                    thread: Box::new(t),
                };
                running += 1;
            }
            Ended::Output(v) => *lane = Lane::Done { output: v },
            Ended::Failed(f) => {
                failure = fork::lane_failed(tolerate, total, lane, f);
                if failure.is_some() {
                    break;
                }
            }
        }
    }
    failure
}

/// The state's answer to an error: the first retrier that matches it, while it has
/// attempts left; else the first catcher that matches; else the error stands.
fn recover(cx: &mut Cx, scope: &States, th: &mut Thread, fault: Fault) -> Result<Outcome, Failure> {
    let Some(st) = scope.get(&th.state) else {
        return Err(fault.failure);
    };
    let hits = |e: &Errors| {
        e.matches(&fault.failure.error)
            || (fault.branch && e.0.iter().any(|n| n == "States.BranchFailed"))
    };
    let retriers = st.kind.retriers();
    if let Some(i) = retriers.iter().position(|r| hits(&r.errors)) {
        th.retries.resize(retriers.len(), 0);
        let used = th.retries[i];
        if u64::from(used) < retriers[i].max_attempts {
            th.retries[i] += 1;
            th.attempt += 1;
            let id = keys::timer(&cx.inst.id, th.visit, Timer::Retry, th.attempt);
            let seed = format!("{}/{}/{}/jitter", cx.inst.id, th.visit, th.attempt);
            cx.arm(id, cx.now + delay(&retriers[i], used, &seed));
            th.doing = Doing::Retry;
            return Ok(Outcome::Waiting);
        }
    }
    match st.kind.catchers().iter().find(|c| hits(&c.errors)) {
        Some(c) => {
            let f = &fault.failure;
            let error = error_output(&f.error, &f.cause);
            let ctx = cx.context(th).with("errorOutput", &error);
            assign(c.assign.as_ref(), &error, &ctx, &mut th.vars)?;
            let out = match &c.output {
                Some(t) => fill(t, &error, &ctx, "Output")?,
                None => place(&c.result_path, &th.input, error)?,
            };
            Ok(Outcome::Go(Flow::Next(c.next.clone()), out))
        }
        None => Err(fault.failure),
    }
}

/// The wait before retry `n` (0: the first): `IntervalSeconds x BackoffRate^n`, at most
/// `MaxDelaySeconds`, to the millisecond; with `JitterStrategy: FULL`, a wait drawn between
/// 0 and that from `seed` (the instance, visit and attempt: a replay draws the same).
pub fn delay(r: &Retrier, n: u32, seed: &str) -> chrono::Duration {
    let mut secs = r.interval_seconds as f64 * r.backoff_rate.powi(n.min(1000) as i32);
    if let Some(max) = r.max_delay_seconds {
        secs = secs.min(max as f64);
    }
    // a year is more than any retry should wait; it also keeps the arithmetic finite
    let ms = (secs * 1000.0).min(365.0 * 86_400_000.0).round() as i64;
    let ms = if r.jitter {
        Dice::new(seed).below(ms as u64 + 1) as i64
    } else {
        ms
    };
    chrono::Duration::milliseconds(ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asl::model::Errors;

    #[test]
    fn retry_waits_grow_by_the_backoff_rate_and_stop_at_the_cap() {
        let r = Retrier {
            errors: Errors(vec!["States.ALL".into()]),
            interval_seconds: 3,
            max_attempts: 5,
            backoff_rate: 1.5,
            max_delay_seconds: Some(6),
            jitter: false,
        };
        let waits: Vec<i64> = (0..4)
            .map(|n| delay(&r, n, "s").num_milliseconds())
            .collect();
        assert_eq!(waits, vec![3000, 4500, 6000, 6000]);
        // full jitter: between 0 and the wait, the same for the same seed, not for another
        let j = Retrier { jitter: true, ..r };
        let drawn: Vec<i64> = (0..20)
            .map(|k| delay(&j, 1, &format!("i/1/{k}")).num_milliseconds())
            .collect();
        assert!(drawn.iter().all(|ms| (0..=4500).contains(ms)), "{drawn:?}");
        assert!(drawn.iter().any(|ms| *ms != drawn[0]), "{drawn:?}");
        assert_eq!(delay(&j, 1, "i/1/3"), delay(&j, 1, "i/1/3"));
    }
}

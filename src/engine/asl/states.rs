//! What each state type does when it is entered (or retried): Pass, Task, Choice, Wait,
//! Succeed and Fail here; Parallel and Map in `fork`.

use super::cx::Cx;
use super::fields;
use super::fork;
use super::keys::{self, Timer, TASK_EVENT};
use super::outcome::{go, Outcome};
use super::thread::{Doing, Thread};
use crate::asl::data::{self, assign, effective_input, effective_output, output, Failure};
use crate::asl::jsonata::QUERY_ERROR;
use crate::asl::model::{Cond, Flow, Kind, State, States, Task, Text, Wait};
use crate::asl::path::Scope;
use crate::engine::produce::emit;
use crate::engine::Action;
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

/// Starts the work of `th`'s current state.
pub fn run(cx: &mut Cx, scope: &States, th: &mut Thread) -> Outcome {
    let Some(st) = scope.get(&th.state) else {
        return Outcome::error(Failure::new(
            "States.Runtime",
            format!("no state named {:?} here", th.state),
        ));
    };
    run_state(cx, st, th).unwrap_or_else(Outcome::error)
}

fn run_state(cx: &mut Cx, st: &State, th: &mut Thread) -> Result<Outcome, Failure> {
    let ctx = cx.context(th);
    match &st.kind {
        Kind::Pass { result } => {
            let eff = effective_input(&st.io, &th.input, &ctx)?;
            let result = result.clone().unwrap_or(eff);
            let out = effective_output(&st.io, &th.input, result.clone(), &ctx)?;
            assign(st.assign.as_ref(), &result, &ctx, &mut th.vars)?;
            Ok(go(st, out))
        }
        Kind::Task(t) => task(cx, st, t, th, ctx),
        Kind::Choice(c) => {
            let eff = effective_input(&st.io, &th.input, &ctx)?;
            for (i, r) in c.choices.iter().enumerate() {
                let hit = match &r.rule {
                    Cond::Rule(rule) => rule
                        .eval(&eff, &ctx)
                        .map_err(|m| Failure::new("States.Runtime", m.to_string()))?,
                    Cond::Jsonata(e) => {
                        match fields::eval(e, &ctx, &format!("Choices[{i}].Condition"))? {
                            Value::Bool(b) => b,
                            other => {
                                return Err(Failure::new(
                                    QUERY_ERROR,
                                    format!(
                                        "The Condition '{}' must be true or false, found {other}",
                                        e.source()
                                    ),
                                ))
                            }
                        }
                    }
                };
                if hit {
                    let out = match &r.output {
                        Some(t) => data::fill(t, &eff, &ctx, "Output")?,
                        None => output(&st.io, &eff, &ctx)?,
                    };
                    assign(r.assign.as_ref(), &eff, &ctx, &mut th.vars)?;
                    return Ok(Outcome::Go(Flow::Next(r.next.clone()), out));
                }
            }
            match &c.default {
                Some(d) => {
                    let out = output(&st.io, &eff, &ctx)?;
                    assign(st.assign.as_ref(), &eff, &ctx, &mut th.vars)?;
                    Ok(Outcome::Go(Flow::Next(d.clone()), out))
                }
                None => Err(Failure::new(
                    "States.NoChoiceMatched",
                    format!(
                        "no Choice Rule of state {:?} matched its input and it has no Default",
                        st.name
                    ),
                )),
            }
        }
        Kind::Wait(w) => {
            let eff = effective_input(&st.io, &th.input, &ctx)?;
            let due = wait_until(cx.now, w, &eff, &ctx)?;
            if due <= cx.now {
                let out = output(&st.io, &eff, &ctx)?;
                assign(st.assign.as_ref(), &eff, &ctx, &mut th.vars)?;
                return Ok(go(st, out));
            }
            cx.arm(keys::timer(&cx.inst.id, th.visit, Timer::Wait, 0), due);
            th.doing = Doing::Wait;
            Ok(Outcome::Waiting)
        }
        Kind::Succeed => {
            let eff = effective_input(&st.io, &th.input, &ctx)?;
            Ok(Outcome::Go(Flow::End, output(&st.io, &eff, &ctx)?))
        }
        Kind::Fail(f) => {
            let text = |t: &Option<Text>, field| match t {
                Some(t) => data::text(t, &th.input, &ctx, field),
                None => Ok(String::new()),
            };
            Err(Failure {
                error: text(&f.error, "Error")?,
                cause: text(&f.cause, "Cause")?,
            })
        }
        Kind::Parallel(_) | Kind::Map(_) => fork::start(st, th, &ctx),
    }
}

/// A Wait state's timer fired: its output.
pub fn after_wait(cx: &Cx, st: &State, th: &mut Thread) -> Outcome {
    let ctx = cx.context(th);
    let done = effective_input(&st.io, &th.input, &ctx).and_then(|eff| {
        let out = output(&st.io, &eff, &ctx)?;
        assign(st.assign.as_ref(), &eff, &ctx, &mut th.vars)?;
        Ok(out)
    });
    done.map(|v| go(st, v)).unwrap_or_else(Outcome::error)
}

/// When a Wait state's wait ends.
fn wait_until(
    now: DateTime<Utc>,
    w: &Wait,
    input: &Value,
    scope: &Scope,
) -> Result<DateTime<Utc>, Failure> {
    Ok(match w {
        Wait::Seconds(s) => fields::due(now, *s, "Seconds")?,
        Wait::Timestamp(t) => *t,
        Wait::SecondsPath(p) => {
            let s = p.get(input, scope).and_then(Value::as_u64).ok_or_else(|| {
                Failure::new(
                    "States.Runtime",
                    format!("SecondsPath {p} does not select a non-negative whole number in the state's input"),
                )
            })?;
            fields::due(now, s, "SecondsPath")?
        }
        Wait::Expr { timestamp, expr } => {
            let field = if *timestamp { "Timestamp" } else { "Seconds" };
            let v = fields::eval(expr, scope, field)?;
            let bad = || {
                Failure::new(
                    QUERY_ERROR,
                    format!("{field} must be {}, found {v}", if *timestamp { "an RFC 3339 timestamp" } else { "a whole number of seconds, 0 or more" }),
                )
            };
            if *timestamp {
                v.as_str().and_then(crate::asl::rules::timestamp).ok_or_else(bad)?
            } else {
                let s = v
                    .as_u64()
                    .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
                    .ok_or_else(bad)?;
                fields::due(now, s, "Seconds")?
            }
        }
        Wait::TimestampPath(p) => p
            .get(input, scope)
            .and_then(Value::as_str)
            .and_then(crate::asl::rules::timestamp)
            .ok_or_else(|| {
                Failure::new(
                    "States.Runtime",
                    format!("TimestampPath {p} does not select an RFC 3339 timestamp (e.g. \"2026-03-14T01:59:00Z\") in the state's input"),
                )
            })?,
    })
}

/// A Task: the call (or, with `.waitForTaskToken`, the event carrying the task token) and
/// its `TimeoutSeconds` and `HeartbeatSeconds` timers.
fn task(
    cx: &mut Cx,
    st: &State,
    t: &Task,
    th: &mut Thread,
    mut ctx: Scope,
) -> Result<Outcome, Failure> {
    let key = keys::call(&cx.inst.id, th.visit, th.attempt);
    let token = t.waits_for_token();
    if token {
        ctx.context["Task"] = json!({ "Token": key });
    }
    let eff = effective_input(&st.io, &th.input, &ctx)?;
    let timeout = fields::seconds(&t.timeout, &th.input, &ctx, "TimeoutSeconds")?;
    let heartbeat = match &t.heartbeat {
        Some(h) => Some(fields::seconds(h, &th.input, &ctx, "HeartbeatSeconds")?),
        None => None,
    };
    let due = fields::due(cx.now, timeout, "TimeoutSeconds")?;
    let beat = match heartbeat {
        Some(s) => Some(fields::due(cx.now, s, "HeartbeatSeconds")?),
        None => None,
    };
    if token {
        let resource = t.resource.trim_end_matches(".waitForTaskToken");
        produce_task(cx, &key, resource, eff)?;
        th.doing = Doing::Token;
    } else {
        cx.out.push(Action::Invoke {
            key,
            function: t.resource.clone(),
            resource: t.resource.clone(),
            parameters: eff,
            attempt: th.attempt,
            timeout_secs: None,
            stale_on_takeover: false,
        });
        th.doing = Doing::Call;
    }
    let (id, visit, attempt) = (cx.inst.id.clone(), th.visit, th.attempt);
    cx.arm(keys::timer(&id, visit, Timer::Timeout, attempt), due);
    if let Some(due) = beat {
        cx.arm(keys::timer(&id, visit, Timer::Heartbeat, attempt), due);
    }
    Ok(Outcome::Waiting)
}

/// The event a `.waitForTaskToken` Task sends: its effective input as data, the token and
/// the resource as attributes.
fn produce_task(cx: &mut Cx, token: &str, resource: &str, data: Value) -> Result<(), Failure> {
    let mut extensions = Map::new();
    extensions.insert("tasktoken".into(), json!(token));
    extensions.insert("taskresource".into(), json!(resource));
    let limit = cx.limits.max_event_bytes;
    emit(&mut cx.inst, &mut cx.out, cx.now, limit, TASK_EVENT.into(), data, extensions).map_err(
        |size| {
            Failure::new(
                "States.Runtime",
                format!(
                    "the task event for {resource:?} would be {size} bytes of JSON, over the limit of {limit} (kafka.max_event_bytes)"
                ),
            )
        },
    )
}

//! Tests of the intrinsic functions through the public API (`parse`, then `Call::eval`),
//! mostly on AWS's documented examples, by group; and the helpers they share.

mod arrays;
mod deploy;
mod encode;
mod math;
mod nesting;
mod text;

use super::{parse, Dice, IntrinsicError, INTRINSIC_FAILURE};
use crate::asl::failure::Failure;
use crate::asl::path::{Path, Scope};
use serde_json::{json, Value};

/// The context object the tests' `$$` paths read.
fn context() -> Value {
    json!({"Execution": {"Id": "arn:aws:states:eu-west-1:1:execution:m:run-7", "Name": "run-7"},
           "StateMachine": {"Name": "orders-v2-prod"}})
}

/// What a path selects, or the runtime error a caller would raise. The one place that knows
/// `Path::select`'s signature.
fn select(p: &Path, data: &Value) -> Result<Value, Failure> {
    p.select(data, &Scope::of(context()))
        .ok_or_else(|| Failure::new("States.Runtime", format!("{} selects nothing", p.source())))
}

/// Parses `expr` (it must be valid) and evaluates it on `data` with `dice`.
fn run_with(expr: &str, data: &Value, dice: &mut Dice) -> Result<Value, Failure> {
    let call = parse(expr).unwrap_or_else(|e| panic!("{expr} should parse: {e}"));
    call.eval(&mut |p| select(p, data), dice)
}

/// The value `expr` gives on `data`.
fn run(expr: &str, data: Value) -> Value {
    run_with(expr, &data, &mut Dice::new("tests"))
        .unwrap_or_else(|f| panic!("{expr} should succeed: {f}"))
}

/// The cause of the `States.IntrinsicFailure` `expr` raises on `data`.
fn fails(expr: &str, data: Value) -> String {
    match run_with(expr, &data, &mut Dice::new("tests")) {
        Ok(v) => panic!("{expr} should fail, gave {v}"),
        Err(f) => {
            assert_eq!(f.error, INTRINSIC_FAILURE, "{expr}: {f}");
            f.cause
        }
    }
}

/// The deploy-time error of `expr`.
fn rejected(expr: &str) -> IntrinsicError {
    match parse(expr) {
        Ok(c) => panic!("{expr} should be rejected, parsed as {c:?}"),
        Err(e) => e,
    }
}

#[test]
fn is_call_recognises_calls_only() {
    assert!(super::is_call("States.Format('x')"));
    assert!(super::is_call("  \n States.UUID()"));
    assert!(!super::is_call("$.States.Format"));
    assert!(!super::is_call("States"));
    assert!(!super::is_call("states.Format('x')"));
}

#[test]
fn a_path_that_selects_nothing_raises_the_callers_error() {
    let err = run_with(
        "States.ArrayLength($.missing)",
        &json!({}),
        &mut Dice::new("t"),
    )
    .unwrap_err();
    assert_eq!(err.error, "States.Runtime");
    assert_eq!(err.cause, "$.missing selects nothing");
}

#[test]
fn name_paths_and_args_are_exposed() {
    let call = parse("States.Format('{} {}', $.a, States.ArrayLength($$.Execution.Ids))").unwrap();
    assert_eq!(call.name(), "States.Format");
    assert_eq!(call.args().len(), 3);
    let paths: Vec<&str> = call.paths().iter().map(|p| p.source()).collect();
    assert_eq!(paths, ["$.a", "$$.Execution.Ids"]);
}

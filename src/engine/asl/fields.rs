//! Fields a state reads from its input when it runs: the `...Path` forms of seconds, counts
//! and percentages, and their JSONata expressions. What one selects must be of the field's
//! kind, else `States.Runtime` (`States.QueryEvaluationError` for an expression).

use crate::asl::data::Failure;
use crate::asl::intrinsic::Dice;
use crate::asl::jsonata::{Expr, QUERY_ERROR};
use crate::asl::model::{Count, Seconds, Share};
use crate::asl::path::Scope;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// A seconds field's value: fixed, or read from the state's input.
pub fn seconds(s: &Seconds, input: &Value, scope: &Scope, field: &str) -> Result<u64, Failure> {
    match s {
        Seconds::Fixed(n) => Ok(*n),
        Seconds::Expr(e) => whole(e, scope, field).and_then(|n| {
            (n > 0).then_some(n).ok_or_else(|| {
                Failure::new(QUERY_ERROR, format!("{field} must be a positive number of seconds, found 0"))
            })
        }),
        Seconds::Path(p) => p
            .get(input, scope)
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                Failure::new(
                    "States.Runtime",
                    format!(
                        "{field}Path {p} does not select a positive whole number in the state's input"
                    ),
                )
            }),
    }
}

/// A whole-number field's value (`MaxConcurrency`, `ToleratedFailureCount`): fixed, or read
/// from the state's input.
pub fn count(c: &Count, input: &Value, scope: &Scope, field: &str) -> Result<u64, Failure> {
    match c {
        Count::Fixed(n) => Ok(*n),
        Count::Expr(e) => whole(e, scope, field),
        Count::Path(p) => p.get(input, scope).and_then(Value::as_u64).ok_or_else(|| {
            Failure::new(
                "States.Runtime",
                format!("{field}Path {p} does not select a whole number, 0 or more, in the state's input"),
            )
        }),
    }
}

/// A percentage field's value (`ToleratedFailurePercentage`): fixed, or read from the
/// state's input.
pub fn share(s: &Share, input: &Value, scope: &Scope, field: &str) -> Result<f64, Failure> {
    match s {
        Share::Fixed(p) => Ok(*p),
        Share::Expr(e) => {
            let v = eval(e, scope, field)?;
            v.as_f64()
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or_else(|| Failure::new(QUERY_ERROR, format!("{field} must be a number from 0 to 100, found {v}")))
        }
        Share::Path(p) => p
            .get(input, scope)
            .and_then(Value::as_f64)
            .filter(|v| (0.0..=100.0).contains(v))
            .ok_or_else(|| {
                Failure::new(
                    "States.Runtime",
                    format!("{field}Path {p} does not select a number from 0 to 100 in the state's input"),
                )
            }),
    }
}

/// A field's expression, evaluated.
pub fn eval(e: &Expr, scope: &Scope, field: &str) -> Result<Value, Failure> {
    e.eval(
        scope,
        field,
        &mut Dice::new(&format!("{}/{field}", scope.seed)),
    )
}

/// A field's expression, which must make a whole number, 0 or more.
fn whole(e: &Expr, scope: &Scope, field: &str) -> Result<u64, Failure> {
    let v = eval(e, scope, field)?;
    v.as_u64()
        .or_else(|| {
            v.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                .map(|f| f as u64)
        })
        .ok_or_else(|| {
            Failure::new(
                QUERY_ERROR,
                format!("{field} must be a whole number, 0 or more, found {v}"),
            )
        })
}

/// `secs` seconds after `now`: `States.Runtime` past the last time that can be represented
/// (a `Seconds` of 10^15 must fail the state, not the broker).
pub fn due(now: DateTime<Utc>, secs: u64, field: &str) -> Result<DateTime<Utc>, Failure> {
    i64::try_from(secs)
        .ok()
        .and_then(chrono::Duration::try_seconds)
        .and_then(|d| now.checked_add_signed(d))
        .ok_or_else(|| {
            Failure::new(
                "States.Runtime",
                format!(
                    "{field} of {secs} seconds reaches past the last time that can be represented"
                ),
            )
        })
}

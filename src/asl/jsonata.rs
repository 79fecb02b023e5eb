//! JSONata expressions (`"{% ... %}"`) in states whose `QueryLanguage` is JSONata, run by
//! jsonata-core (docs/dependencies.md says why that crate). An expression sees `$states`
//! (`input`, `context`, and `result` or `errorOutput` where the state has one) and the
//! variables in scope; `$` is the state's input.
//!
//! Pure, as the engine must be: `$now()` and `$millis()` give the time of the input being
//! applied, `$random()` and `$shuffle` draw from the state's seed, `$eval` and `$toMillis`
//! with a picture are refused. AWS's own functions (`$partition`, `$range`, `$hash`,
//! `$random(seed)`, `$uuid`, `$parse`) are the intrinsic functions of the same names. A
//! failure, or a result that is undefined, is `States.QueryEvaluationError`.

use super::failure::Failure;
use super::intrinsic::{self, Dice};
use super::path::Scope;
use chrono::SecondsFormat;
use jsonata_core::ast::AstNode;
use jsonata_core::evaluator::{Context, Evaluator, EvaluatorError, EvaluatorOptions};
use jsonata_core::value::JValue;
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// The error every JSONata failure raises.
pub const QUERY_ERROR: &str = "States.QueryEvaluationError";

/// How long one expression may run before it fails. The one limit that depends on time:
/// JSONata can loop forever (`$f := function(){$f()}; $f()`), and a partition must not.
const TIMEOUT_MS: u64 = 1000;
/// How deep an evaluation may nest, and how long a sequence it may build.
const MAX_DEPTH: usize = 2000;
const MAX_SEQUENCE: usize = 1_000_000;

/// A compiled expression.
#[derive(Clone)]
pub struct Expr {
    source: String,
    ast: Arc<AstNode>,
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{{% {} %}}", self.source)
    }
}

/// The expression inside a `{% ... %}` string, if the string is one.
pub fn inner(s: &str) -> Option<&str> {
    s.strip_prefix("{%")?.strip_suffix("%}")
}

impl Expr {
    /// Compiles the text inside `{% %}`.
    pub fn parse(source: &str) -> Result<Expr, String> {
        let source = source.trim();
        if source.is_empty() {
            return Err("the expression is empty: write one between {% and %}".into());
        }
        let ast = jsonata_core::parser::parse(source)
            .map_err(|e| format!("{source:?} is not a JSONata expression: {e}"))?;
        Ok(Expr {
            source: source.to_string(),
            ast: Arc::new(ast),
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates the expression for field `field` of a state with this scope.
    pub fn eval(&self, scope: &Scope, field: &str, dice: &mut Dice) -> Result<Value, Failure> {
        let fail = |why: String| {
            Failure::new(
                QUERY_ERROR,
                format!(
                    "The JSONata expression '{}' specified for the field '{field}' {why}",
                    self.source
                ),
            )
        };
        let mut ctx = Context::new();
        ctx.bind("states".into(), JValue::from(scope.states.clone()));
        for (name, v) in &scope.vars {
            ctx.bind(name.clone(), JValue::from(v.clone()));
        }
        let options = EvaluatorOptions {
            timeout_ms: Some(TIMEOUT_MS),
            max_stack_depth: Some(MAX_DEPTH),
            max_sequence_length: Some(MAX_SEQUENCE),
            ..EvaluatorOptions::default()
        };
        let mut ev = Evaluator::with_options(ctx, options);
        let shared = Rc::new(RefCell::new(dice.clone()));
        pure(&mut ev, scope, &shared).map_err(|e| fail(format!("could not be set up: {e}")))?;
        let input = JValue::from(scope.states.get("input").cloned().unwrap_or(Value::Null));
        let out = ev.evaluate(&self.ast, &input);
        *dice = shared.borrow().clone();
        let out = out.map_err(|e| fail(format!("threw an error: {e}")))?;
        if out.is_undefined() {
            return Err(fail("returned nothing (undefined)".into()));
        }
        // through text: serde_json's reader stops at a depth of 128 where a deep value
        // built directly could overflow the stack when it is dropped
        out.to_json_string()
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .ok_or_else(|| {
                fail("returned a value that is not JSON (too deep, or a function)".into())
            })
    }
}

/// Milliseconds since the epoch of an ISO 8601 timestamp: a full one with its offset, or a
/// date and time without one (UTC), or a date, a month or a year alone (its start, UTC), as
/// JSONata's `$toMillis` takes them.
fn iso_millis(text: &str) -> Option<i64> {
    use chrono::{NaiveDate, NaiveDateTime};
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_millis());
    }
    for f in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, f) {
            return Some(t.and_utc().timestamp_millis());
        }
    }
    let date = NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .or_else(|_| NaiveDate::parse_from_str(&format!("{text}-01"), "%Y-%m-%d"))
        .or_else(|_| NaiveDate::parse_from_str(&format!("{text}-01-01"), "%Y-%m-%d"))
        .ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis())
}

fn err(message: impl Into<String>) -> EvaluatorError {
    EvaluatorError::EvaluationError(message.into())
}

fn to_value(v: &JValue) -> Result<Value, EvaluatorError> {
    serde_json::to_value(v).map_err(|e| err(e.to_string()))
}

/// Replaces what reads a clock or a random source, and adds AWS's functions.
fn pure(ev: &mut Evaluator, scope: &Scope, dice: &Rc<RefCell<Dice>>) -> Result<(), EvaluatorError> {
    let now = scope.now;
    ev.register_fn_override("now", move |args: &[JValue]| {
        if !args.is_empty() {
            return Err(err(
                "$now with a picture is not supported here: write $fromMillis($millis(), picture, timezone)",
            ));
        }
        Ok(JValue::from(now.to_rfc3339_opts(SecondsFormat::Millis, true)))
    })?;
    ev.register_fn_override("millis", move |_: &[JValue]| {
        Ok(JValue::Number(now.timestamp_millis() as f64))
    })?;
    ev.register_fn_override("eval", |_: &[JValue]| {
        Err(err("$eval is not available in a state machine"))
    })?;
    ev.register_fn_override("toMillis", |args: &[JValue]| {
        if args.len() > 1 {
            return Err(err(
                "$toMillis with a picture is not supported (it can read the clock); give an ISO 8601 timestamp",
            ));
        }
        let text = match args.first() {
            Some(JValue::String(s)) => s.to_string(),
            _ => return Ok(JValue::Undefined),
        };
        iso_millis(&text)
            .map(|ms| JValue::Number(ms as f64))
            .ok_or_else(|| {
                err(format!(
                    "D3110: The argument of the toMillis function must be an ISO 8601 formatted timestamp. Given {text:?}"
                ))
            })
    })?;
    let d = dice.clone();
    ev.register_fn_override("random", move |args: &[JValue]| {
        let unit = |dice: &mut Dice| (dice.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        Ok(JValue::Number(match args.first() {
            Some(seed) => unit(&mut Dice::new(&to_value(seed)?.to_string())),
            None => unit(&mut d.borrow_mut()),
        }))
    })?;
    let d = dice.clone();
    ev.register_fn_override("shuffle", move |args: &[JValue]| {
        let mut items = match args.first().map(to_value).transpose()? {
            Some(Value::Array(a)) => a,
            Some(other) => vec![other],
            None => return Ok(JValue::Undefined),
        };
        let mut dice = d.borrow_mut();
        for i in (1..items.len()).rev() {
            let j = dice.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
        Ok(JValue::from(Value::Array(items)))
    })?;
    for (name, func) in [
        ("partition", "States.ArrayPartition"),
        ("range", "States.ArrayRange"),
        ("hash", "States.Hash"),
        ("uuid", "States.UUID"),
        ("parse", "States.StringToJson"),
    ] {
        let d = dice.clone();
        ev.register_fn(name, move |args: &[JValue]| {
            let values = args.iter().map(to_value).collect::<Result<Vec<_>, _>>()?;
            match intrinsic::run_named(func, &values, &mut d.borrow_mut()) {
                Some(Ok(v)) => Ok(JValue::from(v)),
                Some(Err(f)) => Err(err(format!("${name}: {}", f.cause))),
                None => Err(err(format!("${name} is not available"))),
            }
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(src: &str, scope: &Scope) -> Result<Value, Failure> {
        Expr::parse(src)
            .unwrap()
            .eval(scope, "Output", &mut Dice::new("seed"))
    }

    fn scope(input: Value) -> Scope {
        let mut s = Scope {
            states: json!({"input": input, "context": {"Execution": {"Id": "e1"}}}),
            now: "2026-01-02T03:04:05Z".parse().unwrap(),
            ..Scope::default()
        };
        s.vars.insert("limit".into(), json!(10));
        s
    }

    #[test]
    fn expressions_read_states_variables_and_the_input() {
        let s = scope(json!({"items": [{"p": 5}, {"p": 12}, {"p": 30}], "name": "Ann"}));
        assert_eq!(run("$sum($states.input.items.p)", &s).unwrap(), json!(47));
        assert_eq!(run("items[p > $limit].p", &s).unwrap(), json!([12, 30]));
        assert_eq!(
            run("$states.context.Execution.Id", &s).unwrap(),
            json!("e1")
        );
        assert_eq!(
            run("{'who': $uppercase(name)}", &s).unwrap(),
            json!({"who": "ANN"})
        );
    }

    #[test]
    fn the_clock_and_chance_are_the_inputs() {
        let s = scope(json!({}));
        assert_eq!(
            run("$now()", &s).unwrap(),
            json!("2026-01-02T03:04:05.000Z")
        );
        assert_eq!(run("$millis()", &s).unwrap(), json!(1767323045000u64));
        let a = run("[$random(), $uuid()]", &s).unwrap();
        assert_eq!(a, run("[$random(), $uuid()]", &s).unwrap(), "same seed");
        let r = a[0].as_f64().unwrap();
        assert!((0.0..1.0).contains(&r), "{r}");
        assert_eq!(
            run("$random(7)", &s).unwrap(),
            run("$random(7)", &s).unwrap()
        );
        assert_eq!(
            run("$partition([1,2,3], 2)", &s).unwrap(),
            json!([[1, 2], [3]])
        );
        assert_eq!(run("$range(0, 10, 5)", &s).unwrap(), json!([0, 5, 10]));
        assert_eq!(run("$parse('{\"a\": 1}')", &s).unwrap(), json!({"a": 1}));
        assert_eq!(
            run("$toMillis('2024-01-01')", &s).unwrap(),
            json!(1704067200000u64)
        );
        assert_eq!(
            run("$toMillis('2024-01-01T00:00:01.5Z')", &s).unwrap(),
            json!(1704067201500u64)
        );
        assert!(
            run("$toMillis('10', '[M01]')", &s).is_err(),
            "a picture can read the clock"
        );
        assert!(run("$eval('1')", &s).is_err());
    }

    #[test]
    fn failures_and_undefined_are_query_errors() {
        let s = scope(json!({}));
        let e = run("$states.input.nope", &s).unwrap_err();
        assert_eq!(e.error, QUERY_ERROR);
        assert!(e.cause.contains("undefined"), "{}", e.cause);
        let e = run("$number('x') + 1", &s).unwrap_err();
        assert_eq!(e.error, QUERY_ERROR);
        // a loop that never ends is stopped
        let e = run("($f := function(){$f()}; $f())", &s).unwrap_err();
        assert_eq!(e.error, QUERY_ERROR);
        assert!(Expr::parse("$x(").is_err());
        assert_eq!(inner("{% $x %}"), Some(" $x "));
        assert_eq!(inner("$x"), None);
    }
}

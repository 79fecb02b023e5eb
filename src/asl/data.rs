//! Input and output processing, as the document orders it: raw input -> `InputPath` ->
//! `Parameters` (effective input); result -> `ResultSelector` -> `ResultPath` (into the raw
//! input) -> `OutputPath` (effective output). `null` paths discard, absent ones are `$`.
//! Failures are the predefined errors the document names. Pure.

use super::intrinsic::Dice;
use super::model::{Io, PathField, Template, TemplateField, Text};
use super::path::{Path, RefPath, Scope};
use serde_json::{Map, Value};

pub use super::failure::Failure;

/// A path's selection, or `States.Runtime` naming `field` when it selects nothing.
pub fn select(p: &Path, data: &Value, ctx: &Scope, field: &str) -> Result<Value, Failure> {
    p.select(data, ctx).ok_or_else(|| {
        Failure::new(
            "States.Runtime",
            format!(
                "{field} {:?} selects nothing in the state's input",
                p.source()
            ),
        )
    })
}

/// `InputPath` alone (a Map state fills its `ItemSelector` from this, item by item); a
/// JSONata state's input as it is.
pub fn input_path(io: &Io, raw: &Value, ctx: &Scope) -> Result<Value, Failure> {
    if io.jsonata {
        return Ok(raw.clone());
    }
    match &io.input_path {
        PathField::Default => Ok(raw.clone()),
        PathField::Null => Ok(Value::Object(Map::new())),
        PathField::Path(p) => select(p, raw, ctx, "InputPath"),
    }
}

/// `InputPath` then `Parameters`: what the state works on.
pub fn effective_input(io: &Io, raw: &Value, ctx: &Scope) -> Result<Value, Failure> {
    if io.jsonata {
        return match &io.arguments {
            Some(t) => fill(t, raw, ctx, "Arguments"),
            None => Ok(raw.clone()),
        };
    }
    let selected = input_path(io, raw, ctx)?;
    match &io.parameters {
        Some(t) => fill(t, &selected, ctx, "Parameters"),
        None => Ok(selected),
    }
}

/// A `Parameters`/`ResultSelector`/`ItemSelector`/`Assign` value with its `.$` fields filled
/// from `input` (or the context object, or variables), intrinsic functions called; a path
/// that selects nothing is `States.ParameterPathFailure`, a failed intrinsic
/// `States.IntrinsicFailure`.
pub fn fill(t: &Template, input: &Value, ctx: &Scope, field: &str) -> Result<Value, Failure> {
    let mut dice = Dice::new(&format!("{}/{field}", ctx.seed));
    fill_with(t, input, ctx, field, &mut dice)
}

fn fill_with(
    t: &Template,
    input: &Value,
    ctx: &Scope,
    field: &str,
    dice: &mut Dice,
) -> Result<Value, Failure> {
    Ok(match t {
        Template::Literal(v) => v.clone(),
        Template::Expr(e) => e.eval(ctx, field, dice)?,
        Template::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| fill_with(i, input, ctx, field, dice))
                .collect::<Result<_, _>>()?,
        ),
        Template::Object(fields) => {
            let mut o = Map::new();
            for (k, f) in fields {
                let at = |p: &Path| {
                    p.select(input, ctx)
                        .ok_or_else(|| nothing("States.ParameterPathFailure", p, field, k))
                };
                let v = match f {
                    TemplateField::Value(t) => fill_with(t, input, ctx, field, dice)?,
                    TemplateField::Path(p) => at(p)?,
                    TemplateField::Call(c) => c.eval(&mut |p: &Path| at(p), dice)?,
                };
                o.insert(k.clone(), v);
            }
            Value::Object(o)
        }
    })
}

/// The error for a path of field `field` (key `k`) that selects nothing, worded by what it
/// reads.
fn nothing(error: &str, p: &Path, field: &str, k: &str) -> Failure {
    let where_ = match p.root.var() {
        Some(v) => format!("variable ${v} is not set here (no state before this one in its scope or an outer one assigned it)"),
        None => "it selects nothing in the input".to_string(),
    };
    Failure::new(
        error,
        format!("{field}: \"{k}.$\": {:?}: {where_}", p.source()),
    )
}

/// The most JSON one variable, or one `Assign`, may hold (Step Functions' limit).
pub const MAX_ASSIGN_BYTES: usize = 256 * 1024;

/// Sets the variables of an `Assign` (a [`Template::Object`]) in `vars`: every value is
/// computed first, from `value` (the state's result or input) and the scope as the state
/// entered it, then set. Over 256 KiB for one variable or for the whole `Assign` is
/// `States.Runtime`.
pub fn assign(
    t: Option<&Template>,
    value: &Value,
    ctx: &Scope,
    vars: &mut Map<String, Value>,
) -> Result<(), Failure> {
    let Some(t) = t else {
        return Ok(());
    };
    let Value::Object(set) = fill(t, value, ctx, "Assign")? else {
        return Ok(());
    };
    let mut total = 0;
    for (name, v) in &set {
        let size = serde_json::to_vec(v).map_or(0, |b| b.len());
        total += size;
        if size > MAX_ASSIGN_BYTES || total > MAX_ASSIGN_BYTES {
            return Err(Failure::new(
                "States.Runtime",
                format!(
                    "Assign: {} is over the limit of {MAX_ASSIGN_BYTES} bytes of JSON ({size} bytes for ${name})",
                    if size > MAX_ASSIGN_BYTES { format!("${name}") } else { "the whole Assign".to_string() }
                ),
            ));
        }
    }
    vars.extend(set);
    Ok(())
}

/// A Fail state's `Error` or `Cause` (`field`) as the state's input makes it: a path or an
/// intrinsic function must make a string (else `States.Runtime`).
pub fn text(t: &Text, input: &Value, ctx: &Scope, field: &str) -> Result<String, Failure> {
    let v = match t {
        Text::Fixed(s) => return Ok(s.clone()),
        Text::Expr(e) => e.eval(ctx, field, &mut Dice::new(&format!("{}/{field}", ctx.seed)))?,
        Text::Path(p) => p
            .select(input, ctx)
            .ok_or_else(|| nothing("States.Runtime", p, &format!("{field}Path"), field))?,
        Text::Call(c) => {
            let mut dice = Dice::new(&format!("{}/{field}", ctx.seed));
            c.eval(
                &mut |p: &Path| {
                    p.select(input, ctx)
                        .ok_or_else(|| nothing("States.Runtime", p, &format!("{field}Path"), field))
                },
                &mut dice,
            )?
        }
    };
    match v {
        Value::String(s) => Ok(s),
        other => Err(Failure::new(
            "States.Runtime",
            format!(
                "{field}Path must make a string, found {}",
                super::out::kind(&other)
            ),
        )),
    }
}

/// Places `result` into the raw input as `ResultPath` says.
pub fn place(
    result_path: &PathField<RefPath>,
    raw: &Value,
    result: Value,
) -> Result<Value, Failure> {
    match result_path {
        PathField::Default => Ok(result),
        PathField::Null => Ok(raw.clone()),
        PathField::Path(p) => p.put(raw.clone(), result).ok_or_else(|| {
            Failure::new(
                "States.ResultPathMatchFailure",
                format!("ResultPath {p} cannot be applied to the state's input {raw}"),
            )
        }),
    }
}

/// `ResultSelector`, `ResultPath`, `OutputPath`: what the state passes on (JSONata: its
/// `Output`, with `$states.result`, else the result).
pub fn effective_output(
    io: &Io,
    raw: &Value,
    result: Value,
    ctx: &Scope,
) -> Result<Value, Failure> {
    if io.jsonata {
        return match &io.output {
            Some(t) => fill(t, &result, &ctx.with("result", &result), "Output"),
            None => Ok(result),
        };
    }
    let result = match &io.result_selector {
        Some(t) => fill(t, &result, ctx, "ResultSelector")?,
        None => result,
    };
    let placed = place(&io.result_path, raw, result)?;
    output(io, &placed, ctx)
}

/// `OutputPath` alone (states without a result: Choice, Wait, Succeed; JSONata: `Output`).
pub fn output(io: &Io, data: &Value, ctx: &Scope) -> Result<Value, Failure> {
    if io.jsonata {
        return match &io.output {
            Some(t) => fill(t, data, ctx, "Output"),
            None => Ok(data.clone()),
        };
    }
    match &io.output_path {
        PathField::Default => Ok(data.clone()),
        PathField::Null => Ok(Value::Object(Map::new())),
        PathField::Path(p) => select(p, data, ctx, "OutputPath"),
    }
}

/// The Error Output a catcher passes on: `{"Error": name, "Cause": text}`.
pub fn error_output(error: &str, cause: &str) -> Value {
    serde_json::json!({"Error": error, "Cause": cause})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn io(v: Value) -> Io {
        // a Task state carrying the fields, read as a machine
        let mut state = v;
        state["Type"] = json!("Task");
        state["Resource"] = json!("arn:aws:lambda:::function:f");
        state["End"] = json!(true);
        let m = json!({"StartAt": "S", "States": {"S": state}});
        let mut out = super::super::out::Out::new("t");
        let m = super::super::read::machine(&m, &mut out).unwrap();
        assert!(!out.has_errors(), "{:?}", out.diags);
        m.body.states[0].io.clone()
    }

    #[test]
    fn null_paths_discard_and_absent_ones_keep_everything() {
        let raw = json!({"a": 1});
        let all = io(json!({}));
        assert_eq!(
            effective_input(&all, &raw, &Scope::default()),
            Ok(raw.clone())
        );
        assert_eq!(
            effective_output(&all, &raw, json!(7), &Scope::default()),
            Ok(json!(7))
        );
        let nulls = io(json!({"InputPath": null, "ResultPath": null}));
        assert_eq!(
            effective_input(&nulls, &raw, &Scope::default()),
            Ok(json!({}))
        );
        assert_eq!(
            effective_output(&nulls, &raw, json!(7), &Scope::default()),
            Ok(raw.clone())
        );
        let out_null = io(json!({"OutputPath": null}));
        assert_eq!(
            effective_output(&out_null, &raw, json!(7), &Scope::default()),
            Ok(json!({}))
        );
        let gather = io(json!({"InputPath": "$.a[0,1]"}));
        assert_eq!(
            effective_input(&gather, &json!({"a": [1, 2, 3, 4]}), &Scope::default()),
            Ok(json!([1, 2]))
        );
    }

    #[test]
    fn selectors_read_results_and_the_context_object() {
        let s = io(json!({
            "Parameters": {"id.$": "$$.Execution.Id", "n.$": "$.n"},
            "ResultSelector": {"total.$": "$.sum"},
            "ResultPath": "$.out"
        }));
        let ctx = Scope::of(json!({"Execution": {"Id": "p1-x"}}));
        assert_eq!(
            effective_input(&s, &json!({"n": 2}), &ctx),
            Ok(json!({"id": "p1-x", "n": 2}))
        );
        assert_eq!(
            effective_output(&s, &json!({"n": 2}), json!({"sum": 5, "junk": 1}), &ctx),
            Ok(json!({"n": 2, "out": {"total": 5}}))
        );
        let e = effective_input(&s, &json!({}), &ctx).unwrap_err();
        assert_eq!(e.error, "States.ParameterPathFailure");
    }
}

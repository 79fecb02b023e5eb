//! Input and output processing, as the document orders it: raw input -> `InputPath` ->
//! `Parameters` (effective input); result -> `ResultSelector` -> `ResultPath` (into the raw
//! input) -> `OutputPath` (effective output). `null` paths discard, absent ones are `$`.
//! Failures are the predefined errors the document names. Pure.

use super::model::{Io, PathField, Template, TemplateField};
use super::path::{Path, RefPath};
use serde_json::{Map, Value};

/// A runtime error of the machine's own making: a predefined error name and its cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}: {cause}")]
pub struct Failure {
    pub error: String,
    pub cause: String,
}

impl Failure {
    pub fn new(error: &str, cause: impl Into<String>) -> Failure {
        Failure {
            error: error.to_string(),
            cause: cause.into(),
        }
    }
}

/// A path's selection, or `States.Runtime` naming `field` when it selects nothing.
pub fn select(p: &Path, data: &Value, ctx: &Value, field: &str) -> Result<Value, Failure> {
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

/// `InputPath` alone (a Map state fills its `ItemSelector` from this, item by item).
pub fn input_path(io: &Io, raw: &Value, ctx: &Value) -> Result<Value, Failure> {
    match &io.input_path {
        PathField::Default => Ok(raw.clone()),
        PathField::Null => Ok(Value::Object(Map::new())),
        PathField::Path(p) => select(p, raw, ctx, "InputPath"),
    }
}

/// `InputPath` then `Parameters`: what the state works on.
pub fn effective_input(io: &Io, raw: &Value, ctx: &Value) -> Result<Value, Failure> {
    let selected = input_path(io, raw, ctx)?;
    match &io.parameters {
        Some(t) => fill(t, &selected, ctx, "Parameters"),
        None => Ok(selected),
    }
}

/// A `Parameters`/`ResultSelector`/`ItemSelector` value with its `.$` fields filled from
/// `input` (or the context object); a path that selects nothing is
/// `States.ParameterPathFailure`.
pub fn fill(t: &Template, input: &Value, ctx: &Value, field: &str) -> Result<Value, Failure> {
    Ok(match t {
        Template::Literal(v) => v.clone(),
        Template::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| fill(i, input, ctx, field))
                .collect::<Result<_, _>>()?,
        ),
        Template::Object(fields) => {
            let mut o = Map::new();
            for (k, f) in fields {
                let v = match f {
                    TemplateField::Value(t) => fill(t, input, ctx, field)?,
                    TemplateField::Path(p) => p.select(input, ctx).ok_or_else(|| {
                        Failure::new(
                            "States.ParameterPathFailure",
                            format!(
                                "{field}: \"{k}.$\": {:?} selects nothing in the input",
                                p.source()
                            ),
                        )
                    })?,
                };
                o.insert(k.clone(), v);
            }
            Value::Object(o)
        }
    })
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

/// `ResultSelector`, `ResultPath`, `OutputPath`: what the state passes on.
pub fn effective_output(
    io: &Io,
    raw: &Value,
    result: Value,
    ctx: &Value,
) -> Result<Value, Failure> {
    let result = match &io.result_selector {
        Some(t) => fill(t, &result, ctx, "ResultSelector")?,
        None => result,
    };
    let placed = place(&io.result_path, raw, result)?;
    output(io, &placed, ctx)
}

/// `OutputPath` alone (states without a result: Choice, Wait, Succeed).
pub fn output(io: &Io, data: &Value, ctx: &Value) -> Result<Value, Failure> {
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
        assert_eq!(effective_input(&all, &raw, &json!({})), Ok(raw.clone()));
        assert_eq!(
            effective_output(&all, &raw, json!(7), &json!({})),
            Ok(json!(7))
        );
        let nulls = io(json!({"InputPath": null, "ResultPath": null}));
        assert_eq!(effective_input(&nulls, &raw, &json!({})), Ok(json!({})));
        assert_eq!(
            effective_output(&nulls, &raw, json!(7), &json!({})),
            Ok(raw.clone())
        );
        let out_null = io(json!({"OutputPath": null}));
        assert_eq!(
            effective_output(&out_null, &raw, json!(7), &json!({})),
            Ok(json!({}))
        );
        let gather = io(json!({"InputPath": "$.a[0,1]"}));
        assert_eq!(
            effective_input(&gather, &json!({"a": [1, 2, 3, 4]}), &json!({})),
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
        let ctx = json!({"Execution": {"Id": "p1-x"}});
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

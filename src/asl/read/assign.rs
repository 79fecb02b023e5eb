//! `Assign` fields: variable names checked as Step Functions checks them, values read as
//! `Parameters` (JSONPath) or with `{% %}` expressions (JSONata).

use super::super::model::*;
use super::super::out::{kind, member, Out};
use super::fields::template;
use serde_json::Value;

/// The longest variable name Step Functions takes.
const MAX_VAR_NAME: usize = 80;

/// An `Assign` field at `at`: an object keyed by variable names (`"name"` for a value,
/// `"name.$"` for a path or an intrinsic function), each value read as `Parameters` is.
fn jsonpath(v: Option<&Value>, at: &str, out: &mut Out) -> Option<Template> {
    let v = v?;
    let Value::Object(o) = v else {
        out.error(
            at,
            format!(
                "\"Assign\" must be an object of variable names and values, e.g. {{\"total.$\": \"$.sum\"}}, found {}",
                kind(v)
            ),
        );
        return None;
    };
    for k in o.keys() {
        let name = k.strip_suffix(".$").unwrap_or(k);
        if let Err(why) = var_name(name) {
            out.error(
                member(at, k),
                format!("{name:?} is not a variable name: {why}"),
            );
        }
    }
    template(v, at, Lang::JsonPath, out)
}

/// A JSONata state's `Assign`: variable names as keys (no `.$`), values with `{% %}`
/// expressions at any depth.
fn jsonata(v: Option<&Value>, at: &str, out: &mut Out) -> Option<Template> {
    let v = v?;
    let Value::Object(o) = v else {
        out.error(
            at,
            format!(
                "\"Assign\" must be an object of variable names and values, e.g. {{\"total\": \"{{% $sum($states.result.items) %}}\"}}, found {}",
                kind(v)
            ),
        );
        return None;
    };
    for k in o.keys() {
        if let Err(why) = var_name(k) {
            out.error(
                member(at, k),
                format!("{k:?} is not a variable name: {why}"),
            );
        }
    }
    template(v, at, Lang::Jsonata, out)
}

/// Why `name` cannot name a variable (Step Functions' rules: a Unicode identifier of at
/// most 80 characters, not `states`; a part of a variable, `a.b` or `a[0]`, cannot be set).
pub fn var_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    match chars.next() {
        None => return Err("it is empty".into()),
        Some(c) if !(c.is_alphabetic() || c == '_') => {
            return Err(format!("it starts with {c:?}; start with a letter or `_`"))
        }
        _ => {}
    }
    if let Some(c) = chars.find(|c| !(c.is_alphanumeric() || *c == '_')) {
        return Err(format!(
            "{c:?} is not a letter, a digit or `_`{}",
            if c == '.' || c == '[' {
                " (a part of a variable cannot be set: assign the whole value)"
            } else {
                ""
            }
        ));
    }
    if name.chars().count() > MAX_VAR_NAME {
        return Err(format!("it is longer than {MAX_VAR_NAME} characters"));
    }
    if name == "states" {
        return Err("`states` is reserved".into());
    }
    Ok(())
}

/// The `Assign` at `at` of a state (or rule, or catcher) in `lang`.
pub(super) fn read(v: Option<&Value>, at: &str, lang: Lang, out: &mut Out) -> Option<Template> {
    match lang {
        Lang::JsonPath => jsonpath(v, at, out),
        Lang::Jsonata => jsonata(v, at, out),
    }
}

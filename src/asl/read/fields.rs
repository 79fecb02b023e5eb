//! Typed fields of a state: strings, seconds, paths, `Parameters`-like templates, unknown and
//! unsupported fields.

use super::super::intrinsic;
use super::super::jsonata::Expr;
use super::super::model::*;
use super::super::out::{index, kind, member, Out};
use super::super::path::{Path, RefPath, Root};
use super::jsonata;
use crate::diag::did_you_mean;
use serde_json::{Map, Value};

/// Fields Step Functions knows that flowbroker does not run, with why.
const UNSUPPORTED: [(&str, &str); 7] = [
    (
        "QueryLanguage",
        "it is set on the machine or on a state, not on a branch or an iterator",
    ),
    (
        "Arguments",
        "a JSONata field: set \"QueryLanguage\": \"JSONata\" to use it, or use Parameters",
    ),
    (
        "Output",
        "a JSONata field: set \"QueryLanguage\": \"JSONata\" on the state to use it",
    ),
    (
        "Credentials",
        "cross-account roles are AWS's; a Task's Resource maps to a URL in [functions]",
    ),
    (
        "ItemReader",
        "Distributed Map reads from S3; give the items in the input (ItemsPath)",
    ),
    (
        "ResultWriter",
        "Distributed Map writes to S3; the Map's result is its output",
    ),
    ("ItemBatcher", "Distributed Map batching is not supported"),
];

pub(super) fn unknown(k: &str, at: &str, known: &[&str], out: &mut Out) {
    if let Some((_, why)) = UNSUPPORTED.iter().find(|(n, _)| *n == k) {
        out.error(member(at, k), format!("\"{k}\" is not supported: {why}"));
    } else {
        out.error(
            member(at, k),
            format!(
                "unknown field{}; remove it",
                did_you_mean(k, known.iter().copied())
            ),
        );
    }
}

pub(super) fn string(v: Option<&Value>, at: &str, out: &mut Out) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        other => {
            out.error(at, format!("must be a string, found {}", kind(other)));
            None
        }
    }
}

/// A positive integer (seconds, a timeout).
pub(super) fn positive(v: Option<&Value>, at: &str, out: &mut Out) -> Option<u64> {
    let v = v?;
    match v.as_u64().filter(|n| *n > 0 && v.is_u64()) {
        Some(n) => Some(n),
        None => {
            out.error(
                at,
                format!("must be a positive whole number of seconds, found {v}"),
            );
            None
        }
    }
}

pub(super) fn non_negative(v: Option<&Value>, at: &str, what: &str, out: &mut Out) -> Option<u64> {
    let v = v?;
    match v.as_u64() {
        Some(n) => Some(n),
        None => {
            out.error(
                at,
                format!("must be a whole number of {what}, 0 or more, found {v}"),
            );
            None
        }
    }
}

pub(super) fn path_field(
    o: &Map<String, Value>,
    k: &str,
    at: &str,
    out: &mut Out,
) -> PathField<Path> {
    match o.get(k) {
        None => PathField::Default,
        Some(Value::Null) => PathField::Null,
        Some(Value::String(s)) => match Path::compile(s) {
            Ok(p) => PathField::Path(p),
            Err(e) => {
                out.error(member(at, k), e.to_string());
                PathField::Default
            }
        },
        Some(other) => {
            out.error(
                member(at, k),
                format!(
                    "\"{k}\" must be a path such as \"$.field\" or null, found {}",
                    kind(other)
                ),
            );
            PathField::Default
        }
    }
}

/// A Reference Path into the state's data (ResultPath and the like).
pub(super) fn ref_path(s: &str, at: &str, out: &mut Out) -> Option<RefPath> {
    match RefPath::compile(s) {
        Ok(p) if p.root == Root::Context => {
            out.error(at, format!("{s:?} points into the context object, which cannot be written: use a path into the data, \"$...\""));
            None
        }
        Ok(p) => Some(p),
        Err(e) => {
            out.error(at, e.to_string());
            None
        }
    }
}

pub(super) fn result_path(o: &Map<String, Value>, at: &str, out: &mut Out) -> PathField<RefPath> {
    match o.get("ResultPath") {
        None => PathField::Default,
        Some(Value::Null) => PathField::Null,
        Some(Value::String(s)) => match ref_path(s, &member(at, "ResultPath"), out) {
            Some(p) if p.root.var().is_some() => {
                out.error(
                    member(at, "ResultPath"),
                    format!("{s:?} names a variable, which \"ResultPath\" cannot set: write \"$.{}\" for a field of the data, or set the variable with \"Assign\"", p.root.var().unwrap_or_default()),
                );
                PathField::Default
            }
            Some(p) => PathField::Path(p),
            None => PathField::Default,
        },
        Some(other) => {
            out.error(member(at, "ResultPath"), format!("\"ResultPath\" must be a Reference Path such as \"$.result\" or null, found {}", kind(other)));
            PathField::Default
        }
    }
}

pub(super) fn io(o: &Map<String, Value>, at: &str, ty: &str, out: &mut Out) -> Io {
    let params_key = if ty == "Map" && o.contains_key("ItemSelector") {
        if o.contains_key("Parameters") {
            out.error(member(at, "Parameters"), "a Map has \"ItemSelector\" or \"Parameters\" (its older name), not both: keep \"ItemSelector\"");
        }
        "ItemSelector"
    } else {
        "Parameters"
    };
    Io {
        jsonata: false,
        arguments: None,
        output: None,
        input_path: path_field(o, "InputPath", at, out),
        output_path: path_field(o, "OutputPath", at, out),
        result_path: result_path(o, at, out),
        parameters: o
            .get(params_key)
            .and_then(|v| template(v, &member(at, params_key), Lang::JsonPath, out)),
        result_selector: o
            .get("ResultSelector")
            .and_then(|v| template(v, &member(at, "ResultSelector"), Lang::JsonPath, out)),
    }
}

/// A `Parameters`-like value in `lang`: in JSONPath a key ending in `.$` holds a path or an
/// intrinsic function; in JSONata a `"{% ... %}"` string, at any depth, is an expression (and
/// a `.$` key is refused). Everything else is taken as it is.
pub fn template(v: &Value, at: &str, lang: Lang, out: &mut Out) -> Option<Template> {
    if lang == Lang::Jsonata {
        if let Some(e) = jsonata::expr(v, at, out) {
            return e.ok().map(Template::Expr);
        }
    }
    Some(match v {
        Value::Object(o) => {
            let mut fields = Vec::new();
            for (k, v) in o {
                let at_k = member(at, k);
                let field = match (k.strip_suffix(".$"), lang, v) {
                    (Some(_), Lang::Jsonata, _) => {
                        out.error(&at_k, "a field ending in \".$\" is JSONPath; in a JSONata state write the value as an expression, \"{% ... %}\"");
                        None
                    }
                    (Some(name), Lang::JsonPath, Value::String(s)) => {
                        dynamic(s, &at_k, out).map(|f| (name, f))
                    }
                    (Some(_), Lang::JsonPath, _) => {
                        out.error(&at_k, format!("a field whose name ends in \".$\" holds a path such as \"$.field\", found {}", kind(v)));
                        None
                    }
                    (None, ..) => {
                        template(v, &at_k, lang, out).map(|t| (k.as_str(), TemplateField::Value(t)))
                    }
                };
                fields.extend(field.map(|(name, f)| (name.to_string(), f)));
            }
            Template::Object(fields)
        }
        Value::Array(a) => Template::Array(
            a.iter()
                .enumerate()
                .filter_map(|(i, v)| template(v, &index(at, i), lang, out))
                .collect(),
        ),
        other => Template::Literal(other.clone()),
    })
}

/// What a state gives for a field `k` that also has a `{k}Path` form.
pub(super) enum Given<'a> {
    /// `k` itself.
    Value(&'a Value),
    /// `k` as a JSONata expression (JSONata states only).
    Expr(Expr),
    /// `{k}Path`'s text.
    Path(&'a str),
}

/// Which of `k` and `{k}Path` a state gives (both, or a `{k}Path` that is not a string: an
/// error at `{k}Path`). In a JSONata state a `"{% ... %}"` value of `k` is an expression.
pub(super) fn given<'a>(
    o: &'a Map<String, Value>,
    k: &str,
    at: &str,
    lang: Lang,
    out: &mut Out,
) -> Option<Given<'a>> {
    let pk = format!("{k}Path");
    match (o.get(k), o.get(&pk)) {
        (Some(_), Some(_)) => {
            out.error(
                member(at, &pk),
                format!("\"{k}\" and \"{pk}\" are both set: keep one"),
            );
            None
        }
        (Some(v), None) if lang == Lang::Jsonata && jsonata::inner_of(v).is_some() => {
            jsonata::expr(v, &member(at, k), out)?.ok().map(Given::Expr)
        }
        (Some(v), None) => Some(Given::Value(v)),
        (None, Some(Value::String(s))) => Some(Given::Path(s)),
        (None, Some(other)) => {
            out.error(
                member(at, &pk),
                format!(
                    "\"{pk}\" must be a path such as \"$.field\", found {}",
                    kind(other)
                ),
            );
            None
        }
        (None, None) => None,
    }
}

/// A `.$` field's value: a path, or an intrinsic function's call (checked here: its name,
/// argument count and literal argument types).
pub(super) fn dynamic(s: &str, at: &str, out: &mut Out) -> Option<TemplateField> {
    if intrinsic::is_call(s) {
        return match intrinsic::parse(s) {
            Ok(c) => Some(TemplateField::Call(c)),
            Err(e) => {
                out.error(at, e.to_string());
                None
            }
        };
    }
    match Path::compile(s) {
        Ok(p) => Some(TemplateField::Path(p)),
        Err(e) => {
            out.error(at, e.to_string());
            None
        }
    }
}

/// The `Next` field at `at`: the state it names; `None` when absent, or (reported) not a
/// string.
pub(super) fn next(v: Option<&Value>, at: &str, out: &mut Out) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        other => {
            out.error(
                member(at, "Next"),
                format!(
                    "\"Next\" must be the name of a state, found {}",
                    kind(other)
                ),
            );
            None
        }
    }
}

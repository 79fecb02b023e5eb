//! The string and JSON functions: `States.Format`, `States.StringSplit`,
//! `States.StringToJson`, `States.JsonToString` and `States.JsonMerge`.

use super::super::sig::Func;
use super::args::{describe, string, Args, Why};
use serde_json::Value;

/// A `States.Format` template: its text and where each `{}` placeholder starts (byte offsets).
/// Written as a literal, `\{` and `\}` are braces and not placeholders, so the parser records
/// the placeholders; a template read from the data has no escapes, and every `{}` counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    text: String,
    holes: Vec<usize>,
}

impl Template {
    /// A template whose placeholders the parser found.
    pub fn new(text: String, holes: Vec<usize>) -> Template {
        Template { text, holes }
    }

    /// A template read from the data: every `{}` is a placeholder.
    pub fn of_data(text: &str) -> Template {
        let holes = text.match_indices("{}").map(|(i, _)| i).collect();
        Template::new(text.to_string(), holes)
    }

    /// How many `{}` it has.
    pub fn holes(&self) -> usize {
        self.holes.len()
    }

    /// The text with each placeholder replaced by the next value.
    fn fill(&self, values: &[Value]) -> String {
        let mut out = String::with_capacity(self.text.len());
        let mut from = 0;
        for (hole, value) in self.holes.iter().zip(values) {
            out.push_str(self.text.get(from..*hole).unwrap_or_default());
            render(value, &mut out);
            from = hole + 2;
        }
        out.push_str(self.text.get(from..).unwrap_or_default());
        out
    }
}

/// A value as `States.Format` inserts it. Strings go in as they are; numbers, `true`, `false`
/// and `null` as their JSON text. Arrays and objects are written the way Step Functions
/// (Java) writes them, not as JSON: `[a, b]` and `{key=value, key2=value2}`, strings inside
/// unquoted (recorded against AWS in LocalStack's `test_format_2` snapshot:
/// `{"Arg1": 1, "Arg2": []}` formats as `{Arg1=1, Arg2=[]}`). Use `States.JsonToString` for
/// JSON text.
fn render(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                render(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(k);
                out.push('=');
                render(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// `States.Format(template, v...)`: the template with each `{}` replaced by the next value.
/// `literal` is the template when it was written in the call (its escapes resolved).
pub(super) fn format(args: Args, literal: Option<&Template>) -> Result<Value, Why> {
    let read;
    let template = match literal {
        Some(t) => t,
        None => {
            read = Template::of_data(args.string(0)?);
            &read
        }
    };
    let values = args.0.get(1..).unwrap_or_default();
    if template.holes() != values.len() {
        return Err(Why::arg(
            0,
            format!(
                "has {} `{{}}` placeholder(s), but {} value(s) follow it",
                template.holes(),
                values.len()
            ),
        ));
    }
    Ok(Value::String(template.fill(values)))
}

/// `States.StringSplit(text, delimiters)`: the pieces of `text` between any of the
/// delimiter characters, empty pieces left out (AWS: "1,2,3" on "," gives ["1","2","3"],
/// ",,,," gives [], " , " gives [" ", " "]). No delimiters: the whole text, if not empty.
pub(super) fn string_split(args: Args) -> Result<Value, Why> {
    let text = args.string(0)?;
    let delimiters: Vec<char> = args.string(1)?.chars().collect();
    let pieces = text
        .split(|c| delimiters.contains(&c))
        .filter(|p| !p.is_empty())
        .map(|p| Value::String(p.to_string()));
    Ok(Value::Array(pieces.collect()))
}

/// The argument of `States.StringToJson`, parsed. Blank text gives `null` (as AWS does).
fn parse_json(v: &Value) -> Result<Value, String> {
    let text = string(v)?;
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    let parsed: Value =
        serde_json::from_str(text).map_err(|e| format!("is not JSON text ({e})"))?;
    // "-0" parses as the float -0.0; AWS gives 0.
    Ok(match parsed.as_f64() {
        Some(x) if x == 0.0 && x.is_sign_negative() => Value::from(0),
        _ => parsed,
    })
}

/// `States.StringToJson(text)`: the JSON value the text holds.
pub(super) fn string_to_json(args: Args) -> Result<Value, Why> {
    args.at(0, parse_json)
}

/// `States.JsonToString(v)`: `v` as compact JSON text (key order kept).
pub(super) fn json_to_string(args: Args) -> Result<Value, Why> {
    let v = args.value(0)?;
    serde_json::to_string(v)
        .map(Value::String)
        .map_err(|e| Why::arg(0, format!("cannot be written as JSON ({e})")))
}

/// The `deep` argument of `States.JsonMerge`: Step Functions supports only `false`.
fn shallow(v: &Value) -> Result<(), String> {
    match v {
        Value::Bool(false) => Ok(()),
        Value::Bool(true) => Err(
            "is true, but Step Functions supports only the shallow merge: pass false".to_string(),
        ),
        other => Err(format!("must be false, but is {}", describe(other))),
    }
}

/// `States.JsonMerge(a, b, false)`: `a`'s members, then `b`'s, `b`'s value winning where both
/// have a key (shallow: nested objects are replaced, not merged).
pub(super) fn json_merge(args: Args) -> Result<Value, Why> {
    let first = args.object(0)?;
    let second = args.object(1)?;
    args.at(2, shallow)?;
    let mut merged = first.clone();
    for (k, v) in second {
        merged.insert(k.clone(), v.clone());
    }
    Ok(Value::Object(merged))
}

/// Deploy-time checks of one literal argument.
pub(super) fn check_arg(f: Func, index: usize, v: &Value) -> Result<(), String> {
    match (f, index) {
        (Func::StringToJson, 0) => parse_json(v).map(drop),
        (Func::JsonMerge, 2) => shallow(v),
        _ => Ok(()),
    }
}

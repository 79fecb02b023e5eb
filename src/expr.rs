//! Workflow data expressions: `{{ JsonPath }}` selections, string interpolation and truthiness.
//!
//! Expressions are compiled once (when a definition is deployed) into [`Expr`] values and then
//! evaluated many times. Evaluation is pure and never fails: a path that selects nothing yields
//! `null` (see docs/semantics.md, "Expressions").

use jsonpath_rust::{JsonPath, JsonPtr};
use serde_json::Value;
use std::borrow::Cow;
use std::str::FromStr;

/// Why an expression did not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    #[error("unclosed `{{{{` in {0:?}: close it with `}}}}`")]
    Unclosed(String),
    #[error("empty expression `{{{{ }}}}`: write a JsonPath such as `{{{{ $.field }}}}`")]
    Empty,
    #[error(
        "`{path}` is not a valid JsonPath ({reason}); paths start with `$`, e.g. `$.customer.name`"
    )]
    BadPath { path: String, reason: String },
    #[error("{0:?} is not an expression: write it as `{{{{ $.path }}}}`")]
    NotAnExpression(String),
}

/// One compiled JsonPath, with the glue for the Jayway behaviours the spec relies on.
#[derive(Debug, Clone)]
pub struct Path {
    source: String,
    compiled: JsonPath<Value>,
    /// `true` unless the path can select more than one value (filter, wildcard, slice, descent).
    definite: bool,
    /// The path starts by filtering the root (`$[?(...)]`).
    root_filter: bool,
    /// The member names of a plain member path (`$.a.b`): selected by walking the value,
    /// without jsonpath-rust's general machinery (the common case, and a hot one).
    chain: Option<Vec<String>>,
    /// [`Path::last_member`] and [`Path::name`], worked out once from the source (boxed: a
    /// path is a large value already, and enums hold it).
    names: Box<Names>,
}

#[derive(Debug, Clone)]
struct Names {
    last_member: Option<String>,
    name: Option<String>,
}

/// How deep a path may nest `[` and `(`. jsonpath-rust's parser backtracks on nested filters:
/// a malformed path takes about six times longer to reject per level, seconds at 10 levels
/// (both found by the `expr` fuzz target, the second in a 10-minute run that 10 still let
/// through). Six levels is three filters inside each other, or two with parenthesised
/// conditions.
const MAX_NESTING: usize = 6;

/// The deepest nesting of `[` and `(` outside quoted strings.
fn nesting(source: &str) -> usize {
    let (mut depth, mut max, mut quote) = (0usize, 0usize, None);
    for c in source.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[' | '(') => {
                depth += 1;
                max = max.max(depth);
            }
            (None, ']' | ')') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// An array index jsonpath-rust cannot take (it unwraps `as_u64()` when it evaluates one, so
/// a negative, fractional or too large index would panic at run time), anywhere in the path,
/// filters included.
fn bad_index(path: &JsonPath<Value>) -> Option<String> {
    use jsonpath_rust::parser::{FilterExpression, JsonPathIndex, Operand};
    fn filter(f: &FilterExpression<Value>) -> Option<String> {
        match f {
            FilterExpression::Atom(a, _, b) => [a, b].into_iter().find_map(|o| match o {
                Operand::Dynamic(p) => bad_index(p),
                Operand::Static(_) => None,
            }),
            FilterExpression::And(a, b) | FilterExpression::Or(a, b) => {
                filter(a).or_else(|| filter(b))
            }
            FilterExpression::Not(a) => filter(a),
        }
    }
    let unusable = |v: &Value| v.as_u64().is_none().then(|| v.to_string());
    match path {
        JsonPath::Chain(parts) => parts.iter().find_map(bad_index),
        JsonPath::Current(inner) => bad_index(inner),
        JsonPath::Index(JsonPathIndex::Single(v)) => unusable(v),
        JsonPath::Index(JsonPathIndex::UnionIndex(vs)) => vs.iter().find_map(unusable),
        JsonPath::Index(JsonPathIndex::Filter(f)) => filter(f),
        // a zero step makes its slice iterator panic
        JsonPath::Index(JsonPathIndex::Slice(_, _, 0)) => Some("step 0 of a slice".into()),
        _ => None,
    }
}

impl Path {
    /// Compiles a JsonPath such as `$.orders[?(@.completed == true)]`.
    pub fn compile(source: &str) -> Result<Path, ExprError> {
        let source = source.trim();
        if !source.starts_with('$') {
            return Err(ExprError::BadPath {
                path: source.to_string(),
                reason: "it does not start with `$`".into(),
            });
        }
        let depth = nesting(source);
        if depth > MAX_NESTING {
            return Err(ExprError::BadPath {
                path: source.to_string(),
                reason: format!(
                    "it nests brackets and parentheses {depth} deep; at most {MAX_NESTING} are \
                     allowed (split the filter into simpler steps)"
                ),
            });
        }
        let compiled = JsonPath::from_str(source).map_err(|e| ExprError::BadPath {
            path: source.to_string(),
            reason: e
                .to_string()
                .lines()
                .next()
                .unwrap_or("syntax error")
                .to_string(),
        })?;
        if let Some(bad) = bad_index(&compiled) {
            return Err(ExprError::BadPath {
                path: source.to_string(),
                reason: format!(
                    "array index {bad} is not a whole number from 0 to {} (count from the end \
                     with a slice such as [-1:])",
                    u64::MAX
                ),
            });
        }
        let definite = !(source.contains("[?")
            || source.contains('*')
            || source.contains("..")
            || source.contains(':')
            || source.contains(','));
        let rest = source[1..].trim_start_matches('.').trim_start();
        let root_filter = rest.starts_with("[?");
        let mut path = Path {
            source: source.to_string(),
            compiled,
            definite,
            root_filter,
            chain: None,
            names: Box::new(Names {
                last_member: simple_members(source).and_then(|mut m| m.pop()),
                name: members(source).0.pop(),
            }),
        };
        path.chain = path.member_chain();
        Ok(path)
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the path selects at most one value (no filter, wildcard, slice or descent).
    pub fn is_definite(&self) -> bool {
        self.definite
    }

    /// Every value the path selects, in document order.
    pub fn matches(&self, data: &Value) -> Vec<Value> {
        self.found(data).into_iter().map(Cow::into_owned).collect()
    }

    /// Every value the path selects, in document order, borrowed from `data` where they are
    /// in it (a filter's computed values are owned).
    pub fn found<'a>(&'a self, data: &'a Value) -> Vec<Cow<'a, Value>> {
        if let Some(chain) = &self.chain {
            return walk(data, chain).map(Cow::Borrowed).into_iter().collect();
        }
        let found = collect(&self.compiled, data);
        if found.is_empty() && self.root_filter && data.is_object() {
            // Jayway applies a filter on an object to the object itself.
            let wrapped = Value::Array(vec![data.clone()]);
            return collect(&self.compiled, &wrapped)
                .into_iter()
                .map(|v| Cow::Owned(v.into_owned()))
                .collect();
        }
        found
    }

    /// Whether the path selects anything in `data`.
    pub fn selects(&self, data: &Value) -> bool {
        !self.found(data).is_empty()
    }

    /// The selection as one value: one match is that value, several are an array, none is `null`.
    pub fn select(&self, data: &Value) -> Value {
        one(self.found(data))
    }

    /// Whether the selection is true (see [`truthy`]), without copying it.
    pub fn selects_true(&self, data: &Value) -> bool {
        let found = self.found(data);
        match found.as_slice() {
            [] => false,
            [v] => truthy(v),
            _ => true,
        }
    }

    /// [`Path::select`] of a value the caller gives up, or the value back when the path selects
    /// nothing in it: a member path moves the selection out instead of copying it.
    pub fn select_owned(&self, mut data: Value) -> Result<Value, Value> {
        if let Some(chain) = &self.chain {
            return take_at(&mut data, chain).ok_or(data);
        }
        let selected = self.selection(&data);
        selected.ok_or(data)
    }

    /// [`Path::select`], or `None` when the path selects nothing.
    pub fn selection(&self, data: &Value) -> Option<Value> {
        let found = self.found(data);
        (!found.is_empty()).then(|| one(found))
    }

    /// The last member name of a definite path: `$.data.greet` -> `greet`,
    /// `$.exceptions[0]` -> `exceptions`. `None` for `$` alone.
    pub fn last_member(&self) -> Option<&str> {
        self.names.last_member.as_deref()
    }

    /// The last member name the path selects through before any filter or wildcard
    /// (`$.vegetables[?(@.like)]` -> `vegetables`), `None` for `$` or `$[0]`.
    pub fn name(&self) -> Option<&str> {
        self.names.name.as_deref()
    }

    /// The member names of a plain member path (`$.a.b`, `$['a'].b`), `None` for anything else.
    pub fn member_chain(&self) -> Option<Vec<String>> {
        let chain = simple_members(&self.source)?;
        // Indexes are dropped by `simple_members`; a chain is plain only if none were present:
        // every `[` opens a quoted member name.
        let indexed = self
            .source
            .match_indices('[')
            .any(|(i, _)| !matches!(self.source.as_bytes().get(i + 1), Some(b'\'' | b'"')));
        (!indexed).then_some(chain)
    }
}

fn collect<'a>(path: &'a JsonPath<Value>, data: &'a Value) -> Vec<Cow<'a, Value>> {
    path.find_slice_ptr(data)
        .into_iter()
        .map(|p| match p {
            JsonPtr::Slice(v) => Cow::Borrowed(v),
            JsonPtr::NewValue(v) => Cow::Owned(v),
        })
        .collect()
}

/// A selection as one value: one match is that value, several are an array, none is `null`.
fn one(mut found: Vec<Cow<'_, Value>>) -> Value {
    match found.len() {
        0 => Value::Null,
        1 => found.pop().map(Cow::into_owned).unwrap_or(Value::Null),
        _ => Value::Array(found.into_iter().map(Cow::into_owned).collect()),
    }
}

/// Moves the value at a member chain out of `data` (leaving `null`), if every member is there.
fn take_at(data: &mut Value, chain: &[String]) -> Option<Value> {
    let mut at = data;
    for m in chain {
        at = at.get_mut(m.as_str())?;
    }
    Some(at.take())
}

/// The value at a member chain, if every member is there.
fn walk<'a>(data: &'a Value, chain: &[String]) -> Option<&'a Value> {
    chain.iter().try_fold(data, |at, m| at.get(m.as_str()))
}

/// Member names of a path made of `.name`, `['name']` and `[n]` steps; indexes are skipped.
fn simple_members(source: &str) -> Option<Vec<String>> {
    let (out, whole) = members(source);
    whole.then_some(out)
}

/// The member names a path starts with, and whether that is all it is (no filter, wildcard,
/// function or recursive descent after them).
fn members(source: &str) -> (Vec<String>, bool) {
    let mut out = Vec::new();
    let Some(mut rest) = source.strip_prefix('$') else {
        return (out, false);
    };
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("['").or_else(|| rest.strip_prefix("[\"")) {
            let Some(end) = r.find(['\'', '"']) else {
                return (out, false);
            };
            out.push(r[..end].to_string());
            match r[end + 1..].strip_prefix(']') {
                Some(r) => rest = r,
                None => return (out, false),
            }
        } else if let Some(r) = rest.strip_prefix('[') {
            let index = r.find(']').filter(|&end| {
                r[..end]
                    .trim()
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '-')
            });
            match index {
                Some(end) => rest = &r[end + 1..],
                None => return (out, false),
            }
        } else if let Some(r) = rest.strip_prefix('.') {
            if r.starts_with('[') {
                rest = r;
                continue;
            }
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let name = r[..end].trim();
            if name.is_empty() || name == "*" || name.ends_with(')') {
                return (out, false);
            }
            out.push(name.to_string());
            rest = &r[end..];
        } else {
            return (out, false);
        }
    }
    (out, true)
}

#[derive(Debug, Clone)]
enum Segment {
    Text(String),
    Path(Path),
}

/// A compiled expression field: a whole `{{ path }}`, a bare `$path`, or text with embedded
/// `{{ path }}` parts.
#[derive(Debug, Clone)]
pub struct Expr {
    source: String,
    segments: Vec<Segment>,
}

impl Expr {
    /// Compiles a string where an expression is expected (conditions, filters, collections).
    /// A bare `$…` path is accepted as if it were braced.
    pub fn compile(source: &str) -> Result<Expr, ExprError> {
        let trimmed = source.trim();
        if trimmed.starts_with('$') && !trimmed.contains("{{") {
            return Ok(Expr {
                source: source.to_string(),
                segments: vec![Segment::Path(Path::compile(trimmed)?)],
            });
        }
        let expr = Self::template(source)?;
        if expr.paths().next().is_none() {
            return Err(ExprError::NotAnExpression(source.to_string()));
        }
        Ok(expr)
    }

    /// Compiles a string that may contain `{{ … }}` parts; a string without any is literal text.
    pub fn template(source: &str) -> Result<Expr, ExprError> {
        let mut segments = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                segments.push(Segment::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or_else(|| ExprError::Unclosed(source.to_string()))?;
            let inner = after[..close].trim();
            if inner.is_empty() {
                return Err(ExprError::Empty);
            }
            segments.push(Segment::Path(Path::compile(inner)?));
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            segments.push(Segment::Text(rest.to_string()));
        }
        Ok(Expr {
            source: source.to_string(),
            segments,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The JsonPaths inside this expression.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Path(p) => Some(p),
            Segment::Text(_) => None,
        })
    }

    /// The single path when the expression is exactly one `{{ path }}` (surrounding whitespace
    /// allowed) or a bare `$path`.
    pub fn as_path(&self) -> Option<&Path> {
        let mut path = None;
        for s in &self.segments {
            match s {
                Segment::Path(p) if path.is_none() => path = Some(p),
                Segment::Path(_) => return None,
                Segment::Text(t) if t.trim().is_empty() => {}
                Segment::Text(_) => return None,
            }
        }
        path
    }

    /// Text outside the single `{{ }}` of an expression field, if any (worth a warning).
    pub fn stray_text(&self) -> Option<String> {
        if self.as_path().is_some() || self.paths().count() != 1 {
            return None;
        }
        let text: String = self
            .segments
            .iter()
            .filter_map(|s| match s {
                Segment::Text(t) => Some(t.trim()),
                Segment::Path(_) => None,
            })
            .collect();
        Some(text)
    }

    /// Evaluates to a JSON value: a whole expression yields the selection, a template yields a
    /// string (strings verbatim, other values as compact JSON), plain text yields itself.
    pub fn eval(&self, data: &Value) -> Value {
        if let Some(p) = self.as_path() {
            return p.select(data);
        }
        let mut out = String::new();
        for s in &self.segments {
            match s {
                Segment::Text(t) => out.push_str(t),
                Segment::Path(p) => {
                    let found = p.found(data);
                    match found.as_slice() {
                        [v] => match v.as_ref() {
                            Value::String(t) => out.push_str(t),
                            v => out.push_str(&v.to_string()),
                        },
                        _ => out.push_str(&one(found).to_string()),
                    }
                }
            }
        }
        Value::String(out)
    }

    /// The selection of the expression's (single) path; the condition form of evaluation.
    /// Stray text around one `{{ }}` is ignored (validation warns about it).
    pub fn select(&self, data: &Value) -> Value {
        match self.paths().next() {
            Some(p) if self.paths().count() == 1 => p.select(data),
            _ => self.eval(data),
        }
    }

    /// Condition semantics: true when the result is non-empty (not `null`, `[]` or `false`).
    pub fn is_true(&self, data: &Value) -> bool {
        match self.paths().next() {
            Some(p) if self.paths().count() == 1 => p.selects_true(data),
            _ => truthy(&self.eval(data)),
        }
    }
}

/// True unless the value is `null`, `false` or an empty array.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => false,
        Value::Array(a) => !a.is_empty(),
        _ => true,
    }
}

/// Evaluates every string with `{{ … }}` inside a JSON value (parameters, event data, injected
/// data), compiling through `compile` so callers can serve pre-compiled expressions.
pub fn eval_value<'e>(
    template: &Value,
    data: &Value,
    compile: &dyn Fn(&str) -> Result<Cow<'e, Expr>, ExprError>,
) -> Result<Value, ExprError> {
    Ok(match template {
        Value::String(s) if s.contains("{{") => compile(s)?.eval(data),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| eval_value(i, data, compile))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), eval_value(v, data, compile)?)))
                .collect::<Result<_, ExprError>>()?,
        ),
        other => other.clone(),
    })
}

/// Every string with `{{ … }}` inside a JSON value, with its JSON path suffix.
pub fn templates_in(value: &Value, at: String, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(s) if s.contains("{{") => out.push((at, s.clone())),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                templates_in(v, format!("{at}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                templates_in(v, format!("{at}.{k}"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    /// The member-chain shortcut selects what jsonpath-rust selects.
    #[test]
    fn member_chains_select_like_jsonpath() {
        let docs = [
            serde_json::json!({"a": {"b": [1, 2], "c": null}, "x-y": 1, "n": 0}),
            serde_json::json!([{"a": 1}, {"a": 2}]),
            serde_json::json!({"a": [{"b": 1}]}),
            serde_json::json!("text"),
            serde_json::json!(null),
        ];
        for src in [
            "$",
            "$.a",
            "$.a.b",
            "$.a.c",
            "$.a.missing",
            "$['a'].b",
            "$.n",
            "$.a.b.c",
        ] {
            let p = Path::compile(src).unwrap();
            assert!(p.chain.is_some(), "{src} is a member chain");
            for d in &docs {
                assert_eq!(
                    p.found(d),
                    collect(&p.compiled, d),
                    "{src} on {d}: shortcut and jsonpath differ"
                );
            }
        }
        for src in [
            "$.a[0]",
            "$['a'][0]",
            "$[\"a\"][1].b",
            "$.a[*]",
            "$..b",
            "$.a.length()",
            "$[?(@.a)]",
        ] {
            assert!(
                Path::compile(src).unwrap().chain.is_none(),
                "{src} is not a chain"
            );
        }
    }

    /// Selecting from a value given up (moved out for a member chain) selects what selecting
    /// from a borrowed one does, and gives the value back untouched when nothing is selected.
    #[test]
    fn an_owned_selection_is_the_borrowed_one() {
        let docs = [
            serde_json::json!({"a": {"b": [1, 2], "c": null}, "n": 0, "items": [{"ok": true}, {"ok": false}]}),
            serde_json::json!([{"a": 1}, {"a": 2}]),
            serde_json::json!({"total": 150}),
            serde_json::json!(null),
        ];
        for src in [
            "$",
            "$.a",
            "$.a.b",
            "$.a.c",
            "$.missing",
            "$.a.b[1]",
            "$.items[?(@.ok)]",
            "$[?(@.total > 100)]",
            "$..a",
            "$.*",
        ] {
            let p = Path::compile(src).unwrap();
            for d in &docs {
                let borrowed = p.selection(d);
                assert_eq!(borrowed.is_some(), p.selects(d), "{src} on {d}");
                match (p.select_owned(d.clone()), borrowed) {
                    (Ok(owned), Some(borrowed)) => {
                        assert_eq!(owned, borrowed, "{src} on {d}");
                        assert_eq!(owned, p.select(d), "{src} on {d}");
                    }
                    (Err(back), None) => assert_eq!(&back, d, "{src} on {d}: given back"),
                    (owned, borrowed) => panic!("{src} on {d}: {owned:?} against {borrowed:?}"),
                }
                let truthy_selection = truthy(&p.select(d));
                assert_eq!(p.selects_true(d), truthy_selection, "{src} on {d}");
            }
        }
    }

    use super::*;

    #[test]
    fn an_index_jsonpath_cannot_evaluate_is_a_compile_error_not_a_panic() {
        // found by the `expr` fuzz target: jsonpath-rust unwraps `as_u64()` on these
        for bad in [
            "$.a[88888888888888888888888888880]",
            "$.a[0,88888888888888888888888888880]",
            "$.a[?(@.b[88888888888888888888888888880] == 1)]",
        ] {
            let e = Path::compile(bad).err();
            assert!(
                e.as_ref()
                    .is_some_and(|e| e.to_string().contains("array index")),
                "{bad}: {e:?}"
            );
        }
        let e = Path::compile("$.a[1:3:0]").unwrap_err().to_string();
        assert!(e.contains("step 0"), "{e}");
        assert!(Path::compile("$.a[1:3:1]").is_ok());
        // nested filters past the limit are refused before the parser can backtrack on them
        let deep = format!("$.a{}x{}", "[?(@".repeat(6), ")]".repeat(6));
        let e = Path::compile(&deep).unwrap_err().to_string();
        assert!(e.contains("12 deep"), "{e}");
        // the input that hung the fuzz target for seconds at the old limit of 10
        let hang =
            "$@@[?(@@@@\n@@@@[?(@@@@\n@@@[?(@@@@\n@@@@@@$@@@@[?(@@@@\n@@@[?(@@@@\n@@@@@@$..3{\"I";
        let e = Path::compile(hang).unwrap_err().to_string();
        assert!(e.contains("10 deep"), "{e}");
        // three filters inside each other, and two with parenthesised conditions, still fit
        assert!(Path::compile("$.a[?(@.b[?(@.c[?(@.d == 1)])])]").is_ok());
        assert!(Path::compile("$.a[?((@.x == 1) && (@.b[?(@.c == 2)]))]").is_ok());
        // brackets inside quoted strings do not count
        let quoted = Path::compile("$.a[?(@.b[?(@.c == '[[[(')] )]");
        assert!(quoted.map_or_else(|e| !e.to_string().contains("deep"), |_| true));
        // negative and fractional indexes do not parse in the first place
        assert!(Path::compile("$.a[-1]").is_err());
        assert!(Path::compile("$.a[1.5]").is_err());
        let data = serde_json::json!({"a": [1, 2, 3]});
        assert_eq!(
            Path::compile("$.a[0]").unwrap().select(&data),
            serde_json::json!(1)
        );
        assert!(Path::compile("$.a[-1:]").is_ok());
        assert!(Path::compile("$.a[0,2]").is_ok());
    }
    use serde_json::json;

    fn person() -> Value {
        json!({
          "firstName": "John", "lastName": "Doe", "age": 26,
          "address": {"city": "Nara"},
          "phoneNumbers": [{"type": "iPhone"}, {"type": "home"}]
        })
    }

    #[test]
    fn interpolates_strings_and_json() {
        let e = Expr::template("Hello {{ $.firstName }} {{ $.lastName }}").unwrap();
        assert_eq!(e.eval(&person()), json!("Hello John Doe"));
        let e = Expr::template("city={{ $.address }}").unwrap();
        assert_eq!(e.eval(&person()), json!("city={\"city\":\"Nara\"}"));
    }

    #[test]
    fn whole_expression_yields_value() {
        let e = Expr::compile(" {{ $.phoneNumbers }} ").unwrap();
        assert_eq!(
            e.eval(&person()),
            json!([{"type": "iPhone"}, {"type": "home"}])
        );
        let e = Expr::compile("{{ $.missing }}").unwrap();
        assert_eq!(e.eval(&person()), Value::Null);
        let e = Expr::compile("$.age").unwrap();
        assert_eq!(e.eval(&person()), json!(26));
    }

    #[test]
    fn several_matches_are_an_array_one_is_the_value() {
        let e = Expr::compile("{{ $.phoneNumbers[*].type }}").unwrap();
        assert_eq!(e.eval(&person()), json!(["iPhone", "home"]));
        let e = Expr::compile("{{ $.phoneNumbers[?(@.type == 'home')] }}").unwrap();
        assert_eq!(e.eval(&person()), json!({"type": "home"}));
    }

    #[test]
    fn root_filter_applies_to_object_itself() {
        assert!(Expr::compile("{{ $.[?(@.age  > 18)] }}")
            .unwrap()
            .is_true(&person()));
        assert!(!Expr::compile("{{ $.[?(@.age  < 18)] }}")
            .unwrap()
            .is_true(&person()));
        assert!(Expr::compile("{{ $[?(@.age > 18)] }}")
            .unwrap()
            .is_true(&person()));
    }

    #[test]
    fn length_function() {
        let e = Expr::compile("{{ $.phoneNumbers.length() }}").unwrap();
        assert_eq!(e.eval(&person()), json!(2));
    }

    #[test]
    fn dot_bracket_filter() {
        let data = json!({"vegetables": [{"n": "potato", "veggieLike": true}, {"n": "b", "veggieLike": false}]});
        let e = Expr::compile("{{ $.vegetables.[?(@.veggieLike == true)] }}").unwrap();
        assert_eq!(e.eval(&data), json!({"n": "potato", "veggieLike": true}));
        // As in Jayway, a bare `@.member` filter tests existence, not truthiness.
        let e = Expr::compile("{{ $.vegetables.[?(@.veggieLike)] }}").unwrap();
        assert_eq!(e.eval(&data).as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn truthiness() {
        assert!(!truthy(&Value::Null));
        assert!(!truthy(&json!([])));
        assert!(!truthy(&json!(false)));
        assert!(truthy(&json!(0)));
        assert!(truthy(&json!({})));
        let errs = json!({"errors": [{"name": "FunctionExecutionError"}]});
        let yes = Expr::compile("{{ $.errors[?(@.name == 'FunctionExecutionError')] }}").unwrap();
        let no = Expr::compile("{{ $.errors[?(@.name != 'FunctionExecutionError')] }}").unwrap();
        assert!(yes.is_true(&errs));
        assert!(!no.is_true(&errs));
    }

    #[test]
    fn compile_errors_are_reported() {
        assert!(matches!(
            Expr::compile("{{ $.a "),
            Err(ExprError::Unclosed(_))
        ));
        assert!(matches!(Expr::compile("{{ }}"), Err(ExprError::Empty)));
        assert!(matches!(
            Expr::compile("{{ a.b }}"),
            Err(ExprError::BadPath { .. })
        ));
        assert!(matches!(
            Expr::compile("{{ $.a[?(@.x == }}"),
            Err(ExprError::BadPath { .. })
        ));
        assert!(matches!(
            Expr::compile("plain"),
            Err(ExprError::NotAnExpression(_))
        ));
    }

    #[test]
    fn stray_text_is_detected_and_ignored_in_conditions() {
        let e = Expr::compile("{{ $.errors[?(@.name == 'X')] }}'").unwrap();
        assert_eq!(e.stray_text().as_deref(), Some("'"));
        assert!(!e.is_true(&json!({"errors": [{"name": "Y"}]})));
    }

    #[test]
    fn last_member_and_chain() {
        let p = |s| Path::compile(s).unwrap();
        assert_eq!(p("$.greeting").last_member(), Some("greeting"));
        assert_eq!(p("$.data.greet").last_member(), Some("greet"));
        assert_eq!(p("$.exceptions[0]").last_member(), Some("exceptions"));
        assert_eq!(p("$").last_member(), None);
        assert_eq!(p("$.vegetables[?(@.like)]").last_member(), None);
        assert_eq!(p("$.vegetables[?(@.like)]").name(), Some("vegetables"));
        assert_eq!(p("$.a['b c'][0]").name(), Some("b c"));
        assert_eq!(p("$[0]").name(), None);
        assert_eq!(
            p("$.a.b").member_chain(),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(p("$.a[0]").member_chain(), None);
        assert_eq!(p("$.a[?(@.x)]").member_chain(), None);
    }
}

//! ASL paths: a Path (`InputPath`, `OutputPath`, `ItemsPath`, a Choice `Variable`, a
//! Parameters `.$` value) is JsonPath, on the state's data or, written `$$...`, on the context
//! object; a Reference Path (`ResultPath`, `SecondsPath`, ...) names exactly one node, and can
//! also be written to (ResultPath builds the objects it needs).

use crate::expr::Path as JsonPath;
use serde_json::{Map, Value};
use std::fmt;

/// Why a path is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("{0:?} is not a path: paths start with `$` (the state's data) or `$$` (the context object), e.g. \"$.order.id\"")]
    NoDollar(String),
    #[error("{path:?} is not a valid JsonPath: {reason}")]
    Bad { path: String, reason: String },
    #[error(
        "{path:?} is not a Reference Path: {reason}; a Reference Path names one node, \
         e.g. \"$.order.items[0]\" (no filters, wildcards, slices, unions or `..`)"
    )]
    NotReference { path: String, reason: String },
}

/// What a path reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// The state's data (`$`).
    Data,
    /// The context object (`$$`).
    Context,
}

/// A compiled Path.
#[derive(Debug, Clone)]
pub struct Path {
    pub root: Root,
    source: String,
    json: JsonPath,
}

impl Path {
    pub fn compile(source: &str) -> Result<Path, PathError> {
        let s = source.trim();
        let (root, rest) = match s.strip_prefix("$$") {
            Some(r) => (Root::Context, format!("${r}")),
            None if s.starts_with('$') => (Root::Data, s.to_string()),
            None => return Err(PathError::NoDollar(source.to_string())),
        };
        let json = JsonPath::compile(&rest).map_err(|e| PathError::Bad {
            path: source.to_string(),
            reason: e.to_string(),
        })?;
        Ok(Path {
            root,
            source: s.to_string(),
            json,
        })
    }

    /// The path as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Every value the path selects in `data` or `context` (by its root); several matches
    /// are gathered into an array by [`Path::select`].
    pub fn matches(&self, data: &Value, context: &Value) -> Vec<Value> {
        match self.root {
            Root::Data => self.json.matches(data),
            Root::Context => self.json.matches(context),
        }
    }

    /// The selection as the document says: a definite path's one match is that value; an
    /// indefinite path (wildcards, filters, slices, unions, `..`) gives an array of its
    /// matches, empty when there are none (as Step Functions' JsonPath does). `None` when a
    /// definite path matches nothing (the caller raises the state's error).
    pub fn select(&self, data: &Value, context: &Value) -> Option<Value> {
        let mut found = self.matches(data, context);
        match found.len() {
            0 if self.json.is_definite() => None,
            1 if self.json.is_definite() => found.pop(),
            _ => Some(Value::Array(found)),
        }
    }
}

/// One step of a Reference Path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Member(String),
    Index(usize),
}

/// A compiled Reference Path: the steps from the root to one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefPath {
    pub root: Root,
    pub steps: Vec<Step>,
}

impl fmt::Display for RefPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.root {
            Root::Data => "$",
            Root::Context => "$$",
        })?;
        for s in &self.steps {
            match s {
                Step::Member(m) => write!(f, "[{m:?}]")?,
                Step::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

impl RefPath {
    /// Parses a Reference Path: `.name` steps (a backslash takes the next character as it is,
    /// so `\.` is a dot in a name), `['name']` or `["name"]` steps and `[n]` indexes.
    pub fn compile(source: &str) -> Result<RefPath, PathError> {
        let not = |reason: &str| PathError::NotReference {
            path: source.to_string(),
            reason: reason.to_string(),
        };
        let s = source.trim();
        let (root, rest) = match s.strip_prefix("$$") {
            Some(r) => (Root::Context, r),
            None => match s.strip_prefix('$') {
                Some(r) => (Root::Data, r),
                None => return Err(PathError::NoDollar(source.to_string())),
            },
        };
        let chars: Vec<char> = rest.chars().collect();
        let mut steps = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '.' => {
                    i += 1;
                    let mut name = String::new();
                    while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                        if chars[i] == '\\' && i + 1 < chars.len() {
                            i += 1;
                        }
                        name.push(chars[i]);
                        i += 1;
                    }
                    if name.is_empty() {
                        return Err(not("`..` (descent) or an empty name"));
                    }
                    if name == "*" {
                        return Err(not("a wildcard `*`"));
                    }
                    steps.push(Step::Member(name));
                }
                '[' => {
                    let close = chars[i..]
                        .iter()
                        .position(|c| *c == ']')
                        .map(|p| i + p)
                        .ok_or_else(|| not("an unclosed `[`"))?;
                    let inner: String = chars[i + 1..close].iter().collect();
                    let inner = inner.trim();
                    let quoted = (inner.starts_with('\'') && inner.ends_with('\''))
                        || (inner.starts_with('"') && inner.ends_with('"'));
                    if quoted && inner.len() >= 2 {
                        steps.push(Step::Member(inner[1..inner.len() - 1].to_string()));
                    } else if let Ok(n) = inner.parse::<usize>() {
                        steps.push(Step::Index(n));
                    } else {
                        return Err(not(&format!(
                            "`[{inner}]` is not an index or a quoted name"
                        )));
                    }
                    i = close + 1;
                }
                c => return Err(not(&format!("unexpected `{c}`"))),
            }
        }
        Ok(RefPath { root, steps })
    }

    /// The node it names, if there is one.
    pub fn get<'a>(&self, data: &'a Value) -> Option<&'a Value> {
        let mut at = data;
        for s in &self.steps {
            at = match (s, at) {
                (Step::Member(m), Value::Object(o)) => o.get(m)?,
                (Step::Index(i), Value::Array(a)) => a.get(*i)?,
                _ => return None,
            };
        }
        Some(at)
    }

    /// `data` with `value` placed where the path names (ResultPath): missing objects on the
    /// way are created; `None` when the way goes through something that is not an object (or
    /// an array for an index step, which must exist).
    pub fn put(&self, data: Value, value: Value) -> Option<Value> {
        fn put(at: Value, steps: &[Step], value: Value) -> Option<Value> {
            let Some((first, rest)) = steps.split_first() else {
                return Some(value);
            };
            match (first, at) {
                (Step::Member(m), Value::Object(mut o)) => {
                    let inner = o.remove(m).unwrap_or(Value::Object(Map::new()));
                    let inner = if rest.is_empty() {
                        value
                    } else {
                        put(inner, rest, value)?
                    };
                    o.insert(m.clone(), inner);
                    Some(Value::Object(o))
                }
                (Step::Index(i), Value::Array(mut a)) if *i < a.len() => {
                    let inner = std::mem::take(&mut a[*i]);
                    a[*i] = put(inner, rest, value)?;
                    Some(Value::Array(a))
                }
                _ => None,
            }
        }
        put(data, &self.steps, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_documents_reference_paths_parse_and_select() {
        let data = json!({"foo": 123, "bar": ["a", "b", "c"], "car": {"cdr": true}});
        for (p, want) in [
            ("$.foo", json!(123)),
            ("$.bar", json!(["a", "b", "c"])),
            ("$.car.cdr", json!(true)),
        ] {
            assert_eq!(RefPath::compile(p).unwrap().get(&data), Some(&want), "{p}");
        }
        // the document's "acceptable Reference Path syntax"
        for p in [
            "$.store.book",
            "$.store\\book",
            "$.\\stor\\e.boo\\k",
            "$.store.book.title",
            "$.foo.\\.bar",
            "$.foo\\@bar.baz\\[.\\.?pretty",
            "$.&中.\\uD800\\uDF46",
            "$.ledgers.branch[0].pending.count",
            "$.ledgers.branch[0]",
            "$.ledgers[0][22][315].foo",
            "$['store']['book']",
            "$['store'][0]['book']",
        ] {
            assert!(
                RefPath::compile(p).is_ok(),
                "{p}: {:?}",
                RefPath::compile(p)
            );
        }
        assert_eq!(
            RefPath::compile("$.foo.\\.bar").unwrap().steps,
            vec![Step::Member("foo".into()), Step::Member(".bar".into())]
        );
        for bad in [
            "$..a",
            "$.a[*]",
            "$.a[?(@.b)]",
            "$.a[0,1]",
            "$.a[1:]",
            "a.b",
            "$.*",
        ] {
            assert!(RefPath::compile(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn result_paths_build_the_objects_they_need() {
        let p = RefPath::compile("$.b.greeting").unwrap();
        assert_eq!(
            p.put(json!({"a": 1}), json!("Hi!")),
            Some(json!({"a": 1, "b": {"greeting": "Hi!"}}))
        );
        // the document's runtime error: the input is a string
        assert_eq!(
            RefPath::compile("$.x").unwrap().put(json!("foo"), json!(1)),
            None
        );
        assert_eq!(
            RefPath::compile("$").unwrap().put(json!("foo"), json!(1)),
            Some(json!(1))
        );
    }

    #[test]
    fn paths_read_the_data_or_the_context_and_gather_several_matches() {
        let p = Path::compile("$.a[0,1]").unwrap();
        let data = json!({"a": [1, 2, 3, 4]});
        assert_eq!(p.select(&data, &json!({})), Some(json!([1, 2])));
        let c = Path::compile("$$.Execution.Id").unwrap();
        assert_eq!(c.root, Root::Context);
        assert_eq!(
            c.select(&data, &json!({"Execution": {"Id": "x"}})),
            Some(json!("x"))
        );
        assert_eq!(
            Path::compile("$.missing")
                .unwrap()
                .select(&data, &json!({})),
            None
        );
        assert!(Path::compile("nope").is_err());
    }
}

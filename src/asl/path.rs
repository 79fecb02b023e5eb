//! ASL paths: a Path (`InputPath`, `OutputPath`, `ItemsPath`, a Choice `Variable`, a
//! Parameters `.$` value) is JsonPath, on the state's data or, written `$$...`, on the context
//! object; a Reference Path (`ResultPath`, `SecondsPath`, ...) names exactly one node, and can
//! also be written to (ResultPath builds the objects it needs).

pub use super::steps::Step;
use super::steps::{position, steps, walk};
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Root {
    /// The state's data (`$`).
    Data,
    /// The context object (`$$`).
    Context,
    /// A variable (`$name`), set by an `Assign`.
    Var(String),
}

impl Root {
    /// The variable a path reads, if it reads one.
    pub fn var(&self) -> Option<&str> {
        match self {
            Root::Var(v) => Some(v),
            _ => None,
        }
    }
}

/// What paths read besides the state's data: the context object (`$$`) and the variables in
/// scope (`$name`), and the seed for intrinsic functions' random values.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub context: Value,
    pub vars: Map<String, Value>,
    /// Distinct for each state visit and attempt: `States.UUID` and `States.MathRandom` draw
    /// from it, so a replay draws the same values.
    pub seed: String,
    /// JSONata's `$states` (`input`, `context`, `result`, `errorOutput`); `null` in a
    /// JSONPath state.
    pub states: Value,
    /// The time of the input being applied (JSONata's `$now()`).
    pub now: chrono::DateTime<chrono::Utc>,
}

impl Scope {
    /// This scope with `$states.{key}` set (a JSONata state's `result` or `errorOutput`);
    /// a JSONPath state's scope as it is.
    pub fn with(&self, key: &str, v: &Value) -> Scope {
        let mut s = self.clone();
        if let Value::Object(o) = &mut s.states {
            o.insert(key.to_string(), v.clone());
        }
        s
    }

    /// A scope with this context object and no variables.
    pub fn of(context: Value) -> Scope {
        Scope {
            context,
            ..Scope::default()
        }
    }
}

/// Splits a path into what it reads and the rest (written from a `$`).
fn root(source: &str) -> Result<(Root, &str), PathError> {
    if let Some(r) = source.strip_prefix("$$") {
        return Ok((Root::Context, r));
    }
    let Some(r) = source.strip_prefix('$') else {
        return Err(PathError::NoDollar(source.to_string()));
    };
    let name_len = r
        .char_indices()
        .find(|(i, c)| !(c.is_alphanumeric() || *c == '_') || (*i == 0 && c.is_numeric()))
        .map_or(r.len(), |(i, _)| i);
    if name_len == 0 {
        return Ok((Root::Data, r));
    }
    Ok((Root::Var(r[..name_len].to_string()), &r[name_len..]))
}

/// How a path selects: by walking one node's steps, or with JsonPath's general machinery.
#[derive(Debug, Clone)]
enum How {
    Steps(Vec<Step>),
    Json(JsonPath),
}

/// A compiled Path.
#[derive(Debug, Clone)]
pub struct Path {
    pub root: Root,
    source: String,
    how: How,
}

impl Path {
    pub fn compile(source: &str) -> Result<Path, PathError> {
        let s = source.trim();
        let (root, rest) = root(s)?;
        let how =
            match steps(rest) {
                Ok(steps) => How::Steps(steps),
                Err(_) => How::Json(JsonPath::compile(&format!("${rest}")).map_err(|e| {
                    PathError::Bad {
                        path: source.to_string(),
                        reason: e.to_string(),
                    }
                })?),
            };
        Ok(Path {
            root,
            source: s.to_string(),
            how,
        })
    }

    /// The path as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// What the path starts from: the data, the context object or a variable (`None`: a
    /// variable not set in this scope).
    fn base<'a>(&self, data: &'a Value, scope: &'a Scope) -> Option<&'a Value> {
        match &self.root {
            Root::Data => Some(data),
            Root::Context => Some(&scope.context),
            Root::Var(v) => scope.vars.get(v),
        }
    }

    /// The selection as the document says: a definite path's one match is that value; an
    /// indefinite path (wildcards, filters, slices, unions, `..`) gives an array of its
    /// matches, empty when there are none (as Step Functions' JsonPath does). `None` when a
    /// definite path matches nothing (the caller raises the state's error).
    pub fn select(&self, data: &Value, scope: &Scope) -> Option<Value> {
        let base = self.base(data, scope)?;
        match &self.how {
            How::Steps(steps) => walk(base, steps).cloned(),
            How::Json(json) => {
                let mut found = json.matches(base);
                match found.len() {
                    0 if json.is_definite() => None,
                    1 if json.is_definite() => found.pop(),
                    _ => Some(Value::Array(found)),
                }
            }
        }
    }
}

/// A compiled Reference Path: the steps from the root to one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefPath {
    pub root: Root,
    pub steps: Vec<Step>,
}

impl fmt::Display for RefPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.root {
            Root::Data => f.write_str("$")?,
            Root::Context => f.write_str("$$")?,
            Root::Var(v) => write!(f, "${v}")?,
        }
        for s in &self.steps {
            match s {
                Step::Member(m) => write!(f, "[{m:?}]")?,
                Step::Index(i) => write!(f, "[{i}]")?,
                Step::FromEnd(n) => write!(f, "[-{n}]")?,
            }
        }
        Ok(())
    }
}

impl RefPath {
    /// Parses a Reference Path (the steps [`steps`] takes).
    pub fn compile(source: &str) -> Result<RefPath, PathError> {
        let (root, rest) = root(source.trim())?;
        let steps = steps(rest).map_err(|reason| PathError::NotReference {
            path: source.to_string(),
            reason,
        })?;
        Ok(RefPath { root, steps })
    }

    /// The node it names in the data (or the scope's context object or variable), if there
    /// is one.
    pub fn get<'a>(&self, data: &'a Value, scope: &'a Scope) -> Option<&'a Value> {
        let base = match &self.root {
            Root::Data => data,
            Root::Context => &scope.context,
            Root::Var(v) => scope.vars.get(v)?,
        };
        walk(base, &self.steps)
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
                (Step::Index(_) | Step::FromEnd(_), Value::Array(mut a)) => {
                    let i = position(first, a.len())?;
                    let inner = std::mem::take(&mut a[i]);
                    a[i] = put(inner, rest, value)?;
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
            assert_eq!(
                RefPath::compile(p).unwrap().get(&data, &Scope::default()),
                Some(&want),
                "{p}"
            );
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
        assert_eq!(p.select(&data, &Scope::default()), Some(json!([1, 2])));
        let c = Path::compile("$$.Execution.Id").unwrap();
        assert_eq!(c.root, Root::Context);
        assert_eq!(
            c.select(&data, &Scope::of(json!({"Execution": {"Id": "x"}}))),
            Some(json!("x"))
        );
        assert_eq!(
            Path::compile("$.missing")
                .unwrap()
                .select(&data, &Scope::default()),
            None
        );
        assert!(Path::compile("nope").is_err());
    }

    #[test]
    fn negative_indexes_lengths_and_escaped_quotes_select_one_node() {
        let data = json!({"books": ["a", "b", "c"], "it's": 1, "q\"x": 2});
        let sel = |p: &str| Path::compile(p).unwrap().select(&data, &Scope::default());
        assert_eq!(sel("$.books[-1]"), Some(json!("c")));
        assert_eq!(sel("$.books[-3]"), Some(json!("a")));
        assert_eq!(sel("$.books[-4]"), None);
        assert_eq!(sel("$.books[(@.length-1)]"), Some(json!("c")));
        assert_eq!(sel("$.books[(@.length-2)]"), Some(json!("b")));
        assert_eq!(sel("$['it\\'s']"), Some(json!(1)));
        assert_eq!(sel("$[\"q\\\"x\"]"), Some(json!(2)));
        // indefinite paths still gather
        assert_eq!(sel("$.books[1:]"), Some(json!(["b", "c"])));
        let p = RefPath::compile("$.books[-1]").unwrap();
        assert_eq!(
            p.put(data.clone(), json!("z")).unwrap()["books"],
            json!(["a", "b", "z"])
        );
    }

    #[test]
    fn variables_are_read_from_the_scope() {
        let mut scope = Scope::default();
        scope
            .vars
            .insert("order".into(), json!({"items": [1, 2, 3]}));
        scope.vars.insert("n_2".into(), json!(7));
        let data = json!({"order": "not this"});
        let sel = |p: &str| Path::compile(p).unwrap().select(&data, &scope);
        assert_eq!(sel("$order.items[-1]"), Some(json!(3)));
        assert_eq!(sel("$order.items[*]"), Some(json!([1, 2, 3])));
        assert_eq!(sel("$n_2"), Some(json!(7)));
        assert_eq!(sel("$.order"), Some(json!("not this")));
        assert_eq!(sel("$missing"), None);
        assert_eq!(
            Path::compile("$order.items").unwrap().root,
            Root::Var("order".into())
        );
        let r = RefPath::compile("$order.items[0]").unwrap();
        assert_eq!(r.get(&data, &scope), Some(&json!(1)));
    }
}

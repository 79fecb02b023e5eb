//! Choice Rules: the comparison operators (every one of the document's, plus Step Functions'
//! `StringMatches`, the `Is*` type tests and the `...Path` forms that compare with another
//! value of the input), `And`, `Or` and `Not`; read with located errors and evaluated
//! type-sensitively (a string is never numerically compared).

use super::out::{index, kind, member, Out};
use super::path::{Path, Scope};
use crate::diag::did_you_mean;
use chrono::{DateTime, Utc};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Lt,
    Gt,
    Le,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    String,
    Numeric,
    Boolean,
    Timestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    Null,
    Present,
    Numeric,
    String,
    Boolean,
    Timestamp,
}

#[derive(Debug, Clone)]
pub enum Op {
    /// `{Type}{Cmp}` against a literal, or with `Path` against another value of the input.
    Compare(Type, Cmp, Operand),
    /// `StringMatches`: `*` matches any run of characters, `\*` a star.
    Matches(String),
    /// `Is{Test}`: true when the test's outcome equals the boolean.
    Is(Test, bool),
}

#[derive(Debug, Clone)]
pub enum Operand {
    Value(Value),
    Path(Box<Path>),
}

#[derive(Debug, Clone)]
pub enum Rule {
    And(Vec<Rule>),
    Or(Vec<Rule>),
    Not(Box<Rule>),
    Test { variable: Box<Path>, op: Op },
}

const TYPES: [(&str, Type); 4] = [
    ("String", Type::String),
    ("Numeric", Type::Numeric),
    ("Boolean", Type::Boolean),
    ("Timestamp", Type::Timestamp),
];
const CMPS: [(&str, Cmp); 5] = [
    ("Equals", Cmp::Eq),
    ("LessThan", Cmp::Lt),
    ("GreaterThan", Cmp::Gt),
    ("LessThanEquals", Cmp::Le),
    ("GreaterThanEquals", Cmp::Ge),
];
const TESTS: [(&str, Test); 6] = [
    ("IsNull", Test::Null),
    ("IsPresent", Test::Present),
    ("IsNumeric", Test::Numeric),
    ("IsString", Test::String),
    ("IsBoolean", Test::Boolean),
    ("IsTimestamp", Test::Timestamp),
];

/// Every operator name.
pub fn operators() -> Vec<String> {
    let mut out = vec![
        "And".into(),
        "Or".into(),
        "Not".into(),
        "StringMatches".into(),
    ];
    for (t, ty) in TYPES {
        for (c, cmp) in CMPS {
            if ty == Type::Boolean && cmp != Cmp::Eq {
                continue;
            }
            out.push(format!("{t}{c}"));
            out.push(format!("{t}{c}Path"));
        }
    }
    out.extend(TESTS.iter().map(|(n, _)| n.to_string()));
    out
}

/// The document's own Choice example spells `NumericGreaterThanEquals` as
/// `NumericGreaterThanOrEquals`; that spelling (for every `...ThanEquals` operator) is taken,
/// with a warning naming the operator's name (docs/semantics.md "ASL Choice operators").
fn alias(name: &str) -> Option<String> {
    let fixed = name.replacen("ThanOrEquals", "ThanEquals", 1);
    (fixed != name && operator(&fixed).is_some()).then_some(fixed)
}

/// What an operator name stands for.
enum Operator {
    /// `{Type}{Cmp}`, `true` for its `...Path` form.
    Compare(Type, Cmp, bool),
    Is(Test),
}

fn operator(name: &str) -> Option<Operator> {
    for (n, t) in TESTS {
        if n == name {
            return Some(Operator::Is(t));
        }
    }
    let (base, path) = match name.strip_suffix("Path") {
        Some(b) => (b, true),
        None => (name, false),
    };
    for (t, ty) in TYPES {
        if let Some(c) = base.strip_prefix(t) {
            for (cn, cmp) in CMPS {
                if c == cn && !(ty == Type::Boolean && cmp != Cmp::Eq) {
                    return Some(Operator::Compare(ty, cmp, path));
                }
            }
        }
    }
    None
}

/// RFC 3339 with an uppercase `T` and `Z` (or an offset), as the document requires.
pub fn timestamp(s: &str) -> Option<DateTime<Utc>> {
    // chrono also takes RFC 3339's "space instead of T" note and lowercase letters; AWS
    // takes neither
    if s.contains('t') || s.contains('z') || s.as_bytes().get(10) != Some(&b'T') {
        return None;
    }
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

/// Reads one Choice Rule at `at`. `top`: a rule of `Choices` (it has the `Next`, read by the
/// caller); nested rules (in `And`, `Or`, `Not`) must not.
pub fn read(v: &Value, at: &str, top: bool, out: &mut Out) -> Option<Rule> {
    let Value::Object(o) = v else {
        out.error(
            at,
            format!(
                "a Choice Rule must be an object with a comparison, found {}",
                kind(v)
            ),
        );
        return None;
    };
    let ops = operators();
    let mut found: Vec<String> = Vec::new();
    let mut stray = false;
    for k in o.keys() {
        match k.as_str() {
            "Variable" | "Comment" => {}
            _ if alias(k).is_some() => {
                let fixed = alias(k).unwrap_or_default();
                out.warning(
                    member(at, k),
                    format!("\"{k}\" is read as \"{fixed}\", the operator's name: rename it"),
                );
                found.push(k.clone());
            }
            "Next" | "Assign" if top => {}
            "Next" | "Assign" => {
                stray = true;
                out.error(
                    member(at, k),
                    format!("`{k}` belongs only in a top-level Choice Rule, not inside And, Or or Not: remove it"),
                )
            }
            _ if ops.contains(k) => found.push(k.clone()),
            _ => out.error(
                member(at, k),
                format!(
                    "unknown field in a Choice Rule{}",
                    did_you_mean(
                        k,
                        ops.iter()
                            .map(String::as_str)
                            .chain(["Variable", "Next", "Assign"])
                    )
                ),
            ),
        }
    }
    let op = match found.as_slice() {
        [one] => one.as_str(),
        [] => {
            out.error(
                at,
                "a Choice Rule needs one comparison operator (e.g. \"StringEquals\", \
                 \"NumericGreaterThan\", \"And\"): add one",
            );
            return None;
        }
        many => {
            out.error(
                at,
                format!(
                    "a Choice Rule has exactly one comparison operator, found {}: combine them \
                     with \"And\" or \"Or\"",
                    many.iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            return None;
        }
    };
    if stray {
        return None;
    }
    let val = &o[op];
    let at_op = member(at, op);
    let name = alias(op).unwrap_or_else(|| op.to_string());
    match name.as_str() {
        "And" | "Or" => {
            if o.contains_key("Variable") {
                out.error(
                    member(at, "Variable"),
                    format!("\"{op}\" takes no Variable: put one in each of its rules"),
                );
            }
            let Value::Array(items) = val else {
                out.error(
                    &at_op,
                    format!(
                        "\"{op}\" must be a non-empty array of Choice Rules, found {}",
                        kind(val)
                    ),
                );
                return None;
            };
            if items.is_empty() {
                out.error(
                    &at_op,
                    format!("\"{op}\" must be a non-empty array of Choice Rules"),
                );
                return None;
            }
            let rules: Vec<Option<Rule>> = items
                .iter()
                .enumerate()
                .map(|(i, r)| read(r, &index(&at_op, i), false, out))
                .collect();
            let rules: Option<Vec<Rule>> = rules.into_iter().collect();
            rules.map(|r| {
                if op == "And" {
                    Rule::And(r)
                } else {
                    Rule::Or(r)
                }
            })
        }
        "Not" => {
            if o.contains_key("Variable") {
                out.error(
                    member(at, "Variable"),
                    "\"Not\" takes no Variable: put it in the rule it negates",
                );
            }
            read(val, &at_op, false, out).map(|r| Rule::Not(Box::new(r)))
        }
        _ => {
            let variable = match o.get("Variable") {
                Some(Value::String(s)) => match Path::compile(s) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        out.error(member(at, "Variable"), e.to_string());
                        None
                    }
                },
                Some(other) => {
                    out.error(
                        member(at, "Variable"),
                        format!(
                            "\"Variable\" must be a path string such as \"$.value\", found {}",
                            kind(other)
                        ),
                    );
                    None
                }
                None => {
                    out.error(at, format!("\"{op}\" compares the value at \"Variable\": add \"Variable\": \"$.field\""));
                    None
                }
            };
            let op = read_op(&name, val, &at_op, out);
            Some(Rule::Test {
                variable: Box::new(variable?),
                op: op?,
            })
        }
    }
}

fn read_op(name: &str, val: &Value, at: &str, out: &mut Out) -> Option<Op> {
    if name == "StringMatches" {
        return match val {
            Value::String(s) => Some(Op::Matches(s.clone())),
            other => {
                out.error(
                    at,
                    format!(
                        "\"StringMatches\" takes a pattern string such as \"log-*.txt\", found {}",
                        kind(other)
                    ),
                );
                None
            }
        };
    }
    let (ty, cmp, path) = match operator(name)? {
        Operator::Compare(ty, cmp, path) => (ty, cmp, path),
        Operator::Is(t) => {
            return match val {
                Value::Bool(b) => Some(Op::Is(t, *b)),
                other => {
                    out.error(
                        at,
                        format!("\"{name}\" takes true or false, found {}", kind(other)),
                    );
                    None
                }
            }
        }
    };
    if path {
        return match val {
            Value::String(s) => match Path::compile(s) {
                Ok(p) => Some(Op::Compare(ty, cmp, Operand::Path(Box::new(p)))),
                Err(e) => {
                    out.error(at, e.to_string());
                    None
                }
            },
            other => {
                out.error(
                    at,
                    format!(
                        "\"{name}\" takes a path to the value to compare with, found {}",
                        kind(other)
                    ),
                );
                None
            }
        };
    }
    let ok = match ty {
        Type::String => val.is_string(),
        Type::Numeric => val.is_number(),
        Type::Boolean => val.is_boolean(),
        Type::Timestamp => val.as_str().and_then(timestamp).is_some(),
    };
    if !ok {
        let want = match ty {
            Type::String => "a string",
            Type::Numeric => "a number",
            Type::Boolean => "true or false",
            Type::Timestamp => {
                "an RFC 3339 timestamp with uppercase T and Z, e.g. \"2016-03-14T01:59:00Z\""
            }
        };
        out.error(at, format!("\"{name}\" takes {want}, found {}", kind(val)));
        return None;
    }
    Some(Op::Compare(ty, cmp, Operand::Value(val.clone())))
}

impl Rule {
    /// A short text of the rule, for graph edges: `$.value >= 20 and $.value < 30`.
    pub fn describe(&self) -> String {
        let join = |rs: &[Rule], w: &str| {
            rs.iter()
                .map(|r| match r {
                    Rule::Test { .. } | Rule::Not(_) => r.describe(),
                    _ => format!("({})", r.describe()),
                })
                .collect::<Vec<_>>()
                .join(w)
        };
        match self {
            Rule::And(rs) => join(rs, " and "),
            Rule::Or(rs) => join(rs, " or "),
            Rule::Not(r) => format!("not {}", r.describe()),
            Rule::Test { variable, op } => {
                let v = variable.source();
                match op {
                    Op::Matches(p) => format!("{v} matches {p:?}"),
                    Op::Is(t, b) => {
                        format!("{v} {}is {t:?}", if *b { "" } else { "not " }).to_lowercase()
                    }
                    Op::Compare(_, cmp, operand) => {
                        let sym = match cmp {
                            Cmp::Eq => "==",
                            Cmp::Lt => "<",
                            Cmp::Gt => ">",
                            Cmp::Le => "<=",
                            Cmp::Ge => ">=",
                        };
                        let rhs = match operand {
                            Operand::Value(x) => x.to_string(),
                            Operand::Path(p) => p.source().to_string(),
                        };
                        format!("{v} {sym} {rhs}")
                    }
                }
            }
        }
    }
}

/// Why a rule could not be evaluated (`States.Runtime`, as Step Functions raises it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid path {0:?}: the Choice state's input has nothing there")]
pub struct Missing(pub String);

impl Rule {
    /// Whether the rule matches `input`; a comparison on a variable that is not in the input
    /// is an error (`IsPresent` excepted). `And` and `Or` stop at the first rule that decides.
    pub fn eval(&self, input: &Value, context: &Scope) -> Result<bool, Missing> {
        match self {
            Rule::And(rs) => {
                for r in rs {
                    if !r.eval(input, context)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Rule::Or(rs) => {
                for r in rs {
                    if r.eval(input, context)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Rule::Not(r) => Ok(!r.eval(input, context)?),
            Rule::Test { variable, op } => {
                let v = variable.select(input, context);
                if let Op::Is(Test::Present, want) = op {
                    return Ok(v.is_some() == *want);
                }
                let v = v.ok_or_else(|| Missing(variable.source().to_string()))?;
                Ok(match op {
                    Op::Is(t, want) => test(*t, &v) == *want,
                    Op::Matches(p) => v.as_str().is_some_and(|s| glob(p, s)),
                    Op::Compare(ty, cmp, operand) => {
                        let other = match operand {
                            Operand::Value(x) => x.clone(),
                            Operand::Path(p) => match p.select(input, context) {
                                Some(x) => x,
                                None => return Ok(false),
                            },
                        };
                        compare(*ty, *cmp, &v, &other)
                    }
                })
            }
        }
    }
}

fn test(t: Test, v: &Value) -> bool {
    match t {
        Test::Null => v.is_null(),
        Test::Present => true,
        Test::Numeric => v.is_number(),
        Test::String => v.is_string(),
        Test::Boolean => v.is_boolean(),
        Test::Timestamp => v.as_str().and_then(timestamp).is_some(),
    }
}

fn ordered<T: PartialOrd>(cmp: Cmp, a: T, b: T) -> bool {
    match cmp {
        Cmp::Eq => a == b,
        Cmp::Lt => a < b,
        Cmp::Gt => a > b,
        Cmp::Le => a <= b,
        Cmp::Ge => a >= b,
    }
}

/// A type-sensitive comparison: values of another type never match.
fn compare(ty: Type, cmp: Cmp, a: &Value, b: &Value) -> bool {
    match ty {
        Type::String => match (a.as_str(), b.as_str()) {
            (Some(a), Some(b)) => ordered(cmp, a, b),
            _ => false,
        },
        Type::Numeric => match (a.as_f64().filter(|_| a.is_number()), b.as_f64()) {
            (Some(a), Some(b)) => ordered(cmp, a, b),
            _ => false,
        },
        Type::Boolean => match (a.as_bool(), b.as_bool()) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        },
        Type::Timestamp => match (
            a.as_str().and_then(timestamp),
            b.as_str().and_then(timestamp),
        ) {
            (Some(a), Some(b)) => ordered(cmp, a, b),
            _ => false,
        },
    }
}

/// `*` matches any run of characters; `\*` is a star and `\\` a backslash.
fn glob(pattern: &str, s: &str) -> bool {
    #[derive(PartialEq)]
    enum Tok {
        Star,
        Char(char),
    }
    let mut toks = Vec::new();
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        match c {
            '\\' => toks.push(Tok::Char(it.next().unwrap_or('\\'))),
            '*' => toks.push(Tok::Star),
            c => toks.push(Tok::Char(c)),
        }
    }
    let s: Vec<char> = s.chars().collect();
    // iterative matching with backtracking to the last star: linear in practice
    let (mut p, mut i, mut star, mut mark) = (0, 0, None, 0);
    while i < s.len() {
        match toks.get(p) {
            Some(Tok::Char(c)) if *c == s[i] => {
                p += 1;
                i += 1;
            }
            Some(Tok::Star) => {
                star = Some(p);
                mark = i;
                p += 1;
            }
            _ => match star {
                Some(sp) => {
                    p = sp + 1;
                    mark += 1;
                    i = mark;
                }
                None => return false,
            },
        }
    }
    toks[p..].iter().all(|t| *t == Tok::Star)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(v: Value) -> Rule {
        let mut out = Out::new("t.asl.json");
        let r = read(&v, "$.Choices[0]", true, &mut out);
        assert!(out.diags.is_empty(), "{:?}", out.diags);
        r.unwrap()
    }

    #[test]
    fn the_documents_choice_example_and_the_operators() {
        let not_private = rule(
            json!({"Not": {"Variable": "$.type", "StringEquals": "Private"}, "Next": "Public"}),
        );
        // the document's spelling of NumericGreaterThanEquals is read, with a warning
        let mut out = Out::new("t");
        read(
            &json!({"Variable": "$.value", "NumericGreaterThanOrEquals": 20, "Next": "X"}),
            "$",
            true,
            &mut out,
        );
        assert!(!out.has_errors(), "{:?}", out.diags);
        assert!(
            out.diags[0].message.contains("NumericGreaterThanEquals"),
            "{:?}",
            out.diags
        );
        let input = json!({"type": "private", "value": 22});
        // "private" is not "Private": the Not rule matches (docs/semantics.md)
        assert_eq!(not_private.eval(&input, &Scope::default()), Ok(true));
        let r = rule(json!({"And": [
            {"Variable": "$.value", "NumericGreaterThanEquals": 20},
            {"Variable": "$.value", "NumericLessThan": 30}
        ], "Next": "ValueInTwenties"}));
        assert_eq!(r.eval(&input, &Scope::default()), Ok(true));
        // type-sensitive: a numeric comparison never matches a string
        let n = rule(json!({"Variable": "$.type", "NumericEquals": 1, "Next": "X"}));
        assert_eq!(n.eval(&input, &Scope::default()), Ok(false));
        let ts = rule(
            json!({"Variable": "$.t", "TimestampLessThan": "2016-03-14T01:59:00Z", "Next": "X"}),
        );
        assert_eq!(
            ts.eval(&json!({"t": "2016-03-14T01:58:00Z"}), &Scope::default()),
            Ok(true)
        );
        assert_eq!(
            ts.eval(&json!({"t": "2016-03-14t01:58:00z"}), &Scope::default()),
            Ok(false)
        );
        // RFC 3339 allows a space for the T; AWS does not
        assert_eq!(
            ts.eval(&json!({"t": "2016-03-14 01:58:00Z"}), &Scope::default()),
            Ok(false)
        );
        let is_ts = rule(json!({"Variable": "$.t", "IsTimestamp": true, "Next": "X"}));
        assert_eq!(
            is_ts.eval(&json!({"t": "2016-03-14 01:58:00Z"}), &Scope::default()),
            Ok(false)
        );
        assert_eq!(
            is_ts.eval(
                &json!({"t": "2016-03-14T01:58:00+01:00"}),
                &Scope::default()
            ),
            Ok(true)
        );
        let m = rule(json!({"Variable": "$.f", "StringMatches": "log-*.txt", "Next": "X"}));
        assert_eq!(
            m.eval(&json!({"f": "log-2020.txt"}), &Scope::default()),
            Ok(true)
        );
        assert_eq!(
            m.eval(&json!({"f": "log-2020.csv"}), &Scope::default()),
            Ok(false)
        );
        let p = rule(json!({"Variable": "$.a", "NumericLessThanPath": "$.b", "Next": "X"}));
        assert_eq!(
            p.eval(&json!({"a": 1, "b": 2}), &Scope::default()),
            Ok(true)
        );
        let present = rule(json!({"Variable": "$.nope", "IsPresent": false, "Next": "X"}));
        assert_eq!(present.eval(&json!({}), &Scope::default()), Ok(true));
        assert!(
            n.eval(&json!({}), &Scope::default()).is_err(),
            "a missing variable"
        );
        assert!(glob("a\\*b", "a*b") && !glob("a\\*b", "axb") && glob("*", ""));
    }

    #[test]
    fn malformed_rules_are_located() {
        for (v, want) in [
            (
                json!({"Variable": "$.a", "Next": "X"}),
                "needs one comparison",
            ),
            (
                json!({"Variable": "$.a", "StringEquals": 1, "Next": "X"}),
                "takes a string",
            ),
            (
                json!({"StringEquals": "a", "Next": "X"}),
                "add \"Variable\"",
            ),
            (json!({"And": [], "Next": "X"}), "non-empty"),
            (
                json!({"Not": {"Variable": "$.a", "IsNull": true, "Next": "Y"}, "Next": "X"}),
                "only in a top-level",
            ),
            (
                json!({"Variable": "a", "IsNull": true, "Next": "X"}),
                "not a path",
            ),
            (
                json!({"Variable": "$.a", "StringEquals": "a", "NumericEquals": 1, "Next": "X"}),
                "exactly one",
            ),
            (
                json!({"Variable": "$.a", "TimestampEquals": "yesterday", "Next": "X"}),
                "RFC 3339",
            ),
        ] {
            let mut out = Out::new("t");
            let r = read(&v, "$.Choices[0]", true, &mut out);
            assert!(r.is_none(), "{v}");
            assert!(
                out.diags.iter().any(|d| d.message.contains(want)),
                "{v}: {:?}",
                out.diags
            );
        }
    }
}

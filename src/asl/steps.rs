//! The steps of a path that names one node: `.name`, `['name']` (a backslash escapes a
//! quote), `[n]`, `[-n]` and `[(@.length-n)]`; parsed, and walked to the node.

use serde_json::Value;

/// One step of a definite path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Member(String),
    Index(usize),
    /// `[-n]` or `[(@.length-n)]`: the `n`th element from the end (1: the last).
    FromEnd(usize),
}

/// Parses the steps after the root: `.name` steps (a backslash takes the next character as
/// it is, so `\.` is a dot in a name), `['name']` or `["name"]` steps (a backslash escapes
/// the quote), `[n]` and `[-n]` indexes and `[(@.length-n)]`. Anything else (filters,
/// wildcards, slices, unions, `..`) is not one node: the reason is the error.
pub fn steps(rest: &str) -> Result<Vec<Step>, String> {
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
                    return Err("`..` (descent) or an empty name".into());
                }
                if name == "*" {
                    return Err("a wildcard `*`".into());
                }
                if name.ends_with("()") {
                    return Err("a function such as `length()`".into());
                }
                steps.push(Step::Member(name));
            }
            '[' => {
                let (step, next) = bracket(&chars, i)?;
                steps.push(step);
                i = next;
            }
            c => return Err(format!("unexpected `{c}`")),
        }
    }
    Ok(steps)
}

/// The bracket step opening at `chars[open]`, and where the path goes on after it.
fn bracket(chars: &[char], open: usize) -> Result<(Step, usize), String> {
    let mut i = open + 1;
    while chars.get(i) == Some(&' ') {
        i += 1;
    }
    if let Some(&q) = chars.get(i).filter(|c| **c == '\'' || **c == '"') {
        let mut name = String::new();
        i += 1;
        loop {
            match chars.get(i) {
                None => return Err("an unclosed quote".into()),
                Some('\\') => {
                    name.extend(chars.get(i + 1));
                    i += 2;
                }
                Some(c) if *c == q => break,
                Some(c) => {
                    name.push(*c);
                    i += 1;
                }
            }
        }
        i += 1;
        while chars.get(i) == Some(&' ') {
            i += 1;
        }
        return match chars.get(i) {
            Some(']') => Ok((Step::Member(name), i + 1)),
            _ => Err("a quoted name is not alone in its `[...]`".into()),
        };
    }
    let close = chars[open..]
        .iter()
        .position(|c| *c == ']')
        .map(|p| open + p)
        .ok_or("an unclosed `[`")?;
    let inner: String = chars[open + 1..close].iter().collect();
    let inner: String = inner.chars().filter(|c| !c.is_whitespace()).collect();
    let step = if let Ok(n) = inner.parse::<usize>() {
        Step::Index(n)
    } else if let Some(n) = inner
        .strip_prefix('-')
        .and_then(|n| n.parse::<usize>().ok())
    {
        Step::FromEnd(n)
    } else if let Some(n) = inner
        .strip_prefix("(@.length-")
        .and_then(|n| n.strip_suffix(')'))
        .and_then(|n| n.parse::<usize>().ok())
    {
        Step::FromEnd(n)
    } else {
        return Err(format!("`[{inner}]` is not an index or a quoted name"));
    };
    Ok((step, close + 1))
}

/// The array position step `s` names in an array of `len` elements.
pub fn position(s: &Step, len: usize) -> Option<usize> {
    match s {
        Step::Index(i) => (*i < len).then_some(*i),
        Step::FromEnd(n) => len.checked_sub(*n).filter(|_| *n > 0),
        Step::Member(_) => None,
    }
}

/// The node `steps` lead to from `at`, if there is one.
pub fn walk<'a>(mut at: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    for s in steps {
        at = match (s, at) {
            (Step::Member(m), Value::Object(o)) => o.get(m)?,
            (Step::Index(_) | Step::FromEnd(_), Value::Array(a)) => &a[position(s, a.len())?],
            _ => return None,
        };
    }
    Some(at)
}

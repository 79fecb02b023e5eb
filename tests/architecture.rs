//! The shape of the code: no file of the crate imports from another that imports back from
//! it, directly or through others (one concept per file, no cycles between files), except
//! the steps of the Serverless Workflow interpreter ([`INTERPRETER`]). A file's
//! dependencies are the modules its code names by path (`crate::a::b`, `super::x`,
//! `self::y`, grouped imports included), outside comments and its test module. A module and
//! its own submodules are one unit here: a parent re-exports and uses its children, and a
//! child uses what its parent defines (so a cycle through a parent's file, which declares
//! what its children share, is not seen). Limits: only paths count (a method defined in
//! another file, called on a value, is not an import), `//` ends a line even inside a
//! string, and paths inside an inline module resolve from the file's module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path ("a::b", "" for the crate root) -> the file's code.
fn modules(src: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("a source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, src, out);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            if parts == ["main"] {
                continue; // the binary: a crate of its own over the library
            }
            if parts == ["lib"] {
                parts.clear();
            }
            let text = std::fs::read_to_string(&path).expect("a source file");
            out.insert(parts.join("::"), code_of(&text));
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// A file's code: without its test module and without comments.
fn code_of(text: &str) -> String {
    let code = text
        .split("#[cfg(test)]\nmod tests {")
        .next()
        .unwrap_or(text);
    code.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path a piece of code names from `crate`, `super` or `self`, with grouped imports
/// (`a::{b, c::d}`) expanded.
fn paths(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let starts_word = i == 0 || !is_ident(bytes[i - 1] as char) && bytes[i - 1] != b':';
        let head = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|h| bytes[i..].starts_with(h.as_bytes()));
        match head {
            Some(h) if starts_word => {
                let first = h.trim_end_matches("::").to_string();
                let end = expand(code, i + h.len(), vec![first], &mut out);
                i = end.max(i + 1);
            }
            _ => i += 1,
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Reads the path continuing at `at` after `prefix::`; returns where it ended.
fn expand(code: &str, at: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let rest = &code[at..];
    if let Some(inner) = rest.strip_prefix('{') {
        // a group: split at top-level commas, each item continues the prefix
        let mut depth = 0;
        let mut start = 0;
        for (j, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    item(&inner[start..j], &prefix, out);
                    return at + 1 + j + 1;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    item(&inner[start..j], &prefix, out);
                    start = j + 1;
                }
                _ => {}
            }
        }
        return code.len();
    }
    let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
    let mut path = prefix;
    if end > 0 {
        path.push(rest[..end].to_string());
    }
    if rest[end..].starts_with("::") {
        return expand(code, at + end + 2, path, out);
    }
    out.push(path);
    at + end
}

/// One item of a group: a path relative to the group's prefix.
fn item(text: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let mut inner = Vec::new();
    expand(text, 0, prefix.to_vec(), &mut inner);
    out.extend(inner);
}

/// The module a path from module `from` lands in: the longest known module it names.
fn resolve(from: &str, path: &[String], known: &BTreeSet<String>) -> Option<String> {
    let mut base: Vec<String> = if from.is_empty() {
        Vec::new()
    } else {
        from.split("::").map(String::from).collect()
    };
    let mut segs = path;
    match segs.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            segs = &segs[1..];
        }
        Some("self") => segs = &segs[1..],
        Some("super") => {
            while segs.first().is_some_and(|s| s == "super") {
                base.pop()?;
                segs = &segs[1..];
            }
        }
        _ => return None,
    }
    let mut best = None;
    for n in 0..=segs.len() {
        let m = base
            .iter()
            .chain(&segs[..n])
            .cloned()
            .collect::<Vec<_>>()
            .join("::");
        if known.contains(&m) {
            best = Some(m);
        }
    }
    best
}

/// `a` is `b` or one of its submodules.
fn within(a: &str, b: &str) -> bool {
    a == b || b.is_empty() || a.starts_with(&format!("{b}::"))
}

/// Module -> the modules its file depends on (its own ancestors and descendants left out).
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = modules(src);
    let known: BTreeSet<String> = files.keys().cloned().collect();
    files
        .iter()
        .map(|(m, code)| {
            let deps = paths(code)
                .iter()
                .filter_map(|p| resolve(m, p, &known))
                .filter(|t| !within(m, t) && !within(t, m))
                .collect();
            (m.clone(), deps)
        })
        .collect()
}

/// A cycle through `start`, if there is one (depth-first).
fn cycle_through(g: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        g: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in g.get(at).into_iter().flatten() {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(g, start, next, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    walk(g, start, start, &mut path, &mut BTreeSet::new()).then(|| {
        path.push(start.to_string());
        path
    })
}

#[test]
fn no_two_files_depend_on_each_other() {
    let g = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(g.len() > 200, "read the crate's files ({})", g.len());
    // the reading itself: a grouped import, another, and a plain one
    assert!(g["broker::round"].contains("broker::core"));
    assert!(g["broker::landing"].contains("broker::flight"));
    assert!(g["broker::intake"].contains("broker::processor"));
    let cycles: Vec<Vec<String>> = g.keys().filter_map(|m| cycle_through(&g, m)).collect();
    let (known, new): (Vec<_>, Vec<_>) = cycles
        .into_iter()
        .partition(|c| c.iter().all(|m| INTERPRETER.contains(&m.as_str())));
    let new: Vec<String> = new.iter().map(|c| c.join(" -> ")).collect();
    assert!(new.is_empty(), "cycles between files: {new:#?}");
    assert!(
        !known.is_empty(),
        "the interpreter's steps no longer call each other in a cycle: take them off \
         INTERPRETER"
    );
}

/// The one exception: the Serverless Workflow interpreter's steps are mutually recursive
/// (finishing a state, handling an error, consuming an event and running a state's actions
/// each lead into the others), so their files call each other. Splitting them would need a
/// dispatch layer between the steps.
const INTERPRETER: [&str; 5] = [
    "engine::errors",
    "engine::events",
    "engine::flow",
    "engine::lanes",
    "engine::run",
];

#[test]
fn paths_and_groups_are_read_and_resolved() {
    let code = "use super::{a, b::{C, d::E}};\nlet x = crate::m::n::f(self::g::h);\nnot_super::z";
    let ps: Vec<String> = paths(code).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        ps,
        [
            "super::a",
            "super::b::C",
            "super::b::d::E",
            "crate::m::n::f",
            "self::g::h"
        ]
    );
    let known: BTreeSet<String> = ["", "m", "m::n", "p", "p::q", "p::r", "p::q::g"]
        .into_iter()
        .map(String::from)
        .collect();
    let path = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    assert_eq!(
        resolve("p::q", &path("super::r::T"), &known).as_deref(),
        Some("p::r")
    );
    assert_eq!(
        resolve("p::q", &path("crate::m::n::f"), &known).as_deref(),
        Some("m::n")
    );
    assert_eq!(
        resolve("p::q", &path("self::g::h"), &known).as_deref(),
        Some("p::q::g")
    );
    assert_eq!(
        resolve("p", &path("super::m::X"), &known).as_deref(),
        Some("m")
    );
}

#[test]
fn a_cycle_is_found() {
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        cycle_through(&g, "a"),
        Some(
            vec!["a", "b", "c", "a"]
                .into_iter()
                .map(String::from)
                .collect()
        )
    );
    assert_eq!(cycle_through(&g, "d"), None);
}

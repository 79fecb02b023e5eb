//! The shape of the code: no file of the crate imports from another that imports back from
//! it, directly or through others (one concept per file, no cycles between files), except
//! the steps of the Serverless Workflow interpreter ([`INTERPRETER`]). A file's
//! dependencies are the modules its code names by path (`crate::a::b`, `super::x`,
//! `self::y`, grouped imports included), read with `syn` (so comments and strings are not
//! code), its `#[cfg(test)]` items left out. A module and its own submodules are one unit
//! here: a parent re-exports and uses its children, and a child uses what its parent defines
//! (so a cycle through a parent's file, which declares what its children share, is not
//! seen). Paths in macro arguments, which syn leaves as tokens, are read from the tokens.
//! Limits: only paths count, so a method defined in another file and called on a value (as
//! `Core`'s methods, spread over several files, call each other) is not an import; a path
//! through a module brought in by `use` (`engine::x` after `use crate::engine`) counts as a
//! use of that module, not of `x`; paths in attribute arguments are not read; and `self` or
//! `super` in a `macro_rules!` body resolves from where the macro is written.

mod root;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use syn::visit::{self, Visit};

/// Module path ("a::b", "" for the crate root) -> the file's syntax.
fn modules(src: &Path) -> BTreeMap<String, syn::File> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<String, syn::File>) {
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
            let file = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{}: not Rust syn can read: {e}", path.display()));
            out.insert(parts.join("::"), file);
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// The paths a file names from `crate`, `super` or `self` (grouped imports expanded), each
/// with the inline modules it is written in (empty: at the file's level).
#[derive(Default)]
struct Paths {
    inline: Vec<String>,
    found: Vec<(Vec<String>, Vec<String>)>,
}

impl Paths {
    fn of(file: &syn::File) -> Vec<(Vec<String>, Vec<String>)> {
        let mut p = Paths::default();
        p.visit_file(file);
        p.found
    }

    fn found(&mut self, path: Vec<String>) {
        if path
            .first()
            .is_some_and(|h| matches!(h.as_str(), "crate" | "super" | "self"))
        {
            self.found.push((self.inline.clone(), path));
        }
    }

    fn use_tree(&mut self, tree: &syn::UseTree, mut prefix: Vec<String>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(&p.tree, prefix);
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.found(prefix);
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.found(prefix);
            }
            syn::UseTree::Glob(_) => self.found(prefix),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(t, prefix.clone());
                }
            }
        }
    }
}

/// `#[cfg(test)]` among `attrs`.
fn for_tests(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| match &a.meta {
        syn::Meta::List(l) => l.path.is_ident("cfg") && l.tokens.to_string() == "test",
        _ => false,
    })
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            _ => return visit::visit_item(self, item),
        };
        if !for_tests(attrs) {
            visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.inline.push(m.ident.to_string());
        visit::visit_item_mod(self, m);
        self.inline.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&u.tree, Vec::new());
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.found(p.segments.iter().map(|s| s.ident.to_string()).collect());
        visit::visit_path(self, p); // paths in its generic arguments
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        visit::visit_macro(self, m);
        self.tokens(m.tokens.clone());
    }
}

impl Paths {
    /// Paths in a macro's arguments, which syn leaves as tokens: `crate`, `super` or `self`
    /// (`$crate` too) followed by `::` and names.
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        use proc_macro2::TokenTree;
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let sep = |i: usize| {
            matches!((tts.get(i), tts.get(i + 1)),
                (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                    if a.as_char() == ':' && b.as_char() == ':')
        };
        let mut i = 0;
        while i < tts.len() {
            match &tts[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(head)
                    if matches!(head.to_string().as_str(), "crate" | "super" | "self")
                        && (i < 2 || !sep(i - 2)) =>
                {
                    let mut path = vec![head.to_string()];
                    while sep(i + 1) {
                        match tts.get(i + 3) {
                            Some(TokenTree::Ident(next)) => path.push(next.to_string()),
                            _ => break,
                        }
                        i += 3;
                    }
                    if path.len() > 1 {
                        self.found(path);
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
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
        .map(|(m, file)| {
            let deps = Paths::of(file)
                .iter()
                .filter_map(|(inline, p)| {
                    // a path in an inline module resolves from it (`super::` leaves it)
                    let from = m.split("::").filter(|s| !s.is_empty());
                    let from: Vec<&str> = from.chain(inline.iter().map(String::as_str)).collect();
                    resolve(&from.join("::"), p, &known)
                })
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
    let g = graph(&root::root().join("src"));
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
    let code = r#"
        use super::{a, b::{C, d::E as F}, g::*};
        // crate::in_a_comment
        /* crate::in_a_block_comment */
        fn f() -> Vec<self::t::T> {
            let x = crate::m::n::f(self::g::h, "crate::in_a_string");
            not_super::z();
            tracing::warn!(error = %crate::w::v(x), "{}", vec![super::u::U]);
            mod inner {
                use super::super::q::R;
            }
        }
        #[cfg(test)]
        mod tests {
            use crate::only_for_tests;
        }
    "#;
    let file = syn::parse_file(code).unwrap();
    let ps: Vec<String> = Paths::of(&file)
        .iter()
        .map(|(inline, p)| match inline.is_empty() {
            true => p.join("::"),
            false => format!("[{}] {}", inline.join("::"), p.join("::")),
        })
        .collect();
    assert_eq!(
        ps,
        [
            "super::a",
            "super::b::C",
            "super::b::d::E",
            "super::g",
            "self::t::T",
            "crate::m::n::f",
            "self::g::h",
            "crate::w::v",
            "super::u::U",
            "[inner] super::super::q::R"
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
    // from an inline module of p::q: `super` is p::q itself
    assert_eq!(
        resolve("p::q::inner", &path("super::super::r::T"), &known).as_deref(),
        Some("p::r")
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

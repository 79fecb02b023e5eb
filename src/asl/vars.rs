//! Variables across a machine's scopes, checked at deploy. The top level is one scope; each
//! Parallel branch and Map iterator is a scope of its own that reads the variables of the
//! scopes around it. A variable belongs to the scope whose states assign it, so an inner
//! scope cannot assign one an outer scope assigns (Step Functions refuses that machine too).
//! A path reading a variable that no state of its scope or an outer one assigns is warned
//! about: it fails at run time (`States.Runtime`, or the field's path error) if reached.

use super::model::{Cond, Kind, Machine, PathField, State, States, Template, TemplateField, Text};
use super::out::{index, member, Out};
use super::path::Path;
use super::rules::{Op, Operand, Rule};
use crate::diag::did_you_mean;
use std::collections::BTreeSet;

pub fn check(m: &Machine, out: &mut Out) {
    scope(&m.body, "$", &BTreeSet::new(), out);
}

/// The variable names the `Assign` fields of a scope's states set, with where.
fn assigned(body: &States, at_states: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut add = |t: &Option<Template>, at: String| {
        if let Some(Template::Object(fields)) = t {
            for (name, f) in fields {
                let key = match f {
                    TemplateField::Value(_) => name.clone(),
                    _ => format!("{name}.$"),
                };
                found.push((name.clone(), member(&at, &key)));
            }
        }
    };
    for s in &body.states {
        let at_s = member(at_states, &s.name);
        add(&s.assign, member(&at_s, "Assign"));
        if let Kind::Choice(c) = &s.kind {
            for (i, r) in c.choices.iter().enumerate() {
                add(
                    &r.assign,
                    member(&index(&member(&at_s, "Choices"), i), "Assign"),
                );
            }
        }
        for (i, c) in s.kind.catchers().iter().enumerate() {
            add(
                &c.assign,
                member(&index(&member(&at_s, "Catch"), i), "Assign"),
            );
        }
    }
    found
}

/// The scopes nested directly in a state, with where each is.
fn inner<'a>(s: &'a State, at_s: &str) -> Vec<(&'a States, String)> {
    match &s.kind {
        Kind::Parallel(p) => p
            .branches
            .iter()
            .enumerate()
            .map(|(i, b)| (b, index(&member(at_s, "Branches"), i)))
            .collect(),
        Kind::Map(m) => vec![(&m.iterator, member(at_s, "ItemProcessor"))],
        _ => vec![],
    }
}

fn scope(body: &States, at: &str, outer: &BTreeSet<String>, out: &mut Out) {
    let at_states = member(at, "States");
    let here = assigned(body, &at_states);
    for (name, at_k) in &here {
        if outer.contains(name) {
            out.error(
                at_k,
                format!(
                    "${name} is assigned in an outer scope: a Parallel branch or Map iteration \
                     reads outer variables but cannot set them; use another name here, and pass \
                     values out through the state's output"
                ),
            );
        }
    }
    let mut visible = outer.clone();
    visible.extend(here.into_iter().map(|(n, _)| n));
    for s in &body.states {
        let at_s = member(&at_states, &s.name);
        let mut read = Vec::new();
        reads(s, &mut read);
        for p in read {
            let Some(v) = p.root.var() else { continue };
            if !visible.contains(v) {
                out.warning(
                    &at_s,
                    format!(
                        "{:?} reads ${v}, which no state of this scope or an outer one assigns{}: \
                         it fails when it runs",
                        p.source(),
                        did_you_mean(v, visible.iter().map(String::as_str))
                    ),
                );
            }
        }
        for (b, at_b) in inner(s, &at_s) {
            scope(b, &at_b, &visible, out);
        }
    }
}

/// Every path a state reads (not the Reference Paths of `...Path` fields, checked when they
/// run).
fn reads<'a>(s: &'a State, into: &mut Vec<&'a Path>) {
    let io = &s.io;
    for f in [&io.input_path, &io.output_path] {
        if let PathField::Path(p) = f {
            into.push(p);
        }
    }
    for t in [&io.parameters, &io.result_selector, &s.assign]
        .into_iter()
        .flatten()
    {
        template(t, into);
    }
    for c in s.kind.catchers() {
        if let Some(t) = &c.assign {
            template(t, into);
        }
    }
    match &s.kind {
        Kind::Choice(c) => {
            for r in &c.choices {
                if let Cond::Rule(r) = &r.rule {
                    rule(r, into);
                }
                if let Some(t) = &r.assign {
                    template(t, into);
                }
            }
        }
        Kind::Map(m) => {
            if let PathField::Path(p) = &m.items_path {
                into.push(p);
            }
        }
        Kind::Fail(f) => {
            for t in [&f.error, &f.cause].into_iter().flatten() {
                match t {
                    Text::Path(p) => into.push(p),
                    Text::Call(c) => into.extend(c.paths()),
                    Text::Fixed(_) | Text::Expr(_) => {}
                }
            }
        }
        _ => {}
    }
}

fn template<'a>(t: &'a Template, into: &mut Vec<&'a Path>) {
    match t {
        Template::Literal(_) | Template::Expr(_) => {}
        Template::Array(items) => items.iter().for_each(|i| template(i, into)),
        Template::Object(fields) => {
            for (_, f) in fields {
                match f {
                    TemplateField::Path(p) => into.push(p),
                    TemplateField::Call(c) => into.extend(c.paths()),
                    TemplateField::Value(t) => template(t, into),
                }
            }
        }
    }
}

fn rule<'a>(r: &'a Rule, into: &mut Vec<&'a Path>) {
    match r {
        Rule::And(rs) | Rule::Or(rs) => rs.iter().for_each(|r| rule(r, into)),
        Rule::Not(r) => rule(r, into),
        Rule::Test { variable, op } => {
            into.push(variable);
            if let Op::Compare(_, _, Operand::Path(p)) = op {
                into.push(p);
            }
        }
    }
}

//! Checks of a whole machine, each scope (the top level, every Parallel branch and Map
//! iterator) on its own: `StartAt` and every transition name a state of the same scope, every
//! state is reachable, every state can reach a terminal state, and state names are unique in
//! the whole machine.

use super::model::{Kind, Machine, State, States};
use super::out::{index, member, Out};
use crate::diag::did_you_mean;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub fn check(m: &Machine, out: &mut Out) {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    scope(&m.body, "$", &mut names, out);
}

/// Where each of a state's transitions is written (for messages), with its target.
fn transitions<'a>(s: &'a State, at: &str) -> Vec<(String, &'a str)> {
    let mut out = Vec::new();
    if let Some(super::model::Flow::Next(n)) = &s.flow {
        out.push((member(at, "Next"), n.as_str()));
    }
    if let Kind::Choice(c) = &s.kind {
        for (i, r) in c.choices.iter().enumerate() {
            out.push((
                member(&index(&member(at, "Choices"), i), "Next"),
                r.next.as_str(),
            ));
        }
        if let Some(d) = &c.default {
            out.push((member(at, "Default"), d.as_str()));
        }
    }
    for (i, c) in s.kind.catchers().iter().enumerate() {
        out.push((
            member(&index(&member(at, "Catch"), i), "Next"),
            c.next.as_str(),
        ));
    }
    out
}

fn scope(body: &States, at: &str, names: &mut BTreeMap<String, String>, out: &mut Out) {
    let at_states = member(at, "States");
    let here: BTreeSet<&str> = body.states.iter().map(|s| s.name.as_str()).collect();
    for s in &body.states {
        let at_s = member(&at_states, &s.name);
        if let Some(first) = names.insert(s.name.clone(), at_s.clone()) {
            out.error(
                &at_s,
                format!(
                    "state name {:?} is used twice (also at {first}); names are unique in the whole machine, branches included: rename one",
                    s.name
                ),
            );
        }
    }
    let resolve = |name: &str, at: &str, out: &mut Out, all: &BTreeMap<String, String>| {
        if here.contains(name) {
            return;
        }
        if let Some(elsewhere) = all.get(name) {
            out.error(
                at,
                format!(
                    "{name:?} is a state of another scope ({elsewhere}); a branch's or iterator's states go only to each other, and nothing outside goes into them"
                ),
            );
        } else {
            out.error(
                at,
                format!(
                    "no state named {name:?} here{}",
                    did_you_mean(name, here.iter().copied())
                ),
            );
        }
    };
    // names of nested scopes count for "another scope" messages: collect them first
    let mut nested = names.clone();
    collect_nested(body, &at_states, &mut nested);
    resolve(&body.start_at, &member(at, "StartAt"), out, &nested);
    for s in &body.states {
        let at_s = member(&at_states, &s.name);
        for (at_t, target) in transitions(s, &at_s) {
            resolve(target, &at_t, out, &nested);
        }
    }
    // reachability from StartAt
    let by_name: BTreeMap<&str, &State> =
        body.states.iter().map(|s| (s.name.as_str(), s)).collect();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut todo: VecDeque<&str> = VecDeque::new();
    if by_name.contains_key(body.start_at.as_str()) {
        todo.push_back(body.start_at.as_str());
    }
    while let Some(n) = todo.pop_front() {
        if !seen.insert(n) {
            continue;
        }
        for t in by_name[n].targets() {
            if by_name.contains_key(t) {
                todo.push_back(t);
            }
        }
    }
    for s in &body.states {
        if !seen.contains(s.name.as_str()) && by_name.contains_key(body.start_at.as_str()) {
            out.error(
                member(&at_states, &s.name),
                format!(
                    "state {:?} is unreachable: no transition from {:?} leads to it; go to it from another state, or remove it",
                    s.name, body.start_at
                ),
            );
        }
    }
    // every reachable state can reach a terminal state
    let mut ends: BTreeSet<&str> = body
        .states
        .iter()
        .filter(|s| s.is_terminal())
        .map(|s| s.name.as_str())
        .collect();
    loop {
        let before = ends.len();
        for s in &body.states {
            if s.targets().iter().any(|t| ends.contains(t)) {
                ends.insert(s.name.as_str());
            }
        }
        if ends.len() == before {
            break;
        }
    }
    for s in &body.states {
        if seen.contains(s.name.as_str()) && !ends.contains(s.name.as_str()) {
            out.error(
                member(&at_states, &s.name),
                format!(
                    "no path from {:?} reaches a terminal state (\"End\": true, Succeed or Fail): the run would never finish; end one of the states it loops through",
                    s.name
                ),
            );
        }
    }
    for s in &body.states {
        let at_s = member(&at_states, &s.name);
        match &s.kind {
            Kind::Parallel(p) => {
                for (i, b) in p.branches.iter().enumerate() {
                    scope(b, &index(&member(&at_s, "Branches"), i), names, out);
                }
            }
            Kind::Map(m) => scope(&m.iterator, &member(&at_s, "ItemProcessor"), names, out),
            _ => {}
        }
    }
}

/// Every state name in scopes nested under `body`, with where it is.
fn collect_nested(body: &States, at_states: &str, into: &mut BTreeMap<String, String>) {
    for s in &body.states {
        let at_s = member(at_states, &s.name);
        let inner: Vec<(&States, String)> = match &s.kind {
            Kind::Parallel(p) => p
                .branches
                .iter()
                .enumerate()
                .map(|(i, b)| (b, index(&member(&at_s, "Branches"), i)))
                .collect(),
            Kind::Map(m) => vec![(&m.iterator, member(&at_s, "ItemProcessor"))],
            _ => vec![],
        };
        for (b, at_b) in inner {
            let at_bs = member(&at_b, "States");
            for t in &b.states {
                into.entry(t.name.clone())
                    .or_insert_with(|| member(&at_bs, &t.name));
            }
            collect_nested(b, &at_bs, into);
        }
    }
}

//! Sub-workflows inherit their parent's function and event definitions (the spec's SubFlow
//! state; SEMANTICS.md "States"). A child may call a function, or wait for an event, that only
//! a workflow running it defines; its own definitions of the same name win.
//!
//! - At validation, a [`Family`] (the workflows deployed or validated together) says which
//!   workflow provides a name a child does not define: the error becomes a warning naming it.
//! - At run time a child instance records its lineage (parent, grandparent, ... versions) and
//!   runs on inherited definitions (`Definition::inherit`): its own, plus the names it lacks
//!   from the nearest ancestor that defines them.

use crate::diag::Needs;
use crate::model::{EventKind, State, Workflow};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// What the workflows of one deployment (or one `validate` run) define and which workflows
/// each runs as a sub-workflow.
#[derive(Debug, Default)]
pub struct Family {
    members: BTreeMap<String, Member>,
    /// Every name is taken as provided (versions stored at deploy time, when it was checked).
    trusted: bool,
}

#[derive(Debug, Default)]
struct Member {
    functions: BTreeSet<String>,
    events: BTreeMap<String, EventKind>,
    children: BTreeSet<String>,
}

impl Family {
    /// Adds a workflow (a later one with the same id replaces the earlier).
    pub fn add(&mut self, wf: &Workflow) {
        self.members.insert(
            wf.id.clone(),
            Member {
                functions: wf.functions.iter().map(|f| f.name.clone()).collect(),
                events: wf.events.iter().map(|e| (e.name.clone(), e.kind)).collect(),
                children: children_of(wf),
            },
        );
    }

    /// A family that provides every name: for re-reading versions that deployed before.
    pub fn trusted() -> Family {
        Family {
            trusted: true,
            ..Family::default()
        }
    }

    pub fn contains(&self, id: &str) -> bool {
        self.members.contains_key(id)
    }

    /// The nearest workflow that runs `child` as a sub-workflow (directly or through others)
    /// and defines what `needs` names.
    pub fn provider(&self, child: &str, needs: &Needs) -> Option<&str> {
        if self.trusted {
            return Some("a parent workflow");
        }
        let mut seen = BTreeSet::from([child.to_string()]);
        let mut queue = VecDeque::from([child.to_string()]);
        while let Some(id) = queue.pop_front() {
            for (parent, m) in &self.members {
                if !m.children.contains(&id) || !seen.insert(parent.clone()) {
                    continue;
                }
                let defines = match needs {
                    Needs::Function(name) => m.functions.contains(name),
                    Needs::Event { name, produced } => m
                        .events
                        .get(name)
                        .is_some_and(|k| (*k == EventKind::Produced) == *produced),
                };
                if defines {
                    return Some(parent);
                }
                queue.push_back(parent.clone());
            }
        }
        None
    }
}

/// The workflow ids a definition runs as children: subflow states, foreach and parallel
/// branches with a `workflowId`.
pub fn children_of(wf: &Workflow) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for s in &wf.states {
        match s {
            State::Subflow(sf) => {
                out.insert(sf.workflow_id.clone());
            }
            State::ForEach(f) => out.extend(f.workflow_id.clone()),
            State::Parallel(p) => {
                out.extend(p.branches.iter().filter_map(|b| b.workflow_id.clone()))
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::load::Format;

    pub(crate) const PARENT: &str = "id: parent\nname: p\nfunctions:\n- {name: f, resource: \"http://parent/f\"}\n- {name: g, resource: \"http://parent/g\"}\nevents:\n- {name: e, type: t, source: s, kind: consumed}\nstates:\n- {name: s, type: subflow, workflowId: child, waitForCompletion: true, start: {kind: default}, end: {kind: default}}\n";
    pub(crate) const CHILD: &str = "id: child\nname: c\nfunctions:\n- {name: g, resource: \"http://child/g\"}\nstates:\n- name: a\n  type: operation\n  start: {kind: default}\n  actions: [{functionRef: {refName: f}}, {functionRef: {refName: g}}]\n  transition: {nextState: w}\n- name: w\n  type: event\n  eventsActions: [{eventRefs: [e]}]\n  end: {kind: default}\n";

    fn family() -> Family {
        let mut fam = Family::default();
        for t in [PARENT, CHILD] {
            fam.add(
                &crate::load::parse_workflow("t.yaml", t, Format::Yaml)
                    .workflow
                    .unwrap(),
            );
        }
        fam
    }

    #[test]
    fn a_parent_provides_what_its_child_lacks() {
        let fam = family();
        assert_eq!(
            fam.provider("child", &Needs::Function("f".into())),
            Some("parent")
        );
        let consumed = Needs::Event {
            name: "e".into(),
            produced: false,
        };
        assert_eq!(fam.provider("child", &consumed), Some("parent"));
        let produced = Needs::Event {
            name: "e".into(),
            produced: true,
        };
        assert_eq!(fam.provider("child", &produced), None);
        assert_eq!(fam.provider("parent", &Needs::Function("x".into())), None);
    }
}

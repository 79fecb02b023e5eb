//! A workflow's states and transitions as a graph ([`Graph`]; of an ASL machine: [`asl`]), drawn as a Mermaid flowchart
//! ([`mermaid`]), Graphviz DOT ([`dot`]) or SVG ([`svg`], laid out by layout-rs). DOT and SVG
//! can mark the states an instance visited and the one it is in (the console's instance page).

mod asl;
mod dot;
mod durable;
mod mermaid;

pub use dot::{dot, svg, SvgError};
pub use mermaid::{mermaid, mermaid_of};

use crate::definition::Body;
use crate::model::{EndKind, State, Workflow};
use std::collections::BTreeSet;

/// A node: the start, a state (by its index in the workflow), or the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Start,
    State {
        index: usize,
        name: String,
        /// The state type (`operation`, `switch`, ...).
        kind: String,
    },
    End,
}

impl Node {
    /// A stable identifier (`start`, `s3`, `end`).
    pub fn id(&self) -> String {
        match self {
            Node::Start => "start".into(),
            Node::State { index, .. } => format!("s{index}"),
            Node::End => "end".into(),
        }
    }
}

/// A transition, with what chooses it (a condition, an event, `default`, an error, an end kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub label: Option<String>,
}

/// The graph of a workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

/// What an instance did, to mark on a drawing: the states it entered and the one it is in.
#[derive(Debug, Clone, Default)]
pub struct Marks {
    pub visited: BTreeSet<String>,
    pub current: Option<String>,
    /// The instance finished (the end node is marked visited).
    pub finished: bool,
}

impl Graph {
    /// The graph of a deployable definition, in its language.
    pub fn of_definition(def: &crate::definition::Definition) -> Graph {
        match &def.body {
            Body::Machine(m) => Graph::of_machine(m),
            Body::Durable(f) => Graph::of_durable(f),
            Body::Swf => Graph::of_user_code(def.id(), "SWF decider"),
            Body::Workflow => Graph::of(&def.workflow),
        }
    }

    pub fn of(wf: &Workflow) -> Graph {
        let mut nodes = vec![Node::Start];
        let mut edges = Vec::new();
        let id = |name: &str| match wf.state_index(name) {
            Some(i) => format!("s{i}"),
            None => format!("missing:{name}"),
        };
        let mut edge = |from: usize, to: &str, label: Option<String>| {
            edges.push(Edge {
                from: format!("s{from}"),
                to: id(to),
                label,
            })
        };
        let mut starts = Vec::new();
        let mut ends = Vec::new();
        for (i, s) in wf.states.iter().enumerate() {
            let c = s.common();
            nodes.push(Node::State {
                index: i,
                name: c.name.to_string(),
                kind: c.kind.to_string(),
            });
            if c.start.is_some() {
                starts.push(i);
            }
            if let Some(t) = c.transition {
                edge(i, &t.next_state, t.expression.clone());
            }
            if let State::Switch(sw) = s {
                for d in sw.data_conditions.iter().flatten() {
                    edge(i, &d.transition.next_state, Some(d.condition.clone()));
                }
                for e in sw.event_conditions.iter().flatten() {
                    edge(
                        i,
                        &e.transition.next_state,
                        Some(format!("event {}", e.event_ref)),
                    );
                }
                if let Some(d) = &sw.default {
                    edge(i, &d.next_state, Some("default".into()));
                }
            }
            for e in c.on_error {
                if let Some(t) = &e.transition {
                    edge(i, &t.next_state, Some(format!("error {}", e.expression)));
                }
            }
            if let Some(end) = c.end {
                ends.push((i, end.kind));
            }
        }
        for i in starts {
            edges.insert(
                0,
                Edge {
                    from: "start".into(),
                    to: format!("s{i}"),
                    label: None,
                },
            );
        }
        if !ends.is_empty() {
            nodes.push(Node::End);
        }
        for (i, kind) in ends {
            let label = match kind {
                EndKind::Default => None,
                EndKind::Terminate => Some("terminate".into()),
                EndKind::Event => Some("event".into()),
            };
            edges.push(Edge {
                from: format!("s{i}"),
                to: "end".into(),
                label,
            });
        }
        Graph { nodes, edges }
    }
}

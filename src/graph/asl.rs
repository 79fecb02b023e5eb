//! An ASL machine as a [`Graph`]: the top level's states, with `Next`, each Choice Rule (its
//! text as the label), `Default` and `Catch` edges; a Parallel or Map is one node (its type
//! says how many branches it runs).

use super::{Edge, Graph, Node};
use crate::asl::model::{Flow, Kind, Machine};

impl Graph {
    pub fn of_machine(m: &Machine) -> Graph {
        let body = &m.body;
        let id = |name: &str| match body.index(name) {
            Some(i) => format!("s{i}"),
            None => format!("missing:{name}"),
        };
        let mut nodes = vec![Node::Start];
        let mut edges = vec![Edge {
            from: "start".into(),
            to: id(&body.start_at),
            label: None,
        }];
        let mut ends = Vec::new();
        for (i, s) in body.states.iter().enumerate() {
            let kind = match &s.kind {
                Kind::Parallel(p) => format!("Parallel ({} branches)", p.branches.len()),
                k => k.type_name().to_string(),
            };
            nodes.push(Node::State {
                index: i,
                name: s.name.clone(),
                kind,
            });
            let from = format!("s{i}");
            let mut edge = |to: &str, label: Option<String>| {
                edges.push(Edge {
                    from: from.clone(),
                    to: id(to),
                    label,
                })
            };
            if let Some(Flow::Next(n)) = &s.flow {
                edge(n, None);
            }
            if let Kind::Choice(c) = &s.kind {
                for r in &c.choices {
                    edge(&r.next, Some(r.rule.describe()));
                }
                if let Some(d) = &c.default {
                    edge(d, Some("default".into()));
                }
            }
            for c in s.kind.catchers() {
                edge(&c.next, Some(format!("catch {}", c.errors.0.join(", "))));
            }
            match &s.kind {
                Kind::Fail(f) => ends.push((
                    i,
                    Some(
                        format!(
                            "fail {}",
                            f.error.as_ref().map(|e| e.describe()).unwrap_or_default()
                        )
                        .trim()
                        .to_string(),
                    ),
                )),
                Kind::Succeed => ends.push((i, None)),
                _ if s.flow == Some(Flow::End) => ends.push((i, None)),
                _ => {}
            }
        }
        if !ends.is_empty() {
            nodes.push(Node::End);
        }
        for (i, label) in ends {
            edges.push(Edge {
                from: format!("s{i}"),
                to: "end".into(),
                label,
            });
        }
        Graph { nodes, edges }
    }
}

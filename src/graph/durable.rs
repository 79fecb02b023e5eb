//! A durable function as a [`Graph`]: its logic is code, so the graph is one node, the
//! handler, between start and end (an execution's operations are its timeline instead).

use super::{Edge, Graph, Node};
use crate::durable::Function;

impl Graph {
    pub fn of_durable(f: &Function) -> Graph {
        Graph::of_user_code(&f.function, "durable function")
    }

    /// One node for logic that is the user's code (a durable function, an SWF decider).
    pub fn of_user_code(name: &str, kind: &str) -> Graph {
        Graph {
            nodes: vec![
                Node::Start,
                Node::State {
                    index: 0,
                    name: name.to_string(),
                    kind: kind.to_string(),
                },
                Node::End,
            ],
            edges: vec![
                Edge {
                    from: "start".into(),
                    to: "s0".into(),
                    label: None,
                },
                Edge {
                    from: "s0".into(),
                    to: "end".into(),
                    label: None,
                },
            ],
        }
    }
}

//! `flowbroker graph` (the default format): a Mermaid flowchart.

use super::{Graph, Node};
use crate::model::Workflow;
use std::fmt::Write;

/// Renders `wf` as a Mermaid `flowchart TD`.
pub fn mermaid(wf: &Workflow) -> String {
    mermaid_of(&Graph::of(wf))
}

/// Renders a graph as a Mermaid `flowchart TD`.
pub fn mermaid_of(g: &Graph) -> String {
    let mut out = String::from("flowchart TD\n");
    let id = |n: &str| {
        if n == "end" {
            "end_".to_string()
        } else {
            n.to_string()
        }
    };
    for n in &g.nodes {
        let _ = match n {
            Node::Start => writeln!(out, "    start((start))"),
            Node::End => writeln!(out, "    end_((end))"),
            Node::State { name, kind, .. } => {
                let label = format!("{}<br/><i>{kind}</i>", escape(name));
                if kind == "switch" || kind == "Choice" {
                    writeln!(out, "    {}{{\"{label}\"}}", n.id())
                } else {
                    writeln!(out, "    {}[\"{label}\"]", n.id())
                }
            }
        };
    }
    for e in &g.edges {
        let (from, to) = (id(&e.from), id(&e.to));
        let _ = match (&e.label, e.to == "end") {
            (Some(l), true) => writeln!(out, "    {from} -->|{}| {to}", escape(l)),
            (Some(l), false) => writeln!(out, "    {from} -->|\"{}\"| {to}", escape(l)),
            (None, _) => writeln!(out, "    {from} --> {to}"),
        };
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('"', "#quot;")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::load::{parse_workflow, Format};

    pub(crate) const SAMPLE: &str = r#"
id: g
name: g
states:
- name: A
  type: inject
  start: {kind: default}
  transition: {nextState: B}
- name: B
  type: switch
  dataConditions:
  - condition: "{{ $.x }}"
    transition: {nextState: A}
  default: {nextState: C}
- name: C
  type: delay
  timeDelay: PT1S
  end: {kind: terminate}
"#;

    #[test]
    fn draws_states_and_edges() {
        let wf = parse_workflow("g.yaml", SAMPLE, Format::Yaml)
            .workflow
            .unwrap();
        let g = mermaid(&wf);
        assert!(g.starts_with("flowchart TD\n"));
        assert!(g.contains("start --> s0"));
        assert!(g.contains("s0 --> s1"));
        assert!(g.contains("s1 -->|\"{{ $.x }}\"| s0"));
        assert!(g.contains("s1 -->|\"default\"| s2"));
        assert!(g.contains("s2 -->|terminate| end_"));
    }
}

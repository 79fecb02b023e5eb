//! Graphviz DOT, and SVG laid out from it by layout-rs (no Graphviz needed), with an
//! instance's visited and current states marked.

use super::{Graph, Marks, Node};
use std::fmt::Write;

/// Fill of a state the instance entered.
pub const VISITED_FILL: &str = "#cfe3ff";
/// Fill of the state the instance is in.
pub const CURRENT_FILL: &str = "#ffd666";

#[derive(Debug, thiserror::Error)]
pub enum SvgError {
    #[error("cannot lay the graph out: {0}")]
    Layout(String),
}

/// A DOT string literal.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Renders the graph as a DOT `digraph`, filling the states in `marks`.
pub fn dot(g: &Graph, marks: &Marks) -> String {
    let mut out = String::from("digraph workflow {\n");
    for n in &g.nodes {
        let id = n.id();
        let fill = match n {
            Node::State { name, .. } if marks.current.as_deref() == Some(name) => {
                Some(CURRENT_FILL)
            }
            Node::State { name, .. } if marks.visited.contains(name) => Some(VISITED_FILL),
            Node::End if marks.finished => Some(VISITED_FILL),
            Node::Start if !marks.visited.is_empty() => Some(VISITED_FILL),
            _ => None,
        };
        let style = fill
            .map(|f| format!(", style=filled, fillcolor={}", quote(f)))
            .unwrap_or_default();
        let _ = match n {
            Node::Start => writeln!(out, "  start [label=\"start\", shape=circle{style}];"),
            Node::End => writeln!(out, "  end [label=\"end\", shape=doublecircle{style}];"),
            Node::State { name, kind, .. } => writeln!(
                out,
                "  {id} [label={}, shape=box{style}];",
                quote(&format!("{name} ({kind})"))
            ),
        };
    }
    for e in &g.edges {
        let label = e
            .label
            .as_ref()
            .map(|l| format!(" [label={}]", quote(l)))
            .unwrap_or_default();
        let _ = writeln!(out, "  {} -> {}{label};", quote(&e.from), quote(&e.to));
    }
    out.push_str("}\n");
    out
}

/// Renders the graph as SVG (layout-rs lays the DOT out).
pub fn svg(g: &Graph, marks: &Marks) -> Result<String, SvgError> {
    let text = dot(g, marks);
    // layout-rs asserts on shapes it cannot place; a drawing is not worth a crashed request
    std::panic::catch_unwind(|| {
        let mut parser = layout::gv::DotParser::new(&text);
        let ast = parser.process().map_err(SvgError::Layout)?;
        let mut builder = layout::gv::GraphBuilder::new();
        builder.visit_graph(&ast);
        let mut visual = builder.get();
        let mut writer = layout::backends::svg::SVGWriter::new();
        visual.do_it(false, false, false, &mut writer);
        Ok(writer.finalize())
    })
    .unwrap_or_else(|_| Err(SvgError::Layout("layout-rs panicked".into())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{parse_workflow, Format};

    fn sample() -> Graph {
        let wf = parse_workflow("g.yaml", super::super::mermaid::tests::SAMPLE, Format::Yaml)
            .workflow
            .unwrap();
        Graph::of(&wf)
    }

    #[test]
    fn dot_has_every_state_and_edge_and_marks_the_instance() {
        let marks = Marks {
            visited: ["A".to_string()].into(),
            current: Some("B".into()),
            finished: false,
        };
        let d = dot(&sample(), &marks);
        assert!(d.starts_with("digraph workflow {"), "{d}");
        assert!(
            d.contains(
                r##"s0 [label="A (inject)", shape=box, style=filled, fillcolor="#cfe3ff"];"##
            ),
            "{d}"
        );
        assert!(
            d.contains(
                r##"s1 [label="B (switch)", shape=box, style=filled, fillcolor="#ffd666"];"##
            ),
            "{d}"
        );
        assert!(d.contains(r#"s2 [label="C (delay)", shape=box];"#), "{d}");
        assert!(d.contains(r#""s1" -> "s0" [label="{{ $.x }}"];"#), "{d}");
        assert!(d.contains(r#""s2" -> "end" [label="terminate"];"#), "{d}");
        assert!(d.contains(r#""start" -> "s0";"#), "{d}");
    }

    #[test]
    fn svg_draws_every_state_with_the_marks() {
        let marks = Marks {
            visited: ["A".to_string()].into(),
            current: Some("B".into()),
            finished: false,
        };
        let s = svg(&sample(), &marks).unwrap();
        assert!(s.contains("<svg"), "{s}");
        for label in ["A (inject)", "B (switch)", "C (delay)", "start", "end"] {
            assert!(s.contains(label), "{label} missing: {s}");
        }
        assert!(
            s.to_lowercase().contains("#ffd666"),
            "current state fill: {s}"
        );
        assert!(s.to_lowercase().contains("#cfe3ff"), "visited fill: {s}");
    }
}

//! `flowbroker graph`: a Mermaid flowchart of a workflow's states and transitions.

use crate::model::{EndKind, State, Workflow};
use std::fmt::Write;

/// Renders `wf` as a Mermaid `flowchart TD`.
pub fn mermaid(wf: &Workflow) -> String {
    let mut out = String::from("flowchart TD\n");
    let id = |name: &str| -> String {
        let i = wf.state_index(name).unwrap_or(usize::MAX);
        format!("s{i}")
    };
    let _ = writeln!(out, "    start((start))");
    for (i, s) in wf.states.iter().enumerate() {
        let c = s.common();
        let label = format!("{}<br/><i>{}</i>", escape(c.name), c.kind);
        let shape = match s {
            State::Switch(_) => format!("s{i}{{\"{label}\"}}"),
            _ => format!("s{i}[\"{label}\"]"),
        };
        let _ = writeln!(out, "    {shape}");
        if c.start.is_some() {
            let _ = writeln!(out, "    start --> s{i}");
        }
    }
    let mut edge = |from: usize, to: &str, label: Option<String>| {
        let to = id(to);
        match label {
            Some(l) => writeln!(out, "    s{from} -->|\"{}\"| {to}", escape(&l)),
            None => writeln!(out, "    s{from} --> {to}"),
        }
    };
    let mut ends = Vec::new();
    for (i, s) in wf.states.iter().enumerate() {
        let c = s.common();
        if let Some(t) = c.transition {
            let _ = edge(i, &t.next_state, t.expression.clone());
        }
        if let State::Switch(sw) = s {
            for d in sw.data_conditions.iter().flatten() {
                let _ = edge(i, &d.transition.next_state, Some(d.condition.clone()));
            }
            for e in sw.event_conditions.iter().flatten() {
                let _ = edge(
                    i,
                    &e.transition.next_state,
                    Some(format!("event {}", e.event_ref)),
                );
            }
            if let Some(d) = &sw.default {
                let _ = edge(i, &d.next_state, Some("default".into()));
            }
        }
        for e in c.on_error {
            if let Some(t) = &e.transition {
                let _ = edge(i, &t.next_state, Some(format!("error {}", e.expression)));
            }
        }
        if let Some(end) = c.end {
            ends.push((i, end.kind));
        }
    }
    if !ends.is_empty() {
        out.push_str("    end_((end))\n");
    }
    for (i, kind) in ends {
        let label = match kind {
            EndKind::Default => String::new(),
            EndKind::Terminate => "|terminate|".into(),
            EndKind::Event => "|event|".into(),
        };
        let _ = writeln!(out, "    s{i} -->{label} end_");
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('"', "#quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{parse_workflow, Format};

    #[test]
    fn draws_states_and_edges() {
        let text = r#"
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
        let wf = parse_workflow("g.yaml", text, Format::Yaml)
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

//! Enumerated values in any case (SEMANTICS.md "Parsing"): the spec's own YAML examples write
//! `type: SWITCH` and `type: SUBFLOW`. Before the model is read, every enumerated field is
//! rewritten to the spec's spelling, with a warning naming the field, when its case differs.
//!
//! Only fields the spec enumerates are touched, at the positions where the spec puts them;
//! user data (`data`, `parameters`, `metadata`, `contextAttributes`, ...) is never rewritten.

use super::state::STATE_TYPES;
use crate::diag::Diagnostic;
use serde_json::Value;

const START_KINDS: &[&str] = &["default", "scheduled"];
const END_KINDS: &[&str] = &["default", "terminate", "event"];
const EVENT_KINDS: &[&str] = &["consumed", "produced"];
const DIRECT_INVOKE: &[&str] = &["allow", "exclusive"];
const ACTION_MODES: &[&str] = &["sequential", "parallel"];
const COMPLETION_TYPES: &[&str] = &["and", "xor", "n_of_m"];

/// Rewrites the enumerated values of a whole definition to the spec's spelling.
pub fn canonicalize(file: &str, wf: &mut Value, diags: &mut Vec<Diagnostic>) {
    let mut fix = Fixer { file, diags };
    if let Some(Value::Array(events)) = wf.get_mut("events") {
        for (i, e) in events.iter_mut().enumerate() {
            fix.field(e, &format!("$.events[{i}]"), "kind", EVENT_KINDS);
        }
    }
    if let Some(Value::Array(states)) = wf.get_mut("states") {
        for (i, s) in states.iter_mut().enumerate() {
            let at = format!("$.states[{i}]");
            fix.field(s, &at, "type", &STATE_TYPES);
            fix.state(s, &at);
        }
    }
}

struct Fixer<'a> {
    file: &'a str,
    diags: &'a mut Vec<Diagnostic>,
}

impl Fixer<'_> {
    /// The fields of one state (and of the objects inside it that carry enumerations).
    fn state(&mut self, s: &mut Value, at: &str) {
        self.field(s, at, "actionMode", ACTION_MODES);
        self.field(s, at, "completionType", COMPLETION_TYPES);
        if let Some(start) = s.get_mut("start") {
            let sat = format!("{at}.start");
            self.field(start, &sat, "kind", START_KINDS);
            if let Some(schedule) = start.get_mut("schedule") {
                self.field(
                    schedule,
                    &format!("{sat}.schedule"),
                    "directInvoke",
                    DIRECT_INVOKE,
                );
            }
        }
        self.end(s, at);
        self.each(s, at, "onError", |f, e, eat| f.end(e, eat));
        self.each(s, at, "eventsActions", |f, ea, eat| {
            f.field(ea, eat, "actionMode", ACTION_MODES)
        });
    }

    fn end(&mut self, holder: &mut Value, at: &str) {
        if let Some(end) = holder.get_mut("end") {
            self.field(end, &format!("{at}.end"), "kind", END_KINDS);
        }
    }

    fn each(
        &mut self,
        holder: &mut Value,
        at: &str,
        name: &str,
        mut f: impl FnMut(&mut Self, &mut Value, &str),
    ) {
        if let Some(Value::Array(items)) = holder.get_mut(name) {
            for (i, item) in items.iter_mut().enumerate() {
                f(self, item, &format!("{at}.{name}[{i}]"));
            }
        }
    }

    /// Rewrites `holder[name]` to its allowed spelling when it differs only in case.
    fn field(&mut self, holder: &mut Value, at: &str, name: &str, allowed: &[&str]) {
        let Some(Value::String(v)) = holder.get_mut(name) else {
            return;
        };
        if allowed.contains(&v.as_str()) {
            return;
        }
        let Some(canon) = allowed.iter().find(|a| a.eq_ignore_ascii_case(v)) else {
            return; // not an accepted value in any case: validation reports it
        };
        self.diags.push(Diagnostic::warning(
            self.file,
            format!("{at}.{name}"),
            format!("{v:?} read as {canon:?}; write it as the spec does: {name}: {canon}"),
        ));
        *v = canon.to_string();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn enumerations_take_the_specs_spelling_and_data_is_left_alone() {
        let mut wf = json!({
            "events": [{"name": "E", "kind": "Consumed", "type": "SWITCH"}],
            "states": [{
                "name": "S", "type": "SWITCH", "start": {"kind": "DEFAULT"},
                "end": {"kind": "Terminate"}, "actionMode": "Parallel",
                "data": {"kind": "DEFAULT", "type": "SWITCH"},
                "onError": [{"expression": "x", "end": {"kind": "EVENT"}}],
            }, {"name": "T", "type": "Parallel", "completionType": "N_OF_M"}],
        });
        let mut diags = vec![];
        canonicalize("f.yaml", &mut wf, &mut diags);
        assert_eq!(wf["states"][0]["type"], "switch");
        assert_eq!(wf["states"][0]["start"]["kind"], "default");
        assert_eq!(wf["states"][0]["end"]["kind"], "terminate");
        assert_eq!(wf["states"][0]["actionMode"], "parallel");
        assert_eq!(wf["states"][0]["onError"][0]["end"]["kind"], "event");
        assert_eq!(wf["states"][1]["type"], "parallel");
        assert_eq!(wf["states"][1]["completionType"], "n_of_m");
        assert_eq!(wf["events"][0]["kind"], "consumed");
        // the CloudEvent type and user data keep their spelling
        assert_eq!(wf["events"][0]["type"], "SWITCH");
        assert_eq!(
            wf["states"][0]["data"],
            json!({"kind": "DEFAULT", "type": "SWITCH"})
        );
        assert_eq!(diags.len(), 8, "{diags:#?}");
        assert!(diags.iter().all(|d| !d.is_error()));
        assert_eq!(
            diags[1].to_string(),
            "warning: f.yaml: $.states[0].type: \"SWITCH\" read as \"switch\"; write it as the spec does: type: switch"
        );
    }
}

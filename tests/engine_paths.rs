//! Every action-running state type through the same error paths: error retried then caught,
//! error caught at once, error unhandled, action timeout.

mod common;
use common::*;
use flowbroker::engine::{Action, Status};
use serde_json::json;

const ACTION: &str = "{functionRef: {refName: f, parameters: {n: 1}}, timeout: PT1M}";

/// A one-state workflow of `kind` whose single action calls `f`.
fn workflow(kind: &str) -> String {
    let body = match kind {
        "operation" => format!("  type: operation\n  actions: [{ACTION}]\n"),
        "event" => format!("  type: event\n  eventsActions: [{{eventRefs: [Go], actions: [{ACTION}]}}]\n"),
        "parallel" => format!("  type: parallel\n  branches: [{{name: b, actions: [{ACTION}]}}]\n"),
        "foreach" => format!("  type: foreach\n  inputCollection: \"{{{{ $.items }}}}\"\n  iterationParam: item\n  actions: [{ACTION}]\n"),
        "callback" => format!("  type: callback\n  action: {ACTION}\n  eventRef: Go\n"),
        other => panic!("{other}"),
    };
    format!(
        r#"
id: paths
name: paths
events: [{{name: Go, type: go, source: test}}]
functions: [{{name: f, resource: "http://x/f"}}]
states:
- name: S
  start: {{kind: default}}
{body}  retry:
  - {{expression: "{{{{ $.errors[?(@.name == 'Flaky')] }}}}", interval: PT10S, maxAttempts: 1}}
  onError:
  - {{expression: "{{{{ $.errors[?(@.name == 'Flaky' || @.name == 'Known')] }}}}", transition: {{nextState: Caught}}}}
  end: {{kind: default}}
- {{name: Caught, type: inject, data: {{caught: true}}, end: {{kind: default}}}}
"#
    )
}

const KINDS: [&str; 5] = ["operation", "event", "parallel", "foreach", "callback"];

/// Starts an instance and returns the key of the first function call.
fn begin(kind: &str) -> (Env, String) {
    let mut env = Env::yaml(&workflow(kind));
    let mut acts = env.start(json!({"items": [1]}));
    if kind == "event" {
        acts = env.event(event("test", "go", json!({}), &[]));
    }
    let calls = invokes(&acts);
    assert_eq!(calls.len(), 1, "{kind}: {acts:?}");
    assert_eq!(calls[0].2, json!({"n": 1}));
    (env, calls[0].0.clone())
}

#[test]
fn error_retried_then_caught() {
    for kind in KINDS {
        let (mut env, key) = begin(kind);
        let acts = env.fail(&key, "Flaky");
        let retry = format!("{key}/retry");
        assert!(
            timers(&acts).iter().any(|(id, _)| *id == retry),
            "{kind}: {acts:?}"
        );
        let acts = env.fire(&retry);
        let again = invokes(&acts);
        assert_eq!(
            (again[0].0.as_str(), again[0].3),
            (key.as_str(), 1),
            "{kind}"
        );
        env.fail(&key, "Flaky");
        assert_eq!(env.status(), Status::Completed, "{kind}");
        assert_eq!(env.output()["caught"], json!(true), "{kind}");
    }
}

#[test]
fn error_caught_without_retry() {
    for kind in KINDS {
        let (mut env, key) = begin(kind);
        let acts = env.fail(&key, "Known");
        assert!(
            !timers(&acts).iter().any(|(id, _)| id.ends_with("/retry")),
            "{kind}"
        );
        assert_eq!(env.output()["caught"], json!(true), "{kind}");
        assert_eq!(env.output()["error"]["name"], json!("Known"), "{kind}");
    }
}

#[test]
fn error_unhandled_fails() {
    for kind in KINDS {
        let (mut env, key) = begin(kind);
        let acts = env.fail(&key, "Unexpected");
        assert_eq!(env.status(), Status::Failed, "{kind}");
        assert!(
            acts.iter()
                .any(|a| matches!(a, Action::Fail { error } if error.name == "Unexpected")),
            "{kind}"
        );
    }
}

#[test]
fn happy_path_and_timeout() {
    for kind in KINDS {
        let (mut env, key) = begin(kind);
        env.result(&key, json!({"done": kind}));
        if kind == "callback" {
            assert_eq!(env.status(), Status::Waiting);
            env.event(event("test", "go", json!({"answer": 42}), &[]));
            assert_eq!(env.output()["answer"], json!(42));
        }
        assert_eq!(env.status(), Status::Completed, "{kind}");

        let (mut env, key) = begin(kind);
        env.fire(&format!("{key}/timeout"));
        // TimeoutError matches no retry or onError here: the state moves on without a result
        // (a callback too, as its own timeout would).
        assert_eq!(env.status(), Status::Completed, "{kind}");
        assert!(env.output().get("caught").is_none(), "{kind}");
        assert!(env.output().get("done").is_none(), "{kind}");
    }
}

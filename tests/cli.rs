//! The `flowbroker` binary: `validate` and `graph`, run as a user would.

mod root;

use std::process::Command;

fn flowbroker(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flowbroker"))
        .args(args)
        .current_dir(root::root())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A directory of the test's own, removed when the returned guard drops (also when the
/// test fails).
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("flowbroker-cli-{name}-"))
        .tempdir()
        .unwrap()
}

#[test]
fn shipped_workflows_are_valid() {
    let (code, _, err) = flowbroker(&["validate", "workflows"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("5 file(s) checked: 5 valid, 0 invalid"),
        "{err}"
    );
}

#[test]
fn invalid_files_fail_with_located_errors() {
    let guard = temp_dir("bad");
    let dir = guard.path();
    std::fs::copy(
        root::root().join("workflows/nightly-report.yaml"),
        dir.join("good.yaml"),
    )
    .unwrap();
    let bad = std::fs::read_to_string(root::root().join("workflows/credit-check.json"))
        .unwrap()
        .replace("\"nextState\": \"Evaluate\"", "\"nextState\": \"Evaluat\"");
    std::fs::write(dir.join("bad.json"), bad).unwrap();
    std::fs::write(dir.join("broken.yml"), "id: x\nstates: [\n").unwrap();
    let (code, _, err) = flowbroker(&["validate", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("bad.json: $.states[0].transition.nextState: no state named \"Evaluat\" (did you mean \"Evaluate\"?)"), "{err}");
    assert!(err.contains("broken.yml:"), "{err}");
    assert!(
        err.contains("3 file(s) checked: 1 valid, 2 invalid"),
        "{err}"
    );

    let (code, _, err) = flowbroker(&["validate", "--format", "json", dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&err).unwrap();
    assert_eq!(v["valid"], false);
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 3);
    let bad = files
        .iter()
        .find(|f| f["file"].as_str().unwrap().ends_with("bad.json"))
        .unwrap();
    let diags = bad["diagnostics"].as_array().unwrap();
    let error = diags.iter().find(|d| d["severity"] == "error").unwrap();
    assert_eq!(error["path"], "$.states[0].transition.nextState");
    // The now-unreachable state is reported as a warning alongside.
    assert!(diags
        .iter()
        .any(|d| d["severity"] == "warning" && d["path"] == "$.states[1]"));
}

#[test]
fn missing_path_is_an_error() {
    let (code, _, err) = flowbroker(&["validate", "no/such/file.yaml"]);
    assert_eq!(code, 1);
    assert!(err.contains("no/such/file.yaml: $: cannot read"), "{err}");
}

#[test]
fn graph_prints_mermaid() {
    let (code, out, err) = flowbroker(&["graph", "workflows/order-fulfilment.yaml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("flowchart TD\n"), "{out}");
    assert!(out.contains("start --> s0"), "{out}");
    assert!(
        out.contains("s2 -->|\"event PaymentReceived\"| s3"),
        "{out}"
    );
    assert!(out.contains("s2 -->|\"default\"| s4"), "{out}");
    assert!(out.contains("s3 -->|event| end_"), "{out}");
}

#[test]
fn a_sub_workflow_is_valid_with_the_parent_that_defines_what_it_uses() {
    let guard = temp_dir("family");
    let dir = guard.path();
    let examples = root::root().join("tests/fixtures/examples");
    for f in ["job-monitoring.json", "job-submission-error.yaml"] {
        std::fs::copy(examples.join(f), dir.join(f)).unwrap();
    }
    let child = dir.join("job-submission-error.yaml");
    let child = child.to_str().unwrap();
    // Alone, the child calls a function nobody defines: an error that says where to put it.
    let (code, _, err) = flowbroker(&["validate", child]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("$.states[0].actions[0].functionRef.refName: no function named \"reportJobFailed\"; define it under `functions` (or, if this workflow runs as a sub-workflow, in the parent workflow"),
        "{err}"
    );
    // With its parent, it is valid: warnings say where the function comes from, and that the
    // upper-case enumerations and the subflow's missing `waitForCompletion` were read.
    let (code, _, err) = flowbroker(&["validate", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("2 file(s) checked: 2 valid, 0 invalid"),
        "{err}"
    );
    for expected in [
        "job-submission-error.yaml: $.states[0].actions[0].functionRef.refName: function \"reportJobFailed\" is not defined here; taken from workflow \"jobmonitoring\"",
        "job-submission-error.yaml: $.states[0].type: \"OPERATION\" read as \"operation\"",
        "job-submission-error.yaml: $.states[0].actionMode: \"SEQUENTIAL\" read as \"sequential\"",
        "job-monitoring.json: $.states[1].waitForCompletion: subflow state \"SubmitError\" has no `waitForCompletion`; it waits",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in {err}");
    }
    let lines: Vec<&str> = err.lines().collect();
    let (summary, rest) = lines.split_last().unwrap();
    assert!(summary.contains("checked"), "{err}");
    assert!(rest.iter().all(|l| l.starts_with("warning: ")), "{err}");
}

#[test]
fn graph_writes_dot_and_svg() {
    let (code, out, err) = flowbroker(&[
        "graph",
        "workflows/order-fulfilment.yaml",
        "--format",
        "dot",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("digraph workflow {"), "{out}");
    assert!(
        out.contains(r#""s2" -> "s3" [label="event PaymentReceived"];"#),
        "{out}"
    );
    let (code, svg, err) = flowbroker(&[
        "graph",
        "workflows/order-fulfilment.yaml",
        "--format",
        "svg",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        svg.contains("<svg") && svg.trim_end().ends_with("</svg>"),
        "{svg}"
    );
    assert!(svg.contains("event PaymentReceived"), "{svg}");
}

//! The spec's complete example workflows, deployed unchanged from tests/fixtures/spec, run over
//! the real Kafka-protocol broker with their functions mapped to a real HTTP server by name.

mod support;
use serde_json::json;
use support::*;

fn fixture(name: &str) -> String {
    let path = support::root().join("tests/fixtures/spec").join(name);
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn greet_customers_and_send_confirmations() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let fns = Functions::start(|path, body| match path {
        // dataResultsPath `$.finalCustomerGreeting` selects from the result
        "/greet" => (
            200,
            json!({"finalCustomerGreeting": format!("Hola {}!", body["customerName"].as_str().unwrap().trim())}),
        ),
        "/confirm" => (200, json!({"sent": body["orderNumber"]})),
        _ => (404, json!({})),
    });
    let functions = format!(
        "greetingFunction={},sendConfirmationFunction={}",
        fns.url("/greet"),
        fns.url("/confirm")
    );
    let broker = Broker::start(
        &kafka,
        &[
            ("greet.json", &fixture("L3227.json")),
            ("confirm.yaml", &fixture("L2260.yaml")),
        ],
        &[("FLOWBROKER_FUNCTIONS", &functions)],
    );
    let (_, v) = broker.get("/v1/workflows");
    assert_eq!(v["workflows"].as_array().unwrap().len(), 2, "{v}");

    // a customer arrives: the event starts the greeting workflow
    kafka.producer().send(&event(
        "arrival-1",
        "customer-arrival-event-source",
        "customer-arrival-type",
        &[],
        json!({"customer": {"name": "John Michaels"}}),
    ));
    let started = out.wait_events("flowbroker.instance.started", 1, 30);
    let id = started[0].data.as_ref().unwrap()["instanceId"]
        .as_str()
        .unwrap()
        .to_string();
    let done = broker.wait_status(&id, "COMPLETED", 30);
    assert_eq!(done["output"], json!("Hola John Michaels!"));

    // confirmations for the completed orders only, collected in order
    let (code, v) = broker.post(
        "/v1/workflows/sendConfirmWorkflow/instances",
        json!({"orders": [
            {"orderNumber": "1", "completed": true, "email": "a@x"},
            {"orderNumber": "2", "completed": false, "email": "b@x"},
            {"orderNumber": "3", "completed": true, "email": "c@x"},
        ]}),
    );
    assert_eq!(code, 201, "{v}");
    let done = broker.wait_status(v["id"].as_str().unwrap(), "COMPLETED", 30);
    assert_eq!(
        done["output"]["confirmationresults"],
        json!([{"sent": "1"}, {"sent": "3"}])
    );
}

fn example(name: &str) -> String {
    let path = support::root().join("tests/fixtures/examples").join(name);
    std::fs::read_to_string(path).unwrap()
}

/// The job-monitoring example as written: its status check keeps only `jobstatus` (a string)
/// as state data, which is stored as `{"jobstatus": ...}` so the switch's filter sees it; it
/// polls on its durable delay until SUCCEEDED and reports once. A failed submission routes to
/// a subflow state without `waitForCompletion`, which waits for its sub-workflow (written with
/// upper-case enumerations, calling a function only the parent defines) and ends with its result.
#[test]
fn the_job_monitoring_example_polls_then_reports_once_and_waits_for_its_sub_workflow() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let kafka = Kafka::start();
    let checks = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = checks.clone();
    let fns = Functions::start(move |path, body| match path {
        "/submit" if body["name"] == "broken" => (
            500,
            json!({"name": "SubmitJobError", "message": "the queue is closed"}),
        ),
        "/submit" => (
            200,
            json!({"jobuid": format!("uid-{}", body["name"].as_str().unwrap())}),
        ),
        // RUNNING twice, then SUCCEEDED
        "/check" => {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let status = if n < 2 { "RUNNING" } else { "SUCCEEDED" };
            (200, json!({"jobstatus": status}))
        }
        "/succeeded" => (200, json!({"ok": true})),
        "/failed" => (200, json!({"reported": body["name"]})),
        _ => (404, json!({})),
    });
    let functions = format!(
        "submitJob={},checkJobStatus={},reportJobSuceeded={},reportJobFailed={}",
        fns.url("/submit"),
        fns.url("/check"),
        fns.url("/succeeded"),
        fns.url("/failed")
    );
    let broker = Broker::start(
        &kafka,
        &[
            ("job-monitoring.json", &example("job-monitoring.json")),
            (
                "job-submission-error.yaml",
                &example("job-submission-error.yaml"),
            ),
        ],
        &[("FLOWBROKER_FUNCTIONS", &functions)],
    );
    let (_, v) = broker.get("/v1/workflows");
    assert_eq!(v["workflows"].as_array().unwrap().len(), 2, "{v}");

    let (code, v) = broker.post(
        "/v1/workflows/jobmonitoring/instances",
        json!({"job": {"name": "nightly"}}),
    );
    assert_eq!(code, 201, "{v}");
    let done = broker.wait_status(v["id"].as_str().unwrap(), "COMPLETED", 60);
    let calls: Vec<String> = fns.calls().into_iter().map(|(p, _, _)| p).collect();
    let count = |p: &str| calls.iter().filter(|c| *c == p).count();
    assert_eq!(
        (count("/submit"), count("/check"), count("/succeeded")),
        (1, 3, 1),
        "{calls:?}"
    );
    assert_eq!(done["output"]["jobstatus"], json!("SUCCEEDED"));
    let delays = done["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["input"]["kind"] == "timerFired")
        .count();
    assert_eq!(delays, 3, "one durable delay per poll");

    // a failed submission: the subflow state waits for its sub-workflow and ends with its result
    let (code, v) = broker.post(
        "/v1/workflows/jobmonitoring/instances",
        json!({"job": {"name": "broken"}}),
    );
    assert_eq!(code, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    let done = broker.wait_status(&id, "COMPLETED", 60);
    assert_eq!(done["output"]["reported"], json!("broken"), "{done}");
    let (_, child) = broker.get(&format!("/v1/instances/{id}/2/sub"));
    assert_eq!(
        child["workflowId"], "handleJobSubmissionErrorWorkflow",
        "{child}"
    );
    assert_eq!(child["status"], "COMPLETED");
    assert_eq!(
        fns.calls()
            .iter()
            .filter(|(p, _, _)| p == "/failed")
            .count(),
        1
    );
}

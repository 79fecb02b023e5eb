//! The spec's complete example workflows, deployed unchanged from tests/fixtures/spec, run over
//! the real Kafka-protocol broker with their functions mapped to a real HTTP server by name.

mod support;
use serde_json::json;
use support::*;

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/spec")
        .join(name);
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

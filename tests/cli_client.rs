//! The CLI's client commands against a running broker on a real Kafka-protocol broker:
//! `send` publishes a CloudEvent that starts and continues an instance, `start` starts one over
//! the API, `instances` lists them, `show` tells their story, `cancel` stops one, each with
//! `--output json` too; unknown ids and a missing token fail with a message and exit 1.

mod support;
use serde_json::{json, Value};
use std::process::Command;
use support::*;

const ORDERS: &str = r#"
id: orders
name: orders
events:
- {name: Placed, type: order.placed, source: /shop, correlation: [{contextAttributeName: orderid}]}
- {name: Paid, type: order.paid, source: /shop, correlation: [{contextAttributeName: orderid}]}
states:
- name: Placed
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Placed]}]
  transition: {nextState: AwaitPayment}
- name: AwaitPayment
  type: event
  eventsActions: [{eventRefs: [Paid]}]
  end: {kind: default}
"#;

const TOKEN: &str = "cli-test-token-0123456789";

/// Runs the binary with the broker's address and token in the environment, as a user would.
fn cli(broker: &Broker, kafka: &Kafka, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flowbroker"))
        .args(args)
        .env("FLOWBROKER_SERVER", format!("http://{}", broker.http))
        .env("FLOWBROKER_HTTP_AUTH_TOKEN", TOKEN)
        .env("FLOWBROKER_KAFKA_BROKERS", kafka.brokers())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(r: (i32, String, String)) -> String {
    assert_eq!(r.0, 0, "stdout: {}\nstderr: {}", r.1, r.2);
    r.1
}

#[test]
fn the_cli_drives_a_running_broker() {
    let kafka = Kafka::start();
    let broker = Broker::start(
        &kafka,
        &[("orders.yaml", ORDERS)],
        &[("FLOWBROKER_HTTP_AUTH_TOKEN", TOKEN)],
    );

    // send: the event goes to the input topic and starts an instance
    let id = ok(cli(
        &broker,
        &kafka,
        &[
            "send",
            "--type",
            "order.placed",
            "--source",
            "/shop",
            "--attr",
            "orderid=A1",
            "--data",
            r#"{"total": 12}"#,
        ],
    ));
    let event_id = id.trim().to_string();
    assert!(!event_id.is_empty());
    let waiting = wait_for(60, "the sent event to start an instance", || {
        let list = broker.instances("orders");
        list.into_iter().find(|i| i["status"] == "WAITING")
    });
    let instance = waiting["id"].as_str().unwrap().to_string();
    assert_eq!(waiting["correlation"]["orderid"], "A1");
    assert_eq!(waiting["data"]["total"], 12);

    // instances: a table with the instance, and JSON with --output json
    let table = ok(cli(&broker, &kafka, &["instances", "--workflow", "orders"]));
    let mut lines = table.lines();
    let head = lines.next().unwrap();
    assert!(
        head.starts_with("ID") && head.contains("WORKFLOW") && head.contains("STATUS"),
        "{table}"
    );
    let row = lines.find(|l| l.starts_with(&instance)).expect(&table);
    assert!(
        row.contains("orders") && row.contains("WAITING") && row.contains("AwaitPayment"),
        "{row}"
    );
    let json_list: Value = serde_json::from_str(&ok(cli(
        &broker,
        &kafka,
        &["instances", "--output", "json"],
    )))
    .unwrap();
    assert_eq!(json_list["instances"][0]["id"], json!(instance));
    let none = ok(cli(&broker, &kafka, &["instances", "--status", "failed"]));
    assert_eq!(none.lines().count(), 1, "only the header: {none}");

    // send continues it; show tells the story
    ok(cli(
        &broker,
        &kafka,
        &[
            "send",
            "--type",
            "order.paid",
            "--source",
            "/shop",
            "--attr",
            "orderid=A1",
        ],
    ));
    broker.wait_status(&instance, "COMPLETED", 60);
    let shown = ok(cli(&broker, &kafka, &["show", &instance]));
    assert!(shown.contains(&format!("id         {instance}")), "{shown}");
    assert!(shown.contains("status     COMPLETED"), "{shown}");
    assert!(
        shown.contains(&format!("start by order.placed {event_id}")),
        "{shown}"
    );
    assert!(shown.contains("event order.paid"), "{shown}");
    assert!(shown.contains("\"total\": 12"), "data: {shown}");
    let shown: Value = serde_json::from_str(&ok(cli(
        &broker,
        &kafka,
        &["show", &instance, "--output", "json"],
    )))
    .unwrap();
    assert_eq!(shown["history"].as_array().unwrap().len(), 2);

    // start over the API, then cancel
    let started = ok(cli(
        &broker,
        &kafka,
        &["start", "orders", "--data", r#"{"via": "cli"}"#],
    ));
    let second = started.trim().to_string();
    let v = broker.wait_status(&second, "WAITING", 30);
    assert_eq!(v["data"]["via"], "cli");
    let cancelled = ok(cli(&broker, &kafka, &["cancel", &second]));
    assert!(cancelled.contains(&second), "{cancelled}");
    broker.wait_status(&second, "CANCELLED", 30);

    // errors say what was wrong and exit 1
    let (code, _, err) = cli(&broker, &kafka, &["show", "no-such-instance"]);
    assert_eq!(code, 1);
    assert!(err.contains("no instance \"no-such-instance\""), "{err}");
    let (code, _, err) = cli(&broker, &kafka, &["cancel", &instance]);
    assert_eq!(code, 1, "cancelling a finished instance: {err}");
    assert!(err.contains("409"), "{err}");
    let (code, _, err) = cli(&broker, &kafka, &["start", "nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("404"), "{err}");
    let (code, _, err) = cli(&broker, &kafka, &["start", "orders", "--data", "[1]"]);
    assert_eq!(code, 1);
    assert!(err.contains("JSON object"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_flowbroker"))
        .args(["instances"])
        .env("FLOWBROKER_SERVER", format!("http://{}", broker.http))
        .env_remove("FLOWBROKER_HTTP_AUTH_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("401") && err.contains("--token"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_flowbroker"))
        .args([
            "instances",
            "--server",
            &format!("http://127.0.0.1:{}", free_port()),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot reach the broker") && err.contains("is it running"),
        "{err}"
    );
}

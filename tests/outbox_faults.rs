//! Outputs Kafka refuses for good never block the outbox: a produced event larger than Kafka
//! accepts goes to the dead-letter topic with the reason (without its payload), the outbox
//! drains, later events of the workflow flow, and a restart does not send it again.

mod support;
use serde_json::{json, Value};
use support::{event, metric_sum, wait_for, Broker, Functions, Kafka};

const REPORTS: &str = r#"
id: reports
name: reports
functions: [{name: render, resource: render}]
events:
- {name: Requested, type: report.requested, source: /reports, correlation: [{contextAttributeName: reportid}]}
- {name: Ready, type: report.ready, kind: produced}
states:
- name: Render
  type: event
  start: {kind: default}
  eventsActions:
  - eventRefs: [Requested]
    actions: [{functionRef: {refName: render, parameters: {size: "{{ $.size }}"}}}]
  end:
    kind: event
    produceEvent: {eventRef: Ready, data: "{{ $ }}"}
"#;

fn dead_letters(b: &Broker) -> i64 {
    metric_sum(
        &b.metrics(),
        "flowbroker_events_dead_lettered_total",
        "reason=\"undeliverable\"",
    )
}

#[test]
fn an_event_kafka_refuses_is_dead_lettered_and_the_outbox_moves_on() {
    let kafka = Kafka::start();
    let seen = kafka.collect(&["flowbroker.out", "flowbroker.dlq"]);
    // the function returns a body of the size asked for: 3 MB is more than Kafka takes
    let fns = Functions::start(|_, body: &Value| {
        let n = body["size"].as_u64().unwrap_or(10) as usize;
        (200, json!({"body": "x".repeat(n)}))
    });
    let render = fns.url("/render");
    let mut broker = Broker::start(
        &kafka,
        &[("reports.yaml", REPORTS)],
        &[
            ("FLOWBROKER_FUNCTIONS", &format!("render={render}")),
            // the engine lets it through (its limit is above Kafka's): Kafka refuses it
            ("FLOWBROKER_KAFKA_MAX_EVENT_BYTES", "10000000"),
        ],
    );
    let p = kafka.producer();
    let request = |id: &str, size: u64| {
        event(
            id,
            "/reports",
            "report.requested",
            &[("reportid", id)],
            json!({"size": size}),
        )
    };
    p.send(&request("big", 3_000_000));
    p.send(&request("small-1", 10));
    // the small report is produced although the big one's record came first
    let ready = seen.wait_events("report.ready", 1, 60);
    assert_eq!(ready.len(), 1);
    // the produced event and the `completed` lifecycle event (which carries the output) are
    // both too large: both are dead-lettered
    let dlq = wait_for(60, "the big report's dead-letter copies", || {
        let d: Vec<_> = seen
            .all()
            .into_iter()
            .filter(|r| r.topic == "flowbroker.dlq")
            .collect();
        (d.len() >= 2).then_some(d)
    });
    let copy = dlq
        .iter()
        .find(|r| r.headers["flowbroker-dlq-type"] == "report.ready")
        .expect("the report's copy");
    let lifecycle = dlq
        .iter()
        .find(|r| r.headers["flowbroker-dlq-type"] == "flowbroker.instance.completed")
        .expect("the lifecycle event's copy");
    assert_eq!(
        lifecycle.headers["flowbroker-dlq-topic"],
        "flowbroker.lifecycle"
    );
    assert_eq!(copy.headers["flowbroker-dlq-kind"], "undeliverable");
    assert_eq!(copy.headers["flowbroker-dlq-type"], "report.ready");
    assert_eq!(copy.headers["flowbroker-dlq-topic"], "flowbroker.out");
    assert!(
        copy.headers["flowbroker-dlq-reason"]
            .to_lowercase()
            .contains("too large"),
        "{:?}",
        copy.headers
    );
    let bytes: usize = copy.headers["flowbroker-dlq-payload-bytes"]
        .parse()
        .unwrap();
    assert!(bytes > 3_000_000, "{bytes}");
    assert!(
        copy.payload.is_none(),
        "the payload Kafka refused is left out"
    );
    assert_eq!(
        copy.headers["ce_type"], "report.ready",
        "the event's attributes are kept"
    );
    wait_for(30, "the outbox to drain", || {
        (metric_sum(&broker.metrics(), "flowbroker_outbox_pending", "") == 0).then_some(())
    });
    assert_eq!(dead_letters(&broker), 2);

    // after a restart nothing of it is sent again, and the stream goes on
    broker.kill();
    broker.start_again();
    p.send(&request("small-2", 10));
    seen.wait_events("report.ready", 2, 60);
    wait_for(30, "the outbox to drain after the restart", || {
        (metric_sum(&broker.metrics(), "flowbroker_outbox_pending", "") == 0).then_some(())
    });
    let copies = seen
        .all()
        .into_iter()
        .filter(|r| r.topic == "flowbroker.dlq")
        .count();
    assert_eq!(copies, 2, "the refused records were not sent again");
    assert_eq!(
        dead_letters(&broker),
        0,
        "the new process dead-lettered nothing"
    );
    assert!(
        !broker.log().contains("produce failed; retrying"),
        "no retry loop"
    );
}

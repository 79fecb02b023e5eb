//! Scheduled starts with a manual clock: the core (store, registry, timers, schedules) driven
//! in-process, time moved by hand, restarts simulated by reopening the store. What the core
//! would produce is read from its outbox channel.

mod support;
use chrono::Duration;
use flowbroker::config::CatchUp;
use support::manual::{t, Harness};

fn cron(expr: &str, extra: &str) -> String {
    format!(
        r#"
id: report
name: report
{extra}
states:
- name: Run
  type: inject
  start:
    kind: scheduled
    schedule: {{cron: "{expr}", timezone: UTC, directInvoke: allow}}
  data: {{done: true}}
  end: {{kind: default}}
"#
    )
}

#[test]
fn each_tick_starts_one_instance_with_its_time() {
    let mut h = Harness::new("2024-01-01T10:00:30Z", |_| {});
    h.deploy("r.yaml", &cron("* * * * *", ""));
    assert!(
        h.ticks("report").is_empty(),
        "nothing is due at deploy time"
    );
    h.at("2024-01-01T10:01:00Z");
    h.at("2024-01-01T10:01:00Z");
    h.at("2024-01-01T10:01:59Z");
    assert_eq!(h.ticks("report"), ["2024-01-01T10:01:00Z"]);
    h.at("2024-01-01T10:02:00.050Z");
    assert_eq!(
        h.ticks("report"),
        ["2024-01-01T10:01:00Z", "2024-01-01T10:02:00Z"]
    );
    // six fields with seconds and Quartz `?`
    h.deploy("r.yaml", &cron("*/20 * * * * ?", ""));
    h.at("2024-01-01T10:02:20Z");
    h.at("2024-01-01T10:02:40Z");
    assert_eq!(
        h.ticks("report")[2..],
        ["2024-01-01T10:02:20Z", "2024-01-01T10:02:40Z"]
    );
}

#[test]
fn a_restart_never_refires_and_catch_up_one_fires_the_latest_missed_tick() {
    let mut h = Harness::new("2024-01-01T10:00:30Z", |_| {});
    h.deploy("r.yaml", &cron("* * * * *", ""));
    h.at("2024-01-01T10:01:00Z");
    h.boot(); // crash right after the tick committed
    h.at("2024-01-01T10:01:30Z");
    assert_eq!(
        h.ticks("report"),
        ["2024-01-01T10:01:00Z"],
        "no re-fire after restart"
    );
    // down from 10:01:30 to 10:05:30: ticks 10:02..10:05 were missed
    h.clock.set(t("2024-01-01T10:05:30Z"));
    h.boot();
    assert_eq!(
        h.ticks("report"),
        ["2024-01-01T10:01:00Z", "2024-01-01T10:05:00Z"]
    );
    h.at("2024-01-01T10:06:00Z");
    assert_eq!(h.ticks("report").len(), 3);
}

#[test]
fn catch_up_none_and_all_with_a_bound_and_per_workflow_override() {
    for (policy, meta, expect) in [
        (CatchUp::None, "", vec![]),
        (CatchUp::All, "", vec!["10:03", "10:04", "10:05"]),
        (CatchUp::None, "metadata: {catchUp: one}", vec!["10:05"]),
        (CatchUp::One, "metadata: {catchUp: none}", vec![]),
    ] {
        let mut h = Harness::new("2024-01-01T10:00:30Z", |c| {
            c.schedules.catch_up = policy;
            c.schedules.max_catch_up = 3;
        });
        h.deploy("r.yaml", &cron("* * * * *", meta));
        h.at("2024-01-01T10:01:00Z");
        h.clock.set(t("2024-01-01T10:05:30Z"));
        h.boot();
        let got: Vec<String> = h.ticks("report")[1..]
            .iter()
            .map(|s| s[11..16].to_string())
            .collect();
        assert_eq!(got, expect, "{policy:?} {meta}");
        h.at("2024-01-01T10:06:00Z");
        assert_eq!(h.ticks("report").last().unwrap(), "2024-01-01T10:06:00Z");
    }
}

#[test]
fn redeploys_never_refire_and_a_new_expression_starts_at_its_next_tick() {
    let mut h = Harness::new("2024-01-01T10:00:30Z", |_| {});
    h.deploy("r.yaml", &cron("* * * * *", ""));
    h.at("2024-01-01T10:01:00Z");
    // an unrelated edit
    h.deploy("r.yaml", &cron("* * * * *", "description: edited"));
    h.at("2024-01-01T10:01:40Z");
    assert_eq!(h.ticks("report"), ["2024-01-01T10:01:00Z"]);
    // a new expression: its next tick, no catch-up of the old one
    h.deploy("r.yaml", &cron("*/5 * * * *", ""));
    h.at("2024-01-01T10:04:00Z");
    assert_eq!(h.ticks("report").len(), 1);
    h.at("2024-01-01T10:05:00Z");
    assert_eq!(h.ticks("report")[1], "2024-01-01T10:05:00Z");
    // delete: stops
    h.remove("r.yaml");
    h.at("2024-01-01T10:10:00Z");
    h.at("2024-01-01T10:15:00Z");
    assert_eq!(h.ticks("report").len(), 2);
    // back: the ticks missed while it was absent follow the catch-up policy (one)
    h.deploy("r.yaml", &cron("*/5 * * * *", ""));
    assert_eq!(h.ticks("report")[2], "2024-01-01T10:15:00Z");
    assert_eq!(h.ticks("report").len(), 3);
}

fn dst(zone: &str, expr: &str, from: &str, until: &str) -> Vec<String> {
    let mut h = Harness::new(from, |_| {});
    h.deploy(
        "r.yaml",
        &cron(expr, "").replace("timezone: UTC", &format!("timezone: {zone}")),
    );
    let mut now = t(from);
    while now < t(until) {
        now += Duration::minutes(15);
        h.at(&now.to_rfc3339());
    }
    let tz: chrono_tz::Tz = zone.parse().unwrap();
    h.ticks("report")
        .iter()
        .map(|s| t(s).with_timezone(&tz).to_rfc3339())
        .collect()
}

#[test]
fn daylight_saving_gap_fires_once_after_it_and_repeat_fires_once_at_first_occurrence() {
    // Europe/Berlin springs forward 2021-03-28 02:00 -> 03:00: 02:30 does not exist
    assert_eq!(
        dst(
            "Europe/Berlin",
            "30 2 * * *",
            "2021-03-27T00:00:00Z",
            "2021-03-29T12:00:00Z"
        ),
        [
            "2021-03-27T02:30:00+01:00",
            "2021-03-28T03:00:00+02:00",
            "2021-03-29T02:30:00+02:00"
        ]
    );
    // and falls back 2021-10-31 03:00 -> 02:00: 02:30 happens twice, fires once
    assert_eq!(
        dst(
            "Europe/Berlin",
            "30 2 * * *",
            "2021-10-30T00:00:00Z",
            "2021-11-01T12:00:00Z"
        ),
        [
            "2021-10-30T02:30:00+02:00",
            "2021-10-31T02:30:00+02:00",
            "2021-11-01T02:30:00+01:00"
        ]
    );
    // America/New_York: 2021-03-14 02:00 -> 03:00, 2021-11-07 02:00 -> 01:00 (hourly)
    assert_eq!(
        dst(
            "America/New_York",
            "0 * * * *",
            "2021-03-14T05:30:00Z",
            "2021-03-14T08:30:00Z"
        ),
        [
            "2021-03-14T01:00:00-05:00",
            "2021-03-14T03:00:00-04:00",
            "2021-03-14T04:00:00-04:00"
        ]
    );
    assert_eq!(
        dst(
            "America/New_York",
            "30 1 * * *",
            "2021-11-07T04:00:00Z",
            "2021-11-07T08:00:00Z"
        ),
        ["2021-11-07T01:30:00-04:00"]
    );
}

#[test]
fn intervals_gate_start_events_and_direct_invoke_gates_direct_starts() {
    let wf = |interval: &str, direct: &str| {
        format!(
            r#"
id: window
name: window
events:
- {{name: Go, type: go, source: /t}}
states:
- name: Wait
  type: event
  start:
    kind: scheduled
    schedule: {{interval: "{interval}", directInvoke: {direct}}}
  eventsActions:
  - eventRefs: [Go]
  end: {{kind: default}}
"#
        )
    };
    let mut h = Harness::new("2024-01-01T09:00:00Z", |_| {});
    h.deploy("w.yaml", &wf("2024-01-01T10:00:00Z/PT1H", "exclusive"));
    let r = h.event("e1", "/t", "go");
    assert!(r["started"].as_array().unwrap().is_empty());
    assert!(
        r["rejected"]
            .as_str()
            .unwrap()
            .contains("starts only between"),
        "{r}"
    );
    let refused = h.start("window").unwrap_err();
    assert!(refused.contains("directInvoke"), "{refused}");
    h.at("2024-01-01T10:30:00Z");
    let r = h.event("e2", "/t", "go");
    assert_eq!(r["started"].as_array().unwrap().len(), 1, "{r}");
    h.at("2024-01-01T11:00:01Z");
    assert!(h.event("e3", "/t", "go")["rejected"].is_string());
    // allow: direct starts work outside the window
    h.deploy("w.yaml", &wf("2024-01-01T10:00:00Z/PT1H", "allow"));
    assert!(h.start("window").is_ok());
    // a bare duration counts from the first deployment (09:00 here): until 11:00
    h.deploy("w.yaml", &wf("PT2H", "allow"));
    h.at("2024-01-01T10:59:00Z");
    let r = h.event("e4", "/t", "go");
    assert_eq!(
        r["delivered"].as_array().unwrap().len(),
        1,
        "the direct start waits: {r}"
    );
    let r = h.event("e4b", "/t", "go");
    assert_eq!(
        r["started"].as_array().unwrap().len(),
        1,
        "inside the window: {r}"
    );
    h.at("2024-01-01T11:01:00Z");
    assert!(h.event("e5", "/t", "go")["rejected"].is_string());
}

/// A workflow whose event start state the schedule starts every minute, on a `Tick` event
/// (`clock.tick` from `/clock`) with the `correlation` rules given.
fn ticker(correlation: &str) -> String {
    format!(
        r#"
id: ticker
name: ticker
events:
- {{name: Tick, type: clock.tick, source: /clock, correlation: {correlation}}}
states:
- name: OnTick
  type: event
  start:
    kind: scheduled
    schedule: {{cron: "* * * * *", timezone: UTC, directInvoke: exclusive}}
  eventsActions:
  - eventRefs: [Tick]
  end: {{kind: default}}
"#
    )
}

#[test]
fn cron_on_an_event_start_state_issues_the_start_event_itself() {
    let wf = ticker("[{contextAttributeName: kind, contextAttributeValue: minute}]");
    let mut h = Harness::new("2024-01-01T10:00:30Z", |_| {});
    h.deploy("t.yaml", &wf);
    h.at("2024-01-01T10:01:00Z");
    h.at("2024-01-01T10:02:00Z");
    assert_eq!(h.started.len(), 2);
    assert!(
        h.start("ticker").is_err(),
        "exclusive: only the schedule starts it"
    );
    // the tick events carry the fixed correlation value; one without it matches nothing
    let r = h.event("x", "/clock", "clock.tick");
    assert!(r["started"].as_array().unwrap().is_empty(), "{r}");
}

#[test]
fn a_tick_sets_the_attributes_its_correlation_rules_name() {
    // rules on `subject` and `source` (spec attributes) beside an extension: the tick writes
    // `subject` and the extension with the tick's id, and a rule on `source` reads the
    // definition's source; before, all three went into extensions, so `subject` never matched
    // and a second `source` key made the stored event unreadable
    let wf = ticker(
        "[{contextAttributeName: subject}, {contextAttributeName: Source}, {contextAttributeName: runId}]",
    );
    let mut h = Harness::new("2024-01-01T10:00:30Z", |_| {});
    h.deploy("t.yaml", &wf);
    h.at("2024-01-01T10:01:00Z");
    h.at("2024-01-01T10:02:00Z");
    assert_eq!(h.started.len(), 2, "{:?}", h.events);
    let mut ticks = vec![];
    for (id, _, _) in h.started.clone() {
        let stored = h.stored(&id).expect("the instance record reads back");
        let inst = &stored["instance"];
        assert_eq!(inst["status"], "COMPLETED", "{stored}");
        let data = &inst["data"];
        let tick = data["subject"]
            .as_str()
            .expect("subject in the data")
            .to_string();
        assert_eq!(data["runId"], tick.as_str(), "{stored}");
        assert_eq!(data["Source"], "/clock", "{stored}");
        let history = h.history(&id);
        let event = &history[0]["input"]["events"][0];
        assert_eq!(event["subject"], tick.as_str(), "{history:?}");
        assert_eq!(event["source"], "/clock", "{history:?}");
        assert_eq!(event["runid"], tick.as_str(), "{history:?}");
        ticks.push(tick);
    }
    assert_ne!(ticks[0], ticks[1], "each tick its own correlation key");
    // read back as the broker reads them (typed: a key written twice is an error, which a
    // untyped value would hide)
    let mut read = 0;
    for w in h.export() {
        let Some(v) = &w.value else { continue };
        match w.table {
            flowbroker::store::Table::Instances => {
                flowbroker::store::Txn::decode::<flowbroker::broker::records::InstanceRecord>(
                    w.table, &w.key, v,
                )
                .unwrap_or_else(|e| panic!("{}: {e}", w.key));
                read += 1;
            }
            flowbroker::store::Table::History => {
                flowbroker::store::Txn::decode::<flowbroker::broker::records::HistoryEntry>(
                    w.table, &w.key, v,
                )
                .unwrap_or_else(|e| panic!("{}: {e}", w.key));
                read += 1;
            }
            _ => {}
        }
    }
    assert_eq!(read, 4, "two instances and their history entries");
}

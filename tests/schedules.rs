//! Scheduled starts with a manual clock: the core (store, registry, timers, schedules) driven
//! in-process, time moved by hand, restarts simulated by reopening the store. What the core
//! would produce is read from its outbox channel.

use chrono::{DateTime, Duration, Utc};
use flowbroker::broker::core::{Core, Outlets, Shared};
use flowbroker::broker::records::OutRecord;
use flowbroker::broker::{Cmd, ManualClock};
use flowbroker::config::{CatchUp, Config};
use flowbroker::metrics::Metrics;
use flowbroker::store::Store;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::mpsc;

struct Harness {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    cfg: Config,
    core: Option<Core>,
    out: mpsc::UnboundedReceiver<Vec<(String, OutRecord)>>,
    files: BTreeMap<String, String>,
    /// Every `flowbroker.instance.started` seen: (instance id, workflow, input).
    started: Vec<(String, String, Value)>,
}

fn t(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

impl Harness {
    fn new(at: &str, cfg: impl FnOnce(&mut Config)) -> Harness {
        let mut c = Config {
            timezone: "UTC".into(),
            ..Config::default()
        };
        cfg(&mut c);
        let (_, rx) = mpsc::unbounded_channel();
        let mut h = Harness {
            dir: tempfile::tempdir().unwrap(),
            clock: Arc::new(ManualClock::new(t(at))),
            cfg: c,
            core: None,
            out: rx,
            files: BTreeMap::new(),
            started: vec![],
        };
        h.boot();
        h
    }

    /// (Re)opens the store and builds a core, as a broker start does.
    fn boot(&mut self) {
        self.core = None; // a crash: nothing but committed state survives
        let store = Arc::new(Store::open(&self.dir.path().join("store")).unwrap());
        let (ptx, prx) = mpsc::unbounded_channel();
        let (itx, _irx) = mpsc::unbounded_channel();
        std::mem::forget(_irx);
        let mut core = Core::new(
            store,
            Arc::new(self.cfg.clone()),
            Arc::new(Metrics::new()),
            self.clock.clone(),
            Outlets {
                produce: ptx,
                invoke: itx,
                commit_offsets: Box::new(|_| {}),
            },
            Arc::new(Shared::default()),
        )
        .unwrap();
        core.process(vec![Cmd::Files(self.files.clone())]).unwrap();
        self.out = prx;
        self.core = Some(core);
        self.drain();
    }

    fn deploy(&mut self, name: &str, text: &str) {
        self.files.insert(format!("/wf/{name}"), text.to_string());
        self.sync();
    }

    fn remove(&mut self, name: &str) {
        self.files.remove(&format!("/wf/{name}"));
        self.sync();
    }

    fn sync(&mut self) {
        let files = self.files.clone();
        self.core
            .as_mut()
            .unwrap()
            .process(vec![Cmd::Files(files)])
            .unwrap();
        self.drain();
    }

    /// Moves the clock and lets the core fire what is due (as its timer would).
    fn at(&mut self, when: &str) {
        self.clock.set(t(when));
        self.core.as_mut().unwrap().process(vec![]).unwrap();
        self.drain();
    }

    fn drain(&mut self) {
        while let Ok(batch) = self.out.try_recv() {
            for (_, rec) in batch {
                if let OutRecord::Event { event, .. } = rec {
                    if event.event_type == "flowbroker.instance.started" {
                        let d = event.data.unwrap();
                        self.started.push((
                            d["instanceId"].as_str().unwrap().to_string(),
                            d["workflowId"].as_str().unwrap().to_string(),
                            d["input"].clone(),
                        ));
                    }
                }
            }
        }
    }

    /// Scheduled times of the instances started for `wf`, in order.
    fn ticks(&self, wf: &str) -> Vec<String> {
        self.started
            .iter()
            .filter(|s| s.1 == wf)
            .map(|s| s.2["scheduledTime"].as_str().unwrap_or("-").to_string())
            .collect()
    }

    fn start(&mut self, wf: &str) -> Result<String, String> {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        self.core
            .as_mut()
            .unwrap()
            .process(vec![Cmd::Start {
                workflow: wf.into(),
                input: json!({}),
                reply: tx,
            }])
            .unwrap();
        self.drain();
        rx.try_recv().unwrap().map_err(|e| e.to_string())
    }

    fn event(&mut self, id: &str, source: &str, ty: &str) -> Value {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let event = flowbroker::engine::Event {
            id: id.into(),
            source: source.into(),
            event_type: ty.into(),
            time: None,
            datacontenttype: None,
            subject: None,
            data: Some(json!({})),
            extensions: Default::default(),
        };
        self.core
            .as_mut()
            .unwrap()
            .process(vec![Cmd::Event { event, reply: tx }])
            .unwrap();
        self.drain();
        serde_json::to_value(rx.try_recv().unwrap().unwrap()).unwrap()
    }
}

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

#[test]
fn cron_on_an_event_start_state_issues_the_start_event_itself() {
    let wf = r#"
id: ticker
name: ticker
events:
- {name: Tick, type: clock.tick, source: /clock, correlation: [{contextAttributeName: kind, contextAttributeValue: minute}]}
states:
- name: OnTick
  type: event
  start:
    kind: scheduled
    schedule: {cron: "* * * * *", timezone: UTC, directInvoke: exclusive}
  eventsActions:
  - eventRefs: [Tick]
  end: {kind: default}
"#;
    let mut h = Harness::new("2024-01-01T10:00:30Z", |_| {});
    h.deploy("t.yaml", wf);
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

//! A per-second cron workflow against the real Kafka-protocol broker, with the broker process
//! SIGKILLed mid-run and restarted: one instance per tick, no duplicate, and (catch-up `all`)
//! no gap. Each tick calls a function with its scheduled time; the calls are counted as the
//! function server saw them (not deduplicated by any id), so a tick that fired twice shows.

mod support;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use support::*;

/// A per-second cron workflow whose tick calls `beat` with its scheduled time.
const EVERY_SECOND: &str = r#"
id: heartbeat
name: heartbeat
functions:
- {name: beat, resource: beat}
states:
- name: Beat
  type: operation
  start:
    kind: scheduled
    schedule: {cron: "* * * * * ?", timezone: UTC, directInvoke: exclusive}
  actionMode: sequential
  actions: [{functionRef: {refName: beat, parameters: {tick: "{{ $.scheduledTime }}"}}}]
  end: {kind: default}
"#;

fn ticks(out: &Collector) -> Vec<String> {
    out.events("flowbroker.instance.started")
        .into_iter()
        .map(|e| {
            e.data.unwrap()["input"]["scheduledTime"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn per_second_cron_survives_sigkill_with_one_instance_per_tick() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let fns = Functions::start(|_, _| (200, json!({"ok": true})));
    let mut broker = Broker::start(
        &kafka,
        &[("heartbeat.yaml", EVERY_SECOND)],
        &[
            ("FLOWBROKER_SCHEDULES_CATCH_UP", "all"),
            (
                "FLOWBROKER_FUNCTIONS",
                &format!("beat={}", fns.url("/beat")),
            ),
        ],
    );
    wait_for(30, "three ticks", || (ticks(&out).len() >= 3).then_some(()));
    broker.kill();
    // a call in flight at the kill is invoked again after the restart (at least once, with
    // the same idempotency key); that is the only tick allowed a second call
    let calls_at_kill = fns.calls().len();
    // down for a few ticks
    let down_at = std::time::Instant::now();
    wait_for(10, "three seconds of downtime", || {
        (down_at.elapsed().as_secs() >= 3).then_some(())
    });
    broker.restart();
    // six seconds of ticks after the restart (the missed ones are caught up on the way)
    let restarted = chrono::Utc::now();
    wait_for(30, "ticks after the restart", || {
        let latest = ticks(&out)
            .iter()
            .filter_map(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok())
            .max()?;
        (latest >= restarted + chrono::Duration::seconds(6)).then_some(())
    });
    let (_, sched) = broker.get("/v1/schedules");
    let s = &sched["schedules"][0];
    assert_eq!(s["workflowId"], json!("heartbeat"));
    assert_eq!(s["cron"], json!("* * * * * ?"));
    assert!(
        s["nextFireTime"].is_string() && s["lastFiredTick"].is_string(),
        "{s}"
    );
    broker.kill();

    // every tick's function call, as the function server counted them
    let mut per_tick: BTreeMap<String, (usize, BTreeSet<String>)> = BTreeMap::new();
    for (_, key, body) in fns.calls() {
        let tick = body["tick"].as_str().expect("a tick").to_string();
        let e = per_tick.entry(tick).or_default();
        e.0 += 1;
        e.1.insert(key);
    }
    let twice: Vec<&String> = per_tick
        .iter()
        .filter(|(_, (n, _))| *n > 1)
        .map(|(t, _)| t)
        .collect();
    assert!(
        twice.len() <= 1
            && per_tick
                .values()
                .all(|(n, keys)| *n <= 2 && keys.len() == 1),
        "each tick called its function once (one may repeat the call in flight at the kill, \
         {calls_at_kill} calls by then): {per_tick:?}"
    );

    let all = ticks(&out);
    let called: BTreeSet<chrono::DateTime<chrono::Utc>> =
        per_tick.keys().map(|t| t.parse().unwrap()).collect();
    let unique: BTreeSet<chrono::DateTime<chrono::Utc>> =
        all.iter().map(|t| t.parse().unwrap()).collect();
    assert_eq!(unique.len(), all.len(), "no tick started twice: {all:?}");
    let first = *unique.first().unwrap();
    let last = *unique.last().unwrap();
    let expected = (last - first).num_seconds() + 1;
    assert_eq!(
        unique.len() as i64,
        expected,
        "catch-up `all` leaves no gap between {first} and {last}: {all:?}"
    );
    assert!(expected >= 12, "the run spanned the downtime");
    assert!(
        unique.iter().all(|t| called.contains(t)),
        "every tick that started an instance called its function"
    );
}

//! A per-second cron workflow against the real Kafka-protocol broker, with the broker process
//! SIGKILLed mid-run and restarted: one instance per tick, no duplicate, and (catch-up `all`)
//! no gap.

mod support;
use serde_json::json;
use std::collections::BTreeSet;
use support::*;

/// A per-second cron workflow (catch-up per the broker's `schedules.catch_up`).
const EVERY_SECOND: &str = include_str!("fixtures/heartbeat.yaml");

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
    let mut broker = Broker::start(
        &kafka,
        &[("heartbeat.yaml", EVERY_SECOND)],
        &[("FLOWBROKER_SCHEDULES_CATCH_UP", "all")],
    );
    wait_for(30, "three ticks", || (ticks(&out).len() >= 3).then_some(()));
    broker.kill();
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

    let all = ticks(&out);
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
}

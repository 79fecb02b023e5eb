//! Tables that grow with intake are swept in proportion to it: under a steady stream the dedupe
//! table and the finished instances kept for retention stay at what their windows hold, even
//! when the periodic sweep never runs (here, under its 5 s period). And what the store keeps
//! in memory of the instances is only those that wait.

mod support;
use chrono::Duration;
use flowbroker::engine::Event;
use flowbroker::store::Table;
use serde_json::json;
use support::manual::Harness;

const ONCE: &str = r#"
id: once
name: once
events:
- {name: Go, type: once.go, source: /once}
states:
- {name: Go, type: event, start: {kind: default}, eventsActions: [{eventRefs: [Go]}], end: {kind: default}}
"#;

fn go(n: usize) -> Event {
    Event {
        id: format!("e{n}"),
        source: "/once".into(),
        event_type: "once.go".into(),
        time: None,
        datacontenttype: None,
        subject: None,
        data: Some(json!({})),
        extensions: Default::default(),
    }
}

/// `ONCE` deployed, with a 1 s dedupe window and 1 s retention.
fn windowed() -> Harness {
    let mut h = Harness::new("2026-01-01T00:00:00Z", |c| {
        c.dedupe_window = "PT1S".into();
        c.retention = "PT1S".into();
    });
    h.deploy("once.yaml", ONCE);
    h
}

/// 100 events every 100 ms for 4.9 s, with a 1 s dedupe window and 1 s retention: each table
/// holds about one window of intake (1,000 entries), never the whole stream (4,900).
#[test]
fn dedupe_and_retention_keep_pace_with_intake() {
    let mut h = windowed();
    let (per_batch, batches) = (100, 49);
    let mut most = (0, 0);
    for b in 0..batches {
        h.clock.advance(Duration::milliseconds(100));
        h.events_together((0..per_batch).map(|i| go(b * per_batch + i)).collect());
        let seen = h.table_len(Table::Seen);
        let finished = h.table_len(Table::Finished);
        most = (most.0.max(seen), most.1.max(finished));
    }
    let total = (per_batch * batches) as i64;
    assert_eq!(
        h.started.len() as i64,
        total,
        "every event started an instance"
    );
    assert_eq!(h.gauge("COMPLETED") as u64, h.table_len(Table::Finished));
    // one window holds 10 batches; the sweep lags by at most a batch or two
    let bound = 12 * per_batch as u64;
    assert!(most.0 <= bound, "dedupe table reached {} entries", most.0);
    assert!(most.1 <= bound, "finished table reached {} entries", most.1);
    assert!(
        most.0 >= 10 * per_batch as u64,
        "the window is kept: {}",
        most.0
    );
    // the gauge counts what the table holds
    let gauge = support::metric_sum(&h.gauges(), "flowbroker_dedupe_entries", "");
    assert_eq!(gauge as u64, h.table_len(Table::Seen));
    // and a duplicate within the window is still caught
    h.events_together(vec![go(total as usize - 1)]);
    assert_eq!(h.counter("flowbroker_events_duplicate_total"), 1);
}

/// The sweeps remove what they have just read without looking it up again: an expired event
/// id is one lookup (its expiry, which a newer sighting may have moved), a forgotten instance
/// one (its status), and its history, found by a scan, none.
#[test]
fn sweeps_look_each_entry_up_once() {
    let mut h = windowed();
    let n = 50;
    h.events_together((0..n).map(go).collect());
    assert_eq!(h.table_len(Table::Seen), n as u64);
    assert_eq!(h.table_len(Table::Finished), n as u64);
    assert!(h.table_len(Table::History) >= n as u64);
    let before = [Table::Seen, Table::Instances, Table::History].map(|t| h.lookups(t));
    h.clock.advance(Duration::seconds(10));
    h.tick(); // the periodic sweeps
    let after = [Table::Seen, Table::Instances, Table::History].map(|t| h.lookups(t));
    assert_eq!(h.table_len(Table::Seen), 0, "every id expired");
    assert_eq!(h.table_len(Table::Finished), 0, "every instance forgotten");
    assert_eq!(h.table_len(Table::History), 0, "with its history");
    assert_eq!(after[0] - before[0], n as u64, "ids: one lookup each");
    assert_eq!(after[1] - before[1], n as u64, "instances: one lookup each");
    assert_eq!(
        after[2] - before[2],
        0,
        "history: removed as the scan found it"
    );
}

/// Event types come from untrusted input: only types a deployed definition names become
/// metric labels, every other type is counted under `_other`, so the label set stays bounded.
#[test]
fn metric_labels_come_only_from_deployed_definitions() {
    let mut h = Harness::new("2026-01-01T00:00:00Z", |_| {});
    h.deploy("once.yaml", ONCE);
    let mut events: Vec<Event> = (0..200)
        .map(|i| Event {
            event_type: format!("junk.{i}"),
            ..go(i)
        })
        .collect();
    events.push(go(1000));
    h.events_together(events);
    let text = h.metrics_text();
    let series = |name: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .map(String::from)
            .collect()
    };
    let consumed = series("flowbroker_events_consumed_total");
    assert_eq!(consumed.len(), 2, "{consumed:?}");
    assert!(consumed
        .iter()
        .any(|l| l.contains("type=\"once.go\"") && l.ends_with(" 1")));
    assert!(consumed
        .iter()
        .any(|l| l.contains("type=\"_other\"") && l.ends_with(" 200")));
    let unmatched = series("flowbroker_events_unmatched_total");
    assert_eq!(unmatched.len(), 1, "{unmatched:?}");
    assert!(unmatched[0].contains("type=\"_other\"") && unmatched[0].ends_with(" 200"));
}

/// An event of type `ty` for `key` (`support::WAITING` starts on `bench.ping` and waits for
/// `bench.done` of the same key).
fn keyed(ty: &str, key: usize) -> Event {
    let k = format!("k{key}");
    support::event(
        &format!("{ty}-{key}"),
        "/bench",
        ty,
        &[("key", &k)],
        json!({}),
    )
}

/// The records of waiting instances are kept in memory as stored (`store.resident_mib`):
/// the events that continue them read no instance from the store, and a finished instance
/// is not kept. Without the cache, each continuation looks its instance up.
#[test]
fn waiting_instances_are_read_from_memory_and_only_they_are_kept() {
    for cache_mib in [64, 0] {
        let mut h = Harness::new("2026-01-01T00:00:00Z", |c| c.store.resident_mib = cache_mib);
        h.deploy("wait.yaml", support::WAITING);
        let n = 200;
        h.events_together((0..n).map(|k| keyed("bench.ping", k)).collect());
        assert_eq!(h.gauge("WAITING"), n as i64);
        let kept = if cache_mib > 0 { n as u64 } else { 0 };
        assert_eq!(
            h.resident(),
            kept,
            "every waiting instance kept ({cache_mib} MiB)"
        );
        let before = h.lookups(Table::Instances);
        h.events_together((0..n).map(|k| keyed("bench.done", k)).collect());
        assert_eq!(h.gauge("COMPLETED"), n as i64);
        let looked_up = h.lookups(Table::Instances) - before;
        let expected = if cache_mib > 0 { 0 } else { n as u64 };
        assert_eq!(looked_up, expected, "instances looked up ({cache_mib} MiB)");
        assert_eq!(h.resident(), 0, "finished instances are not kept");
    }
}

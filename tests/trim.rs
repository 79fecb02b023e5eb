//! A bounded changelog (docs/scale.md "Snapshots"): on a Kafka that implements DeleteRecords
//! (tansu's slatedb engine, `scripts/tansu-engines.sh`), each snapshot deletes the changelog
//! before it, so the records Kafka keeps stay bounded while the history keeps growing. A
//! broker with an empty `data_dir` then cannot replay the changelog from its start: it must
//! load every partition's snapshot, and every instance comes back as it was.

mod support;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use support::*;

const PARTITIONS: i32 = 4;
const CHANGELOG: &str = "flowbroker.changelog";
const SNAPSHOTS: &str = "flowbroker.snapshots";

/// What must survive a restore, per instance.
fn state(b: &Broker, id: &str) -> Value {
    let v = b.instance(id);
    json!({
        "status": v["status"], "state": v["state"], "data": v["data"],
        "history": v["history"].as_array().map(Vec::len), "version": v["version"],
    })
}

/// Per changelog partition: (first offset still held, next offset).
fn changelog(kafka: &Kafka) -> Vec<(i64, i64)> {
    (0..PARTITIONS)
        .map(|p| kafka.watermarks(CHANGELOG, p))
        .collect()
}

#[test]
fn snapshots_trim_the_changelog_under_load_and_a_fresh_broker_restores_from_them() {
    const WAVES: usize = 6;
    const PER_WAVE: usize = 40;
    const N: usize = WAVES * PER_WAVE;
    let kafka = Kafka::start_trimming();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let env = [
        ("FLOWBROKER_CLUSTER_PARTITIONS", "4"),
        ("FLOWBROKER_CLUSTER_SNAPSHOT_EVERY_RECORDS", "3"),
    ];
    let mut a = Broker::start(&kafka, &[("order.yaml", ORDER)], &env);
    let p = kafka.producer();

    // load in waves: each wave starts orders and pays for half of the previous wave's, so the
    // changelog keeps growing while snapshots are written and trimmed behind it
    let mut retained = vec![];
    for w in 0..WAVES {
        for i in w * PER_WAVE..(w + 1) * PER_WAVE {
            send_order(&p, "order.placed", i);
        }
        out.wait_events("flowbroker.instance.started", (w + 1) * PER_WAVE, 60);
        if w > 0 {
            for i in (w - 1) * PER_WAVE..(w - 1) * PER_WAVE + PER_WAVE / 2 {
                send_order(&p, "order.paid", i);
            }
            out.wait_events("flowbroker.instance.completed", w * PER_WAVE / 2, 60);
        }
        let marks = changelog(&kafka);
        eprintln!("after wave {w}: changelog (low, high) per partition {marks:?}");
        retained.push(marks);
    }

    // every partition's changelog was trimmed: its first records are gone from Kafka
    let marks = wait_for(60, "every changelog partition trimmed", || {
        let m = changelog(&kafka);
        m.iter().all(|(low, _)| *low > 0).then_some(m)
    });
    let log = a.log();
    assert!(
        log.lines()
            .any(|l| l.contains("snapshot written") && l.contains("trimmed=true")),
        "a snapshot trimmed the changelog: {log}"
    );
    assert!(
        !log.contains("did not delete the changelog"),
        "DeleteRecords was refused: {log}"
    );
    // and the snapshot topic behind the latest snapshots
    wait_for(60, "older snapshots trimmed", || {
        (0..PARTITIONS)
            .all(|p| kafka.watermarks(SNAPSHOTS, p).0 > 0)
            .then_some(())
    });

    // bounded: what Kafka keeps of each partition's changelog is a few records after its
    // latest snapshot, however long the history (written in many more records than that)
    let written: i64 = marks.iter().map(|(_, high)| high).sum();
    let kept = wait_for(60, "the changelog trimmed to its last snapshots", || {
        let m = changelog(&kafka);
        let kept: i64 = m.iter().map(|(low, high)| high - low).sum();
        (m.iter().all(|(low, high)| high - low <= 12)).then_some(kept)
    });
    assert!(
        written >= 4 * kept.max(1) && written >= 60,
        "{written} changelog records written, {kept} kept: the history must be much longer \
         than what is kept for this to show a bound ({retained:?})"
    );

    let started = out.wait_events("flowbroker.instance.started", N, 60);
    let ids: Vec<String> = started
        .iter()
        .map(|e| {
            e.data.as_ref().unwrap()["instanceId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let before: BTreeMap<&String, Value> = ids.iter().map(|id| (id, state(&a, id))).collect();
    a.kill();

    // a new broker, a new data directory: the changelog no longer starts at 0, so each
    // partition can only come back from its snapshot
    let b = Broker::start(&kafka, &[("order.yaml", ORDER)], &env);
    wait_for(60, "b to own every partition", || {
        (b.owned().len() == PARTITIONS as usize).then_some(())
    });
    let log = b.log();
    let from_snapshot = log
        .lines()
        .filter(|l| l.contains("state partition taken over"))
        .filter(|l| log_field(l, "snapshot") > 0)
        .count();
    assert_eq!(
        from_snapshot, PARTITIONS as usize,
        "every partition restored from a snapshot: {log}"
    );
    for id in &ids {
        assert_eq!(state(&b, id), before[id], "{id} after the restore");
    }
    // the restored correlation index still routes: every unpaid order completes, once
    let paid = (WAVES - 1) * PER_WAVE / 2;
    let unpaid: Vec<usize> = (0..N)
        .filter(|i| i / PER_WAVE == WAVES - 1 || i % PER_WAVE >= PER_WAVE / 2)
        .collect();
    assert_eq!(paid + unpaid.len(), N);
    for i in &unpaid {
        send_order(&p, "order.paid", *i);
    }
    out.wait_events("flowbroker.instance.completed", N, 60);
    assert_eq!(
        out.events("flowbroker.instance.completed").len(),
        N,
        "each order completed once"
    );
}

//! A bounded changelog (docs/scale.md "Snapshots"): on a Kafka that implements DeleteRecords
//! (tansu's slatedb engine, `scripts/tansu-engines.sh`), each snapshot deletes the changelog
//! before it, so the records Kafka keeps stay bounded while the history keeps growing. A
//! broker with an empty `data_dir` then cannot replay the changelog from its start: it must
//! load every partition's snapshot, and every instance comes back as it was.

mod support;
use serde_json::Value;
use std::collections::BTreeMap;
use support::*;

const PARTITIONS: u16 = 4;

/// The tests here run one at a time: the standby test's timing (copies made while the group
/// waits out a session) should not compete with the other for two cores.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
const CHANGELOG: &str = "flowbroker.changelog";
const SNAPSHOTS: &str = "flowbroker.snapshots";

/// Per changelog partition: (first offset still held, next offset).
fn changelog(kafka: &Kafka) -> Vec<(i64, i64)> {
    (0..PARTITIONS)
        .map(|p| kafka.watermarks(CHANGELOG, i32::from(p)))
        .collect()
}

#[test]
fn snapshots_trim_the_changelog_under_load_and_a_fresh_broker_restores_from_them() {
    let _one = one_at_a_time();
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
            .all(|p| kafka.watermarks(SNAPSHOTS, i32::from(p)).0 > 0)
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
    let ids = instance_ids(&started);
    let before: BTreeMap<&String, Value> = ids.iter().map(|id| (id, restorable(&a, id))).collect();
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
        assert_eq!(restorable(&b, id), before[id], "{id} after the restore");
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

/// Where Kafka trims, a broker with an empty store can still be a standby: its copy of each
/// partition it stands by for starts from the partition's latest snapshot, then tails the
/// changelog. Here a replacement broker starts right after the owner was SIGKILLed: while the
/// group waits out the dead member's session, the newcomer stands by for the partitions the
/// claims still give the dead broker, so its take-overs find the copies ready and load no
/// snapshot. (Two live members cannot share a group on tansu's slatedb engine: docs/kafka.md.)
#[test]
fn a_standby_with_an_empty_store_starts_from_the_snapshot_where_the_changelog_was_trimmed() {
    let _one = one_at_a_time();
    const N: usize = 80;
    let kafka = Kafka::start_trimming();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let env = [
        ("FLOWBROKER_CLUSTER_PARTITIONS", "4"),
        ("FLOWBROKER_CLUSTER_SNAPSHOT_EVERY_RECORDS", "3"),
        ("FLOWBROKER_CLUSTER_STANDBY_REPLICAS", "1"),
    ];
    let mut a = Broker::start(&kafka, &[("order.yaml", ORDER)], &env);
    wait_for(60, "a to own every partition", || {
        (a.owned().len() == PARTITIONS as usize).then_some(())
    });
    let p = kafka.producer();
    for w in 0..4 {
        for i in w * N / 4..(w + 1) * N / 4 {
            send_order(&p, "order.placed", i);
        }
        out.wait_events("flowbroker.instance.started", (w + 1) * N / 4, 60);
    }
    let mut seen = vec![];
    wait_for(60, "every changelog partition trimmed", || {
        let now = changelog(&kafka);
        if now != seen {
            eprintln!("changelog watermarks (low, high) by partition: {now:?}");
            seen = now;
        }
        seen.iter().all(|(low, _)| *low > 0).then_some(())
    });
    let started = out.wait_events("flowbroker.instance.started", N, 60);
    let ids = instance_ids(&started);
    let before: BTreeMap<&String, Value> = ids.iter().map(|id| (id, restorable(&a, id))).collect();
    a.kill();

    // b starts with an empty store; the changelogs no longer start at 0. It makes its copies
    // within a second or two, while the group waits out a's session (6 s)
    let b = Broker::start_joining(&kafka, &[("order.yaml", ORDER)], &env);
    wait_for(60, "b's copies of every partition to catch up", || {
        let (_, health) = b.get("/health");
        (0..PARTITIONS)
            .all(|p| {
                let (_, end) = kafka.watermarks(CHANGELOG, i32::from(p));
                health["standby"][p.to_string()].as_i64() == Some(end)
            })
            .then_some(())
    });
    let log = b.log();
    for p in 0..PARTITIONS {
        assert!(
            log.lines().any(|l| l.contains("from its latest snapshot")
                && log_field(l, "partition") == i64::from(p)),
            "b's copy of partition {p} started from a snapshot: {log}"
        );
    }
    assert!(
        b.owned().is_empty(),
        "the copies were made before b owned anything"
    );
    let seen = log.len();
    wait_for(90, "b to own every partition", || {
        (b.owned().len() == PARTITIONS as usize).then_some(())
    });
    let log = b.log();
    let after = &log[seen..];
    // the take-overs stood on the copies: no snapshot loaded again
    let taken = after
        .lines()
        .filter(|l| l.contains("state partition taken over"))
        .count();
    assert_eq!(taken, PARTITIONS as usize, "{after}");
    assert!(
        !after.contains("restored from a snapshot"),
        "a take-over loaded a snapshot although its copy stood: {after}"
    );
    // every instance is there as it was, and every order completes once
    for id in &ids {
        assert_eq!(restorable(&b, id), before[id], "{id} after the failover");
    }
    for i in 0..N {
        send_order(&p, "order.paid", i);
    }
    out.wait_events("flowbroker.instance.completed", N, 60);
    assert_eq!(out.events("flowbroker.instance.completed").len(), N);
}

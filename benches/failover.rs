//! Failover with and without standby replicas (docs/scale.md "Standby replicas"): two brokers
//! share 12 state partitions holding `N` instances waiting on a second event; the first is
//! SIGKILLed and the second takes its partitions over. Two phases in one run, each on a fresh
//! tansu: `cluster.standby_replicas = 1` (the second broker's copies caught up before the
//! kill) and `0`. Reported: kill to the survivor owning every partition (mostly the group's
//! session timeout and join, the same in both), and the restore work of those take-overs.
//!
//! `cargo bench --bench failover` uses 100,000; under `cargo test` a 2,000-instance smoke run.
//! `FAILOVER_N` overrides it. Results: docs/scale.md.

#[path = "../tests/support/mod.rs"]
mod support;

use rdkafka::consumer::Consumer;
use serde_json::json;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use support::{log_field, metric_sum, reader, wait_for, Broker, Kafka, WAITING};

struct Failover {
    ready: f64,
    restore_ms: i64,
    restored: i64,
    partitions: usize,
}

fn waiting(b: &Broker) -> usize {
    metric_sum(&b.metrics(), "flowbroker_instances", "status=\"WAITING\"") as usize
}

fn phase(n: usize, standbys: &str) -> Failover {
    let kafka = Kafka::start();
    let env = [("FLOWBROKER_CLUSTER_STANDBY_REPLICAS", standbys)];
    let mut a = Broker::start(&kafka, &[("wait.yaml", WAITING)], &env);
    let b = Broker::start(&kafka, &[("wait.yaml", WAITING)], &env);
    let theirs: BTreeSet<u16> = wait_for(120, "a and b to share the partitions", || {
        let (oa, ob) = (a.owned(), b.owned());
        (oa.len() + ob.len() == 12 && !oa.is_empty() && !ob.is_empty())
            .then(|| oa.into_iter().collect())
    });
    kafka
        .producer()
        .send_pings("f", n, None, |i| json!({"i": i}));
    wait_for(1800, "every instance to wait", || {
        (waiting(&a) + waiting(&b) >= n).then_some(())
    });
    if standbys != "0" {
        let ends = reader(&kafka.brokers(), &[], 10);
        wait_for(600, "b's copies to catch up", || {
            let (_, health) = b.get("/health");
            theirs
                .iter()
                .all(|p| {
                    let end = ends
                        .fetch_watermarks(
                            "flowbroker.changelog",
                            i32::from(*p),
                            Duration::from_secs(5),
                        )
                        .map(|(_, h)| h)
                        .unwrap_or(-1);
                    health["standby"][p.to_string()].as_i64() == Some(end)
                })
                .then_some(())
        });
    }
    let seen = b.log().len();
    a.kill();
    let t0 = Instant::now();
    wait_for(600, "b to own every partition", || {
        (b.owned().len() == 12).then_some(())
    });
    let ready = t0.elapsed().as_secs_f64();
    let log = b.log();
    let taken: Vec<&str> = log[seen..]
        .lines()
        .filter(|l| l.contains("state partition taken over"))
        .filter(|l| theirs.contains(&(log_field(l, "partition") as u16)))
        .collect();
    assert_eq!(waiting(&b), n, "every instance is on b");
    Failover {
        ready,
        restore_ms: taken.iter().map(|l| log_field(l, "took_ms")).sum(),
        restored: taken.iter().map(|l| log_field(l, "restored")).sum(),
        partitions: taken.len(),
    }
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("FAILOVER_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if measuring { 100_000 } else { 2_000 });
    let with = phase(n, "1");
    let without = phase(n, "0");
    println!("| {n} waiting instances, 12 partitions, 2 brokers, one SIGKILLed | one standby | no standby |");
    println!("|---|---|---|");
    println!(
        "| kill to the survivor owning every partition | {:.1} s | {:.1} s |",
        with.ready, without.ready
    );
    println!(
        "| restore work of the {} + {} take-overs | {} ms | {} ms |",
        with.partitions, without.partitions, with.restore_ms, without.restore_ms
    );
    println!(
        "| changelog records restored | {} | {} |",
        with.restored, without.restored
    );
}

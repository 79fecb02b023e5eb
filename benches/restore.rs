//! Restore time (docs/scale.md "Snapshots"): `N` instances waiting on further events, started
//! by `N` start events on one broker, which is then SIGKILLed; a broker with an empty
//! `data_dir` takes every partition over. Each phase runs on a fresh tansu: the first broker
//! snapshots every few changelog records (the new broker loads the latest snapshot and reads
//! the records after it), or never (the new broker replays the whole changelog). Reported:
//! time from the new broker's start to owning every partition, and the restore work itself
//! (the sum of its take-overs).
//!
//! Two comparisons: the instances as started (a changelog about as long as the state), and
//! then with a long history: every instance updated `RESTORE_UPDATES` more times (a tick
//! event each, the instance looping back to wait for the next), so the changelog grows with
//! every update while the state grows only by the history entries each instance keeps
//! (`history.max_entries`). A restore from snapshots follows the state; a replay follows the
//! history.
//!
//! `cargo bench --bench restore` uses 100,000 instances and 9 updates each; under `cargo test`
//! a 2,000-instance smoke run with 2. `RESTORE_N` and `RESTORE_UPDATES` override them. Phases
//! snapshot every `n / 10,000` changelog records (at least 10; `RESTORE_SNAPSHOT_EVERY`
//! overrides it): a snapshot holds the whole partition, so at 1M instances one every 10
//! records would write tens of gigabytes (which tansu, keeping every record and unable to
//! trim, holds in memory). `RESTORE_BIN=<path>` runs another flowbroker build. Also reported:
//! the snapshots the first broker wrote (how many, their bytes, the writer's time) and the
//! new broker's loading of the latest ones. Results: docs/scale.md and docs/performance.md.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::time::Instant;
use support::{event, log_field, metric_sum, wait_for, Broker, Kafka};

/// Started by a ping, then updated by every tick of its key, waiting for the next.
const TICK: &str = r#"
id: tick
name: tick
events:
- {name: Ping, type: bench.ping, source: /bench, correlation: [{contextAttributeName: key}]}
- {name: Tick, type: bench.tick, source: /bench, correlation: [{contextAttributeName: key}]}
states:
- name: Receive
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Ping]}]
  transition: {nextState: Count}
- name: Count
  type: event
  eventsActions: [{eventRefs: [Tick]}]
  transition: {nextState: Count}
"#;

struct Restored {
    ready: f64,
    restore_ms: u64,
    from_snapshots: usize,
    tail: i64,
    changelog: i64,
    /// The first broker's snapshots: how many, their bytes, the writer's time (ms).
    written: (usize, i64, i64),
    /// The new broker's loading of snapshots (ms, the sum over partitions).
    loaded_ms: i64,
}

/// The broker measured: the one built with the bench, or `RESTORE_BIN`.
fn start(kafka: &Kafka, env: &[(&str, &str)]) -> Broker {
    let bin = std::env::var("RESTORE_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_flowbroker").to_string());
    Broker::start_bin(&bin, kafka, &[("tick.yaml", TICK)], env)
}

/// The sum of field `name` over the lines of `log` that contain `what`, and their count.
fn sum_of(log: &str, what: &str, name: &str) -> (usize, i64) {
    log.lines()
        .filter(|l| l.contains(what))
        .fold((0, 0), |(n, s), l| (n + 1, s + log_field(l, name)))
}

fn phase(n: usize, every: Option<usize>, updates: usize) -> Restored {
    let kafka = Kafka::start();
    let every_s = every.map_or("0".to_string(), |e| e.to_string());
    let env = [
        (
            "FLOWBROKER_CLUSTER_SNAPSHOT_EVERY_RECORDS",
            every_s.as_str(),
        ),
        ("FLOWBROKER_CLUSTER_SNAPSHOT_INTERVAL_MS", "0"),
    ];
    let mut a = start(&kafka, &env);
    let p = kafka.producer();
    p.send_pings("r", n, None, |i| json!({"i": i}));
    wait_for(1800, "every instance to wait", || {
        let m = a.metrics();
        (metric_sum(&m, "flowbroker_instances", "status=\"WAITING\"") as usize >= n).then_some(())
    });
    for u in 0..updates {
        for i in 0..n {
            let key = format!("r{i}");
            let id = format!("{key}-t{u}");
            p.send_nowait(&event(
                &id,
                "/bench",
                "bench.tick",
                &[("key", &key)],
                json!({"t": u}),
            ));
        }
        p.flush();
    }
    // each instance entered Receive and Count, then Count again per tick
    let entered = 2 * n + updates * n;
    wait_for(1800, "every tick to be applied", || {
        let m = a.metrics();
        (metric_sum(&m, "flowbroker_transitions_total", "") as usize >= entered).then_some(())
    });
    // killed as it is: a snapshot being written then is not announced, the one before counts
    a.kill();
    let a_log = a.log();
    let (count, bytes) = sum_of(&a_log, "snapshot written", "bytes");
    let (_, write_ms) = sum_of(&a_log, "snapshot written", "took_ms");
    let t0 = Instant::now();
    let b = start(&kafka, &env);
    let parts = wait_for(600, "b to own every partition", || {
        let o = b.owned();
        (o.len() == 12).then_some(o)
    });
    let ready = t0.elapsed().as_secs_f64();
    assert_eq!(parts.len(), 12);
    let log = b.log();
    let taken: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("state partition taken over"))
        .collect();
    let restore_ms = taken.iter().map(|l| log_field(l, "took_ms")).sum::<i64>() as u64;
    let tail = taken.iter().map(|l| log_field(l, "restored")).sum();
    let changelog = taken.iter().map(|l| log_field(l, "fence")).sum();
    let m = b.metrics();
    let waiting = metric_sum(&m, "flowbroker_instances", "status=\"WAITING\"") as usize;
    assert_eq!(waiting, n, "every instance restored");
    Restored {
        ready,
        restore_ms,
        from_snapshots: log.matches("restored from a snapshot").count(),
        tail,
        changelog,
        written: (count, bytes, write_ms),
        loaded_ms: sum_of(&log, "restored from a snapshot", "took_ms").1,
    }
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("RESTORE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if measuring { 100_000 } else { 2_000 });
    // a changelog record is one committed batch (hundreds of starts under load): snapshot
    // often enough that the restore starts from one
    let every = std::env::var("RESTORE_SNAPSHOT_EVERY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or((n / 10_000).max(10));
    let updates: usize = std::env::var("RESTORE_UPDATES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if measuring { 9 } else { 2 });
    let with = phase(n, Some(every), 0);
    let without = phase(n, None, 0);
    table(
        &format!("{n} waiting instances, 12 partitions"),
        every,
        &with,
        &without,
    );
    let with_long = phase(n, Some(every), updates);
    let without_long = phase(n, None, updates);
    table(
        &format!("the same, each updated {updates} more times"),
        every,
        &with_long,
        &without_long,
    );
}

fn table(what: &str, every: usize, with: &Restored, without: &Restored) {
    println!(
        "| {what} | from snapshots (every {every} records) + tail | from the changelog alone |"
    );
    println!("|---|---|---|");
    println!(
        "| new broker owns every partition after | {:.1} s | {:.1} s |",
        with.ready, without.ready
    );
    println!(
        "| restore work (sum of take-overs) | {} ms | {} ms |",
        with.restore_ms, without.restore_ms
    );
    println!(
        "| changelog records read | {} (after {} snapshots) | {} |",
        with.tail, with.from_snapshots, without.tail
    );
    println!(
        "| changelog records in all | {} | {} |",
        with.changelog, without.changelog
    );
    let (count, bytes, ms) = with.written;
    println!(
        "| snapshots the first broker wrote: how many, MiB, the writer's time | {count}, {:.1} MiB, {ms} ms | |",
        bytes as f64 / f64::from(1 << 20)
    );
    println!(
        "| loading the latest snapshots (sum over partitions) | {} ms | |",
        with.loaded_ms
    );
}

//! End to end over Kafka: the real `flowbroker` binary against a tansu broker process.
//! - latency: one start event at a time, from publishing it to consuming the instance's
//!   `completed` lifecycle event (two Kafka hops plus the broker);
//! - throughput: a burst of start events, until every instance's `completed` event is out.
//!
//! `cargo bench --bench e2e`; under `cargo test` a small smoke run. Results:
//! docs/performance.md.

#[path = "../tests/support/mod.rs"]
mod support;

use rdkafka::consumer::BaseConsumer;
use rdkafka::message::Message;
use serde_json::json;
use std::time::{Duration, Instant};
use support::{ping, Broker, Kafka, ECHO};

fn completed_counter(kafka: &Kafka) -> BaseConsumer {
    support::reader(&kafka.brokers(), &["flowbroker.lifecycle"], 10)
}

/// Waits until `n` more `completed` lifecycle events were read.
fn wait_completed(c: &BaseConsumer, n: usize, limit: Duration) {
    let end = Instant::now() + limit;
    let mut got = 0;
    while got < n {
        assert!(
            Instant::now() < end,
            "only {got} of {n} instances completed in time"
        );
        if let Some(Ok(m)) = c.poll(Duration::from_millis(50)) {
            let completed = m
                .headers()
                .map(|h| {
                    use rdkafka::message::Headers;
                    h.iter().any(|x| {
                        x.key == "ce_type" && x.value == Some(b"flowbroker.instance.completed")
                    })
                })
                .unwrap_or(false);
            if completed {
                got += 1;
            }
        }
    }
}

/// The state partitions a broker owns, from `GET /health`.
fn owned(b: &Broker) -> usize {
    let (_, v) = b.get("/health");
    v["statePartitions"].as_array().map_or(0, Vec::len)
}

/// Publishes `burst` start events at once; returns (seconds to publish, seconds until every
/// instance's completed event was consumed).
fn burst(kafka: &Kafka, c: &BaseConsumer, tag: &str, n: usize) -> (f64, f64) {
    let p = kafka.producer();
    let t = Instant::now();
    p.send_pings(tag, n, None, |i| json!({"i": i}));
    let published = t.elapsed().as_secs_f64();
    wait_completed(c, n, Duration::from_secs(600));
    (published, t.elapsed().as_secs_f64())
}

/// The same burst against one broker, then against two brokers in one group (each on a fresh
/// tansu), in one run: the throughput of one and two brokers on this machine.
fn scale(n: usize) -> Vec<(usize, f64)> {
    let mut out = Vec::new();
    for brokers in [1, 2] {
        let kafka = Kafka::start();
        let bs: Vec<Broker> = (0..brokers)
            .map(|_| Broker::start(&kafka, &[("echo.yaml", ECHO)], &[]))
            .collect();
        support::wait_for(60, "the group to settle with every partition owned", || {
            (bs.iter().map(owned).sum::<usize>() == 12 && bs.iter().all(|b| owned(b) > 0))
                .then_some(())
        });
        let c = completed_counter(&kafka);
        let (_, total) = burst(&kafka, &c, "s", n);
        out.push((brokers, n as f64 / total));
    }
    out
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let (pings, burst_n) = if measuring { (200, 20_000) } else { (5, 100) };
    let kafka = Kafka::start();
    let _broker = Broker::start(&kafka, &[("echo.yaml", ECHO)], &[]);
    let p = kafka.producer();
    let c = completed_counter(&kafka);

    let mut lat = Vec::new();
    for i in 0..pings {
        let t = Instant::now();
        p.send(&ping(&format!("l{i}"), json!({"i": i})));
        wait_completed(&c, 1, Duration::from_secs(30));
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];

    let (published, total) = burst(&kafka, &c, "b", burst_n);
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| round trip p50 (start event -> completed event, {pings} sequential) | {:.1} ms |",
        pct(0.5)
    );
    println!("| round trip p99 | {:.1} ms |", pct(0.99));
    println!("| burst of {burst_n} start events published in | {published:.2} s |");
    println!("| burst fully processed (every completed event consumed) in | {total:.2} s |");
    println!(
        "| throughput | {:.0} instances/s ({:.0} Kafka records in+out/s) |",
        burst_n as f64 / total,
        burst_n as f64 * 4.0 / total
    );
    let n = if measuring { 10_000 } else { 50 };
    for (brokers, rate) in scale(n) {
        println!("| throughput, {brokers} broker(s) in one group, burst of {n} | {rate:.0} instances/s |");
    }
}

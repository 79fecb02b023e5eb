//! Scale: many instances waiting at once. The release `flowbroker` binary starts `W` instances
//! that each wait for a continuation event of their own key (`hold`), then:
//! - continuation throughput: `C` continuations for random waiting keys, instances completed
//!   per second, against the same measured with `BASE` instances waiting in the same run (each
//!   on a fresh tansu and broker);
//! - memory: the broker's RSS and its data directory per waiting instance;
//! - restart: SIGKILL, then the time until the broker is assigned its partitions again and
//!   until a continuation sent then has completed.
//!
//! `cargo bench --bench scale` waits with 1,000,000 (base 5,000, 5,000 continuations each); under
//! `cargo test` a small smoke run. `SCALE_WAITING`, `SCALE_BASE` and `SCALE_CONTINUATIONS`
//! override them. Results: docs/performance.md.

#[path = "../tests/support/mod.rs"]
mod support;

use rdkafka::consumer::BaseConsumer;
use rdkafka::message::{Headers, Message};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use support::{event, metric_sum, Broker, Kafka};

const HOLD: &str = r#"
id: hold
name: hold
events:
- {name: Open, type: scale.open, source: /bench, correlation: [{contextAttributeName: key}]}
- {name: Close, type: scale.close, source: /bench, correlation: [{contextAttributeName: key}]}
states:
- name: Opened
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Open]}]
  transition: {nextState: Closed}
- name: Closed
  type: event
  eventsActions: [{eventRefs: [Close]}]
  end: {kind: default}
"#;

fn start(kafka: &Kafka) -> Broker {
    let env = [
        ("FLOWBROKER_LOG", "info"),
        ("FLOWBROKER_KAFKA_FETCH_WAIT_MAX_MS", "100"),
    ];
    Broker::start_bin(
        env!("CARGO_BIN_EXE_flowbroker"),
        kafka,
        &[("hold.yaml", HOLD)],
        &env,
    )
}

fn publish(kafka: &Kafka, ty: &str, keys: impl Iterator<Item = u64>) {
    let p = kafka.producer_lingering(5);
    for k in keys {
        let key = format!("k{k}");
        let id = format!("{ty}-{key}");
        p.send_nowait(&event(&id, "/bench", ty, &[("key", &key)], json!({})));
    }
    p.flush();
}

fn waiting(b: &Broker) -> i64 {
    metric_sum(&b.metrics(), "flowbroker_instances", "status=\"WAITING\"")
}

fn dir_bytes(p: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Counts `flowbroker.instance.completed` lifecycle events until `n` have arrived; returns
/// instances/s from the first to the last by the records' timestamps (when the broker let them
/// out to its producer), so a reader still catching up on the `started` events does not count.
fn completions(c: &BaseConsumer, n: usize, secs: u64) -> f64 {
    let (mut got, mut first, mut last) = (0, None, 0);
    let end = Instant::now() + Duration::from_secs(secs);
    while got < n {
        assert!(
            Instant::now() < end,
            "only {got} of {n} instances completed"
        );
        let Some(Ok(m)) = c.poll(Duration::from_millis(50)) else {
            continue;
        };
        let completed = m.headers().is_some_and(|h| {
            h.iter().any(|h| {
                h.key == "ce_type" && h.value == Some(b"flowbroker.instance.completed".as_slice())
            })
        });
        if completed {
            let ts = m.timestamp().to_millis().unwrap_or(0);
            first = Some(first.map_or(ts, |f: i64| f.min(ts)));
            last = last.max(ts);
            got += 1;
        }
    }
    let ms = (last - first.unwrap_or(last)).max(1) as f64;
    (n.saturating_sub(1)).max(1) as f64 * 1000.0 / ms
}

struct Run {
    load_rate: f64,
    cont_rate: f64,
    rss_kib: u64,
    disk: u64,
    ready: Option<(f64, f64)>,
}

/// On a fresh tansu: `w` instances left waiting, then `c` of them continued.
fn run(w: u64, c: u64, restart: bool) -> Run {
    let kafka = Kafka::start();
    let mut broker = start(&kafka);
    let t = Instant::now();
    publish(&kafka, "scale.open", 0..w);
    support::wait_for(3600, &format!("{w} instances waiting"), || {
        (waiting(&broker) >= w as i64).then_some(())
    });
    let load_rate = w as f64 / t.elapsed().as_secs_f64();
    let rss_kib = broker.rss_kib().unwrap_or(0);
    let disk = dir_bytes(&broker.dir.join("data"));
    let lifecycle = support::reader(&kafka.brokers(), &["flowbroker.lifecycle"], 100);
    // pseudo-random distinct keys (a stride co-prime with w), spread over the waiting set
    let stride = (w / 2 + 1..).find(|s| gcd(*s, w) == 1).unwrap();
    publish(&kafka, "scale.close", (0..c).map(|i| (i * stride) % w));
    let cont_rate = completions(&lifecycle, c as usize, 1800);
    let ready = restart.then(|| {
        broker.kill();
        let t = Instant::now();
        broker.start_again();
        let assigned = t.elapsed().as_secs_f64();
        publish(
            &kafka,
            "scale.close",
            std::iter::once((c * stride + stride) % w),
        );
        completions(&lifecycle, 1, 300);
        (assigned, t.elapsed().as_secs_f64())
    });
    Run {
        load_rate,
        cont_rate,
        rss_kib,
        disk,
        ready,
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let var = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (w, base, c) = if measuring {
        (
            var("SCALE_WAITING", 1_000_000),
            var("SCALE_BASE", 5_000),
            var("SCALE_CONTINUATIONS", 5_000),
        )
    } else {
        (
            var("SCALE_WAITING", 3_000),
            var("SCALE_BASE", 500),
            var("SCALE_CONTINUATIONS", 300),
        )
    };
    // the same number of continuations on both sides (distinct keys: at most `base`), so the
    // batches they form are alike
    let c = c.min(base);
    let small = run(base, c, false);
    println!(
        "{base} waiting: loaded at {:.0}/s; continuations {:.0} instances/s",
        small.load_rate, small.cont_rate
    );
    let big = run(w, c, true);
    let (assigned, first) = big.ready.unwrap();
    println!(
        "{w} waiting: loaded at {:.0}/s; continuations {:.0} instances/s ({:.2} of the {base}-waiting rate)",
        big.load_rate,
        big.cont_rate,
        big.cont_rate / small.cont_rate
    );
    println!(
        "memory with {w} waiting: RSS {:.1} MiB ({:.2} KiB per instance), data dir {:.1} MiB ({:.2} KiB per instance); with {base}: RSS {:.1} MiB",
        big.rss_kib as f64 / 1024.0,
        big.rss_kib as f64 / w as f64,
        big.disk as f64 / 1048576.0,
        big.disk as f64 / 1024.0 / w as f64,
        small.rss_kib as f64 / 1024.0,
    );
    println!(
        "restart after SIGKILL: partitions assigned in {assigned:.1} s, first continuation completed {first:.1} s after the start"
    );
    assert!(big.cont_rate > 0.0 && small.cont_rate > 0.0);
}

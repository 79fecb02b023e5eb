//! Scale: many instances waiting at once. The release `flowbroker` binary starts `W` instances
//! that each wait for a continuation event of their own key (`hold`), then:
//! - continuation throughput: `C` continuations for random waiting keys, instances completed
//!   per second from the first continuation sent to the last completion, against the same
//!   measured with `BASE` instances waiting in the same run (each on a fresh tansu and broker);
//! - memory: the broker's RSS and its data directory per waiting instance;
//! - restart: SIGKILL, then the time until the broker is assigned its partitions again and
//!   until a continuation sent then has completed.
//!
//! `cargo bench --bench scale` waits with 1,000,000 (base 5,000, 5,000 continuations each); under
//! `cargo test` a small smoke run. `SCALE_WAITING`, `SCALE_BASE` and `SCALE_CONTINUATIONS`
//! override them; `FLOWBROKER_STORE_*` settings in the bench's environment are passed to the
//! broker, and `SCALE_BIN=<path>` runs another flowbroker build. `SCALE_PERF=<file>` records
//! the broker with `perf` (dwarf call graphs) over the large side's continuations. Results:
//! docs/performance.md.

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
    let store: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("FLOWBROKER_STORE_"))
        .collect();
    let mut env = vec![
        ("FLOWBROKER_LOG", "info"),
        ("FLOWBROKER_KAFKA_FETCH_WAIT_MAX_MS", "100"),
        support::DEFAULT_THREADS,
    ];
    env.extend(store.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let bin =
        std::env::var("SCALE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_flowbroker").to_string());
    Broker::start_bin(&bin, kafka, &[("hold.yaml", HOLD)], &env)
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

/// Reads until `n` records of CloudEvent type `ty` have arrived (within `secs`); returns the
/// first and the last of their timestamps (when the broker let them out to its producer, in
/// ms since the epoch), so the time this reader takes does not count.
fn read_type(c: &BaseConsumer, ty: &str, n: usize, secs: u64) -> (i64, i64) {
    let (mut got, mut first, mut last) = (0, None, 0);
    let end = Instant::now() + Duration::from_secs(secs);
    while got < n {
        assert!(Instant::now() < end, "only {got} of {n} {ty} records");
        let Some(Ok(m)) = c.poll(Duration::from_millis(50)) else {
            continue;
        };
        let of_type = m.headers().is_some_and(|h| {
            h.iter()
                .any(|h| h.key == "ce_type" && h.value == Some(ty.as_bytes()))
        });
        if of_type {
            let ts = m.timestamp().to_millis().expect("a record timestamp");
            first = Some(first.map_or(ts, |f: i64| f.min(ts)));
            last = last.max(ts);
            got += 1;
        }
    }
    (first.unwrap_or(last), last)
}

const COMPLETED: &str = "flowbroker.instance.completed";

/// A reader of the lifecycle topic that has read the `started` records of `n` instances: the
/// loading is behind it, so the phase that follows is the continuations' alone and ends when
/// the last completion is produced, not when a reader has caught up with a million records.
fn reader_past_starts(kafka: &Kafka, n: usize) -> BaseConsumer {
    let c = support::reader(&kafka.brokers(), &["flowbroker.lifecycle"], 100);
    read_type(&c, "flowbroker.instance.started", n, 1800);
    c
}

fn epoch_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// What the broker did between two moments: rounds landed, inputs in them, changelog appends
/// and their time to landing, CPU seconds (all threads).
#[derive(Clone, Copy, Default)]
struct Phase {
    rounds: f64,
    inputs: f64,
    appends: f64,
    landing_secs: f64,
    cpu_secs: f64,
}

impl Phase {
    fn now(b: &Broker) -> Phase {
        let m = b.metrics();
        let float = |name: &str| support::metric_sum_f64(&m, name, "");
        Phase {
            rounds: float("flowbroker_round_inputs_count"),
            inputs: float("flowbroker_round_inputs_sum"),
            appends: float("flowbroker_round_landing_seconds_count"),
            landing_secs: float("flowbroker_round_landing_seconds_sum"),
            cpu_secs: b.cpu_secs().unwrap_or(0.0),
        }
    }

    fn since(self, before: Phase) -> Phase {
        Phase {
            rounds: self.rounds - before.rounds,
            inputs: self.inputs - before.inputs,
            appends: self.appends - before.appends,
            landing_secs: self.landing_secs - before.landing_secs,
            cpu_secs: self.cpu_secs - before.cpu_secs,
        }
    }

    fn describe(&self, instances: u64) -> String {
        format!(
            "{:.0} rounds, {:.0} inputs per round, {:.0} appends, mean {:.0} ms from append to landing; broker CPU {:.0} us per continuation",
            self.rounds,
            self.inputs / self.rounds.max(1.0),
            self.appends,
            self.landing_secs * 1000.0 / self.appends.max(1.0),
            self.cpu_secs * 1e6 / instances.max(1) as f64
        )
    }
}

struct Run {
    load_rate: f64,
    /// from the first continuation sent to the last completion
    cont_rate: f64,
    /// from the first completion to the last
    spread_rate: f64,
    /// the broker over the continuations: its rounds and CPU time
    phase: Phase,
    rss_kib: u64,
    disk: u64,
    ready: Option<(f64, f64)>,
}

/// `perf record` of the broker (dwarf call graphs) into `out`, until interrupted.
fn profiler(b: &Broker, out: &str) -> std::process::Child {
    let pid = b.pid().expect("the broker runs").to_string();
    // a file left from an earlier run would pass the check below at once
    let _ = std::fs::remove_file(out);
    let p = std::process::Command::new("perf")
        .args([
            "record",
            "-F",
            "499",
            "--call-graph",
            "dwarf",
            "-o",
            out,
            "-p",
            &pid,
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("perf (SCALE_PERF is set)");
    // perf is recording once it has written its file's header
    support::wait_for(30, "perf to start", || {
        std::fs::metadata(out)
            .is_ok_and(|m| m.len() > 0)
            .then_some(())
    });
    p
}

/// On a fresh tansu: `w` instances left waiting, then `c` of them continued (recorded with
/// `perf` into `perf` when given).
fn run(w: u64, c: u64, restart: bool, perf: Option<&str>) -> Run {
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
    // one `started` lifecycle record per instance loaded
    let lifecycle = reader_past_starts(&kafka, w as usize);
    // pseudo-random distinct keys (a stride co-prime with w), spread over the waiting set
    let stride = (w / 2 + 1..).find(|s| gcd(*s, w) == 1).unwrap();
    let profile = perf.map(|out| profiler(&broker, out));
    let before = Phase::now(&broker);
    let sent = epoch_ms();
    publish(&kafka, "scale.close", (0..c).map(|i| (i * stride) % w));
    let (first, last) = read_type(&lifecycle, COMPLETED, c as usize, 1800);
    if let Some(mut p) = profile {
        // SIGINT: perf writes its file and exits
        let _ = std::process::Command::new("kill")
            .args(["-INT", &p.id().to_string()])
            .status();
        let _ = p.wait();
    }
    let phase = Phase::now(&broker).since(before);
    let cont_rate = c as f64 * 1000.0 / (last - sent).max(1) as f64;
    let spread_rate = c.saturating_sub(1).max(1) as f64 * 1000.0 / (last - first).max(1) as f64;
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
        read_type(&lifecycle, COMPLETED, 1, 300);
        (assigned, t.elapsed().as_secs_f64())
    });
    Run {
        load_rate,
        cont_rate,
        spread_rate,
        phase,
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
    let perf = std::env::var("SCALE_PERF").ok();
    let small = run(base, c, false, None);
    println!(
        "{base} waiting: loaded at {:.0}/s; continuations {:.0} instances/s (first to last completion: {:.0}/s)",
        small.load_rate, small.cont_rate, small.spread_rate
    );
    println!(
        "  {base} waiting, continuations: {}",
        small.phase.describe(c)
    );
    let big = run(w, c, true, perf.as_deref());
    let (assigned, first) = big.ready.unwrap();
    println!(
        "{w} waiting: loaded at {:.0}/s; continuations {:.0} instances/s ({:.2} of the {base}-waiting rate; first to last completion: {:.0}/s)",
        big.load_rate,
        big.cont_rate,
        big.cont_rate / small.cont_rate,
        big.spread_rate
    );
    println!("  {w} waiting, continuations: {}", big.phase.describe(c));
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

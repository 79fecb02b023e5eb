//! Scale: many instances waiting at once. The release `flowbroker` binary starts `W` instances
//! that each wait for a continuation event of their own key (`hold`), then:
//! - continuation throughput: `C` continuations for waiting keys spread over the set,
//!   instances completed per second from the first continuation sent to the last completion,
//!   against the same measured with `BASE` instances waiting (each side on a tansu and broker
//!   of its own, both loaded first). In rounds, the two sides alternated: after each round as
//!   many instances of new keys are opened, so as many wait in the next, and no key is used
//!   twice. The figure is the ratio of the median rates. Over all rounds together (the
//!   opens and the compactions that ran meanwhile included), each side's broker CPU (and
//!   its split by thread: the core, the processors, fjall's compactor and flusher, ...) and
//!   bytes written per continuation, the bytes committed to each table of its store, and
//!   each table's memtable flushes;
//! - memory: the broker's RSS and its data directory per waiting instance;
//! - restart: SIGKILL, then the time until the broker is assigned its partitions again and
//!   until a continuation sent then has completed.
//!
//! `cargo bench --bench scale` waits with 1,000,000 (base 5,000, 5,000 continuations each, 15
//! rounds); under `cargo test` a small smoke run. `SCALE_WAITING`, `SCALE_BASE`,
//! `SCALE_CONTINUATIONS` and `SCALE_ROUNDS` override them, and `SCALE_ATTRIBUTES=n` makes the
//! events correlate on `n` attributes (1 by default); `FLOWBROKER_STORE_*` settings in the
//! bench's environment are passed to the brokers, and `SCALE_BIN=<path>` runs another
//! flowbroker build. `SCALE_PERF=<file>` records the large side's broker with `perf` (dwarf
//! call graphs) over its first round. Results: docs/performance.md.

#[path = "../tests/support/mod.rs"]
mod support;

use rdkafka::consumer::BaseConsumer;
use rdkafka::message::{Headers, Message};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use support::{event, metric_sum, Broker, Kafka};

/// The workflow: an event starts an instance, which then waits for an event of its own key.
/// Both correlate on `key` and on `SCALE_ATTRIBUTES - 1` more attributes (`a1`, ...), each
/// with a value of its own per key.
fn hold() -> String {
    let attrs: Vec<String> = (0..attributes())
        .map(|i| match i {
            0 => "{contextAttributeName: key}".to_string(),
            i => format!("{{contextAttributeName: a{i}}}"),
        })
        .collect();
    let correlation = attrs.join(", ");
    format!(
        r#"
id: hold
name: hold
events:
- {{name: Open, type: scale.open, source: /bench, correlation: [{correlation}]}}
- {{name: Close, type: scale.close, source: /bench, correlation: [{correlation}]}}
states:
- name: Opened
  type: event
  start: {{kind: default}}
  eventsActions: [{{eventRefs: [Open]}}]
  transition: {{nextState: Closed}}
- name: Closed
  type: event
  eventsActions: [{{eventRefs: [Close]}}]
  end: {{kind: default}}
"#
    )
}

/// How many attributes the events correlate on (`SCALE_ATTRIBUTES`, 1 by default): an event
/// looks its instances up under `2^n` waits keys.
fn attributes() -> usize {
    std::env::var("SCALE_ATTRIBUTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1usize)
        .max(1)
}

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
    let wf = hold();
    Broker::start_bin(&bin, kafka, &[("hold.yaml", wf.as_str())], &env)
}

fn publish(kafka: &Kafka, ty: &str, keys: impl Iterator<Item = u64>) {
    let p = kafka.producer_lingering(5);
    let n = attributes();
    for k in keys {
        let key = format!("k{k}");
        let id = format!("{ty}-{key}");
        let more: Vec<(String, String)> = (1..n)
            .map(|i| (format!("a{i}"), format!("{key}-{i}")))
            .collect();
        let mut attrs = vec![("key", key.as_str())];
        attrs.extend(more.iter().map(|(a, v)| (a.as_str(), v.as_str())));
        p.send_nowait(&event(&id, "/bench", ty, &attrs, json!({})));
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
const STARTED: &str = "flowbroker.instance.started";

/// A reader of the lifecycle topic that has read the `started` records of `n` instances: the
/// loading is behind it, so the phase that follows is the continuations' alone and ends when
/// the last completion is produced, not when a reader has caught up with a million records.
fn reader_past_starts(kafka: &Kafka, n: usize) -> BaseConsumer {
    let c = support::reader(&kafka.brokers(), &["flowbroker.lifecycle"], 100);
    read_type(&c, STARTED, n, 1800);
    c
}

fn epoch_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// What the broker did between two moments: rounds landed, inputs in them, changelog appends
/// and their time to landing, CPU seconds (all threads).
#[derive(Clone, Default)]
struct Phase {
    rounds: f64,
    inputs: f64,
    appends: f64,
    landing_secs: f64,
    cpu_secs: f64,
    /// the side's tansu
    kafka_cpu_secs: f64,
    /// bytes the broker wrote (its store's journal, flushes and compactions, and its logs)
    written: f64,
    /// bytes of keys and values committed to each table of its store
    committed: Vec<(String, f64)>,
    /// memtable flushes of each table
    flushes: Vec<(String, f64)>,
    /// point lookups that reached each table (the store's memtables and files)
    lookups: Vec<(String, f64)>,
    /// the broker's live threads and their CPU seconds
    threads: Vec<support::ThreadCpu>,
}

/// `now - before`, table by table.
fn minus(now: &[(String, f64)], before: &[(String, f64)]) -> Vec<(String, f64)> {
    now.iter()
        .map(|(t, n)| {
            let was = before.iter().find(|(b, _)| b == t);
            (t.clone(), n - was.map_or(0.0, |(_, b)| *b))
        })
        .collect()
}

/// The tables with a figure above 0, largest first, each as `format`s it.
fn listed(figures: &[(String, f64)], format: impl Fn(&str, f64) -> String) -> String {
    let mut some: Vec<&(String, f64)> = figures.iter().filter(|(_, n)| *n > 0.0).collect();
    some.sort_by(|a, b| b.1.total_cmp(&a.1));
    let list: Vec<String> = some.iter().map(|(t, n)| format(t, *n)).collect();
    list.join(", ")
}

impl Phase {
    fn now(b: &Broker, kafka: &Kafka) -> Phase {
        let m = b.metrics();
        let float = |name: &str| support::metric_sum_f64(&m, name, "");
        Phase {
            rounds: float("flowbroker_round_inputs_count"),
            inputs: float("flowbroker_round_inputs_sum"),
            appends: float("flowbroker_round_landing_seconds_count"),
            landing_secs: float("flowbroker_round_landing_seconds_sum"),
            cpu_secs: b.cpu_secs().unwrap_or(0.0),
            kafka_cpu_secs: kafka.cpu_secs().unwrap_or(0.0),
            written: b.written_bytes().unwrap_or(0) as f64,
            committed: support::by_table(&m, "flowbroker_store_written_bytes_total"),
            flushes: support::by_table(&m, "flowbroker_store_flushes_total"),
            lookups: support::by_table(&m, "flowbroker_store_lookups_total"),
            threads: b.cpu_by_thread(),
        }
    }

    fn since(self, before: Phase) -> Phase {
        Phase {
            rounds: self.rounds - before.rounds,
            inputs: self.inputs - before.inputs,
            appends: self.appends - before.appends,
            landing_secs: self.landing_secs - before.landing_secs,
            cpu_secs: self.cpu_secs - before.cpu_secs,
            kafka_cpu_secs: self.kafka_cpu_secs - before.kafka_cpu_secs,
            written: self.written - before.written,
            committed: minus(&self.committed, &before.committed),
            flushes: minus(&self.flushes, &before.flushes),
            lookups: minus(&self.lookups, &before.lookups),
            threads: self
                .threads
                .iter()
                .map(|t| {
                    let was = before.threads.iter().find(|b| b.tid == t.tid);
                    support::ThreadCpu {
                        secs: t.secs - was.map_or(0.0, |b| b.secs),
                        ..t.clone()
                    }
                })
                .collect(),
        }
    }

    /// Over whole rounds (continuations and the opens after them), per continuation: the
    /// broker's CPU (compactions included, whenever they ran), by thread, and what it wrote;
    /// and each table's memtable flushes over them all.
    fn per_continuation(&self, continuations: u64) -> String {
        let n = continuations.max(1) as f64;
        // by thread name; what threads that ended meanwhile used is the rest of the total
        let mut threads: Vec<(String, f64)> = Vec::new();
        for t in &self.threads {
            match threads.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, secs)) => *secs += t.secs,
                None => threads.push((t.group.clone(), t.secs)),
            }
        }
        let live: f64 = threads.iter().map(|(_, s)| s).sum();
        threads.push(("(ended threads)".into(), self.cpu_secs - live));
        format!(
            "broker CPU {:.0} us ({}) and {:.1} KiB written per continuation, tansu CPU {:.0} us; committed to the store per continuation: {}; memtable flushes: {}; store lookups per continuation: {}",
            self.cpu_secs * 1e6 / n,
            listed(&threads, |t, s| format!("{t} {:.0}", s * 1e6 / n)),
            self.written / 1024.0 / n,
            self.kafka_cpu_secs * 1e6 / n,
            listed(&self.committed, |t, b| format!("{t} {:.0} B", b / n)),
            listed(&self.flushes, |t, f| format!("{t} {f:.0}")),
            listed(&self.lookups, |t, l| format!("{t} {:.2}", l / n)),
        )
    }

    fn describe(&self, instances: u64) -> String {
        format!(
            "{:.0} rounds, {:.0} inputs per round, {:.0} appends, mean {:.0} ms from append to landing; broker CPU {:.0} us per continuation, tansu {:.0} us",
            self.rounds,
            self.inputs / self.rounds.max(1.0),
            self.appends,
            self.landing_secs * 1000.0 / self.appends.max(1.0),
            self.cpu_secs * 1e6 / instances.max(1) as f64,
            self.kafka_cpu_secs * 1e6 / instances.max(1) as f64
        )
    }
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

/// One side of the comparison: a tansu of its own and a broker with `w` instances waiting,
/// and a reader of the lifecycle topic past everything that came before the next round.
struct Side {
    broker: Broker,
    kafka: Kafka,
    w: u64,
    /// the keys waiting, by position
    keys: Vec<u64>,
    /// the next key never used: a continued key is replaced by a new one, so that no key's
    /// entries are written twice (its deleted ones would weigh on later lookups)
    fresh: u64,
    /// a stride co-prime with `w`: positions `(i * stride) % w` for `i` in `0..w` are distinct
    /// and spread over the waiting set
    stride: u64,
    /// how many positions of that sequence earlier rounds continued
    used: u64,
    lifecycle: BaseConsumer,
    load_rate: f64,
    rss_kib: u64,
    disk: u64,
}

/// Each table of the store with files on disk: its MiB and its files (`/metrics`).
fn tables(metrics: &str) -> String {
    let mut out = Vec::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("flowbroker_store_disk_bytes{table=\"") else {
            continue;
        };
        let Some((table, bytes)) = rest.split_once("\"} ") else {
            continue;
        };
        let bytes: f64 = bytes.parse().unwrap_or(0.0);
        if bytes > 0.0 {
            let files = metric_sum(
                metrics,
                "flowbroker_store_segments",
                &format!("table=\"{table}\""),
            );
            out.push(format!("{table} {:.1} MiB in {files}", bytes / 1048576.0));
        }
    }
    if out.is_empty() {
        return "no files yet (all in memtables)".into();
    }
    out.join(", ")
}

/// One round of continuations on one side.
struct Round {
    /// from the first continuation sent to the last completion
    rate: f64,
    /// from the first completion to the last
    spread_rate: f64,
    /// the broker over the continuations: its rounds and CPU time
    phase: Phase,
}

impl Side {
    /// A fresh tansu and broker, `w` instances left waiting.
    fn load(w: u64) -> Side {
        let kafka = Kafka::start();
        let broker = start(&kafka);
        let t = Instant::now();
        publish(&kafka, "scale.open", 0..w);
        support::wait_for(3600, &format!("{w} instances waiting"), || {
            (waiting(&broker) >= w as i64).then_some(())
        });
        let load_rate = w as f64 / t.elapsed().as_secs_f64();
        let rss_kib = broker.rss_kib().unwrap_or(0);
        let disk = dir_bytes(&broker.dir.join("data"));
        let m = broker.metrics();
        println!(
            "  {w} waiting, the store: {}; records kept in memory: {} ({:.1} MiB)",
            tables(&m),
            metric_sum(&m, "flowbroker_store_resident_entries", ""),
            metric_sum(&m, "flowbroker_store_resident_bytes", "") as f64 / 1048576.0
        );
        // one `started` lifecycle record per instance loaded
        let lifecycle = reader_past_starts(&kafka, w as usize);
        let stride = (w / 2 + 1..).find(|s| gcd(*s, w) == 1).unwrap();
        Side {
            broker,
            kafka,
            w,
            keys: (0..w).collect(),
            fresh: w,
            stride,
            used: 0,
            lifecycle,
            load_rate,
            rss_kib,
            disk,
        }
    }

    /// The waiting keys at the next `c` positions of the sequence (each replaced by a new key,
    /// returned second).
    fn next_keys(&mut self, c: u64) -> (Vec<u64>, Vec<u64>) {
        let (mut old, mut new) = (vec![], vec![]);
        for i in self.used..self.used + c {
            let p = ((i * self.stride) % self.w) as usize;
            old.push(self.keys[p]);
            self.keys[p] = self.fresh;
            new.push(self.fresh);
            self.fresh += 1;
        }
        self.used += c;
        (old, new)
    }

    /// `c` continuations for waiting keys (recorded with `perf` into `perf` when given), then
    /// as many new instances opened, so that `w` wait again.
    fn round(&mut self, c: u64, perf: Option<&str>) -> Round {
        let (keys, new) = self.next_keys(c);
        let profile = perf.map(|out| profiler(&self.broker, out));
        let before = Phase::now(&self.broker, &self.kafka);
        let sent = epoch_ms();
        publish(&self.kafka, "scale.close", keys.into_iter());
        let (first, last) = read_type(&self.lifecycle, COMPLETED, c as usize, 1800);
        if let Some(mut p) = profile {
            // SIGINT: perf writes its file and exits
            let _ = std::process::Command::new("kill")
                .args(["-INT", &p.id().to_string()])
                .status();
            let _ = p.wait();
        }
        let phase = Phase::now(&self.broker, &self.kafka).since(before);
        publish(&self.kafka, "scale.open", new.into_iter());
        read_type(&self.lifecycle, STARTED, c as usize, 1800);
        support::wait_for(600, "new instances in place of those continued", || {
            (waiting(&self.broker) >= self.w as i64).then_some(())
        });
        Round {
            rate: c as f64 * 1000.0 / (last - sent).max(1) as f64,
            spread_rate: c.saturating_sub(1).max(1) as f64 * 1000.0 / (last - first).max(1) as f64,
            phase,
        }
    }

    /// SIGKILL and a restart: the time until the partitions are assigned again and until a
    /// continuation sent then has completed.
    fn restart(&mut self) -> (f64, f64) {
        self.broker.kill();
        let t = Instant::now();
        self.broker.start_again();
        let assigned = t.elapsed().as_secs_f64();
        let (key, _) = self.next_keys(1);
        publish(&self.kafka, "scale.close", key.into_iter());
        read_type(&self.lifecycle, COMPLETED, 1, 300);
        (assigned, t.elapsed().as_secs_f64())
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
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
    let rounds = var("SCALE_ROUNDS", if measuring { 15 } else { 2 }).max(1);
    // the same number of continuations on both sides (distinct keys: at most either side's
    // waiting), so the batches they form are alike
    let c = c.min(base).min(w);
    let perf = std::env::var("SCALE_PERF").ok();
    // both sides loaded first, then their rounds alternated (which goes first alternates too),
    // so that a slower minute of this machine falls on both
    let mut small = Side::load(base);
    println!("{base} waiting: loaded at {:.0}/s", small.load_rate);
    let mut big = Side::load(w);
    println!("{w} waiting: loaded at {:.0}/s", big.load_rate);
    let (mut small_rates, mut big_rates, mut ratios) = (vec![], vec![], vec![]);
    let started = (
        Phase::now(&small.broker, &small.kafka),
        Phase::now(&big.broker, &big.kafka),
    );
    for r in 0..rounds {
        let (s, b) = if r % 2 == 0 {
            let s = small.round(c, None);
            (s, big.round(c, perf.as_deref().filter(|_| r == 0)))
        } else {
            let b = big.round(c, None);
            (small.round(c, None), b)
        };
        println!(
            "round {r}: {base} waiting {:.0} continuations/s (first to last completion: {:.0}/s); {w} waiting {:.0}/s ({:.0}/s): {:.2}",
            s.rate,
            s.spread_rate,
            b.rate,
            b.spread_rate,
            b.rate / s.rate
        );
        println!("  {base} waiting: {}", s.phase.describe(c));
        println!("  {w} waiting: {}", b.phase.describe(c));
        small_rates.push(s.rate);
        big_rates.push(b.rate);
        ratios.push(b.rate / s.rate);
    }
    let whole = (
        Phase::now(&small.broker, &small.kafka).since(started.0),
        Phase::now(&big.broker, &big.kafka).since(started.1),
    );
    for (n, phase) in [(base, whole.0), (w, whole.1)] {
        println!(
            "over the {rounds} rounds, {n} waiting: {}",
            phase.per_continuation(c * rounds)
        );
    }
    let (s, b) = (median(small_rates), median(big_rates));
    println!(
        "continuations, median of {rounds} rounds: {base} waiting {s:.0}/s, {w} waiting {b:.0}/s: {:.2} of the {base}-waiting rate (median of the rounds' ratios {:.2})",
        b / s,
        median(ratios)
    );
    let (assigned, first) = big.restart();
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
    assert!(b > 0.0 && s > 0.0);
}

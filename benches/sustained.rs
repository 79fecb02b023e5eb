//! Bounded work under sustained load: the release `flowbroker` binary consumes a paced stream
//! of start events (`echo`: one instance per event) for a long run, and the tables that grow
//! with intake are sampled as it goes: `flowbroker_dedupe_entries` (event ids within
//! `dedupe_window`), finished instances kept for `retention` (the `COMPLETED` gauge), and the
//! broker's RSS. With a window shorter than the run, each must level off at about one window
//! of intake instead of growing with the stream.
//!
//! `cargo bench --bench sustained` runs 10 minutes at 1,500 events/s with a 1-minute dedupe
//! window and retention; under `cargo test` a 12-second smoke run. `SUSTAINED_SECS`,
//! `SUSTAINED_RATE` and `SUSTAINED_WINDOW` override them; `SUSTAINED_BIN=<flowbroker binary>`
//! measures another build. When the stream stops, the bench waits
//! for the backlog to drain and checks that every published event produced exactly one event
//! (nothing lost when an overload ends). Each sample also shows the changelog records Kafka
//! still holds against all written: with `FLOWBROKER_TEST_KAFKA=slatedb` (a tansu that
//! implements DeleteRecords) and a snapshot interval shorter than the run
//! (`SUSTAINED_SNAPSHOT_MS`, the broker's `cluster.snapshot_interval_ms`; by time, a
//! partition is snapshotted once it also grew by `cluster.snapshot_min_growth_percent` of its
//! last snapshot, which a sustained load does within an interval), the first levels off while
//! the second grows. `SUSTAINED_BROKER_ENV="K=V K=V"` adds variables to the
//! broker's environment (an allocator setting such as `MIMALLOC_ALLOW_THP=0`). Each sample
//! also shows the store's files, the bloom filters it keeps in memory for them, its memtables
//! and its bytes on disk (`flowbroker_store_*`), and the broker's memory swapped out: a
//! 10-minute overload can need swap for the test tansu, which keeps every record in memory
//! (`scripts/swapfile.sh`); the figures count the broker's RSS and swap together, and the last
//! two columns show tansu's (a tansu that swaps slows the whole machine). When the load
//! stops it prints that memory under load and its trend (medians of the quarters, least-squares
//! slope), before the drain, which a test Kafka that runs out of memory may not finish.
//! Results: docs/performance.md.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::time::{Duration, Instant};
use support::{metric_sum, Broker, Kafka, ECHO};

struct Sample {
    at: f64,
    consumed: i64,
    dedupe: i64,
    finished: i64,
    lag: i64,
    rss_mib: f64,
    /// The broker's memory swapped out (0 without swap): with [`Sample::rss_mib`], all the
    /// memory it holds. A long run can need swap for the test tansu, which keeps every record
    /// in memory; the kernel may then page out some of the broker's too.
    swap_mib: f64,
    /// The store's files, their bloom filters in memory, its memtables and its bytes on disk.
    segments: i64,
    filters_mib: f64,
    memtables_mib: f64,
    disk_mib: f64,
    /// Changelog records written (the partitions' high watermarks) and still held by Kafka
    /// (high - low: what snapshots have not trimmed).
    written: i64,
    kept: i64,
    /// The test tansu's RSS and its memory swapped out: a tansu that swaps slows everything
    /// on the machine, so a slow stretch of the run is read against these first.
    kafka_mib: f64,
    kafka_swap_mib: f64,
}

impl Sample {
    /// One line of the table.
    fn row(&self) -> String {
        format!(
            "{:>7.0} {:>10} {:>12} {:>10} {:>9} {:>8.1} {:>8.1} {:>18} {:>9} {:>8.1} {:>10.1} {:>9.0} {:>10.0} {:>11.0}",
            self.at,
            self.consumed,
            self.dedupe,
            self.finished,
            self.lag,
            self.rss_mib,
            self.swap_mib,
            format!("{}/{}", self.kept, self.written),
            self.segments,
            self.filters_mib,
            self.memtables_mib,
            self.disk_mib,
            self.kafka_mib,
            self.kafka_swap_mib
        )
    }
}

fn sample(b: &Broker, kafka: &Kafka, t0: Instant) -> Sample {
    let m = b.metrics();
    let marks = kafka.all_watermarks("flowbroker.changelog");
    let mib = |name: &str| metric_sum(&m, name, "") as f64 / (1 << 20) as f64;
    let (kafka_kib, kafka_swap_kib) = kafka.memory_kib().unwrap_or((0, 0));
    Sample {
        written: marks.iter().map(|(_, high)| high).sum(),
        kept: marks.iter().map(|(low, high)| high - low).sum(),
        at: t0.elapsed().as_secs_f64(),
        consumed: metric_sum(&m, "flowbroker_events_consumed_total", ""),
        dedupe: metric_sum(&m, "flowbroker_dedupe_entries", ""),
        finished: metric_sum(&m, "flowbroker_instances", "status=\"COMPLETED\""),
        lag: metric_sum(&m, "flowbroker_kafka_consumer_lag", ""),
        rss_mib: b.rss_kib().unwrap_or(0) as f64 / 1024.0,
        swap_mib: b.swap_kib().unwrap_or(0) as f64 / 1024.0,
        segments: metric_sum(&m, "flowbroker_store_segments", ""),
        filters_mib: mib("flowbroker_store_filter_bytes"),
        memtables_mib: mib("flowbroker_store_write_buffer_bytes"),
        disk_mib: mib("flowbroker_store_disk_bytes"),
        kafka_mib: kafka_kib as f64 / 1024.0,
        kafka_swap_mib: kafka_swap_kib as f64 / 1024.0,
    }
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let var = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let (secs, rate, window) = if measuring {
        (
            var("SUSTAINED_SECS", "600"),
            var("SUSTAINED_RATE", "1500"),
            var("SUSTAINED_WINDOW", "PT1M"),
        )
    } else {
        (
            var("SUSTAINED_SECS", "12"),
            var("SUSTAINED_RATE", "200"),
            var("SUSTAINED_WINDOW", "PT2S"),
        )
    };
    let secs: u64 = secs.parse().expect("SUSTAINED_SECS: seconds");
    let rate: u64 = rate.parse().expect("SUSTAINED_RATE: events per second");
    let start = chrono::DateTime::UNIX_EPOCH;
    let window_secs = flowbroker::time::Duration::parse(&window)
        .expect("SUSTAINED_WINDOW: an ISO 8601 duration such as PT1M")
        .after(start)
        .signed_duration_since(start)
        .as_seconds_f64();

    let kafka = Kafka::start();
    let snapshot_ms = std::env::var("SUSTAINED_SNAPSHOT_MS").ok();
    let mut env = vec![
        ("FLOWBROKER_LOG", "info"),
        ("FLOWBROKER_KAFKA_FETCH_WAIT_MAX_MS", "100"),
        support::DEFAULT_THREADS,
        ("FLOWBROKER_DEDUPE_WINDOW", window.as_str()),
        ("FLOWBROKER_RETENTION", window.as_str()),
    ];
    if let Some(ms) = &snapshot_ms {
        env.push(("FLOWBROKER_CLUSTER_SNAPSHOT_INTERVAL_MS", ms.as_str()));
    }
    let extra = support::env_pairs("SUSTAINED_BROKER_ENV");
    env.extend(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let bin = std::env::var("SUSTAINED_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_flowbroker").to_string());
    let broker = Broker::start_bin(bin, &kafka, &[("echo.yaml", ECHO)], &env);
    support::wait_for(60, "the broker to be ready", || {
        broker.get("/health").0.eq(&200).then_some(())
    });

    let n = secs * rate;
    let p = kafka.producer_lingering(5);
    let publisher = std::thread::spawn(move || {
        let gap = Duration::from_secs_f64(1.0 / rate as f64);
        p.send_pings("s", n as usize, Some(gap), |i| json!({"i": i}));
    });

    let every = Duration::from_secs(if measuring { 10 } else { 1 });
    let t0 = Instant::now();
    let mut samples = vec![];
    println!("sustained: {rate}/s for {secs} s, dedupe_window = retention = {window}");
    println!(
        "{:>7} {:>10} {:>12} {:>10} {:>9} {:>8} {:>8} {:>18} {:>9} {:>8} {:>10} {:>9} {:>10} {:>11}",
        "t (s)",
        "consumed",
        "dedupe ids",
        "finished",
        "lag",
        "RSS MiB",
        "swap MiB",
        "changelog kept/all",
        "segments",
        "filt MiB",
        "memtab MiB",
        "disk MiB",
        "tansu MiB",
        "tansu swap"
    );
    let end = t0 + Duration::from_secs(secs);
    while Instant::now() < end || !publisher.is_finished() {
        // sampling on a period, not waiting for a condition
        std::thread::sleep(every);
        let s = sample(&broker, &kafka, t0);
        println!("{}", s.row());
        samples.push(s);
    }
    publisher.join().unwrap();
    let load_end = t0.elapsed().as_secs_f64();

    // after the first window, each table holds about one window of intake: never more than
    // what was consumed in the last window plus the sweep's slack (a batch, or the 5 s period)
    let slack = 5.0 + 2.0 * every.as_secs_f64();
    let mut worst: f64 = 0.0;
    for s in samples.iter().filter(|s| s.at > window_secs + slack) {
        let earlier = samples
            .iter()
            .rev()
            .find(|e| e.at <= s.at - window_secs - slack)
            .map_or(0, |e| e.consumed);
        let in_window = (s.consumed - earlier).max(1);
        worst = worst.max(s.dedupe as f64 / in_window as f64);
        assert!(
            s.dedupe <= in_window && s.finished <= in_window,
            "at {:.0} s the tables hold {} ids and {} finished instances, more than the {} events consumed in the last {:.0} s",
            s.at, s.dedupe, s.finished, in_window, window_secs + slack
        );
    }
    let last = samples.last().unwrap();
    assert!(last.consumed > 0, "nothing was consumed");
    println!(
        "consumed {} events while publishing; at the end the dedupe table holds {} ids ({:.2} of the last window's intake at worst), RSS {:.1} MiB",
        last.consumed, last.dedupe, worst, last.rss_mib
    );
    // printed before the drain, which a test Kafka that runs out of memory cannot finish
    let load: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.at > 60.0 && s.at <= load_end)
        .collect();
    memory("under load", &load);
    trend(&load);

    // the load stops: whatever is still queued drains, and every event published produced
    // exactly one `bench.pong` (nothing lost, nothing applied twice)
    let pongs = |m: &str| metric_sum(m, "flowbroker_events_produced_total", "type=\"bench.pong\"");
    let drain_from = Instant::now();
    let budget = Duration::from_secs(120 + last.lag.max(0) as u64 / 1_000);
    let mut drained = None;
    while drain_from.elapsed() < budget {
        std::thread::sleep(every);
        let s = sample(&broker, &kafka, t0);
        let produced = pongs(&broker.metrics());
        println!("{}  (draining: {produced} produced)", s.row());
        let done = produced >= n as i64 && s.consumed >= n as i64;
        samples.push(s);
        if done {
            drained = Some(drain_from.elapsed());
            break;
        }
    }
    let m = broker.metrics();
    let consumed = metric_sum(&m, "flowbroker_events_consumed_total", "");
    let produced = pongs(&m);
    let dead = metric_sum(&m, "flowbroker_events_dead_lettered_total", "");
    let drained = drained.unwrap_or_else(|| {
        panic!("after the load stopped, {produced} of {n} events produced their pong within {budget:?} ({consumed} consumed)")
    });
    assert_eq!(consumed, n as i64, "events consumed");
    assert_eq!(produced, n as i64, "pongs produced, one per event");
    assert_eq!(dead, 0, "records dead-lettered");
    println!(
        "drained in {:.0} s: {n} published, {consumed} consumed, {produced} produced, none lost",
        drained.as_secs_f64()
    );
    let all: Vec<&Sample> = samples.iter().filter(|s| s.at > 60.0).collect();
    memory("load and drain", &all);
}

/// All the memory the broker holds: resident and swapped out.
fn held(s: &Sample) -> f64 {
    s.rss_mib + s.swap_mib
}

/// Min, median and max of [`held`] over `samples` (those after the first minute).
fn memory(what: &str, samples: &[&Sample]) {
    let mut v: Vec<f64> = samples.iter().map(|s| held(s)).collect();
    v.sort_by(f64::total_cmp);
    if let (Some(lo), Some(hi)) = (v.first(), v.last()) {
        let swapped = samples.iter().map(|s| s.swap_mib).fold(0.0, f64::max);
        println!(
            "RSS + swap after the first minute, {what}: min {lo:.0} / median {:.0} / max {hi:.0} MiB over {} samples (swap at most {swapped:.1} MiB)",
            v[v.len() / 2],
            v.len()
        );
    }
}

/// Flat or not: the medians of the quarters of `load` and the least-squares slope of
/// [`held`] over it, in MiB a minute.
fn trend(load: &[&Sample]) {
    let points: Vec<(f64, f64)> = load.iter().map(|s| (s.at / 60.0, held(s))).collect();
    if let (Some(slope), true) = (slope(&points), points.len() >= 4) {
        let q = points.len() / 4;
        let quarters: Vec<String> = (0..4)
            .map(|i| {
                let end = if i == 3 { points.len() } else { (i + 1) * q };
                format!("{:.0}", median(points[i * q..end].iter().map(|p| p.1)))
            })
            .collect();
        println!(
            "under load after the first minute: medians of the quarters {} MiB, least-squares slope {slope:.1} MiB a minute",
            quarters.join(" / ")
        );
    }
}

/// The least-squares slope of `y` over `x`; `None` for fewer than two points.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(x, y), p| (x + p.0 / n, y + p.1 / n));
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// The median of `values` (NaN for none).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

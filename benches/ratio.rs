//! flowbroker against Kafka itself, in one process run on one tansu:
//! - throughput: `N` start events queued in `flowbroker.in`, then (a) a raw rdkafka
//!   consume -> produce passthrough copies them to another topic, and (b) the `flowbroker`
//!   binary (default config, durable state, lifecycle events on) completes one instance per
//!   event (a workflow that starts on the event and ends by producing one event). Rates are
//!   taken from the first output to the last, so start-up and group joins do not count;
//! - latency at half of flowbroker's maximum rate: publish -> the copy consumed (passthrough),
//!   publish -> the instance's produced event consumed (flowbroker); p50 and p99 of each, and
//!   of publish -> the record's Kafka timestamp (when the passthrough or the broker produced
//!   it). The paced stream starts once the queued instances' outbox is empty, and the
//!   passthrough is measured again after flowbroker's phase on the same tansu, which answers
//!   more slowly by then; with `RATIO_ALONGSIDE` set, a third time alongside flowbroker's
//!   phase (copying the records flowbroker consumes, as it consumes them).
//!
//! `cargo bench --bench ratio`; under `cargo test` a small smoke run. `RATIO_EVENTS` sets the
//! queue, `RATIO_RATE` the paced rate, `RATIO_BASELINE=<path to an older flowbroker binary>`
//! adds that build's throughput, measured the same way in the same run, `RATIO_BIN=<path>`
//! measures another build in every phase (for its latency),
//! `RATIO_FETCH_WAIT_MS` every consumer's fetch wait (default 100, flowbroker's),
//! `RATIO_BROKER_ENV="K=V K=V"` and `RATIO_BASELINE_ENV` add variables to the environment of
//! the build measured and of the baseline (a setting compared with itself: the same binary
//! as `RATIO_BASELINE`, another value in each). Each throughput phase also prints, on stderr,
//! the broker's rounds, its CPU and tansu's per instance, and what the broker committed to
//! each table of its store per instance. Results: docs/performance.md.

#[path = "../tests/support/mod.rs"]
mod support;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::ClientConfig;
use rdkafka::{Offset, TopicPartitionList};
use serde_json::json;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::{metric_sum, Broker, Kafka, ECHO};

const COPY: &str = "bench.copy";
/// Where the passthrough running alongside flowbroker's paced phase copies its records.
const ALONGSIDE: &str = "bench.alongside";

/// Records that warm the latency phase's passthrough up before its paced stream.
const WARM: usize = 50;

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// A consumer of every partition of `topic` from the beginning.
fn reader(brokers: &str, topic: &str) -> BaseConsumer {
    support::reader(brokers, &[topic], fetch_wait_ms())
}

fn header<'a>(m: &'a impl Message, key: &str) -> Option<&'a [u8]> {
    m.headers()?
        .iter()
        .find(|h| h.key == key)
        .and_then(|h| h.value)
}

/// The send time carried in a record's JSON data (`{"t": micros, ...}`).
fn sent_at(m: &impl Message) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(m.payload()?).ok()?;
    v["t"].as_u64()
}

/// Publishes `n` start events with tag `tag`; `pace` spaces them (None: as fast as possible).
fn publish(kafka: &Kafka, tag: &str, n: usize, pace: Option<Duration>) {
    publish_to(kafka.producer(), tag, n, pace)
}

/// Publishes a paced stream from another thread, so its outputs are read as they arrive.
/// Idempotent, so at most five requests are in flight and records waiting for an answer go
/// out together: librdkafka's default sends each record alone with no bound on requests in
/// flight, and tansu answers a connection's requests one at a time, so once it took over a
/// millisecond per request the publisher's own queue grew to seconds (docs/performance.md).
fn publish_paced(
    kafka: &Kafka,
    tag: &'static str,
    n: usize,
    gap: Duration,
) -> std::thread::JoinHandle<()> {
    let p = kafka.producer_with(1, &[("enable.idempotence", "true")]);
    std::thread::spawn(move || publish_to(p, tag, n, Some(gap)))
}

fn publish_to(p: support::Publisher, tag: &str, n: usize, pace: Option<Duration>) {
    p.send_pings(tag, n, pace, |i| json!({"i": i, "t": now_us()}));
}

/// Records flowbroker produces per instance of the bench's workflow with the default config:
/// its produced event and the `started` and `completed` lifecycle events.
const OUT_PER_INSTANCE: usize = 3;

/// The raw passthrough: copies `n` records of `flowbroker.in` to `bench.copy` (same key,
/// payload and headers), settings as flowbroker's own clients. Returns records/s from the
/// first delivery to the last.
fn passthrough(brokers: &str, n: usize) -> f64 {
    fan_out(reader(brokers, "flowbroker.in"), brokers, n, 1)
}

/// A consumer of every partition of `topic` from its end now (a concrete offset each, so
/// nothing published after this returns is skipped).
fn reader_at_end(brokers: &str, topic: &str) -> BaseConsumer {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", "bench.at-end")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", fetch_wait_ms().to_string())
        .create()
        .unwrap();
    let md = c
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in md.topics()[0].partitions() {
        let (_, high) = c
            .fetch_watermarks(topic, p.id(), Duration::from_secs(10))
            .unwrap();
        tpl.add_partition_offset(topic, p.id(), Offset::Offset(high))
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    c
}

/// The passthrough with `copies` records produced per record consumed: Kafka's own share of
/// an instance's work when `copies` is [`OUT_PER_INSTANCE`] (the changelog append not counted),
/// so an upper bound for flowbroker on this machine. Returns records consumed per second.
fn fan_out(c: BaseConsumer, brokers: &str, n: usize, copies: usize) -> f64 {
    fan_out_to(c, brokers, n, copies, COPY)
}

/// [`fan_out`] to topic `to`.
fn fan_out_to(c: BaseConsumer, brokers: &str, n: usize, copies: usize, to: &str) -> f64 {
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("linger.ms", "5")
        .create()
        .unwrap();
    let mut copied = 0;
    let mut first = None;
    let end = Instant::now() + Duration::from_secs(600);
    while copied < n {
        assert!(
            Instant::now() < end,
            "passthrough copied only {copied} of {n}"
        );
        let Some(Ok(m)) = c.poll(Duration::from_millis(5)) else {
            p.poll(Duration::ZERO);
            continue;
        };
        first.get_or_insert_with(Instant::now);
        for _ in 0..copies {
            let mut rec = BaseRecord::<[u8], [u8]>::to(to);
            if let Some(k) = m.key() {
                rec = rec.key(k);
            }
            if let Some(v) = m.payload() {
                rec = rec.payload(v);
            }
            if let Some(h) = m.headers() {
                rec = rec.headers(h.detach());
            }
            loop {
                match p.send(rec) {
                    Ok(()) => break,
                    Err((_, r)) => {
                        p.poll(Duration::from_millis(1));
                        rec = r;
                    }
                }
            }
        }
        p.poll(Duration::ZERO);
        copied += 1;
    }
    p.flush(Duration::from_secs(60)).unwrap();
    n as f64 / first.unwrap().elapsed().as_secs_f64()
}

/// What [`drain`] measured: outputs/s from the first to the last, and per record, in ms,
/// from its `t` to its arrival here (`lat`) and to its Kafka timestamp (`released`: when the
/// passthrough or the broker produced it, so the rest of `lat` is producing and fetching).
struct Drained {
    rate: f64,
    lat: Vec<f64>,
    released: Vec<f64>,
}

/// Reads `n` records of `topic` that have `ce_type` = `ty`.
fn drain(c: &BaseConsumer, ty: &[u8], n: usize) -> Drained {
    let mut got = 0;
    let mut first = None;
    let (mut lat, mut released) = (Vec::new(), Vec::new());
    let end = Instant::now() + Duration::from_secs(900);
    while got < n {
        assert!(Instant::now() < end, "only {got} of {n} outputs arrived");
        let Some(Ok(m)) = c.poll(Duration::from_millis(50)) else {
            continue;
        };
        if header(&m, "ce_type") != Some(ty) {
            continue;
        }
        first.get_or_insert_with(Instant::now);
        if let Some(t) = sent_at(&m) {
            lat.push(now_us().saturating_sub(t) as f64 / 1000.0);
            if let Some(ts) = m.timestamp().to_millis() {
                released.push((ts as f64 * 1000.0 - t as f64) / 1000.0);
            }
        }
        got += 1;
    }
    let secs = first.unwrap().elapsed().as_secs_f64();
    Drained {
        rate: (n - 1).max(1) as f64 / secs.max(1e-9),
        lat,
        released,
    }
}

/// The `q` quantile of `v` (NaN, printed so, when `v` is empty).
fn pct(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

/// `fetch.wait.max.ms` of every consumer here, the broker's included: flowbroker's default
/// (100), or `RATIO_FETCH_WAIT_MS`. tansu answers a fetch when this runs out rather than when a
/// record arrives, so records travel in bursts one wait apart and latency is quantized by it
/// (../shared/docs/KAFKA.md); 10 shows the broker's own share.
fn fetch_wait_ms() -> u32 {
    std::env::var("RATIO_FETCH_WAIT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

/// The broker runs with the defaults (the test harness's shorter fetch wait, debug log level
/// and processor pool are put back), with the bench's fetch wait and the variables `RATIO_BROKER_ENV` names (or
/// `RATIO_BASELINE_ENV`, for the baseline).
fn start(kafka: &Kafka, bin: &str, baseline: bool) -> Broker {
    let wait = fetch_wait_ms().to_string();
    let mut env = vec![
        ("FLOWBROKER_LOG".to_string(), "info".to_string()),
        ("FLOWBROKER_KAFKA_FETCH_WAIT_MAX_MS".to_string(), wait),
        (
            support::DEFAULT_THREADS.0.to_string(),
            support::DEFAULT_THREADS.1.to_string(),
        ),
    ];
    let var = if baseline {
        "RATIO_BASELINE_ENV"
    } else {
        "RATIO_BROKER_ENV"
    };
    env.extend(support::env_pairs(var));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Broker::start_bin(bin, kafka, &[("echo.yaml", ECHO)], &env)
}

/// On a fresh tansu: `n` queued start events, copied by the raw passthrough, then run through
/// the broker binary `bin`. Returns (records/s copied, instances/s completed, inputs applied
/// directly, inputs through the work topic). Prints the fan-out passthrough's rate (Kafka's
/// share of an instance) on stderr.
fn throughput(bin: &str, n: usize, baseline: bool) -> (f64, f64, i64, i64) {
    let kafka = Kafka::start();
    kafka.create_topic(COPY, 3);
    publish(&kafka, "q", n, None);
    let raw = passthrough(&kafka.brokers(), n);
    let fanned = fan_out(
        reader(&kafka.brokers(), "flowbroker.in"),
        &kafka.brokers(),
        n,
        OUT_PER_INSTANCE,
    );
    eprintln!(
        "passthrough producing {OUT_PER_INSTANCE} records per record consumed: {fanned:.0} consumed/s ({:.3} of the plain passthrough)",
        fanned / raw
    );
    let lifecycle = reader(&kafka.brokers(), "flowbroker.lifecycle");
    let kafka_before = kafka.cpu_secs();
    let broker = start(&kafka, bin, baseline);
    let ours = drain(&lifecycle, b"flowbroker.instance.completed", n).rate;
    if let (Some(before), Some(after)) = (kafka_before, kafka.cpu_secs()) {
        // (the bench's reader of the lifecycle topic included)
        eprintln!(
            "tansu CPU during the broker's phase: {:.0} us per instance",
            1e6 * (after - before) / n as f64
        );
    }
    let (direct, hop) = routed(&broker);
    rounds(&broker);
    // the broker's CPU time for the whole run, start-up included
    if let Some(cpu) = broker.cpu_secs() {
        eprintln!(
            "broker CPU {cpu:.1} s for {n} instances: {:.0} us per instance",
            1e6 * cpu / n as f64
        );
    }
    stored(&broker, n);
    (raw, ours, direct, hop)
}

/// How the broker's rounds went (whole run): how many, the mean inputs per round, the mean
/// time from a round's changelog append to its landing and of a store commit, and how long
/// intake batches waited for the definitions topic's sync, on stderr.
fn rounds(broker: &Broker) {
    let m = broker.metrics();
    let count = metric_sum(&m, "flowbroker_round_inputs_count", "");
    let inputs = metric_sum(&m, "flowbroker_round_inputs_sum", "");
    let appends = metric_sum(&m, "flowbroker_round_landing_seconds_count", "");
    let secs = support::metric_sum_f64(&m, "flowbroker_round_landing_seconds_sum", "");
    let acked = support::metric_sum_f64(&m, "flowbroker_changelog_append_seconds_sum", "");
    let commits = metric_sum(&m, "flowbroker_store_commit_seconds_count", "");
    let commit_secs = support::metric_sum_f64(&m, "flowbroker_store_commit_seconds_sum", "");
    eprintln!(
        "rounds {count}, {:.0} inputs per round; {appends} appended, mean {:.1} ms from append to landing ({:.1} ms to Kafka's acknowledgement); {commits} store commits, mean {:.1} ms",
        inputs as f64 / count.max(1) as f64,
        1000.0 * secs / appends.max(1) as f64,
        1000.0 * acked / appends.max(1) as f64,
        1000.0 * commit_secs / commits.max(1) as f64
    );
    let held = metric_sum(&m, "flowbroker_intake_definitions_wait_seconds_count", "");
    let held_secs =
        support::metric_sum_f64(&m, "flowbroker_intake_definitions_wait_seconds_sum", "");
    eprintln!(
        "intake batches {held}, mean {:.1} ms held for the definitions topic's sync",
        1000.0 * held_secs / held.max(1) as f64
    );
}

/// What the broker stored per instance (whole run), on stderr: the bytes committed to each
/// table of its store (keys and values, deletions' keys included) and the bytes it wrote
/// to files (the store's journal and segments, its logs).
fn stored(broker: &Broker, n: usize) {
    let m = broker.metrics();
    let mut tables = support::by_table(&m, "flowbroker_store_written_bytes_total");
    tables.retain(|(_, b)| *b > 0.0);
    tables.sort_by(|a, b| b.1.total_cmp(&a.1));
    let n = n.max(1) as f64;
    let total: f64 = tables.iter().map(|(_, b)| b).sum();
    let each: Vec<String> = tables
        .iter()
        .map(|(t, b)| format!("{t} {:.0}", b / n))
        .collect();
    eprintln!(
        "committed to the store per instance: {:.0} B ({}); written to files: {:.1} KiB",
        total / n,
        each.join(", "),
        broker.written_bytes().unwrap_or(0) as f64 / 1024.0 / n
    );
}

/// Inputs the broker applied directly and through the work topic (a hop that costs a
/// produce, a fetch and a decode more), from its metrics.
fn routed(broker: &Broker) -> (i64, i64) {
    let metrics = broker.metrics();
    let routed = "flowbroker_input_records_routed_total";
    (
        metric_sum(&metrics, routed, "path=\"direct\""),
        metric_sum(&metrics, routed, "path=\"work_topic\""),
    )
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let (mut n, paced_secs) = if measuring { (100_000, 10) } else { (300, 1) };
    if let Some(v) = std::env::var("RATIO_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        n = v;
    }
    // RATIO_BIN: every phase, latency included, on another build
    let bin =
        std::env::var("RATIO_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_flowbroker").to_string());
    let bin = bin.as_str();
    println!("| measure | raw passthrough | flowbroker | ratio |");
    println!("|---|---|---|---|");
    // an older build, measured the same way in the same run (before/after figures)
    if let Ok(old) = std::env::var("RATIO_BASELINE") {
        let (raw, ours, direct, hop) = throughput(&old, n, true);
        println!(
            "| {n} queued start events, baseline build, records or instances/s | {raw:.0} | {ours:.0} | {:.3} |",
            ours / raw
        );
        println!(
            "| baseline: inputs applied directly / through the work topic | | {direct} / {hop} | |"
        );
    }
    let (raw, ours, direct, hop) = throughput(bin, n, false);
    println!(
        "| {n} queued start events, records or instances/s | {raw:.0} | {ours:.0} | {:.3} |",
        ours / raw
    );
    println!("| inputs applied directly / through the work topic | | {direct} / {hop} | |");

    // Latency at half of flowbroker's rate, on a fresh broker pair: passthrough first, then
    // flowbroker, each with its own paced stream.
    let rate = std::env::var("RATIO_RATE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or((ours / 2.0).max(10.0));
    let m = (rate * paced_secs as f64) as usize;
    let gap = Duration::from_secs_f64(1.0 / rate);
    let kafka = Kafka::start();
    kafka.create_topic(COPY, 3);
    let copies = reader(&kafka.brokers(), COPY);
    let copier = {
        let brokers = kafka.brokers();
        std::thread::spawn(move || passthrough(&brokers, WARM + m))
    };
    // the passthrough's group join and first fetches are not part of its latency
    publish(&kafka, "w", WARM, None);
    drain(&copies, b"bench.ping", WARM);
    let sender = publish_paced(&kafka, "r", m, gap);
    let mut raw = drain(&copies, b"bench.ping", m);
    sender.join().unwrap();
    copier.join().unwrap();
    let out = reader(&kafka.brokers(), "flowbroker.out");
    let broker = start(&kafka, bin, false);
    // The queued "w" and "r" records complete first; only the paced "s" stream is measured.
    drain(&out, b"bench.pong", WARM + m);
    // RATIO_ALONGSIDE: a passthrough alongside, which copies the paced stream's records as
    // flowbroker consumes them, from the same topic at the same time, so both meet tansu in
    // the same state (it answers more slowly the more it holds, see below); warmed up with
    // the broker. Off by default: its load slows flowbroker's phase too (docs/performance.md).
    let along = std::env::var("RATIO_ALONGSIDE").is_ok().then(|| {
        kafka.create_topic(ALONGSIDE, 3);
        let along = reader(&kafka.brokers(), ALONGSIDE);
        let copier = {
            let brokers = kafka.brokers();
            let from = reader_at_end(&brokers, "flowbroker.in");
            std::thread::spawn(move || fan_out_to(from, &brokers, WARM + m, 1, ALONGSIDE))
        };
        publish(&kafka, "v", WARM, None);
        drain(&out, b"bench.pong", WARM);
        drain(&along, b"bench.ping", WARM);
        (along, copier)
    });
    // the burst's aftermath is not the paced stream's: the acknowledgements of its produced
    // records and the removal of their outbox entries (which held the first half-second of the
    // paced stream back, 2026-11-28)
    support::wait_for(300, "the queued instances' outbox to empty", || {
        (metric_sum(&broker.metrics(), "flowbroker_outbox_pending", "") == 0).then_some(())
    });
    let sender = publish_paced(&kafka, "s", m, gap);
    let alongside = along.map(|(r, copier)| {
        (
            std::thread::spawn(move || drain(&r, b"bench.ping", m)),
            copier,
        )
    });
    let mut ours = drain(&out, b"bench.pong", m);
    sender.join().unwrap();
    let along = alongside.map(|(d, copier)| {
        copier.join().unwrap();
        d.join().unwrap()
    });
    rounds(&broker);
    // how the inputs reached their state partitions: applied directly, or through the work
    // topic (a hop that costs a fetch wait on tansu)
    let (direct, hop) = routed(&broker);
    println!(
        "| inputs applied directly / through the work topic (whole run) | | {direct} / {hop} | |"
    );
    println!(
        "| rounds landed (store commits, whole run) | | {} | |",
        metric_sum(
            &broker.metrics(),
            "flowbroker_store_commit_seconds_count",
            ""
        )
    );
    drop(broker);
    // the floor again, on the same tansu after the broker's phase (it holds more by then)
    let copier = {
        let brokers = kafka.brokers();
        let from = reader_at_end(&brokers, "flowbroker.in");
        std::thread::spawn(move || fan_out(from, &brokers, WARM + m, 1))
    };
    publish(&kafka, "x", WARM, None);
    drain(&copies, b"bench.ping", WARM);
    let sender = publish_paced(&kafka, "q", m, gap);
    let mut after = drain(&copies, b"bench.ping", m);
    sender.join().unwrap();
    copier.join().unwrap();
    let (raw50, raw99) = (pct(&mut raw.lat, 0.5), pct(&mut raw.lat, 0.99));
    let (after50, after99) = (pct(&mut after.lat, 0.5), pct(&mut after.lat, 0.99));
    let (our50, our99) = (pct(&mut ours.lat, 0.5), pct(&mut ours.lat, 0.99));
    println!("| latency p50 at {rate:.0}/s, ms | {raw50:.1} | {our50:.1} | |");
    println!(
        "| latency p99 at {rate:.0}/s, ms | {raw99:.1} | {our99:.1} | +{:.1} ms |",
        our99 - raw99
    );
    println!(
        "| latency p50 / p99 at {rate:.0}/s of the passthrough again, after flowbroker's phase, ms | {after50:.1} / {after99:.1} | | |"
    );
    println!(
        "| flowbroker over the mean of the two passthroughs, p50 / p99 | | +{:.1} / +{:.1} ms | |",
        our50 - (raw50 + after50) / 2.0,
        our99 - (raw99 + after99) / 2.0
    );
    if let Some(mut along) = along {
        let (along50, along99) = (pct(&mut along.lat, 0.5), pct(&mut along.lat, 0.99));
        println!(
            "| latency p50 / p99 at {rate:.0}/s of a passthrough alongside flowbroker (its records, at the same time), ms | {along50:.1} / {along99:.1} | | |"
        );
        println!(
            "| flowbroker over the passthrough alongside, p50 / p99 | | +{:.1} / +{:.1} ms | |",
            our50 - along50,
            our99 - along99
        );
    }
    // the records' timestamps are the producing client's clock, this machine's
    println!(
        "| of which publish -> produced by the passthrough (before / after) or the broker, p50 / p99, ms | {:.1} / {:.1}; {:.1} / {:.1} | {:.1} / {:.1} | |",
        pct(&mut raw.released, 0.5),
        pct(&mut raw.released, 0.99),
        pct(&mut after.released, 0.5),
        pct(&mut after.released, 0.99),
        pct(&mut ours.released, 0.5),
        pct(&mut ours.released, 0.99)
    );
}

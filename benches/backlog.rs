//! A backlog queued while the broker was down: `N` start events (`echo`: one instance and one
//! produced event each) wait in `flowbroker.in`, then the release `flowbroker` binary starts
//! and drains them; its RSS is sampled every 250 ms. With backpressure
//! (`kafka.max_in_flight`) memory follows what is in flight, not the backlog.
//!
//! `cargo bench --bench backlog` queues 300,000; under `cargo test` a 3,000-event smoke run.
//! `BACKLOG_N` overrides it, `BACKLOG_BIN=<path>` drains with another build and
//! `BACKLOG_BROKER_ENV="K=V K=V"` adds variables to the broker's environment (a setting
//! compared with itself). Results: docs/performance.md.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::time::{Duration, Instant};
use support::{metric_sum, Broker, Kafka, ECHO};

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("BACKLOG_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if measuring { 300_000 } else { 3_000 });
    let kafka = Kafka::start();
    let t = Instant::now();
    kafka
        .producer()
        .send_pings("q", n, None, |i| json!({"i": i}));
    let queued = t.elapsed().as_secs_f64();
    let bin = std::env::var("BACKLOG_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_flowbroker").to_string());
    let extra = support::env_pairs("BACKLOG_BROKER_ENV");
    let mut env = vec![support::DEFAULT_THREADS];
    env.extend(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let broker = Broker::start_bin(&bin, &kafka, &[("echo.yaml", ECHO)], &env);
    let t0 = Instant::now();
    let mut peak_kib = 0u64;
    let mut samples = Vec::new();
    loop {
        let rss = broker.rss_kib().unwrap_or(0);
        peak_kib = peak_kib.max(rss);
        let m = broker.metrics();
        let done = metric_sum(&m, "flowbroker_instances", "status=\"COMPLETED\"") as usize;
        samples.push((t0.elapsed().as_secs_f64(), rss, done));
        if done >= n {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(900),
            "only {done} of {n} completed in 15 minutes"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let drained = t0.elapsed().as_secs_f64();
    println!("| measure | value |");
    println!("|---|---|");
    println!("| backlog queued | {n} start events in {queued:.1} s |");
    println!(
        "| drained (every instance completed) in | {drained:.1} s ({:.0} instances/s) |",
        n as f64 / drained
    );
    println!("| peak RSS | {:.0} MiB |", peak_kib as f64 / 1024.0);
    let step = (samples.len() / 10).max(1);
    let curve: Vec<String> = samples
        .iter()
        .step_by(step)
        .map(|(t, rss, done)| format!("{t:.0} s: {:.0} MiB, {done} done", *rss as f64 / 1024.0))
        .collect();
    println!("| RSS over the drain | {} |", curve.join("; "));
}

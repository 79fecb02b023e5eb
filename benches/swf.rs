//! SWF long polls, in one run on one tansu: what a hundred idle pollers cost the broker
//! (threads and RSS, against the same broker with none), and how soon a waiting poll gets a
//! decision task: from sending `StartWorkflowExecution` to the poll's answer, `N` times.
//!
//! `cargo bench --bench swf`; under `cargo test` a small smoke run. `SWF_N` sets `N`,
//! `SWF_POLLERS` the idle pollers. Results: docs/performance.md.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::{json, Value};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::{wait_for, Broker, Kafka};

/// One SWF call; a 503 (the broker still being assigned its partitions) is retried.
fn call(http: &str, action: &str, body: Value) -> Value {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(70))
        .build()
        .unwrap();
    wait_for(30, &format!("{action} to be served"), || {
        let r = client
            .post(format!("http://{http}/"))
            .header("x-amz-target", format!("SimpleWorkflowService.{action}"))
            .header("content-type", "application/x-amz-json-1.0")
            .body(body.to_string())
            .send()
            .expect("the broker answers");
        if r.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE {
            return None;
        }
        assert!(r.status().is_success(), "{action}: {}", r.status());
        Some(r.json().unwrap_or(Value::Null))
    })
}

/// Long polls on `list` until the broker goes away (it is stopped under the pollers at the
/// end); each answer with a task is sent on `got`, when given.
fn poll_until_gone(http: String, list: &str, got: Option<mpsc::Sender<Instant>>) {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(70))
        .build()
        .unwrap();
    let body = json!({"domain": "b", "taskList": {"name": list}}).to_string();
    loop {
        let r = client
            .post(format!("http://{http}/"))
            .header("x-amz-target", "SimpleWorkflowService.PollForDecisionTask")
            .body(body.clone())
            .send();
        let Ok(t) = r.and_then(|r| r.json::<Value>()) else {
            return;
        };
        if t["taskToken"].as_str().is_some_and(|s| !s.is_empty()) {
            if let Some(tx) = &got {
                let _ = tx.send(Instant::now());
            }
        }
    }
}

fn status_field(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Established TCP connections to local port `port` (the pollers' connections).
fn connections(port: u16) -> usize {
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let local = format!(":{port:04X}");
    tcp.lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[1].ends_with(&local) && f[3] == "01"
        })
        .count()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let n = env("SWF_N", if measuring { 200 } else { 10 });
    let pollers = env("SWF_POLLERS", if measuring { 100 } else { 10 });
    let kafka = Kafka::start();
    let broker = Broker::start(&kafka, &[], &[]);
    let http = broker.http.clone();
    let port: u16 = http.rsplit(':').next().unwrap().parse().unwrap();
    let pid = broker.pid().expect("the broker runs");
    call(
        &http,
        "RegisterDomain",
        json!({"name": "b", "workflowExecutionRetentionPeriodInDays": "1"}),
    );
    call(
        &http,
        "RegisterWorkflowType",
        json!({"domain": "b", "name": "wf", "version": "1",
        "defaultTaskList": {"name": "hot"}, "defaultTaskStartToCloseTimeout": "600",
        "defaultExecutionStartToCloseTimeout": "3600", "defaultChildPolicy": "TERMINATE"}),
    );
    let (threads0, rss0) = (status_field(pid, "Threads:"), status_field(pid, "VmRSS:"));
    // idle pollers on a list that never gets a task; they end when the broker stops
    for _ in 0..pollers {
        let http = http.clone();
        std::thread::spawn(move || poll_until_gone(http, "idle", None));
    }
    wait_for(60, "the idle polls to be waiting", || {
        (connections(port) >= pollers).then_some(())
    });
    let (threads1, rss1) = (status_field(pid, "Threads:"), status_field(pid, "VmRSS:"));
    // one poller on the list the starts go to; each answer's arrival time comes back
    let (tx, rx) = mpsc::channel();
    let h = http.clone();
    std::thread::spawn(move || poll_until_gone(h, "hot", Some(tx)));
    let mut ms = Vec::with_capacity(n);
    for i in 0..n {
        let sent = Instant::now();
        call(
            &http,
            "StartWorkflowExecution",
            json!({"domain": "b", "workflowId": format!("w{i}"),
            "workflowType": {"name": "wf", "version": "1"}}),
        );
        let got = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the waiting poll got the task");
        ms.push(got.duration_since(sent).as_secs_f64() * 1000.0);
    }
    ms.sort_by(f64::total_cmp);
    println!(
        "swf: {pollers} idle long polls: broker threads {threads0} -> {threads1}, RSS {} -> {} MiB",
        rss0 / 1024,
        rss1 / 1024
    );
    println!(
        "swf: start sent -> waiting poll answered, {n} times: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&ms, 0.5),
        percentile(&ms, 0.99),
        ms[ms.len() - 1]
    );
    drop(broker);
    drop(kafka);
    std::process::exit(0);
}

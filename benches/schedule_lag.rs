//! Cron firing lag: the time from a tick's due instant to the moment its instance's
//! `flowbroker.instance.started` event leaves the core (committed, handed to the producer).
//!
//! The real core (store on disk, fsync per commit, system clock, durable timers) with 1,000
//! scheduled workflows deployed: in scenario A one fires every second and 999 fire daily; in
//! scenario B all 1,000 fire every second. `cargo bench --bench schedule_lag` runs 30 s per
//! scenario; under `cargo test` a 3 s smoke run. Results: docs/schedules.md.

use chrono::{DateTime, Utc};
use flowbroker::broker::core::{Core, Queues};
use flowbroker::broker::records::OutRecord;
use flowbroker::broker::{Cmd, SystemClock};
use flowbroker::config::Config;
use flowbroker::store::Store;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

fn workflow(i: usize, cron: &str) -> String {
    format!(
        "id: wf{i}\nname: wf{i}\nstates:\n- name: Run\n  type: inject\n  start:\n    kind: scheduled\n    schedule: {{cron: \"{cron}\", timezone: UTC, directInvoke: allow}}\n  data: {{i: {i}}}\n  end: {{kind: default}}\n"
    )
}

fn scenario(name: &str, total: usize, every_second: usize, secs: u64) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("store")).unwrap());
    let cfg = Config {
        timezone: "UTC".into(),
        ..Config::default()
    };
    let (mut core, mut prx, _calls) = Core::detached(store, cfg, Arc::new(SystemClock)).unwrap();
    let files: BTreeMap<String, String> = (0..total)
        .map(|i| {
            let cron = if i < every_second {
                "* * * * * ?"
            } else {
                "0 0 3 * * ?"
            };
            (format!("/wf/{i}.yaml"), workflow(i, cron))
        })
        .collect();
    let t0 = std::time::Instant::now();
    core.process(vec![Cmd::Files(files)]).unwrap();
    let deploy = t0.elapsed();
    let (tx, rx) = mpsc::channel::<Cmd>(64);
    let (_control, control_rx) = mpsc::unbounded_channel::<Cmd>();
    let core_thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(core.run(Queues::without_kafka(rx, control_rx)))
            .unwrap();
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut lags: Vec<f64> = Vec::new();
    rt.block_on(async {
        let end = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let batch = tokio::select! {
                b = prx.recv() => b,
                _ = tokio::time::sleep_until(end) => break,
            };
            let Some(batch) = batch else { break };
            let now = Utc::now();
            for (_, rec) in batch {
                if let Some(event) = match &rec {
                    OutRecord::Kafka(p) => p.read_event(),
                    OutRecord::Work { .. } => None,
                } {
                    if event.event_type == "flowbroker.instance.started" {
                        let data = event.data.unwrap();
                        let due: DateTime<Utc> = data["input"]["scheduledTime"]
                            .as_str()
                            .unwrap()
                            .parse()
                            .unwrap();
                        lags.push((now - due).num_microseconds().unwrap() as f64 / 1000.0);
                    }
                }
            }
        }
    });
    drop(tx);
    core_thread.join().unwrap();
    lags.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |p: f64| lags[((lags.len() as f64 * p) as usize).min(lags.len() - 1)];
    assert!(!lags.is_empty(), "no tick fired");
    println!(
        "| {name} | {total} | {every_second} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.0} ms |",
        lags.len(),
        pct(0.5),
        pct(0.99),
        lags[lags.len() - 1],
        lags[0],
        deploy.as_secs_f64() * 1000.0
    );
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    println!("| scenario | deployed | firing every second | ticks | lag p50 | lag p99 | lag max | lag min | deploy time |");
    println!("|---|---|---|---|---|---|---|---|---|");
    if measuring {
        scenario("A", 1000, 1, 30);
        scenario("B", 1000, 1000, 30);
    } else {
        scenario("smoke", 10, 2, 3);
    }
}

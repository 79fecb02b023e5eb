//! Broker core throughput without Kafka: decoded records in batches through the real core
//! (correlation index, engine, history, outbox, offsets; one fsynced store transaction per
//! batch). Each of `n` orders is started by one event and continued by a second, correlated
//! one; the instance then completes and produces an event. Each batch size runs with the
//! partitions applied in turn on the core thread (`cluster.processor_threads = 1`) and on the
//! processor threads (one per core, at least 2), in the same run. `cargo bench --bench core`;
//! under `cargo test` a small smoke run. `CORE_ORDERS=<n>` sets the orders of every batch size,
//! `CORE_BATCHES=<b,b>` the batch sizes and `CORE_THREADS=<t>` the one processor setting to run
//! (for instruction counts under `valgrind --tool=callgrind`, which vary between runs by about
//! a thousandth where timings vary by tens of percent). Results: docs/performance.md.

use flowbroker::broker::core::Core;
use flowbroker::broker::{Cmd, Record, SystemClock};
use flowbroker::config::Config;
use flowbroker::engine::Event;
use flowbroker::store::Store;
use serde_json::{json, Map};
use std::sync::Arc;
use std::time::Instant;

const ORDERS: &str = r#"
id: orders
name: orders
events:
- {name: Created, type: order.created, source: /shop, correlation: [{contextAttributeName: orderid}]}
- {name: Paid, type: order.paid, source: /shop, correlation: [{contextAttributeName: orderid}]}
- {name: Done, type: order.done, kind: produced}
states:
- name: Received
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Created]}]
  transition: {nextState: AwaitPayment}
- name: AwaitPayment
  type: event
  eventsActions:
  - eventRefs: [Paid]
    eventDataFilter: {dataOutputPath: "{{ $.data.amount }}"}
  end: {kind: event, produceEvent: {eventRef: Done, data: "{{ $ }}"}}
"#;

fn record(offset: i64, id: String, ty: &str, order: usize) -> Record {
    let mut ext = Map::new();
    ext.insert("orderid".into(), json!(format!("o{order}")));
    Record {
        topic: "flowbroker.in".into(),
        partition: 0,
        offset,
        event: Ok(Event {
            id,
            source: "/shop".into(),
            event_type: ty.into(),
            time: None,
            datacontenttype: Some("application/json".into()),
            subject: None,
            data: Some(json!({"amount": order, "items": [{"sku": "a", "quantity": 1}]})),
            extensions: ext,
        }),
        key: None,
        payload: None,
        headers: vec![],
    }
}

fn run(n: usize, batch: usize, threads: usize) -> (f64, usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("store")).unwrap());
    let mut cfg = Config::default();
    cfg.cluster.processor_threads = threads;
    let (mut core, mut prx, _calls) = Core::detached(store, cfg, Arc::new(SystemClock)).unwrap();
    let files = [("/wf/orders.yaml".to_string(), ORDERS.to_string())].into();
    core.process(vec![Cmd::Files(files)]).unwrap();
    let mut records = Vec::with_capacity(2 * n);
    for i in 0..n {
        records.push(record(2 * i as i64, format!("c{i}"), "order.created", i));
        records.push(record(2 * i as i64 + 1, format!("p{i}"), "order.paid", i));
    }
    let t0 = Instant::now();
    let mut it = records.into_iter().peekable();
    while it.peek().is_some() {
        let chunk: Vec<Record> = it.by_ref().take(batch).collect();
        core.process(vec![Cmd::Records(chunk)]).unwrap();
    }
    let secs = t0.elapsed().as_secs_f64();
    let mut produced = 0;
    while let Ok(b) = prx.try_recv() {
        produced += b.len();
    }
    ((2 * n) as f64 / secs, produced)
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let n = if measuring { 20_000 } else { 200 };
    println!("| batch | events | processor threads | events/s | records produced |");
    println!("|---|---|---|---|---|");
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let pool = format!("{cores} (one per core)");
    let orders: Option<usize> = std::env::var("CORE_ORDERS")
        .ok()
        .map(|v| v.parse().unwrap());
    let batches: Vec<usize> = std::env::var("CORE_BATCHES").map_or(vec![1, 50, 500], |v| {
        v.split(',').map(|b| b.trim().parse().unwrap()).collect()
    });
    let mut settings = vec![(1, "1 (the core thread)".to_string()), (cores, pool)];
    if let Ok(t) = std::env::var("CORE_THREADS") {
        let t: usize = t.parse().unwrap();
        settings = vec![(t, t.to_string())];
    }
    for batch in batches {
        let n = orders.unwrap_or(if batch == 1 { n / 10 } else { n });
        for (threads, label) in settings.iter().map(|(t, l)| (*t, l.as_str())) {
            let (rate, produced) = run(n, batch, threads);
            assert_eq!(produced, 3 * n, "started, done and completed per order");
            println!("| {batch} | {} | {label} | {rate:.0} | {produced} |", 2 * n);
        }
    }
}

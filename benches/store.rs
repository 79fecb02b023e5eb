//! The store choice, measured: the broker's exact write pattern (one transaction per consumed
//! batch holding instance states, index changes, a timer, outbox records, history and the
//! offsets, committed durably with fsync) on redb and on fjall.
//!
//! `cargo bench --bench store` prints events/s and commit latency per batch size for each.
//! Results and the decision are in docs/store.md.

use redb::ReadableTable;
use std::time::{Duration, Instant};

const RECORD: usize = 1200; // a typical stored instance (JSON), bytes
const EVENT: usize = 400; // an outbox record / history entry, bytes

trait Kv {
    fn name(&self) -> &'static str;
    /// One batch: `n` events, each touching its instance.
    fn batch(&mut self, first: u64, n: u64);
}

fn keys(i: u64) -> (String, String, String, String) {
    let inst = format!("inst-{:08}", i % 10_000);
    (
        inst.clone(),
        format!("wf\u{1f}Paid\u{1f}{}\u{1f}{inst}", i % 10_000),
        format!("{:020}\u{1f}{inst}/timeout", 1_700_000_000_000u64 + i),
        format!("{i:020}"),
    )
}

struct Redb {
    db: redb::Database,
}

const T: [redb::TableDefinition<&str, &[u8]>; 6] = [
    redb::TableDefinition::new("instances"),
    redb::TableDefinition::new("waits"),
    redb::TableDefinition::new("timers"),
    redb::TableDefinition::new("outbox"),
    redb::TableDefinition::new("history"),
    redb::TableDefinition::new("offsets"),
];

impl Kv for Redb {
    fn name(&self) -> &'static str {
        "redb 2"
    }
    fn batch(&mut self, first: u64, n: u64) {
        let tx = self.db.begin_write().unwrap();
        {
            let mut t: Vec<_> = T.iter().map(|d| tx.open_table(*d).unwrap()).collect();
            let rec = vec![b'x'; RECORD];
            let ev = vec![b'e'; EVENT];
            for i in first..first + n {
                let (inst, wait, timer, seq) = keys(i);
                let _ = t[0].get(inst.as_str()).unwrap().map(|g| g.value().len());
                t[0].insert(inst.as_str(), rec.as_slice()).unwrap();
                t[1].remove(wait.as_str()).unwrap();
                t[1].insert(format!("{wait}x").as_str(), &[][..]).unwrap();
                t[2].insert(timer.as_str(), ev.as_slice()).unwrap();
                t[3].insert(seq.as_str(), ev.as_slice()).unwrap();
                t[4].insert(format!("{inst}\u{1f}{seq}").as_str(), ev.as_slice())
                    .unwrap();
            }
            t[5].insert("flowbroker.in\u{1f}0", &(first + n).to_le_bytes()[..])
                .unwrap();
        }
        tx.commit().unwrap();
    }
}

struct Fjall {
    ks: fjall::TxKeyspace,
    parts: Vec<fjall::TxPartitionHandle>,
}

impl Kv for Fjall {
    fn name(&self) -> &'static str {
        "fjall 2"
    }
    fn batch(&mut self, first: u64, n: u64) {
        let mut tx = self.ks.write_tx();
        let p = &self.parts;
        let rec = vec![b'x'; RECORD];
        let ev = vec![b'e'; EVENT];
        for i in first..first + n {
            let (inst, wait, timer, seq) = keys(i);
            let _ = tx.get(&p[0], inst.as_bytes()).unwrap().map(|v| v.len());
            tx.insert(&p[0], inst.as_bytes(), rec.as_slice());
            tx.remove(&p[1], wait.as_bytes());
            tx.insert(&p[1], format!("{wait}x").as_bytes(), b"");
            tx.insert(&p[2], timer.as_bytes(), ev.as_slice());
            tx.insert(&p[3], seq.as_bytes(), ev.as_slice());
            tx.insert(
                &p[4],
                format!("{inst}\u{1f}{seq}").as_bytes(),
                ev.as_slice(),
            );
        }
        tx.insert(&p[5], "flowbroker.in\u{1f}0", (first + n).to_le_bytes());
        tx.commit().unwrap();
        self.ks.persist(fjall::PersistMode::SyncAll).unwrap();
    }
}

fn run(kv: &mut dyn Kv, batch: u64, total: u64) -> (f64, Duration, Duration) {
    let mut lat = Vec::new();
    let t0 = Instant::now();
    let mut i = 0;
    while i < total {
        let t = Instant::now();
        kv.batch(i, batch);
        lat.push(t.elapsed());
        i += batch;
    }
    let secs = t0.elapsed().as_secs_f64();
    lat.sort();
    let p50 = lat[lat.len() / 2];
    let p99 = lat[(lat.len() * 99 / 100).min(lat.len() - 1)];
    (total as f64 / secs, p50, p99)
}

fn main() {
    // `cargo bench` passes --bench; under `cargo test` this runs a few batches only.
    let quick = !std::env::args().any(|a| a == "--bench");
    println!("| store | batch | events/s | commit p50 | commit p99 |");
    println!("|---|---|---|---|---|");
    for batch in [1u64, 10, 100, 500] {
        let total = if quick {
            batch * 4
        } else {
            (batch * 400).min(50_000)
        };
        let dir = tempfile::tempdir().unwrap();
        let mut r = Redb {
            db: redb::Database::create(dir.path().join("r.redb")).unwrap(),
        };
        let dir2 = tempfile::tempdir().unwrap();
        let ks = fjall::Config::new(dir2.path())
            .manual_journal_persist(true)
            .open_transactional()
            .unwrap();
        let parts = [
            "instances",
            "waits",
            "timers",
            "outbox",
            "history",
            "offsets",
        ]
        .iter()
        .map(|n| ks.open_partition(n, Default::default()).unwrap())
        .collect();
        let mut f = Fjall { ks, parts };
        for kv in [&mut r as &mut dyn Kv, &mut f] {
            let (rate, p50, p99) = run(kv, batch, total);
            println!(
                "| {} | {batch} | {rate:.0} | {:.2} ms | {:.2} ms |",
                kv.name(),
                p50.as_secs_f64() * 1e3,
                p99.as_secs_f64() * 1e3
            );
        }
    }
}

//! The broker core driven in-process with a manual clock: store on disk, registry, timers,
//! schedules, no Kafka. What the core would produce is read from its outbox channel; restarts
//! are simulated by reopening the store.

use chrono::{DateTime, Utc};
use flowbroker::broker::core::Core;
use flowbroker::broker::records::OutRecord;
use flowbroker::broker::{Cmd, ManualClock, StartRequest};
use flowbroker::config::Config;
use flowbroker::store::Store;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::mpsc;

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub clock: Arc<ManualClock>,
    cfg: Config,
    core: Option<Core>,
    store: Option<Arc<Store>>,
    out: mpsc::UnboundedReceiver<flowbroker::broker::LetOut>,
    files: BTreeMap<String, String>,
    /// Every `flowbroker.instance.started` seen: (instance id, workflow, input).
    pub started: Vec<(String, String, Value)>,
    /// Every event let out, in order: (topic, key, event).
    pub events: Vec<(String, String, flowbroker::engine::Event)>,
}

/// The strings of an array field of a routing outcome.
pub fn list(v: &Value, field: &str) -> Vec<String> {
    v[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

pub fn t(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

impl Harness {
    pub fn new(at: &str, cfg: impl FnOnce(&mut Config)) -> Harness {
        let mut c = Config {
            timezone: "UTC".into(),
            ..Config::default()
        };
        // the processor pool, which the default leaves out on 2 cores, runs in every test
        c.cluster.processor_threads = 2;
        cfg(&mut c);
        let (_, rx) = mpsc::unbounded_channel();
        let mut h = Harness {
            dir: tempfile::tempdir().unwrap(),
            clock: Arc::new(ManualClock::new(t(at))),
            cfg: c,
            core: None,
            store: None,
            out: rx,
            files: BTreeMap::new(),
            started: vec![],
            events: vec![],
        };
        h.boot();
        h
    }

    /// (Re)opens the store and builds a core, as a broker start does.
    pub fn boot(&mut self) {
        self.core = None; // a crash: nothing but committed state survives
        self.store = None;
        let path = self.dir.path().join("store");
        let store = Arc::new(Store::open_with(&path, self.cfg.store.memory()).unwrap());
        self.store = Some(store.clone());
        // function calls are not made here: the workflows these tests use call none
        let (mut core, prx, _calls) =
            Core::detached(store, self.cfg.clone(), self.clock.clone()).unwrap();
        core.process(vec![Cmd::Files(self.files.clone())]).unwrap();
        self.out = prx;
        self.core = Some(core);
        self.drain();
    }

    pub fn deploy(&mut self, name: &str, text: &str) {
        self.files.insert(format!("/wf/{name}"), text.to_string());
        self.sync();
    }

    pub fn remove(&mut self, name: &str) {
        self.files.remove(&format!("/wf/{name}"));
        self.sync();
    }

    pub fn sync(&mut self) {
        let files = self.files.clone();
        self.core
            .as_mut()
            .unwrap()
            .process(vec![Cmd::Files(files)])
            .unwrap();
        self.drain();
    }

    /// Moves the clock and lets the core fire what is due (as its timer would).
    pub fn at(&mut self, when: &str) {
        self.clock.set(t(when));
        self.core.as_mut().unwrap().process(vec![]).unwrap();
        self.drain();
    }

    pub fn drain(&mut self) {
        while let Ok(batch) = self.out.try_recv() {
            for (_, rec) in batch {
                // the event as a consumer of its topic reads it (dead letters are not events)
                let event = match &rec {
                    OutRecord::Kafka(p) if p.parts().label != "dead-letter" => {
                        Some(p.read_event().expect("a produced event reads back"))
                    }
                    _ => None,
                };
                if let (Some(event), OutRecord::Kafka(p)) = (event, &rec) {
                    let p = p.parts();
                    let key = String::from_utf8(p.key.unwrap_or_default().to_vec()).unwrap();
                    self.events.push((p.topic.to_string(), key, event.clone()));
                    if event.event_type == "flowbroker.instance.started" {
                        let d = event.data.unwrap();
                        self.started.push((
                            d["instanceId"].as_str().unwrap().to_string(),
                            d["workflowId"].as_str().unwrap().to_string(),
                            d["input"].clone(),
                        ));
                    }
                }
            }
        }
    }

    /// Scheduled times of the instances started for `wf`, in order.
    pub fn ticks(&self, wf: &str) -> Vec<String> {
        self.started
            .iter()
            .filter(|s| s.1 == wf)
            .map(|s| s.2["scheduledTime"].as_str().unwrap_or("-").to_string())
            .collect()
    }

    /// The stored instance record, if any (as `GET /v1/instances/{id}` reads it).
    pub fn stored(&self, id: &str) -> Option<Value> {
        let store = self.store.as_ref()?;
        let snap = store.read().unwrap();
        let scope = flowbroker::cluster::partition::scope_of(id)?;
        snap.get_in::<Value>(scope, flowbroker::store::Table::Instances, id)
            .unwrap()
    }

    /// Every key of the store and its value, in key order (every scope).
    pub fn export(&self) -> Vec<flowbroker::store::Write> {
        let store = self.store.as_ref().unwrap();
        let export = store
            .export(flowbroker::store::Scope::Node)
            .expect("no merge runs in a test's store");
        export.chunks(1 << 20).flat_map(|c| c.unwrap()).collect()
    }

    /// Point lookups that have reached `table` of the store since it opened
    /// (`flowbroker_store_lookups_total`).
    pub fn lookups(&self, table: flowbroker::store::Table) -> u64 {
        self.store.as_ref().unwrap().stats().table(table).lookups
    }

    /// Records the store keeps in memory (`flowbroker_store_resident_entries`).
    pub fn resident(&self) -> u64 {
        self.store.as_ref().unwrap().resident().entries
    }

    /// Entries of a table, over every state partition.
    pub fn table_len(&self, table: flowbroker::store::Table) -> u64 {
        let store = self.store.as_ref().unwrap();
        let snap = store.read().unwrap();
        self.cfg
            .cluster
            .parts()
            .all()
            .map(|p| {
                snap.len_in(flowbroker::store::Scope::Partition(p.0), table)
                    .unwrap()
            })
            .sum()
    }

    /// History entries stored for an instance.
    pub fn history_len(&self, id: &str) -> usize {
        self.history(id).len()
    }

    /// The history entries stored for an instance, as stored (payloads summarized).
    pub fn history(&self, id: &str) -> Vec<Value> {
        let store = self.store.as_ref().unwrap();
        let snap = store.read().unwrap();
        let prefix = format!("{id}{}", flowbroker::store::SEP);
        let scope = flowbroker::cluster::partition::scope_of(id).unwrap();
        snap.prefix_in::<Value>(scope, flowbroker::store::Table::History, &prefix)
            .unwrap()
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    }

    /// Lets the core do what is due now (timers, sweeps), as its loop would.
    pub fn tick(&mut self) {
        self.core.as_mut().unwrap().process(vec![]).unwrap();
        self.drain();
    }

    pub fn cancel(&mut self, id: &str) {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        self.core
            .as_mut()
            .unwrap()
            .process(vec![Cmd::Cancel {
                id: id.into(),
                reply: tx,
            }])
            .unwrap();
        self.drain();
        rx.try_recv().unwrap().unwrap();
    }

    /// The store-kept gauges as `/metrics` shows them (one process owns every partition;
    /// without a changelog no outbox entry is held in memory).
    pub fn gauges(&self) -> String {
        let all: Vec<_> = self.cfg.cluster.parts().all().collect();
        let store = self.store.as_ref().unwrap();
        // (nothing kept from an earlier read: a merge running now is waited for)
        let last = Default::default();
        flowbroker::broker::gauges::gauges(store, &all, &|_| 0, &last).unwrap()
    }

    /// The instances-by-status gauge for `status`, summed over the partitions.
    pub fn gauge(&self, status: &str) -> i64 {
        super::metric_sum(
            &self.gauges(),
            "flowbroker_instances",
            &format!("status=\"{status}\""),
        )
    }

    /// The core's metrics as `/metrics` shows them (without the store-kept gauges).
    pub fn metrics_text(&self) -> String {
        self.core.as_ref().unwrap().metrics().render("")
    }

    /// A counter of the core's metrics, summed over its series.
    pub fn counter(&self, name: &str) -> i64 {
        self.counter_with(name, "")
    }

    /// A counter's series whose labels contain `with` (`on="pool"`), summed.
    pub fn counter_with(&self, name: &str, with: &str) -> i64 {
        let text = self.core.as_ref().unwrap().metrics().render("");
        super::metric_sum(&text, name, with)
    }

    pub fn start(&mut self, wf: &str) -> Result<String, String> {
        self.start_with(wf, json!({}))
    }

    pub fn start_with(&mut self, wf: &str, input: Value) -> Result<String, String> {
        self.start_keyed(wf, input, None)
    }

    /// A direct start with an idempotency key (its instance id follows from the key).
    pub fn start_keyed(
        &mut self,
        wf: &str,
        input: Value,
        key: Option<&str>,
    ) -> Result<String, String> {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        self.core
            .as_mut()
            .unwrap()
            .process(vec![Cmd::Start {
                start: StartRequest {
                    workflow: wf.into(),
                    input,
                    key: key.map(str::to_string),
                    trace: None,
                    at: None,
                },
                reply: tx,
            }])
            .unwrap();
        self.drain();
        rx.try_recv()
            .unwrap()
            .map(|s| s.id)
            .map_err(|e| e.to_string())
    }

    pub fn event(&mut self, id: &str, source: &str, ty: &str) -> Value {
        self.event_with(id, source, ty, &[], json!({}))
    }

    /// Routes several events in one batch of the core (as records consumed together).
    pub fn events_together(&mut self, events: Vec<flowbroker::engine::Event>) {
        let cmds = events
            .into_iter()
            .map(|event| {
                let (tx, _rx) = tokio::sync::oneshot::channel();
                Cmd::Event { event, reply: tx }
            })
            .collect();
        self.core.as_mut().unwrap().process(cmds).unwrap();
        self.drain();
    }

    /// Routes an event with extension attributes and data; returns the routing outcome.
    pub fn event_with(
        &mut self,
        id: &str,
        source: &str,
        ty: &str,
        attrs: &[(&str, &str)],
        data: Value,
    ) -> Value {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let event = flowbroker::engine::Event {
            id: id.into(),
            source: source.into(),
            event_type: ty.into(),
            time: None,
            datacontenttype: None,
            subject: None,
            data: Some(data),
            extensions: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect(),
        };
        self.core
            .as_mut()
            .unwrap()
            .process(vec![Cmd::Event { event, reply: tx }])
            .unwrap();
        self.drain();
        serde_json::to_value(rx.try_recv().unwrap().unwrap()).unwrap()
    }
}

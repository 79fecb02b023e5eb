//! Several brokers in one consumer group against one real tansu (docs/scale.md): state
//! partitions move between them while an order stream flows, with duplicate detection by event
//! id off (`dedupe_window = "PT0S"`), so only source positions keep inputs from applying twice.
//! One broker is SIGKILLed mid-stream, one is added, one stops gracefully, and the killed one
//! comes back. Then every order completes once, on one instance per key, each input once in
//! its history, one produced id per logical event and one idempotency key per call.

mod support;
use rand::Rng;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use support::*;

const ORDER: &str = r#"
id: order
name: order
functions:
- {name: charge, resource: CHARGE}
events:
- {name: Placed, type: order.placed, source: /shop, correlation: [{contextAttributeName: orderid}]}
- {name: Paid, type: order.paid, source: /shop, correlation: [{contextAttributeName: orderid}]}
- {name: Done, type: order.done, kind: produced}
states:
- name: Placed
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Placed]}]
  transition: {nextState: Paid}
- name: Paid
  type: event
  eventsActions:
  - eventRefs: [Paid]
    actions: [{functionRef: {refName: charge, parameters: {order: "{{ $.orderid }}"}}}]
  transition: {nextState: Settle}
- name: Settle
  type: delay
  timeDelay: PT1S
  end: {kind: event, produceEvent: {eventRef: Done, data: "{{ $.orderid }}"}}
"#;

fn env() -> Vec<(&'static str, String)> {
    vec![
        ("FLOWBROKER_DEDUPE_WINDOW", "PT0S".into()),
        ("FLOWBROKER_CLUSTER_PARTITIONS", "12".into()),
        // the brokers share a token: a list answered by every owner shows they send it to
        // each other
        ("FLOWBROKER_HTTP_AUTH_TOKEN", "cluster-token".into()),
    ]
}

fn start(kafka: &Kafka, wf: &str, extra: &[(&str, String)]) -> Broker {
    let env: Vec<(&str, &str)> = extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Broker::start(kafka, &[("order.yaml", wf)], &env)
}

/// The instance ids of the lifecycle events of one type.
fn instances(out: &Collector, lifecycle: &str) -> BTreeSet<String> {
    out.events(lifecycle)
        .iter()
        .filter_map(|e| e.data.as_ref()?["instanceId"].as_str().map(str::to_string))
        .collect()
}

fn n() -> usize {
    std::env::var("FLOWBROKER_CLUSTER_ORDERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120)
}

#[test]
fn brokers_come_and_go_mid_stream_and_every_order_completes_once() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle", "flowbroker.out"]);
    let fns = Functions::start(|_, body| (200, json!({"charged": body["order"]})));
    let wf = ORDER.replace("CHARGE", &fns.url("/charge"));
    let mut a = start(&kafka, &wf, &env());
    let mut b = start(&kafka, &wf, &env());
    let c = start(&kafka, &wf, &env());
    let pubr = kafka.producer();
    let total = n();
    let mut rng = rand::rng();
    let mut d: Option<Broker> = None;
    let completed = |out: &Collector| out.events("flowbroker.instance.completed").len();
    let mut hit = BTreeMap::new();
    for i in 0..total {
        let order = format!("o-{i}");
        let placed = event(
            &format!("placed-{i}"),
            "/shop",
            "order.placed",
            &[("orderid", &order)],
            json!({"n": i}),
        );
        let paid = event(
            &format!("paid-{i}"),
            "/shop",
            "order.paid",
            &[("orderid", &order)],
            json!({"amount": i}),
        );
        // keyed at random: the two events of an order land on any input partitions, in any
        // order of consumption
        let (k1, k2): (u64, u64) = (rng.random(), rng.random());
        if rng.random_bool(0.5) {
            pubr.send_keyed(&placed, &k1.to_string());
            pubr.send_keyed(&paid, &k2.to_string());
        } else {
            pubr.send_keyed(&paid, &k2.to_string());
            pubr.send_keyed(&placed, &k1.to_string());
        }
        let faults = std::env::var("FLOWBROKER_CLUSTER_FAULTS")
            .unwrap_or_else(|_| "kill,add,stop,back".into());
        let at = |f: f64, what: &str| {
            i == (total as f64 * f) as usize && faults.split(',').any(|x| x == what)
        };
        if at(0.25, "kill") {
            hit.insert("kill", completed(&out));
            a.kill();
        }
        if at(0.45, "add") {
            hit.insert("add", completed(&out));
            d = Some(start(&kafka, &wf, &env()));
        }
        if at(0.65, "stop") {
            hit.insert("stop", completed(&out));
            b.terminate();
        }
        if at(0.8, "back") {
            hit.insert("back", completed(&out));
            a.start_again();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // the faults hit a stream in flight, not a finished one
    for (what, done) in &hit {
        assert!(*done < total, "{what} happened after every order completed");
    }
    assert!(
        a.log().contains("state partition taken over"),
        "the killed broker owned partitions before it died"
    );
    let live: Vec<&Broker> = [Some(&a), Some(&b), Some(&c), d.as_ref()]
        .into_iter()
        .flatten()
        .filter(|br| br.running())
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while completed(&out) < total {
        if std::time::Instant::now() > deadline {
            let mut report = String::new();
            let done = instances(&out, "flowbroker.instance.completed");
            for br in &live {
                let (_, v) = br.get("/v1/instances?workflowId=order&limit=100000");
                for i in v["instances"].as_array().cloned().unwrap_or_default() {
                    let id = i["id"].as_str().unwrap_or_default();
                    if !done.contains(id) {
                        report.push_str(&format!(
                            "{} {id} {} {} {}\n",
                            br.http, i["status"], i["state"], i["data"]
                        ));
                    }
                }
            }
            for br in &live {
                let m = br.metrics();
                for l in m.lines().filter(|l| {
                    l.starts_with("flowbroker_buffered")
                        || l.starts_with("flowbroker_records_duplicate")
                        || l.starts_with("flowbroker_events_unmatched")
                }) {
                    report.push_str(&format!("{} {l}\n", br.http));
                }
            }
            panic!(
                "{} of {total} orders completed; not completed, per broker:\n{report}",
                completed(&out)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }

    // one instance per key: no more instances started than orders, each completed
    let started = instances(&out, "flowbroker.instance.started");
    assert_eq!(started.len(), total, "one instance per order");
    let mut by_order: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let ids = instances(&out, "flowbroker.instance.completed");
    assert_eq!(ids.len(), total, "distinct completed instances");
    // one produced id per logical event
    let mut done_ids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in out.events("order.done") {
        done_ids
            .entry(e.data.clone().unwrap().as_str().unwrap().to_string())
            .or_default()
            .insert(e.id.clone());
    }
    assert_eq!(done_ids.len(), total, "every order produced its event");
    assert!(done_ids.values().all(|s| s.len() == 1), "{done_ids:?}");
    // a stable idempotency key per call
    let mut keys: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, key, body) in fns.calls() {
        keys.entry(body["order"].as_str().unwrap().to_string())
            .or_default()
            .insert(key);
    }
    assert_eq!(keys.len(), total);
    assert!(keys.values().all(|s| s.len() == 1), "{keys:?}");
    // the API of any broker lists every instance (each partition answered by its owner) ...
    for br in &live {
        let listed = wait_for(60, "every partition to answer the list", || {
            let (code, v) = br.get("/v1/instances?workflowId=order&limit=100000");
            let whole = code == 200
                && v["statePartitions"]["unavailable"]
                    .as_array()
                    .is_some_and(|a| a.is_empty());
            whole.then_some(v)
        });
        let listed: BTreeSet<String> = listed["instances"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["status"] == "COMPLETED")
            .map(|i| i["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(listed, ids, "broker {} lists every instance", br.http);
    }
    // ... and shows every one, whoever owns it; each input exactly once in its history
    for (n, id) in ids.iter().enumerate() {
        let shown: Vec<Value> = live.iter().map(|br| br.instance(id)).collect();
        assert!(
            shown
                .iter()
                .all(|v| v["status"] == "COMPLETED" && v["history"] == shown[0]["history"]),
            "every broker shows {id} the same"
        );
        let v = shown[n % shown.len()].clone();
        let order = v["data"]["orderid"].as_str().unwrap().to_string();
        by_order
            .entry(order.clone())
            .or_default()
            .insert(id.clone());
        let hist = v["history"].as_array().unwrap();
        let count = |pred: &dyn Fn(&Value) -> bool| hist.iter().filter(|h| pred(h)).count();
        let n = order.strip_prefix("o-").unwrap();
        for ev in [format!("placed-{n}"), format!("paid-{n}")] {
            let seen = count(&|h: &Value| {
                h["input"]["event"]["id"] == json!(ev) || h["input"]["events"][0]["id"] == json!(ev)
            });
            assert_eq!(seen, 1, "{ev} in {id}: {hist:#?}");
        }
        assert_eq!(
            count(&|h: &Value| h["input"]["kind"] == "timerFired"),
            1,
            "{id}"
        );
        assert_eq!(
            count(&|h: &Value| h["input"]["kind"] == "actionResult"),
            1,
            "{id}"
        );
    }
    assert_eq!(by_order.len(), total, "every order has its instance");
    assert!(by_order.values().all(|s| s.len() == 1), "{by_order:?}");
}

/// A per-second cron workflow (catch-up per the broker's `schedules.catch_up`).
const EVERY_SECOND: &str = include_str!("fixtures/heartbeat.yaml");

/// The state partitions a broker owns, from `GET /health`.
/// A per-second cron with catch-up `all` on two brokers; the one that owns the schedule's
/// partition is SIGKILLed and comes back. Every tick starts one instance cluster-wide, with no
/// gap, and the schedule's own count of fired ticks equals the ticks seen. The time from the
/// kill to the next tick fired is the failover time (printed; docs/scale.md).
#[test]
fn a_cron_fires_every_tick_once_across_a_sigkill_of_its_owner() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let env = [
        ("FLOWBROKER_SCHEDULES_CATCH_UP", "all".to_string()),
        ("FLOWBROKER_CLUSTER_PARTITIONS", "12".to_string()),
    ];
    let start = |k: &Kafka| {
        let e: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Broker::start(k, &[("heartbeat.yaml", EVERY_SECOND)], &e)
    };
    let mut x = start(&kafka);
    let mut y = start(&kafka);
    let part = flowbroker::cluster::partition::Partitions::new(12)
        .unwrap()
        .of_key("heartbeat", "")
        .0;
    let ticks = |out: &Collector| -> Vec<(chrono::DateTime<chrono::Utc>, String)> {
        out.events("flowbroker.instance.started")
            .into_iter()
            .map(|e| {
                let d = e.data.unwrap();
                (
                    d["input"]["scheduledTime"]
                        .as_str()
                        .unwrap()
                        .parse()
                        .unwrap(),
                    d["instanceId"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    // both brokers in the group, the schedule's partition owned by one of them
    let owner_is_x = wait_for(60, "the schedule's partition to have an owner", || {
        let (ox, oy) = (x.owned(), y.owned());
        let both = !ox.is_empty() && !oy.is_empty();
        (both && (ox.contains(&part) || oy.contains(&part))).then(|| ox.contains(&part))
    });
    wait_for(30, "three ticks", || (ticks(&out).len() >= 3).then_some(()));
    // any broker refuses a start the instance's owner would refuse, whoever owns it (ids are
    // random, so across eight requests both owners and non-owners answer)
    for b in [&x, &y] {
        for _ in 0..4 {
            let (code, v) = b.post("/v1/workflows/nope/instances", json!({}));
            assert_eq!(code, 404, "{v}");
            let (code, v) = b.post("/v1/workflows/heartbeat/instances", json!({}));
            assert_eq!(code, 409, "directInvoke: exclusive: {v}");
        }
    }
    let owner = if owner_is_x { &mut x } else { &mut y };
    let before = ticks(&out).len();
    let killed_at = chrono::Utc::now();
    owner.kill();
    // the other broker takes the partition over after the session timeout and catches up
    let first_after = wait_for(60, "a tick fired after the kill", || {
        out.events("flowbroker.instance.started")
            .into_iter()
            .filter_map(|e| {
                e.time
                    .and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok())
            })
            .filter(|t| *t > killed_at)
            .min()
    });
    let failover = first_after - killed_at;
    eprintln!(
        "failover: kill to the next tick fired {} ms",
        failover.num_milliseconds()
    );
    owner.start_again();
    let restarted = chrono::Utc::now();
    wait_for(60, "ticks after the return", || {
        let latest = ticks(&out).into_iter().map(|(t, _)| t).max()?;
        (latest >= restarted + chrono::Duration::seconds(4)).then_some(())
    });
    let all = ticks(&out);
    assert!(all.len() > before, "ticks fired after the kill");
    // one instance per tick: a tick seen twice is only a re-sent lifecycle event (same id)
    let mut per_tick: BTreeMap<chrono::DateTime<chrono::Utc>, BTreeSet<String>> = BTreeMap::new();
    for (t, id) in &all {
        per_tick.entry(*t).or_default().insert(id.clone());
    }
    assert!(per_tick.values().all(|ids| ids.len() == 1), "{per_tick:?}");
    let first = *per_tick.keys().next().unwrap();
    let last = *per_tick.keys().last().unwrap();
    assert_eq!(
        per_tick.len() as i64,
        (last - first).num_seconds() + 1,
        "catch-up `all` leaves no gap between {first} and {last}"
    );
    assert!(
        first < killed_at && last > restarted,
        "the run spans the kill and the return"
    );
    // the schedule's own count (kept in its partition's state) matches the ticks seen
    let counted = wait_for(30, "the owner's schedule count to catch up", || {
        [&x, &y].iter().find_map(|b| {
            if !b.owned().contains(&part) {
                return None;
            }
            let (_, v) = b.get("/v1/schedules");
            let s = v["schedules"].as_array()?.first()?.clone();
            let fired = s["fired"].as_u64()?;
            let last_fired: chrono::DateTime<chrono::Utc> =
                s["lastFiredTick"].as_str()?.parse().ok()?;
            let seen = per_tick.keys().filter(|t| **t <= last_fired).count() as u64;
            (fired == seen).then_some(fired)
        })
    });
    assert!(counted >= 8, "{counted}");
}

/// Each instance waits on a delay, then on an event that never comes, so it ends by its event
/// timeout.
const TIMERS: &str = r#"
id: timers
name: timers
events:
- {name: Go, type: timers.go, source: /t, correlation: [{contextAttributeName: tid}]}
- {name: Never, type: timers.never, source: /t, correlation: [{contextAttributeName: tid}]}
states:
- name: Go
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Go]}]
  transition: {nextState: Wait}
- name: Wait
  type: delay
  timeDelay: PT6S
  transition: {nextState: Listen}
- name: Listen
  type: event
  eventsActions: [{eventRefs: [Never]}]
  timeout: PT25S
  end: {kind: default}
"#;

/// Delay timers armed on a broker that is SIGKILLed fire once on the broker that takes its
/// partitions over; event timeouts armed there fire once more on the first broker after it
/// comes back and gets partitions back.
#[test]
fn timers_armed_before_a_hand_off_fire_once_after_it() {
    const N: usize = 36;
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let env = [("FLOWBROKER_CLUSTER_PARTITIONS", "12")];
    let mut a = Broker::start(&kafka, &[("timers.yaml", TIMERS)], &env);
    let b = Broker::start(&kafka, &[("timers.yaml", TIMERS)], &env);
    wait_for(60, "both brokers to own partitions", || {
        (!a.owned().is_empty() && !b.owned().is_empty()).then_some(())
    });
    let pubr = kafka.producer();
    for i in 0..N {
        let tid = format!("t-{i}");
        pubr.send(&event(
            &format!("go-{i}"),
            "/t",
            "timers.go",
            &[("tid", &tid)],
            json!({}),
        ));
    }
    // every instance has armed its delay; the ones on a's partitions move with the kill
    let waiting = wait_for(60, "every instance to wait on its delay", || {
        let all = b.instances("timers");
        (all.len() == N && all.iter().all(|i| i["state"] == "Wait")).then_some(all)
    });
    let on_a: BTreeSet<String> = {
        let mine = a.owned();
        waiting
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_string())
            .filter(|id| mine.contains(&partition_of(id)))
            .collect()
    };
    assert!(!on_a.is_empty(), "a owns instances whose delay is armed");
    a.kill();
    // b takes a's partitions over and fires their delays: every instance listens
    let listening = wait_for(60, "every instance to listen, on b alone", || {
        let all = b.instances("timers");
        let done = all.len() == N && all.iter().all(|i| i["state"] == "Listen");
        (done && b.owned().len() == 12).then_some(all)
    });
    assert!(
        out.events("flowbroker.instance.completed").is_empty(),
        "no event timeout fired before the second hand-off"
    );
    // a comes back and takes partitions back while the event timeouts are armed on b
    a.start_again();
    let back = wait_for(60, "a to own partitions again", || {
        let mine = a.owned();
        (!mine.is_empty()).then_some(mine)
    });
    let moved: BTreeSet<String> = listening
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .filter(|id| back.contains(&partition_of(id)))
        .collect();
    assert!(
        !moved.is_empty(),
        "a took back partitions with armed event timeouts"
    );
    let done_before: BTreeSet<String> = out
        .events("flowbroker.instance.completed")
        .iter()
        .filter_map(|e| e.data.as_ref()?["instanceId"].as_str().map(str::to_string))
        .collect();
    assert!(
        moved.is_disjoint(&done_before),
        "the moved instances' timeouts had not fired before the hand-off"
    );
    // every instance ends by its timeout, once
    wait_for(90, "every instance to complete", || {
        let ids: BTreeSet<String> = out
            .events("flowbroker.instance.completed")
            .iter()
            .filter_map(|e| e.data.as_ref()?["instanceId"].as_str().map(str::to_string))
            .collect();
        (ids.len() == N).then_some(())
    });
    for i in waiting {
        let id = i["id"].as_str().unwrap();
        let v = a.instance(id);
        assert_eq!(v["status"], "COMPLETED", "{id}");
        let fired = v["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| h["input"]["kind"] == "timerFired")
            .count();
        assert_eq!(
            fired, 2,
            "{id}: the delay and the event timeout fired once each"
        );
    }
}

/// Waits, then ends.
const NAP: &str = r#"
id: nap
name: nap
states:
- name: Nap
  type: delay
  start: {kind: default}
  timeDelay: PT30S
  end: {kind: default}
"#;

/// A broker that takes over partitions runs their instances on the versions they started on,
/// even when the workflow was undeployed before it ever saw it: the versions travel with the
/// partition's state.
#[test]
fn a_new_owner_runs_instances_of_a_workflow_it_never_deployed() {
    const N: usize = 24;
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let env = [("FLOWBROKER_CLUSTER_PARTITIONS", "12")];
    let a = Broker::start(&kafka, &[("nap.yaml", NAP)], &env);
    wait_for(60, "a to own every partition", || {
        (a.owned().len() == 12).then_some(())
    });
    let ids: Vec<String> = (0..N)
        .map(|_| {
            let (code, v) = a.post("/v1/workflows/nap/instances", json!({}));
            assert_eq!(code, 201, "{v}");
            v["id"].as_str().unwrap().to_string()
        })
        .collect();
    // undeployed everywhere (through the definitions topic) before b starts: b never
    // deploys nap, and has no workflow files at all
    std::fs::remove_file(a.workflow_path("nap.yaml")).unwrap();
    wait_for(10, "nap to be undeployed", || {
        let (_, v) = a.get("/v1/workflows");
        (v["workflows"].as_array()?.is_empty()).then_some(())
    });
    let b = Broker::start(&kafka, &[], &env);
    let mine = wait_for(60, "b to take partitions over", || {
        let mine = b.owned();
        (!mine.is_empty() && a.owned().len() + mine.len() == 12).then_some(mine)
    });
    let moved: Vec<&String> = ids
        .iter()
        .filter(|id| mine.contains(&partition_of(id)))
        .collect();
    assert!(!moved.is_empty(), "b owns partitions with instances of nap");
    let done = out.events("flowbroker.instance.completed").len();
    assert!(
        done < N,
        "the hand-off happened while the delays were armed"
    );
    for id in &moved {
        let v = b.instance(id);
        assert_eq!(v["status"], "WAITING", "{id} still naps when b owns it");
    }
    for id in &ids {
        b.wait_status(id, "COMPLETED", 60);
    }
    assert!(
        b.log().contains("not deployed here"),
        "b ran a version it never deployed"
    );
}

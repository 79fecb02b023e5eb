//! State partitions on one broker (docs/scale.md), through the real core and store with a
//! manual clock: instances started directly live on their id's partition and pin keys owned by
//! other partitions; index entries and events travel between partitions as messages; a
//! delivery an instance no longer takes goes back to its key's partition. Every scenario ends
//! the same with 1 partition as with 12, and the same with the partitions applied at once on
//! processor threads as in turn on the core thread.

mod support;
use serde_json::json;
use support::manual::{list, Harness};

const APPROVAL: &str = r#"
id: approval
name: approval
events:
- name: Decided
  type: loan.decided
  source: /desk
  correlation: [{contextAttributeName: loanId}]
- name: Signed
  type: loan.signed
  source: /desk
  correlation: [{contextAttributeName: loanId}]
states:
- name: Wait
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Decided]}]
  transition: {nextState: Sign}
- name: Sign
  type: event
  eventsActions: [{eventRefs: [Signed]}]
  end: {kind: default}
"#;

fn harness(partitions: usize) -> Harness {
    let mut h = Harness::new("2024-01-01T00:00:00Z", |c| {
        c.cluster.partitions = partitions
    });
    h.deploy("approval.yaml", APPROVAL);
    h
}

/// Runs the scenario; returns each instance's (status, loanId, decision, signature).
fn scenario(partitions: usize) -> Vec<(String, String, String, String)> {
    let mut h = harness(partitions);
    let ids: Vec<String> = (0..8).map(|_| h.start("approval").unwrap()).collect();
    let parts = flowbroker::cluster::partition::Partitions::new(partitions).unwrap();
    if partitions > 1 {
        let homes: std::collections::BTreeSet<_> =
            ids.iter().map(|i| parts.of_instance(i).unwrap()).collect();
        assert!(homes.len() > 1, "8 direct starts spread over partitions");
    }
    // each unpinned instance takes the first decision of any loan; the second event of the
    // same round for an instance that pinned meanwhile goes back and is held for its key
    let mut decided = Vec::new();
    for i in 0..8 {
        let loan = format!("loan-{i}");
        let r = h.event_with(
            &format!("d{i}"),
            "/desk",
            "loan.decided",
            &[("loanid", &loan)],
            json!({"decision": format!("yes-{i}")}),
        );
        decided.extend(list(&r, "delivered"));
    }
    decided.sort();
    decided.dedup();
    assert_eq!(
        decided.len(),
        8,
        "each decision reached an unpinned instance"
    );
    // signatures route by the pinned key, wherever the instance lives
    for i in 0..8 {
        let loan = format!("loan-{i}");
        h.event_with(
            &format!("s{i}"),
            "/desk",
            "loan.signed",
            &[("loanid", &loan)],
            json!({"signature": format!("sig-{i}")}),
        );
    }
    let mut out: Vec<_> = ids
        .iter()
        .map(|id| {
            let v = h.stored(id).unwrap();
            let i = &v["instance"];
            let s = |k: &str| i["data"][k].as_str().unwrap_or("-").to_string();
            (
                i["status"].as_str().unwrap().to_string(),
                s("loanId"),
                s("decision"),
                s("signature"),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn direct_starts_pin_keys_of_other_partitions_and_end_as_on_one_partition() {
    let twelve = scenario(12);
    for (status, loan, decision, signature) in &twelve {
        assert_eq!(status, "COMPLETED", "{twelve:?}");
        let n = loan.strip_prefix("loan-").unwrap();
        assert_eq!(decision, &format!("yes-{n}"), "{twelve:?}");
        assert_eq!(signature, &format!("sig-{n}"), "{twelve:?}");
    }
    assert_eq!(twelve, scenario(1));
}

/// Two decisions for different loans reach one unpinned instance in the same batch: it takes
/// the first to arrive and pins its loan; the second goes back to its key's partition, which routes it
/// as if that instance did not exist: no instance waits for it, so it starts one (decisions
/// start approvals). The same happens on one partition.
#[test]
fn a_delivery_an_instance_no_longer_takes_goes_back_to_its_key() {
    for partitions in [12, 1] {
        let mut h = harness(partitions);
        let first = h.start("approval").unwrap();
        let decision = |id: &str, loan: &str| flowbroker::engine::Event {
            id: id.into(),
            source: "/desk".into(),
            event_type: "loan.decided".into(),
            time: None,
            datacontenttype: None,
            subject: None,
            data: Some(json!({"decision": loan})),
            extensions: [("loanid".to_string(), json!(loan))].into_iter().collect(),
        };
        h.events_together(vec![decision("d-a", "A"), decision("d-b", "B")]);
        // which of the two arrives first at the instance is up to the order of partitions
        let v = h.stored(&first).unwrap();
        let took = v["instance"]["data"]["loanId"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(took == "A" || took == "B", "{v}");
        let other = if took == "A" { "B" } else { "A" };
        let others: Vec<String> = h
            .started
            .iter()
            .map(|s| s.0.clone())
            .filter(|id| *id != first)
            .collect();
        assert_eq!(others.len(), 1, "partitions={partitions}: {:?}", h.started);
        let second = h.stored(&others[0]).unwrap();
        assert_eq!(second["instance"]["data"]["loanId"], other, "{second}");
        assert_eq!(second["instance"]["state"], "Sign");
    }
}

fn decision(id: &str, loan: &str, key: &str) -> flowbroker::engine::Event {
    flowbroker::engine::Event {
        id: id.into(),
        source: "/desk".into(),
        event_type: format!("loan.{key}"),
        time: None,
        datacontenttype: None,
        subject: None,
        data: Some(json!({key: format!("{key}-{loan}")})),
        extensions: [("loanid".to_string(), json!(loan))].into_iter().collect(),
    }
}

/// A step's processors run at once on the processor threads (`broker::pool`) and the core
/// takes their results in partition order, so the store and the records let out are the same,
/// byte for byte and in the same order, as with every partition applied in turn on the core
/// thread: which thread applied what, and when it finished, changes nothing.
#[test]
fn processors_on_threads_decide_what_the_core_thread_decides() {
    let run = |threads: usize| {
        let mut h = Harness::new("2024-01-01T00:00:00Z", |c| {
            c.cluster.partitions = 12;
            c.cluster.processor_threads = threads;
        });
        h.deploy("approval.yaml", APPROVAL);
        // (idempotency keys make the instance ids the same in every run)
        let ids: Vec<String> = (0..24)
            .map(|i| {
                let key = format!("start-{i}");
                h.start_keyed("approval", json!({}), Some(&key)).unwrap()
            })
            .collect();
        // decisions for 24 loans in one batch: the instances live on their ids' partitions,
        // the keys on theirs, so the batch's steps span partitions and pass messages; more
        // decisions than instances start approvals of their own
        let loans: Vec<String> = (0..32).map(|i| format!("loan-{i}")).collect();
        let batch = |kind: &str| {
            loans
                .iter()
                .map(|l| decision(&format!("{kind}-{l}"), l, kind))
                .collect::<Vec<_>>()
        };
        h.events_together(batch("decided"));
        h.events_together(batch("signed"));
        let pooled = h.counter_with("flowbroker_processor_batches_total", "on=\"pool\"");
        let alone = h.counter_with("flowbroker_processor_batches_total", "on=\"core\"");
        assert!(
            alone > 0,
            "{threads} threads: steps of one partition stay on the core"
        );
        match threads {
            1 => assert_eq!(pooled, 0, "one thread: no pool"),
            _ => assert!(pooled > 1, "{threads} threads: steps of several partitions"),
        }
        (ids, h.events.clone(), h.export())
    };
    let (ids, events, store) = run(1);
    let parts = flowbroker::cluster::partition::Partitions::new(12).unwrap();
    let homes: std::collections::BTreeSet<_> =
        ids.iter().map(|i| parts.of_instance(i).unwrap()).collect();
    assert!(
        homes.len() > 4,
        "the starts spread over partitions: {homes:?}"
    );
    let completed = events
        .iter()
        .filter(|(_, _, e)| e.event_type == "flowbroker.instance.completed")
        .count();
    assert!(
        completed > ids.len(),
        "approvals started directly and by decisions completed: {completed}"
    );
    for threads in [2, 4] {
        let (ids_t, events_t, store_t) = run(threads);
        assert_eq!(ids_t, ids, "{threads} threads");
        assert_eq!(events_t.len(), events.len(), "{threads} threads");
        for (n, (a, b)) in events.iter().zip(&events_t).enumerate() {
            assert_eq!(a, b, "{threads} threads: record {n} let out");
        }
        assert_eq!(store_t.len(), store.len(), "{threads} threads: keys stored");
        for (a, b) in store.iter().zip(&store_t) {
            assert_eq!(a, b, "{threads} threads: the stored key {}", a.key);
        }
    }
}

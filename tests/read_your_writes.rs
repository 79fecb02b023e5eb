//! Read your writes across brokers (docs/scale.md "One cluster, one API"): a start whose
//! partition another broker owns travels through the work topic. `POST
//! /v1/workflows/{id}/instances` answers once the owner shows the instance, and a `GET` of an
//! accepted id, on any broker, never answers 404 while the start is in flight.

mod support;
use serde_json::json;
use support::*;

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

#[test]
fn an_accepted_start_is_readable_at_once_from_every_broker() {
    const N: usize = 40;
    let kafka = Kafka::start();
    let env = [("FLOWBROKER_CLUSTER_PARTITIONS", "12")];
    let a = Broker::start(&kafka, &[("nap.yaml", NAP)], &env);
    let b = Broker::start(&kafka, &[("nap.yaml", NAP)], &env);
    let theirs = wait_for(60, "a and b to share the state partitions", || {
        let (oa, ob) = (a.owned(), b.owned());
        (oa.len() + ob.len() == 12 && !oa.is_empty() && !ob.is_empty()).then_some(ob)
    });
    // both know who owns what (the claims are read): a start is never forwarded blind
    for br in [&a, &b] {
        wait_for(60, "every partition's owner to be known", || {
            let (code, v) = br.get("/v1/instances?limit=1");
            let whole = code == 200
                && v["statePartitions"]["unavailable"]
                    .as_array()
                    .is_some_and(|u| u.is_empty());
            whole.then_some(())
        });
    }
    let mut forwarded = 0;
    for i in 0..N {
        let (code, v) = a.post("/v1/workflows/nap/instances", json!({"i": i}));
        assert_eq!(
            code, 201,
            "the owner applied the start before the answer: {v}"
        );
        let id = v["id"].as_str().unwrap().to_string();
        if theirs.contains(&partition_of(&id)) {
            forwarded += 1;
        }
        for (name, broker) in [("a", &a), ("b", &b)] {
            let (code, v) = broker.get(&format!("/v1/instances/{id}"));
            assert_eq!(code, 200, "{id} read on {name} right after its start: {v}");
            assert_eq!(v["data"]["i"], json!(i), "{v}");
        }
    }
    assert!(
        forwarded > 0 && forwarded < N,
        "some starts went through the work topic to b ({forwarded} of {N})"
    );
    // an id nobody started is still 404, on the owner and through another broker
    let (code, _) = a.get("/v1/instances/p0-00000000-0000-0000-0000-000000000000");
    assert_eq!(code, 404);
}

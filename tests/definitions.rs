//! The definitions topic (docs/scale.md "Definitions on several brokers"): a workflow file
//! dropped into one broker's `workflows_dir` is deployed by every broker, so events consumed by
//! another broker start its instances; deleting it undeploys it everywhere; a broker started
//! later with an old copy of a file runs the cluster's newer version.

mod support;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};
use support::*;

fn hello(greeting: &str) -> String {
    format!(
        r#"
id: hello
name: hello
events:
- {{name: Hi, type: visitor.hi, source: /site, correlation: [{{contextAttributeName: visitor}}]}}
states:
- name: Greet
  type: event
  start: {{kind: default}}
  eventsActions: [{{eventRefs: [Hi]}}]
  transition: {{nextState: Say}}
- name: Say
  type: inject
  data: {{greeting: "{greeting}"}}
  end: {{kind: default}}
"#
    )
}

const ENV: [(&str, &str); 1] = [("FLOWBROKER_CLUSTER_PARTITIONS", "12")];

/// The version of `hello` a broker deploys, if any, and the file it names.
fn deployed(b: &Broker) -> Option<(String, String)> {
    let (_, v) = b.get("/v1/workflows");
    let w = v["workflows"]
        .as_array()?
        .iter()
        .find(|w| w["id"] == json!("hello"))?
        .clone();
    Some((w["version"].as_str()?.into(), w["file"].as_str()?.into()))
}

fn consumed(b: &Broker) -> i64 {
    metric_sum(
        &b.metrics(),
        "flowbroker_events_consumed_total",
        "source=\"kafka\"",
    )
}

#[test]
fn a_file_dropped_on_one_broker_starts_instances_from_events_another_consumes() {
    const N: usize = 30;
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let a = Broker::start(&kafka, &[], &ENV);
    let b = Broker::start(&kafka, &[], &ENV);
    wait_for(60, "a and b to share the state partitions", || {
        let (oa, ob) = (a.owned(), b.owned());
        (oa.len() + ob.len() == 12 && !oa.is_empty() && !ob.is_empty()).then_some(())
    });
    assert!(deployed(&b).is_none(), "nothing is deployed yet");

    std::fs::write(a.workflow_path("hello.yaml"), hello("hi")).unwrap();
    let (version, _) = wait_for(10, "a to deploy hello.yaml", || deployed(&a));
    // events go out as soon as a has it: b, which consumes some of them, has never had the file
    let before = consumed(&b);
    let p = kafka.producer();
    for i in 0..N {
        let v = format!("v{i}");
        p.send_keyed(
            &event(&v, "/site", "visitor.hi", &[("visitor", &v)], json!({})),
            &v,
        );
    }
    let done = wait_for(60, "every visitor's instance to complete", || {
        let done: BTreeSet<String> = out
            .events("flowbroker.instance.completed")
            .iter()
            .filter_map(|e| e.data.as_ref()?["instanceId"].as_str().map(str::to_string))
            .collect();
        (done.len() >= N).then_some(done)
    });
    assert_eq!(done.len(), N, "one instance per visitor");
    for e in out.events("flowbroker.instance.completed") {
        let data: &Value = e.data.as_ref().unwrap();
        assert_eq!(data["output"]["greeting"], json!("hi"), "{data}");
    }
    let by_b = consumed(&b) - before;
    assert!(
        by_b > 0 && (by_b as usize) < N,
        "b consumed some of the events ({by_b} of {N})"
    );
    assert!(
        !b.workflow_path("hello.yaml").exists(),
        "b never had the file"
    );
    // b held each batch it consumed for a sync of the definitions topic, and counted it
    let held = metric_sum(
        &b.metrics(),
        "flowbroker_intake_definitions_wait_seconds_count",
        "",
    );
    assert!(
        held > 0,
        "b's batches waited for the definitions sync ({held})"
    );
    let (vb, file) = deployed(&b).expect("b deploys hello from the topic");
    assert_eq!(vb, version, "the same version on both brokers");
    assert!(file.ends_with("hello.yaml"), "{file}");
    assert!(b
        .log()
        .contains("deploying a file another broker published"));

    // deleting the file on a undeploys it on b as well
    std::fs::remove_file(a.workflow_path("hello.yaml")).unwrap();
    wait_for(10, "b to undeploy hello", || {
        deployed(&b).is_none().then_some(())
    });
    let (code, v) = b.post("/v1/workflows/hello/instances", json!({}));
    assert_eq!(code, 404, "{v}");
}

#[test]
fn a_broker_started_with_an_old_copy_runs_the_clusters_newer_version() {
    let kafka = Kafka::start();
    let a = Broker::start(&kafka, &[("hello.yaml", &hello("old"))], &ENV);
    let (old, _) = wait_for(10, "a to deploy hello", || deployed(&a));
    std::fs::write(a.workflow_path("hello.yaml"), hello("new")).unwrap();
    let (new, _) = wait_for(10, "a to deploy the edit", || {
        deployed(&a).filter(|(v, _)| *v != old)
    });
    // d's directory holds the old text, written an hour before a's edit (a config map not
    // updated yet when its pod starts)
    let mut d = Broker::start(&kafka, &[], &ENV);
    d.kill();
    std::fs::write(d.workflow_path("hello.yaml"), hello("old")).unwrap();
    std::fs::File::options()
        .write(true)
        .open(d.workflow_path("hello.yaml"))
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
    d.start_again();
    let log = d.log();
    let (vd, _) = deployed(&d).expect("d deploys hello");
    assert_eq!(vd, new, "the cluster's later version stands: {log}");
    assert!(log.contains("the cluster's version stands"), "{log}");
    assert_eq!(
        deployed(&a).map(|(v, _)| v),
        Some(new.clone()),
        "d's stale copy was not published"
    );
    // an edit on d is a deployment like any other: a follows it
    std::fs::write(d.workflow_path("hello.yaml"), hello("from d")).unwrap();
    let (fresh, _) = wait_for(10, "d to deploy its edit", || {
        deployed(&d).filter(|(v, _)| *v != new)
    });
    wait_for(10, "a to follow d's edit", || {
        deployed(&a).filter(|(v, _)| *v == fresh)
    });
}

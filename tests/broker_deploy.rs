//! Deployment by directory while running: edit, break and delete a workflow file.

mod support;
use serde_json::json;
use support::*;

fn workflow(mark: u32) -> String {
    format!(
        r#"
id: greet
name: greet
events:
- {{name: Go, type: greet.go, source: /test}}
states:
- name: Mark
  type: inject
  start: {{kind: default}}
  data: {{mark: {mark}}}
  transition: {{nextState: Wait}}
- name: Wait
  type: event
  eventsActions:
  - eventRefs: [Go]
  end: {{kind: default}}
"#
    )
}

fn current_version(b: &Broker) -> Option<String> {
    let (_, v) = b.get("/v1/workflows");
    v["workflows"]
        .as_array()?
        .iter()
        .find(|w| w["id"] == json!("greet"))
        .and_then(|w| w["version"].as_str().map(str::to_string))
}

#[test]
fn edit_break_and_delete_a_workflow_file_while_running() {
    let kafka = Kafka::start();
    let broker = Broker::start(&kafka, &[("greet.yaml", &workflow(1))], &[]);
    let v1 = current_version(&broker).expect("deployed at start");
    let start = || {
        let (code, v) = broker.post("/v1/workflows/greet/instances", json!({}));
        assert_eq!(code, 201, "{v}");
        v["id"].as_str().unwrap().to_string()
    };
    let i1 = start();
    broker.wait_status(&i1, "WAITING", 10);

    // edit: the new version serves new instances; the running one stays on v1
    std::fs::write(broker.workflow_path("greet.yaml"), workflow(2)).unwrap();
    let v2 = wait_for(10, "the edit to deploy", || {
        current_version(&broker).filter(|v| *v != v1)
    });
    let i2 = start();
    let i2v = broker.wait_status(&i2, "WAITING", 10);
    assert_eq!(i2v["version"], json!(v2));
    assert_eq!(i2v["data"]["mark"], json!(2));
    assert_eq!(broker.instance(&i1)["version"], json!(v1));
    assert_eq!(broker.instance(&i1)["data"]["mark"], json!(1));

    // break: reported with file, path and fix; v2 keeps serving
    let broken = workflow(3).replace("nextState: Wait", "nextState: Wiat");
    std::fs::write(broker.workflow_path("greet.yaml"), broken).unwrap();
    let invalid = wait_for(10, "the broken file to be reported", || {
        let (_, v) = broker.get("/v1/workflows");
        v["invalid"].as_array().filter(|a| !a.is_empty()).cloned()
    });
    assert!(invalid[0]["file"].as_str().unwrap().ends_with("greet.yaml"));
    let text = invalid[0]["errors"][0]["text"].as_str().unwrap();
    assert!(text.contains("$.states[0].transition.nextState"), "{text}");
    assert!(text.contains("Wait"), "a did-you-mean fix: {text}");
    assert_eq!(current_version(&broker), Some(v2.clone()));
    let i3 = start();
    assert_eq!(broker.wait_status(&i3, "WAITING", 10)["version"], json!(v2));
    assert!(
        broker.log().contains("rejected"),
        "the log reports the file"
    );

    // delete: no new starts; running instances finish on their version
    std::fs::remove_file(broker.workflow_path("greet.yaml")).unwrap();
    wait_for(10, "the workflow to be undeployed", || {
        current_version(&broker).is_none().then_some(())
    });
    let (code, _) = broker.post("/v1/workflows/greet/instances", json!({}));
    assert_eq!(code, 404);
    let client = reqwest::blocking::Client::new();
    for id in [&i1, &i2, &i3] {
        let r = client
            .post(format!("http://{}/v1/events", broker.http))
            .header("ce-specversion", "1.0")
            .header("ce-id", format!("go-{id}"))
            .header("ce-source", "/test")
            .header("ce-type", "greet.go")
            .header("ce-workflowinstanceid", id.as_str())
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 202);
    }
    for (id, mark) in [(&i1, 1), (&i2, 2), (&i3, 2)] {
        let done = broker.wait_status(id, "COMPLETED", 10);
        assert_eq!(done["output"]["mark"], json!(mark));
    }
}

//! Lambda durable functions written with AWS's Python SDK (aws-durable-execution-sdk-python
//! 3.0.0), served by scripts/durable-host.py, run on the real broker over tansu: the SDK
//! checkpoints to flowbroker's durable execution API and is invoked again after every
//! change. Each result is compared with the one the SDK's reference backend (its testing
//! package's in-process runner) gives for the same handler and input.

mod support;

use flowbroker::durable::arn;
use serde_json::{json, Value};
use support::durable::{aws, Host};
use support::*;

/// Kafka, the host serving `handlers`, and a broker with a deployment file for each.
fn setup(handlers: &[&str]) -> (Kafka, Host, Broker, String) {
    let kafka = Kafka::start();
    let http = format!("127.0.0.1:{}", free_port());
    let host = Host::start(&http, handlers);
    let defs: Vec<(String, String)> = handlers.iter().map(|h| host.definition(h)).collect();
    let files: Vec<(&str, &str)> = defs.iter().map(|(f, t)| (f.as_str(), t.as_str())).collect();
    let broker = Broker::start(&kafka, &files, &[("FLOWBROKER_HTTP_LISTEN", &http)]);
    for h in handlers {
        wait_for(30, &format!("{h} to deploy"), || {
            (broker.get(&format!("/v1/workflows/{h}")).0 == 200).then_some(())
        });
    }
    (kafka, host, broker, http)
}

fn start(broker: &Broker, function: &str, input: Value) -> String {
    let (code, v) = broker.post(&format!("/v1/workflows/{function}/instances"), input);
    assert_eq!(code, 201, "{v}");
    v["id"].as_str().unwrap().to_string()
}

/// The operations of an execution (GET /v1/instances/{id}), by name.
fn op<'a>(inst: &'a Value, name: &str) -> &'a Value {
    inst["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["Name"] == name)
        .unwrap_or_else(|| panic!("no operation {name}: {inst:#}"))
}

/// The effects recorded by execution `id`'s handler of kind `what` (matched by `field`).
fn effects_where(host: &Host, what: &str, field: &str, value: &Value) -> Vec<Value> {
    host.effects()
        .into_iter()
        .filter(|e| e["what"] == what && &e[field] == value)
        .collect()
}

#[test]
fn the_sdk_s_steps_retries_waits_map_parallel_child_contexts_invokes_and_errors_run() {
    let (kafka, host, broker, http) =
        setup(&["steps", "retry", "batch", "chained", "boom", "poll"]);
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let steps = start(&broker, "steps", json!({"order": "o1"}));
    let retry = start(&broker, "retry", json!({}));
    let batch = start(&broker, "batch", json!({"items": [1, 2, 3]}));
    let chained = start(&broker, "chained", json!({"order": "c1"}));
    let boom = start(&broker, "boom", json!({}));
    let poll = start(&broker, "poll", json!({}));

    // three steps around a wait
    let v = broker.wait_status(&steps, "COMPLETED", 60);
    assert_eq!(
        v["output"],
        json!({"order": "o1", "charged": 30, "shipped": true})
    );
    let wait = op(&v, "cool-off");
    assert_eq!(
        (wait["Type"].as_str(), wait["Status"].as_str()),
        (Some("WAIT"), Some("SUCCEEDED"))
    );
    let planned = wait["WaitDetails"]["ScheduledEndTimestamp"]
        .as_f64()
        .unwrap();
    assert!(planned - wait["StartTimestamp"].as_f64().unwrap() >= 0.99);
    let charged = &effects_where(&host, "charge", "id", &json!("o1"));
    assert_eq!(charged.len(), 1);
    assert!(
        charged
            .iter()
            .all(|e| e["at"].as_f64().unwrap() >= planned - 0.01),
        "charged before the wait ended"
    );
    for name in ["load", "charge", "ship"] {
        assert_eq!(op(&v, name)["Status"], "SUCCEEDED");
    }
    assert!(
        v["history"].as_array().unwrap().len() >= 4,
        "start, checkpoints, the wait's timer, answers"
    );
    out.lifecycle(&steps, "completed", 30);

    // a step failing twice, retried after 1 s and 2 s by the broker's timers
    let v = broker.wait_status(&retry, "COMPLETED", 60);
    assert_eq!(v["output"], json!({"attempts": 3}));
    let flaky = op(&v, "flaky");
    assert_eq!(flaky["StepDetails"]["Attempt"], 3);
    let attempts: Vec<(u64, f64)> = host
        .effects()
        .iter()
        .filter(|e| e["what"] == "attempt")
        .map(|e| (e["attempt"].as_u64().unwrap(), e["at"].as_f64().unwrap()))
        .collect();
    assert_eq!(
        attempts.iter().map(|a| a.0).collect::<Vec<_>>(),
        [1, 2, 3],
        "once per attempt"
    );
    assert!(attempts[1].1 - attempts[0].1 >= 0.95, "{attempts:?}");
    assert!(attempts[2].1 - attempts[1].1 >= 1.95, "{attempts:?}");

    // map, parallel and a child context (CONTEXT operations nested by ParentId)
    let v = broker.wait_status(&batch, "COMPLETED", 60);
    assert_eq!(
        v["output"],
        json!({"map": [10, 20, 30], "parallel": ["a", "b"], "child": 7})
    );
    assert_eq!(op(&v, "map")["SubType"], "Map");
    assert_eq!(op(&v, "parallel")["SubType"], "Parallel");
    assert_eq!(op(&v, "child")["SubType"], "RunInChildContext");

    // a chained invoke runs `steps` as a child execution
    let v = broker.wait_status(&chained, "COMPLETED", 60);
    assert_eq!(
        v["output"],
        json!({"child": {"order": "c1", "charged": 30, "shipped": true}})
    );
    let child = broker
        .instances("steps")
        .into_iter()
        .find(|i| i["parentId"] == json!(chained))
        .expect("a child execution of steps");
    assert_eq!(child["status"], "COMPLETED");
    assert_eq!(op(&v, "call-steps")["Type"], "CHAINED_INVOKE");

    // a handler that raises: FAILED with the exception's type
    let v = broker.wait_status(&boom, "FAILED", 60);
    assert_eq!(v["error"]["name"], "boom.PaymentDeclined");
    assert_eq!(v["error"]["message"], "card 4242 declined");
    let failed = out.lifecycle(&boom, "failed", 30);
    assert_eq!(
        failed.data.as_ref().unwrap()["error"]["name"],
        "boom.PaymentDeclined"
    );

    // wait_for_condition: a STEP retried with its state as the payload
    let v = broker.wait_status(&poll, "COMPLETED", 60);
    assert_eq!(v["output"], json!({"polled": 3}));
    assert_eq!(op(&v, "poll")["SubType"], "WaitForCondition");

    // each result and error is the one the SDK's reference backend gives for the same handler
    for (id, handler, input, children) in [
        (&steps, "steps", json!({"order": "o1"}), vec![]),
        (&retry, "retry", json!({}), vec![]),
        (&batch, "batch", json!({"items": [1, 2, 3]}), vec![]),
        (
            &chained,
            "chained",
            json!({"order": "c1"}),
            vec!["steps=steps"],
        ),
        (&boom, "boom", json!({}), vec![]),
        (&poll, "poll", json!({}), vec![]),
    ] {
        let want = support::durable::reference(handler, &input, &children);
        let got = broker.instance(id);
        match want["status"].as_str() {
            Some("SUCCEEDED") => {
                assert_eq!(got["status"], "COMPLETED", "{handler}: {got}");
                assert_eq!(got["output"], want["result"], "{handler}");
            }
            _ => {
                assert_eq!(got["status"], "FAILED", "{handler}: {got}");
                assert_eq!(got["error"]["name"], want["error"]["type"], "{handler}");
                assert_eq!(
                    got["error"]["message"], want["error"]["message"],
                    "{handler}"
                );
            }
        }
    }

    // started by a CloudEvent
    kafka.producer().send(&event(
        "go-1",
        "/shop",
        "flowbroker.workflow.start",
        &[("workflowid", "steps")],
        json!({"order": "e1"}),
    ));
    let by_event = wait_for(60, "the execution started by an event to complete", || {
        broker
            .instances("steps")
            .into_iter()
            .find(|i| i["data"] == json!({"order": "e1"}) && i["status"] == "COMPLETED")
    });
    assert_eq!(by_event["output"]["order"], "e1");

    // started by Lambda's Invoke (boto3) with an execution name: the same name starts it once
    let first = aws(&http, &["invoke", "steps", "order-7", r#"{"order": "i7"}"#]);
    let again = aws(&http, &["invoke", "steps", "order-7", r#"{"order": "i7"}"#]);
    assert_eq!(first["StatusCode"], 202, "{first}");
    let exec_arn = first["DurableExecutionArn"]
        .as_str()
        .expect("the execution's ARN")
        .to_string();
    assert_eq!(
        again["DurableExecutionArn"].as_str(),
        Some(exec_arn.as_str())
    );
    let got = wait_for(60, "the invoked execution to succeed", || {
        let g = aws(&http, &["get", &exec_arn]);
        (g["Status"] == "SUCCEEDED").then_some(g)
    });
    let result: Value = serde_json::from_str(got["Result"].as_str().unwrap()).unwrap();
    assert_eq!(result["order"], "i7");
    assert_eq!(got["DurableExecutionArn"], json!(exec_arn));
    let id = arn::instance_of_arn(&exec_arn).unwrap();
    assert_eq!(broker.instance(&id)["durableExecutionArn"], json!(exec_arn));
    assert_eq!(
        broker
            .instances("steps")
            .iter()
            .filter(|i| i["data"]["order"] == "i7")
            .count(),
        1
    );
    // its history (boto3 parses every event) and the function's executions
    let h = aws(&http, &["history", &exec_arn]);
    let kinds: Vec<&str> = h["Events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["EventType"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"ExecutionStarted"), "{h}");
    assert_eq!(kinds.last(), Some(&"ExecutionSucceeded"), "{h}");
    for k in [
        "StepStarted",
        "StepSucceeded",
        "WaitStarted",
        "WaitSucceeded",
    ] {
        assert!(kinds.contains(&k), "{k} in {kinds:?}");
    }
    let listed = aws(&http, &["list", "steps", "SUCCEEDED"]);
    let arns: Vec<&str> = listed["DurableExecutions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["DurableExecutionArn"].as_str().unwrap())
        .collect();
    assert!(arns.contains(&exec_arn.as_str()), "{listed}");
    assert!(
        arns.len() >= 4,
        "steps ran for o1, the chained invoke, e1 and i7: {listed}"
    );
    let failed = aws(&http, &["list", "boom", "FAILED"]);
    assert_eq!(
        failed["DurableExecutions"].as_array().unwrap().len(),
        1,
        "{failed}"
    );
    drop(host);
}

#[test]
fn callbacks_are_answered_by_the_aws_api_and_by_events_time_out_and_stop() {
    let (kafka, host, broker, http) = setup(&["callback"]);
    let api = start(&broker, "callback", json!({}));
    let by_event = start(&broker, "callback", json!({}));
    let failed = start(&broker, "callback", json!({}));
    let timeout = start(&broker, "callback", json!({"timeout": 1}));
    let heartbeat = start(&broker, "callback", json!({"heartbeat": 2, "timeout": 120}));
    let stopped = start(&broker, "callback", json!({}));
    let ids = host.callback_ids(6, 60);
    let id_of = |inst: &str| -> String {
        ids.iter()
            .find(|c| arn::read_callback(c).unwrap().0 == inst)
            .unwrap_or_else(|| panic!("no callback id sent by {inst}"))
            .clone()
    };
    for i in [&api, &by_event, &failed, &stopped] {
        broker.wait_status(i, "WAITING", 30);
    }

    // the AWS API (boto3 percent-encodes the base64 id: `+`, `/`, `=`): a heartbeat, then a
    // success whose body is kept verbatim, then a second answer refused
    let cb = id_of(&api);
    assert_eq!(aws(&http, &["heartbeat", &cb]), json!({}));
    assert_eq!(aws(&http, &["succeed", &cb, r#"{"ok":  true}"#]), json!({}));
    let v = broker.wait_status(&api, "COMPLETED", 30);
    assert_eq!(v["output"], json!({"answer": r#"{"ok":  true}"#}));
    let again = aws(&http, &["succeed", &cb, "late"]);
    assert_eq!(again["error"], "CallbackTimeoutException", "{again}");

    // CloudEvents on the input topic: success (JSON data) and failure (an error object)
    let p = kafka.producer();
    p.send(&event(
        "cb-1",
        "/desk",
        "flowbroker.callback.success",
        &[("callbackid", &id_of(&by_event))],
        json!({"approved": true}),
    ));
    p.send(&event(
        "cb-2",
        "/desk",
        "flowbroker.callback.failure",
        &[("callbackid", &id_of(&failed))],
        json!({"ErrorType": "Rejected", "ErrorMessage": "over budget"}),
    ));
    let v = broker.wait_status(&by_event, "COMPLETED", 30);
    assert_eq!(v["output"], json!({"answer": r#"{"approved":true}"#}));
    let v = broker.wait_status(&failed, "COMPLETED", 30);
    assert_eq!(v["output"]["error"], "CallbackExternalError", "{v:#}");
    assert!(
        v["output"]["message"]
            .as_str()
            .unwrap()
            .contains("over budget"),
        "{v:#}"
    );
    assert_eq!(
        op(&v, "approval")["CallbackDetails"]["Error"]["ErrorType"],
        "Rejected"
    );

    // a timeout and a heartbeat timeout, both from durable timers
    let v = broker.wait_status(&timeout, "COMPLETED", 30);
    assert_eq!(v["output"]["error"], "CallbackTimeoutError", "{v:#}");
    assert_eq!(op(&v, "approval")["Status"], "TIMED_OUT");
    let v = broker.wait_status(&heartbeat, "COMPLETED", 30);
    assert_eq!(v["output"]["error"], "CallbackTimeoutError", "{v:#}");
    assert_eq!(
        op(&v, "approval")["CallbackDetails"]["Error"]["ErrorType"],
        "Callback.Heartbeat"
    );

    // StopDurableExecution: STOPPED on AWS, CANCELLED here; stopping again is harmless
    let exec_arn = broker.instance(&stopped)["durableExecutionArn"]
        .as_str()
        .unwrap()
        .to_string();
    let s = aws(&http, &["stop", &exec_arn]);
    assert!(s["StopTimestamp"].is_string(), "{s}");
    broker.wait_status(&stopped, "CANCELLED", 30);
    assert_eq!(aws(&http, &["get", &exec_arn])["Status"], "STOPPED");
    assert!(aws(&http, &["stop", &exec_arn])["StopTimestamp"].is_string());
    let late = aws(&http, &["succeed", &id_of(&stopped), "x"]);
    assert_eq!(late["error"], "CallbackTimeoutException", "{late}");
    drop(host);
}

#[test]
fn a_wait_and_a_pending_callback_survive_sigkill_and_complete_once() {
    let (_kafka, host, mut broker, http) = setup(&["steps", "callback"]);
    let steps = start(&broker, "steps", json!({"order": "k1", "wait": 8}));
    let cb = start(&broker, "callback", json!({}));
    let ids = host.callback_ids(1, 60);
    let v = broker.wait_status(&steps, "WAITING", 30);
    broker.wait_status(&cb, "WAITING", 30);
    let due = op(&v, "cool-off")["WaitDetails"]["ScheduledEndTimestamp"]
        .as_f64()
        .unwrap();
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    assert!(now() < due, "the broker must die while the wait is pending");
    broker.kill();
    assert!(now() < due, "killed mid-wait");
    broker.start_again();
    assert_eq!(aws(&http, &["succeed", &ids[0], "yes"]), json!({}));
    let v = broker.wait_status(&cb, "COMPLETED", 60);
    assert_eq!(v["output"], json!({"answer": "yes"}));
    let v = broker.wait_status(&steps, "COMPLETED", 60);
    assert_eq!(v["output"]["order"], "k1");
    // each step's side effect happened once: the checkpointed ones are replayed, not re-run
    assert_eq!(effects_where(&host, "load", "id", &json!("k1")).len(), 1);
    let charged: Vec<Value> = host
        .effects()
        .into_iter()
        .filter(|e| e["what"] == "charge")
        .collect();
    assert_eq!(charged.len(), 1, "{charged:?}");
    assert!(
        charged[0]["at"].as_f64().unwrap() >= due - 0.01,
        "charged before the wait ended"
    );
    assert_eq!(
        host.effects()
            .iter()
            .filter(|e| e["what"] == "send")
            .count(),
        1
    );
    // the wait's timer fired once: one history entry of it
    let fired = v["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| {
            h["input"]["kind"] == "timerFired"
                && h["input"]["id"].as_str().unwrap().ends_with("/wait")
        })
        .count();
    assert_eq!(fired, 1);
}

#[test]
fn a_handler_written_with_the_javascript_sdk_runs_too() {
    let kafka = Kafka::start();
    let http = format!("127.0.0.1:{}", free_port());
    let host = Host::start_node(&http, &["steps"]);
    let (file, text) = host.definition("steps");
    let broker = Broker::start(
        &kafka,
        &[(&file, &text)],
        &[("FLOWBROKER_HTTP_LISTEN", &http)],
    );
    wait_for(30, "steps to deploy", || {
        (broker.get("/v1/workflows/steps").0 == 200).then_some(())
    });
    let id = start(&broker, "steps", json!({"order": "n1"}));
    let v = broker.wait_status(&id, "COMPLETED", 60);
    assert_eq!(
        v["output"],
        json!({"order": "n1", "charged": 30, "shipped": true})
    );
    let kinds: Vec<(&str, &str)> = v["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["Type"].as_str().unwrap(), o["Status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("EXECUTION", "SUCCEEDED"),
            ("STEP", "SUCCEEDED"),
            ("WAIT", "SUCCEEDED"),
            ("STEP", "SUCCEEDED"),
            ("STEP", "SUCCEEDED")
        ]
    );
    drop(host);
}

#[test]
fn with_a_token_set_the_aws_paths_take_requests_signed_with_the_configured_key_pair() {
    let kafka = Kafka::start();
    let http = format!("127.0.0.1:{}", free_port());
    let keys = [
        ("AWS_ACCESS_KEY_ID", "AKIDFLOWBROKER"),
        ("AWS_SECRET_ACCESS_KEY", "s3cr3t/key+example"),
    ];
    let host = support::durable::Host::start_with(&http, &["steps"], &keys);
    let (file, text) = host.definition("steps");
    let broker = Broker::start(
        &kafka,
        &[(&file, &text)],
        &[
            ("FLOWBROKER_HTTP_LISTEN", &http),
            ("FLOWBROKER_HTTP_AUTH_TOKEN", "bearer-token"),
            ("FLOWBROKER_HTTP_AWS_ACCESS_KEY_ID", keys[0].1),
            ("FLOWBROKER_HTTP_AWS_SECRET_ACCESS_KEY", keys[1].1),
        ],
    );
    wait_for(30, "steps to deploy", || {
        (broker.get("/v1/workflows/steps").0 == 200).then_some(())
    });
    // the SDK in the host signs every checkpoint with the key pair
    let id = start(&broker, "steps", json!({"order": "s1"}));
    let v = broker.wait_status(&id, "COMPLETED", 60);
    assert_eq!(v["output"]["order"], "s1");
    let arn = v["durableExecutionArn"].as_str().unwrap();
    let got = support::durable::aws_with(&http, &["get", arn], &keys);
    assert_eq!(got["Status"], "SUCCEEDED", "{got}");
    // another secret, another key id: refused as AWS refuses them
    let wrong = [keys[0], ("AWS_SECRET_ACCESS_KEY", "guess")];
    let e = support::durable::aws_with(&http, &["get", arn], &wrong);
    assert_eq!(e["error"], "InvalidSignatureException", "{e}");
    let stranger = [("AWS_ACCESS_KEY_ID", "AKIDOTHER"), keys[1]];
    let e = support::durable::aws_with(&http, &["get", arn], &stranger);
    assert_eq!(e["error"], "UnrecognizedClientException", "{e}");
    // neither signed nor with the bearer token
    let path = format!(
        "/2025-12-01/durable-executions/{}",
        arn.replace('/', "%2F")
            .replace(':', "%3A")
            .replace('$', "%24")
    );
    let r = reqwest::blocking::get(format!("http://{http}{path}")).unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert_eq!(broker.get(&path).0, 200, "the bearer token opens them too");
    drop(host);
}

#[test]
fn payloads_up_to_aws_s_limits_pass_and_larger_ones_get_aws_s_errors() {
    let (_kafka, host, broker, http) = setup(&["big", "callback"]);
    // a step result just under the Python SDK's own 750 KB batch limit (one larger hangs in
    // the SDK, whatever the backend): checkpointed, then in the next invocation's input
    let big = start(&broker, "big", json!({"size": 740_000}));
    let v = broker.wait_status(&big, "COMPLETED", 90);
    assert_eq!(v["output"], json!({"size": 740_000}));
    // a callback result of 1 MiB passes, one byte more is refused, and nothing is stuck
    let at_limit = start(&broker, "callback", json!({}));
    let over = start(&broker, "callback", json!({}));
    let ids = host.callback_ids(2, 60);
    let id_of = |inst: &str| {
        ids.iter()
            .find(|c| arn::read_callback(c).unwrap().0 == inst)
            .unwrap()
            .clone()
    };
    let e = aws(
        &http,
        &[
            "succeed",
            &id_of(&over),
            &format!("repeat:y:{}", (1 << 20) + 1),
        ],
    );
    assert_eq!(e["error"], "InvalidParameterValueException", "{e}");
    assert_eq!(
        aws(
            &http,
            &[
                "succeed",
                &id_of(&at_limit),
                &format!("repeat:z:{}", 1 << 20)
            ]
        ),
        json!({})
    );
    let v = broker.wait_status(&at_limit, "COMPLETED", 60);
    assert_eq!(v["output"]["answer"].as_str().unwrap().len(), 1 << 20);
    assert_eq!(aws(&http, &["succeed", &id_of(&over), "small"]), json!({}));
    broker.wait_status(&over, "COMPLETED", 60);
    // a body over the 7 MiB these paths take: 413 with AWS's error type
    let arn = v["durableExecutionArn"]
        .as_str()
        .unwrap()
        .replace('/', "%2F")
        .replace(':', "%3A")
        .replace('$', "%24");
    // a 6.5 MB checkpoint body gets through to the checkpoint itself (refused for its token,
    // not its size)
    let url = format!("http://{http}/2025-12-01/durable-executions/{arn}/checkpoint");
    let body = json!({"CheckpointToken": "AAAA", "Updates": [
        {"Id": "s", "Type": "STEP", "Action": "SUCCEED", "Payload": "p".repeat(6_500_000)}
    ]});
    let r = reqwest::blocking::Client::new()
        .post(&url)
        .json(&body)
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert_eq!(
        r.headers()["x-amzn-errortype"],
        "InvalidParameterValueException"
    );
    assert!(r.text().unwrap().contains("Invalid checkpoint token"));
    // (declared, not sent: the broker answers from the length alone and closes, which would
    // break a client still writing the body)
    let head = answer_to_head(
        &http,
        &format!(
            "POST /2025-12-01/durable-executions/{arn}/checkpoint HTTP/1.1\r\nHost: {http}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            8 << 20
        ),
    );
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("x-amzn-errortype: requesttoolargeexception"),
        "{head}"
    );
}

/// Sends a request head on a fresh connection and returns the answer's head.
fn answer_to_head(http: &str, head: &str) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(http).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    c.write_all(head.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("\r\n\r\n") {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

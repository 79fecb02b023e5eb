//! Access and request limits against a real broker process (issue 11, items 3 and 7): with
//! `http.auth_token` set every route but `/health` refuses requests without the token, a body
//! over `http.max_body_bytes` is answered 413, a Kafka record over `kafka.max_input_bytes` is
//! dead-lettered without its payload while the stream moves on, and an API reachable beyond
//! loopback without a token refuses to start unless `http.insecure` says so.

mod support;
use reqwest::blocking::Client;
use reqwest::Method;
use serde_json::{json, Value};
use std::process::Command;
use support::*;

const GREET: &str = r#"
id: greet
name: greet
events:
- {name: Hello, type: hello, source: /people}
states:
- name: Greet
  type: event
  start: {kind: default}
  eventsActions:
  - eventRefs: [Hello]
    eventDataFilter: {dataOutputPath: "{{ $.data }}"}
  end: {kind: default}
"#;

const TOKEN: &str = "t0k-3n";

fn ce(client: &Client, url: &str, id: &str, auth: Option<&str>, body: String) -> (u16, Value) {
    let mut r = client
        .post(url)
        .header("ce-specversion", "1.0")
        .header("ce-id", id)
        .header("ce-source", "/people")
        .header("ce-type", "hello")
        .header("content-type", "application/json")
        .body(body);
    if let Some(a) = auth {
        r = r.header("authorization", a);
    }
    let r = r.send().unwrap();
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

/// POSTs `body` as one chunk of a `Transfer-Encoding: chunked` request (no Content-Length)
/// over a plain socket, and returns the status code.
fn chunked_post(addr: &str, path: &str, auth: &str, body: &[u8]) -> u16 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: {auth}\r\n\
         ce-specversion: 1.0\r\nce-id: h3\r\nce-source: /people\r\nce-type: hello\r\n\
         content-type: application/json\r\ntransfer-encoding: chunked\r\n\
         connection: close\r\n\r\n{:x}\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    s.write_all(b"\r\n0\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {answer:?}"))
}

#[test]
fn requests_without_the_token_are_refused_and_bodies_and_records_are_bounded() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.dlq", "flowbroker.lifecycle"]);
    let broker = Broker::start(
        &kafka,
        &[("greet.yaml", GREET)],
        &[
            ("FLOWBROKER_HTTP_AUTH_TOKEN", TOKEN),
            ("FLOWBROKER_HTTP_MAX_BODY_BYTES", "2000"),
            ("FLOWBROKER_KAFKA_MAX_INPUT_BYTES", "4000"),
        ],
    );
    let client = Client::new();
    let url = |p: &str| format!("http://{}{p}", broker.http);
    // /health stays open (load balancers and the test harness probe it)
    let r = client.get(url("/health")).send().unwrap();
    assert_eq!(r.status().as_u16(), 200);

    let routes = [
        (Method::GET, "/v1/workflows"),
        (Method::GET, "/v1/instances"),
        (Method::GET, "/v1/instances/greet-x"),
        (Method::POST, "/v1/instances/greet-x/cancel"),
        (Method::GET, "/v1/schedules"),
        (Method::POST, "/v1/workflows/greet/instances"),
        (Method::POST, "/v1/events"),
        (Method::GET, "/metrics"),
        (Method::GET, "/no/such/route"),
    ];
    for (method, path) in &routes {
        for auth in [
            None,
            Some("Bearer wrong"),
            Some(TOKEN),
            Some("Basic dDBrLTNu"),
        ] {
            let mut r = client.request(method.clone(), url(path));
            if let Some(a) = auth {
                r = r.header("authorization", a);
            }
            let r = r.send().unwrap();
            assert_eq!(r.status().as_u16(), 401, "{method} {path} with {auth:?}");
            assert_eq!(r.headers()["www-authenticate"], "Bearer");
            let v: Value = r.json().unwrap();
            assert!(v["error"].as_str().unwrap().contains("token"), "{v}");
        }
    }
    // the token opens every route
    let bearer = format!("Bearer {TOKEN}");
    let (code, v) = broker.get("/v1/workflows");
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["workflows"][0]["id"], "greet", "{v}");
    assert!(broker.metrics().contains("flowbroker_transitions_total"));
    let (code, v) = ce(
        &client,
        &url("/v1/events"),
        "h1",
        Some(&bearer),
        json!({"name": "Ada"}).to_string(),
    );
    assert_eq!(code, 202, "{v}");
    let id = v["started"][0].as_str().unwrap().to_string();
    let done = broker.wait_status(&id, "COMPLETED", 30);
    assert_eq!(done["output"]["data"]["name"], "Ada", "{done}");

    // a body over http.max_body_bytes: 413 with the reason, by declared length ...
    let big = json!({"name": "x".repeat(3000)}).to_string();
    let (code, v) = ce(
        &client,
        &url("/v1/events"),
        "h2",
        Some(&bearer),
        big.clone(),
    );
    assert_eq!(code, 413, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("http.max_body_bytes"),
        "{v}"
    );
    // ... and without one (chunked): cut off at the same limit
    let status = chunked_post(&broker.http, "/v1/events", &bearer, big.as_bytes());
    assert_eq!(status, 413);
    // neither oversized request reached an instance
    assert_eq!(broker.instances("greet").len(), 1);

    // a Kafka record over kafka.max_input_bytes: dead-lettered without its payload, with the
    // position of the original; the next record is applied
    let p = kafka.producer();
    p.send(&event(
        "k-big",
        "/people",
        "hello",
        &[],
        json!({"name": "y".repeat(5000)}),
    ));
    p.send(&event(
        "k-small",
        "/people",
        "hello",
        &[],
        json!({"name": "Grace"}),
    ));
    let dead = wait_for(30, "the oversized record's dead letter", || {
        out.all().into_iter().find(|r| r.topic == "flowbroker.dlq")
    });
    assert_eq!(dead.headers["flowbroker-dlq-kind"], "too_large");
    assert!(
        dead.headers["flowbroker-dlq-reason"].contains("kafka.max_input_bytes"),
        "{dead:?}"
    );
    assert_eq!(dead.headers["ce_id"], "k-big", "its headers are kept");
    assert_eq!(dead.headers["flowbroker-dlq-topic"], "flowbroker.in");
    assert!(dead.headers.contains_key("flowbroker-dlq-offset"));
    assert!(dead.payload.as_deref().is_none_or(<[u8]>::is_empty));
    let grace = wait_for(30, "the next record's instance", || {
        broker
            .instances("greet")
            .into_iter()
            .find(|i| i["status"] == "COMPLETED" && i["data"]["data"]["name"] == "Grace")
    });
    assert!(grace["id"].is_string());
    assert_eq!(
        broker.instances("greet").len(),
        2,
        "the big record started nothing"
    );
    // the listing pages with a cursor: two pages of one, then an empty one
    let (_, first) = broker.get("/v1/instances?workflowId=greet&limit=1");
    assert_eq!(first["instances"].as_array().unwrap().len(), 1, "{first}");
    let next = first["next"]
        .as_str()
        .expect("a cursor after a full page")
        .to_string();
    let (_, second) = broker.get(&format!(
        "/v1/instances?workflowId=greet&limit=1&after={next}"
    ));
    assert_eq!(second["instances"].as_array().unwrap().len(), 1, "{second}");
    let last = second["next"].as_str().unwrap().to_string();
    assert_ne!(last, next, "pages go forward");
    let (_, third) = broker.get(&format!(
        "/v1/instances?workflowId=greet&limit=1&after={last}"
    ));
    assert!(third["instances"].as_array().unwrap().is_empty(), "{third}");
    assert!(third["next"].is_null());
    let (code, bad) = broker.get("/v1/instances?after=not-an-id");
    assert_eq!(code, 400, "{bad}");
    wait_for(10, "the too_large dead letter to be counted", || {
        let m = broker.metrics();
        (metric_sum(&m, "flowbroker_events_dead_lettered_total", "too_large") == 1).then_some(())
    });
}

#[test]
fn an_api_beyond_loopback_without_a_token_refuses_to_start() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[(&str, &str)]| {
        Command::new(env!("CARGO_BIN_EXE_flowbroker"))
            .arg("run")
            .env_clear()
            .env("FLOWBROKER_HTTP_LISTEN", format!("0.0.0.0:{port}"))
            .env("FLOWBROKER_DATA_DIR", dir.path().join("data"))
            .env("FLOWBROKER_WORKFLOWS_DIR", dir.path())
            // nothing listens here: a broker that got past its config would hang on Kafka
            .env("FLOWBROKER_KAFKA_BROKERS", "127.0.0.1:1")
            .envs(extra.iter().copied())
            .output()
            .unwrap()
    };
    let refused = run(&[]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("0.0.0.0") && err.contains("http.auth_token") && err.contains("http.insecure"),
        "{err}"
    );
    let missing = dir.path().join("no-such-token").display().to_string();
    let refused = run(&[("FLOWBROKER_HTTP_AUTH_TOKEN_FILE", &missing)]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("http.auth_token_file") && err.contains("no-such-token"),
        "{err}"
    );

    // with http.insecure = true, or with a token, it starts and serves
    let kafka = Kafka::start();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let token_path = token_file.display().to_string();
    for (extra, auth) in [
        (("FLOWBROKER_HTTP_INSECURE", "true"), None),
        (
            ("FLOWBROKER_HTTP_AUTH_TOKEN_FILE", token_path.as_str()),
            Some(TOKEN),
        ),
    ] {
        let listen = format!("0.0.0.0:{}", free_port());
        let broker = Broker::start(
            &kafka,
            &[("greet.yaml", GREET)],
            &[("FLOWBROKER_HTTP_LISTEN", &listen), extra],
        );
        let client = Client::new();
        let url = format!("http://{}/v1/workflows", broker.http);
        let code = |r: reqwest::blocking::RequestBuilder| r.send().unwrap().status().as_u16();
        match auth {
            None => assert_eq!(code(client.get(&url)), 200),
            Some(t) => {
                assert_eq!(code(client.get(&url)), 401);
                assert_eq!(code(client.get(&url).bearer_auth(t)), 200);
            }
        }
    }
}

//! The web console in a real browser: headless Chromium (from apt, scripts/install-deps.sh)
//! loads `/ui/` pages from a running broker, runs their script against the API, and the test
//! asserts on the DOM it rendered, not on the HTML served. Also makes the README's screenshot.
//! The token path (login form, cookie) is checked over HTTP.

mod support;
use serde_json::json;
use std::process::Command;
use support::*;

const ORDERS: &str = r#"
id: orders
name: Orders
events:
- {name: Placed, type: order.placed, source: /shop, correlation: [{contextAttributeName: orderid}]}
- {name: Paid, type: order.paid, source: /shop, correlation: [{contextAttributeName: orderid}]}
functions:
- {name: reserve, resource: reserve}
states:
- name: Placed
  type: event
  start: {kind: default}
  eventsActions:
  - eventRefs: [Placed]
    actions: [{functionRef: {refName: reserve, parameters: {order: "{{ $.orderid }}"}}}]
  transition: {nextState: AwaitPayment}
- name: AwaitPayment
  type: event
  eventsActions: [{eventRefs: [Paid]}]
  transition: {nextState: Ship}
- {name: Ship, type: inject, data: {shipped: true}, end: {kind: default}}
"#;

/// A workflow file with an error, to be shown with its location.
const BROKEN: &str = r#"
id: broken
name: broken
states:
- name: A
  type: delay
  timeDelay: soon
  start: {kind: default}
  end: {kind: default}
"#;

fn chromium() -> String {
    for c in ["chromium", "chromium-browser", "google-chrome"] {
        if Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return c.to_string();
        }
    }
    panic!("no Chromium found: scripts/install-deps.sh installs it (apt-get install chromium)");
}

fn browser(extra: &[&str], url: &str) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            // virtual time runs the page's fetches and timers, then the page is captured
            "--virtual-time-budget=8000",
            &format!("--user-data-dir={}", profile.path().display()),
        ])
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The page's DOM after its script ran.
fn rendered(url: &str) -> String {
    let out = browser(&["--dump-dom"], url);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_console_shows_workflows_instances_and_an_instance_in_a_real_browser() {
    let kafka = Kafka::start();
    let fns = Functions::start(|_, body| (200, json!({"reserved": body["order"]})));
    let broker = Broker::start(
        &kafka,
        &[("orders.yaml", ORDERS), ("broken.yaml", BROKEN)],
        &[(
            "FLOWBROKER_FUNCTIONS",
            &format!("reserve={}", fns.url("/reserve")),
        )],
    );
    let p = kafka.producer();
    p.send(&event(
        "e1",
        "/shop",
        "order.placed",
        &[("orderid", "A-1")],
        json!({"orderid": "A-1", "total": 42}),
    ));
    let waiting = wait_for(60, "the order to wait for payment", || {
        broker
            .instances("orders")
            .into_iter()
            .find(|i| i["status"] == "WAITING" && i["state"] == "AwaitPayment")
    });
    let id = waiting["id"].as_str().unwrap().to_string();
    let base = format!("http://{}", broker.http);

    // home: deployed workflows, the invalid file with its location, the instance
    let home = rendered(&format!("{base}/ui/"));
    assert!(
        home.contains("data-ready=\"true\""),
        "the script ran: {home}"
    );
    assert!(home.contains("href=\"/ui/workflows/orders\""), "{home}");
    assert!(home.contains(&format!("data-instance=\"{id}\"")), "{home}");
    assert!(
        home.contains("broken.yaml"),
        "the invalid file is listed: {home}"
    );
    assert!(home.contains("timeDelay"), "with the located error: {home}");
    let filtered = rendered(&format!("{base}/ui/?status=COMPLETED"));
    assert!(filtered.contains("data-ready=\"true\""), "{filtered}");
    assert!(
        !filtered.contains(&format!("data-instance=\"{id}\"")),
        "filtered out: {filtered}"
    );
    assert!(filtered.contains("No instances."), "{filtered}");

    // the instance: status, current state, path, graph with marks, history, cancel button
    let page = rendered(&format!("{base}/ui/instances/{id}"));
    assert!(page.contains("data-ready=\"true\""), "{page}");
    assert!(
        page.contains(&format!("id=\"instance-id\">{id}<")),
        "{page}"
    );
    assert!(page.contains("data-status=\"WAITING\""), "{page}");
    assert!(
        page.contains("id=\"current-state\">AwaitPayment<"),
        "{page}"
    );
    assert!(
        page.contains("id=\"visited\">Placed → AwaitPayment<"),
        "{page}"
    );
    assert!(page.contains("<svg"), "the graph is drawn: {page}");
    assert!(
        page.to_lowercase().contains("#ffd666"),
        "the current state is marked: {page}"
    );
    assert!(
        page.contains("data-seq=\"0\"") && page.contains("data-seq=\"1\""),
        "{page}"
    );
    assert!(page.contains("started by order.placed (e1)"), "{page}");
    assert!(
        page.contains("invoke reserve"),
        "decisions in the timeline: {page}"
    );
    assert!(
        page.contains("id=\"cancel\""),
        "a running instance can be cancelled: {page}"
    );
    assert!(page.contains("\"total\": 42"), "its data: {page}");

    // the screenshot the README shows
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("console.png");
    browser(
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,900",
        ],
        &format!("{base}/ui/instances/{id}"),
    );
    let png = std::fs::read(&shot).expect("chromium wrote the screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    if std::env::var_os("FLOWBROKER_UPDATE_SCREENSHOT").is_some() {
        let docs = support::root().join("docs/console.png");
        std::fs::write(docs, &png).unwrap();
    }

    // the page follows the instance: once paid it shows COMPLETED, no cancel button
    p.send(&event(
        "e2",
        "/shop",
        "order.paid",
        &[("orderid", "A-1")],
        json!({}),
    ));
    broker.wait_status(&id, "COMPLETED", 60);
    let done = rendered(&format!("{base}/ui/instances/{id}"));
    assert!(done.contains("data-status=\"COMPLETED\""), "{done}");
    assert!(!done.contains("id=\"cancel\""), "{done}");
    assert!(done.contains("Placed → AwaitPayment → Ship"), "{done}");

    // the workflow page: definition and graph
    let wf = rendered(&format!("{base}/ui/workflows/orders"));
    assert!(wf.contains("data-ready=\"true\""), "{wf}");
    assert!(
        wf.contains("eventsActions"),
        "the definition's source: {wf}"
    );
    assert!(
        wf.contains("<svg") && wf.contains("AwaitPayment (event)"),
        "{wf}"
    );
}

const MACHINE: &str = r#"{
  "Comment": "an ASL machine in the console",
  "StartAt": "Prepare",
  "States": {
    "Prepare": {"Type": "Pass", "Result": {"ready": true}, "ResultPath": "$.prep", "Next": "Pause"},
    "Pause": {"Type": "Wait", "Seconds": 3600, "Next": "Done"},
    "Done": {"Type": "Succeed"}
  }
}"#;

#[test]
fn the_console_shows_an_asl_machine_and_its_run() {
    let kafka = Kafka::start();
    let broker = Broker::start(&kafka, &[("hold.asl.json", MACHINE)], &[]);
    wait_for(30, "the machine to deploy", || {
        (broker.get("/v1/workflows/hold").0 == 200).then_some(())
    });
    let (code, started) = broker.post("/v1/workflows/hold/instances", json!({"n": 1}));
    assert_eq!(code, 201, "{started}");
    let id = started["id"].as_str().unwrap().to_string();
    broker.wait_status(&id, "WAITING", 30);
    let base = format!("http://{}", broker.http);

    let home = rendered(&format!("{base}/ui/"));
    assert!(home.contains("data-ready=\"true\""), "{home}");
    assert!(
        home.contains("data-language=\"asl\">Amazon States Language<"),
        "{home}"
    );
    let page = rendered(&format!("{base}/ui/instances/{id}"));
    assert!(page.contains("data-status=\"WAITING\""), "{page}");
    assert!(page.contains("id=\"current-state\">Pause<"), "{page}");
    assert!(page.contains("id=\"visited\">Prepare → Pause<"), "{page}");
    assert!(page.contains("<svg"), "the graph is drawn: {page}");
    assert!(
        page.to_lowercase().contains("#ffd666"),
        "current marked: {page}"
    );
    assert!(page.contains("\"ready\": true"), "its data: {page}");
    let wf = rendered(&format!("{base}/ui/workflows/hold"));
    assert!(
        wf.contains("id=\"language\">Amazon States Language<"),
        "{wf}"
    );
    assert!(wf.contains("Pause (Wait)"), "the machine's graph: {wf}");
}

#[test]
fn with_a_token_the_console_asks_for_it_once_and_keeps_it_in_a_cookie() {
    let kafka = Kafka::start();
    let token = "console-token-0123456789";
    let broker = Broker::start(
        &kafka,
        &[("orders.yaml", ORDERS)],
        &[("FLOWBROKER_HTTP_AUTH_TOKEN", token)],
    );
    let base = format!("http://{}", broker.http);
    let http = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    // no token: console pages send to the login page; the API still answers 401
    let r = http.get(format!("{base}/ui/")).send().unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/ui/login");
    assert_eq!(
        http.get(format!("{base}/ui/app.js"))
            .send()
            .unwrap()
            .status(),
        303
    );
    assert_eq!(
        http.get(format!("{base}/v1/instances"))
            .send()
            .unwrap()
            .status(),
        401
    );
    let login = http.get(format!("{base}/ui/login")).send().unwrap();
    assert_eq!(login.status(), 200);
    assert!(login.text().unwrap().contains("name=\"token\""));
    // a wrong token is refused with a message; the right one sets the cookie
    let wrong = http
        .post(format!("{base}/ui/login"))
        .form(&[("token", "nope")])
        .send()
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(wrong.text().unwrap().contains("not this broker's token"));
    let ok = http
        .post(format!("{base}/ui/login"))
        .form(&[("token", token)])
        .send()
        .unwrap();
    assert_eq!(ok.status(), 303);
    let cookie = ok.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    let with = |path: &str| {
        http.get(format!("{base}{path}"))
            .header("cookie", &pair)
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(with("/ui/"), 200);
    assert_eq!(with("/ui/app.js"), 200);
    assert_eq!(
        with("/v1/instances"),
        200,
        "the API takes the console's cookie"
    );
    assert_eq!(
        http.get(format!("{base}/v1/instances"))
            .header("cookie", "flowbroker_token=wrong")
            .send()
            .unwrap()
            .status(),
        401
    );
}

#[test]
fn the_console_shows_a_durable_execution_s_operations() {
    let kafka = Kafka::start();
    let http = format!("127.0.0.1:{}", free_port());
    let host = support::durable::Host::start(&http, &["callback"]);
    let (file, text) = host.definition("callback");
    let broker = Broker::start(
        &kafka,
        &[(&file, &text)],
        &[("FLOWBROKER_HTTP_LISTEN", &http)],
    );
    wait_for(30, "the function to deploy", || {
        (broker.get("/v1/workflows/callback").0 == 200).then_some(())
    });
    let (code, started) = broker.post("/v1/workflows/callback/instances", json!({}));
    assert_eq!(code, 201, "{started}");
    let id = started["id"].as_str().unwrap().to_string();
    let cb = host.callback_ids(1, 60).remove(0);
    broker.wait_status(&id, "WAITING", 30);
    let base = format!("http://{}", broker.http);
    let home = rendered(&format!("{base}/ui/"));
    assert!(
        home.contains("data-language=\"durable-function\">Lambda durable function<"),
        "{home}"
    );
    let page = rendered(&format!("{base}/ui/instances/{id}"));
    assert!(page.contains("data-status=\"WAITING\""), "{page}");
    assert!(page.contains("id=\"operations\""), "the operations: {page}");
    assert!(
        page.contains("data-op-status=\"STARTED\""),
        "the callback waits: {page}"
    );
    assert!(
        page.contains(&format!("callback id {cb}")),
        "its callback id: {page}"
    );
    assert!(page.contains("CALLBACK (Callback)"), "{page}");
    assert!(
        page.contains("checkpoint (2 updates)") || page.contains("checkpoint (1 update)"),
        "{page}"
    );
    drop(host);
}

//! `flowbroker start`, `instances`, `show` and `cancel`: the admin API from the command line,
//! as a table for people or as the API's JSON (`--output json`).

use super::client::{segment, Client, ClientError};
use super::Output;
use serde_json::{json, Value};

/// `start WORKFLOW [--data JSON] [--idempotency-key K]`: prints the new instance id.
pub fn start(
    c: &Client,
    out: Output,
    workflow: &str,
    data: Option<&str>,
    key: Option<&str>,
) -> Result<(), String> {
    let input: Value = match data {
        None => json!({}),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| format!("--data is not JSON: {e} (for example --data '{{\"x\": 1}}')"))?,
    };
    let headers: Vec<(&str, String)> = key
        .map(|k| vec![("Idempotency-Key", k.to_string())])
        .unwrap_or_default();
    let v = c
        .post(
            &format!("/v1/workflows/{}/instances", segment(workflow)),
            &input,
            &headers,
        )
        .map_err(|e| e.to_string())?;
    match out {
        Output::Json => println!("{}", pretty(&v)),
        Output::Text => println!("{}", v["id"].as_str().unwrap_or_default()),
    }
    Ok(())
}

/// `instances [--workflow ID] [--status S] [--limit N] [--after ID]`.
pub fn list(
    c: &Client,
    out: Output,
    workflow: Option<&str>,
    status: Option<&str>,
    limit: usize,
    after: Option<&str>,
) -> Result<(), String> {
    let mut query = vec![format!("limit={limit}")];
    if let Some(w) = workflow {
        query.push(format!("workflowId={}", segment(w)));
    }
    if let Some(s) = status {
        query.push(format!("status={}", s.to_ascii_uppercase()));
    }
    if let Some(a) = after {
        query.push(format!("after={}", segment(a)));
    }
    let v = c
        .get(&format!("/v1/instances?{}", query.join("&")))
        .map_err(|e| e.to_string())?;
    if out == Output::Json {
        println!("{}", pretty(&v));
        return Ok(());
    }
    let rows: Vec<Vec<String>> = v["instances"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|i| {
                    vec![
                        text(&i["id"]),
                        text(&i["workflowId"]),
                        text(&i["status"]),
                        text(&i["state"]),
                        text(&i["updated"]),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    print!(
        "{}",
        table(&["ID", "WORKFLOW", "STATUS", "STATE", "UPDATED"], &rows)
    );
    if let Some(next) = v["next"].as_str() {
        println!("(more: --after {next})");
    }
    if let Some(u) = v["statePartitions"]["unavailable"].as_array() {
        if !u.is_empty() {
            eprintln!("warning: state partitions {u:?} had no reachable owner; their instances are missing");
        }
    }
    Ok(())
}

/// `show ID`: status, current state, data and history.
pub fn show(c: &Client, out: Output, id: &str, full: bool) -> Result<(), String> {
    let path = format!(
        "/v1/instances/{}{}",
        segment(id),
        if full { "?payloads=full" } else { "" }
    );
    let v = c.get(&path).map_err(|e| not_found(e, id))?;
    if out == Output::Json {
        println!("{}", pretty(&v));
        return Ok(());
    }
    let field = |name: &str, value: &Value| {
        if !value.is_null() {
            println!("{name:<10} {}", text(value));
        }
    };
    field("id", &v["id"]);
    field(
        "workflow",
        &json!(format!(
            "{} (version {})",
            text(&v["workflowId"]),
            text(&v["version"])
        )),
    );
    field("status", &v["status"]);
    field("state", &v["state"]);
    field("parent", &v["parentId"]);
    field("created", &v["created"]);
    field("updated", &v["updated"]);
    if v["correlation"].as_object().is_some_and(|o| !o.is_empty()) {
        field("correlation", &json!(v["correlation"].to_string()));
    }
    println!("data:\n{}", indent(&pretty(&v["data"])));
    if !v["output"].is_null() {
        println!("output:\n{}", indent(&pretty(&v["output"])));
    }
    if !v["error"].is_null() {
        println!("error:\n{}", indent(&pretty(&v["error"])));
    }
    let rows: Vec<Vec<String>> = v["history"]
        .as_array()
        .map(|h| h.iter().map(history_row).collect())
        .unwrap_or_default();
    println!("history:");
    print!(
        "{}",
        indent(&table(
            &["SEQ", "AT", "INPUT", "DECISIONS", "STATE", "STATUS"],
            &rows
        ))
    );
    Ok(())
}

/// `cancel ID`.
pub fn cancel(c: &Client, out: Output, id: &str) -> Result<(), String> {
    let v = c
        .post(
            &format!("/v1/instances/{}/cancel", segment(id)),
            &json!({}),
            &[],
        )
        .map_err(|e| not_found(e, id))?;
    match out {
        Output::Json => println!("{}", pretty(&v)),
        Output::Text => println!("cancelling {id}"),
    }
    Ok(())
}

fn not_found(e: ClientError, id: &str) -> String {
    match e.status() {
        Some(404) => format!("no instance {id:?} (list them with `flowbroker instances`)"),
        _ => e.to_string(),
    }
}

/// One history entry: what came in and what the engine decided.
fn history_row(h: &Value) -> Vec<String> {
    let input = &h["input"];
    let what = match input["kind"].as_str().unwrap_or("?") {
        "start" => {
            let by: Vec<String> = input["events"]
                .as_array()
                .map(|es| {
                    es.iter()
                        .map(|e| format!("{} {}", text(&e["type"]), text(&e["id"])))
                        .collect()
                })
                .unwrap_or_default();
            if by.is_empty() {
                "start".to_string()
            } else {
                format!("start by {}", by.join(", "))
            }
        }
        "event" => format!(
            "event {} {}",
            text(&input["event"]["type"]),
            text(&input["event"]["id"])
        ),
        "actionResult" => format!("result {}", text(&input["key"])),
        "actionFailed" => format!("failed {}", text(&input["key"])),
        "timerFired" => format!("timer {}", text(&input["id"])),
        "childCompleted" => format!("child done {}", text(&input["id"])),
        "childFailed" => format!("child failed {}", text(&input["id"])),
        k => k.to_string(),
    };
    let decisions: Vec<String> = h["actions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|a| match a["kind"].as_str().unwrap_or("?") {
                    "invoke" => format!("invoke {}", text(&a["function"])),
                    "produce" => format!("produce {}", text(&a["event"]["type"])),
                    "armTimer" => format!("timer {}", text(&a["due"])),
                    "startChild" => format!("child {}", text(&a["workflowId"])),
                    k => k.to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    vec![
        text(&h["seq"]),
        text(&h["at"]),
        what,
        decisions.join(", "),
        text(&h["state"]),
        text(&h["status"]),
    ]
}

/// A JSON value as a cell: strings bare, null empty, the rest as JSON.
fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

pub fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("  {l}\n")).collect()
}

/// Left-aligned columns, two spaces apart, the last one unpadded.
pub fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let n = cells.len();
        let mut s = String::new();
        for (i, c) in cells.into_iter().enumerate() {
            if i + 1 == n {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = width[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(head.to_vec());
    for r in rows {
        out += &line(r.iter().map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_aligns_its_columns() {
        let t = table(
            &["ID", "STATUS"],
            &[
                vec!["a-long-id".into(), "RUNNING".into()],
                vec!["b".into(), "COMPLETED".into()],
            ],
        );
        assert_eq!(
            t,
            "ID         STATUS\na-long-id  RUNNING\nb          COMPLETED\n"
        );
    }
}

//! `flowbroker send`: publishes one CloudEvent (binary mode, as producers usually do) to the
//! input topic, with the Kafka settings of the usual config file and `FLOWBROKER_*` variables.

use super::instances::pretty;
use super::Output;
use crate::config::Config;
use crate::engine::Event;
use cloudevents::binding::rdkafka::{FutureRecordExt, MessageRecord};
use rdkafka::producer::{FutureProducer, FutureRecord};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::time::Duration;

/// What `send` was asked to publish.
pub struct Send<'a> {
    pub event_type: &'a str,
    pub source: &'a str,
    pub id: Option<&'a str>,
    pub subject: Option<&'a str>,
    pub attrs: &'a [String],
    pub data: Option<&'a str>,
    pub topic: Option<&'a str>,
    pub key: Option<&'a str>,
}

/// `--attr name=value`: a CloudEvents extension attribute (lowercase letters and digits).
fn attribute(raw: &str) -> Result<(String, Value), String> {
    let (name, value) = raw
        .split_once('=')
        .ok_or_else(|| format!("--attr {raw:?}: write it as name=value"))?;
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !ok {
        return Err(format!(
            "--attr {raw:?}: attribute names are lowercase letters and digits (CloudEvents), \
             for example orderid=42"
        ));
    }
    Ok((name.to_string(), json!(value)))
}

/// The event `send` publishes.
pub fn event(s: &Send<'_>) -> Result<Event, String> {
    let mut extensions = Map::new();
    for a in s.attrs {
        let (k, v) = attribute(a)?;
        extensions.insert(k, v);
    }
    let data = s
        .data
        .map(|d| {
            serde_json::from_str::<Value>(d)
                .map_err(|e| format!("--data is not JSON: {e} (for example --data '{{\"x\": 1}}')"))
        })
        .transpose()?;
    Ok(Event {
        id: s
            .id
            .map(str::to_string)
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        source: s.source.to_string(),
        event_type: s.event_type.to_string(),
        time: Some(chrono::Utc::now().to_rfc3339()),
        datacontenttype: data.as_ref().map(|_| "application/json".to_string()),
        subject: s.subject.map(str::to_string),
        data,
        extensions,
    })
}

/// Publishes and waits for Kafka's acknowledgement.
pub fn run(config: Option<&Path>, out: Output, s: Send<'_>) -> Result<(), String> {
    let cfg = Config::load(config, std::env::vars()).map_err(|e| e.to_string())?;
    let e = event(&s)?;
    let topic = match s.topic {
        Some(t) => t.to_string(),
        None => cfg
            .kafka
            .input_topics
            .first()
            .cloned()
            .ok_or("no input topic configured (kafka.input_topics); pass --topic")?,
    };
    let ce = crate::cloudevent::to_sdk(&e)?;
    let record = MessageRecord::from_event(ce).map_err(|e| e.to_string())?;
    let producer: FutureProducer = crate::kafka::create(
        &cfg.kafka,
        &[
            ("enable.idempotence", "true".into()),
            ("message.timeout.ms", "15000".into()),
        ],
        "producer",
    )
    .map_err(|e| e.to_string())?;
    let key = s.key.unwrap_or(&e.id).to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let sent = rt.block_on(async {
        let r = FutureRecord::<str, Vec<u8>>::to(&topic)
            .key(key.as_str())
            .message_record(&record);
        producer.send(r, Duration::from_secs(15)).await
    });
    let delivery = sent.map_err(|(err, _)| {
        format!(
            "Kafka at {} did not take the event on {topic}: {err}",
            cfg.kafka.brokers
        )
    })?;
    match out {
        Output::Json => println!(
            "{}",
            pretty(&json!({
                "id": e.id,
                "topic": topic,
                "partition": delivery.partition,
                "offset": delivery.offset,
            }))
        ),
        Output::Text => println!("{}", e.id),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_and_data_become_the_event() {
        let attrs = vec!["orderid=42".to_string(), "region=eu".to_string()];
        let e = event(&Send {
            event_type: "order.created",
            source: "/shop",
            id: Some("e1"),
            subject: None,
            attrs: &attrs,
            data: Some(r#"{"total": 3}"#),
            topic: None,
            key: None,
        })
        .unwrap();
        assert_eq!(e.id, "e1");
        assert_eq!(e.attribute("orderid").as_deref(), Some("42"));
        assert_eq!(e.data, Some(json!({"total": 3})));
    }

    #[test]
    fn bad_attributes_and_data_say_how_to_write_them() {
        let bad = |attrs: &[&str], data: Option<&str>| {
            let attrs: Vec<String> = attrs.iter().map(|s| s.to_string()).collect();
            event(&Send {
                event_type: "t",
                source: "/s",
                id: None,
                subject: None,
                attrs: &attrs,
                data,
                topic: None,
                key: None,
            })
            .unwrap_err()
        };
        assert!(bad(&["orderid"], None).contains("name=value"));
        assert!(bad(&["Order-Id=1"], None).contains("lowercase"));
        assert!(bad(&[], Some("{nope")).contains("--data is not JSON"));
    }
}

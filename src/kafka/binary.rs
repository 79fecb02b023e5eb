//! An engine [`Event`] as a binary-mode Kafka record (CloudEvents Kafka protocol binding):
//! `ce_` headers and the data as the payload, written straight from the event.
//!
//! The records are the ones the CloudEvents SDK writes for the same event
//! (`crate::cloudevent::to_sdk` then `MessageRecord::from_event`), header for header and byte
//! for byte, except that extensions keep the event's order (the SDK's come out of a hash map).
//! Going through the SDK built an SDK event, validated it, wrote the headers into one header
//! list and copied them into each record sent: about a third of the producer's work per event
//! (docs/performance.md). An event the SDK would refuse (an empty source, a time that is not
//! RFC 3339) goes through the SDK, for its error.

use crate::engine::Event;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::borrow::Cow;

/// A header's name: the spec attributes' are static, an extension's is made for it.
pub type HeaderName = Cow<'static, str>;

/// Headers and payload of a record; header values borrow the event's strings where they
/// can.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary<'a> {
    pub headers: Vec<(HeaderName, Cow<'a, [u8]>)>,
    pub payload: Option<Vec<u8>>,
}

/// The binary-mode record of `e`, or why it cannot be one.
pub fn binary(e: &Event) -> Result<Binary<'_>, String> {
    match direct(e) {
        Some(b) => b,
        None => through_sdk(e),
    }
}

/// The record written straight from `e`; `None` for an event the SDK refuses (an empty
/// source, a time that is not RFC 3339), whose error only the SDK gives.
fn direct<'a>(e: &'a Event) -> Option<Result<Binary<'a>, String>> {
    let time = match e.time.as_deref().map(DateTime::parse_from_rfc3339) {
        None => None,
        Some(Ok(t)) => Some(DateTime::<Utc>::from(t).to_rfc3339()),
        Some(Err(_)) => return None,
    };
    if e.source.is_empty() {
        return None;
    }
    // the spec attributes (at most 7: a lifecycle event has them all), then the extensions
    let mut headers = Vec::with_capacity(7 + e.extensions.len());
    let mut put = |name: HeaderName, value: &'a str| {
        headers.push((name, Cow::Borrowed(value.as_bytes())));
    };
    put("ce_specversion".into(), "1.0");
    put("ce_id".into(), &e.id);
    put("ce_type".into(), &e.event_type);
    put("ce_source".into(), &e.source);
    if e.data.is_some() {
        put(
            "content-type".into(),
            e.datacontenttype.as_deref().unwrap_or("application/json"),
        );
    }
    if let Some(s) = &e.subject {
        put("ce_subject".into(), s);
    }
    if let Some(t) = time {
        headers.push(("ce_time".into(), Cow::Owned(t.into_bytes())));
    }
    for (k, v) in &e.extensions {
        let value = match v {
            Value::String(s) => Cow::Borrowed(s.as_bytes()),
            other => Cow::Owned(other.to_string().into_bytes()),
        };
        headers.push((header(k), value));
    }
    let payload = match e.data.as_ref().map(serde_json::to_vec).transpose() {
        Ok(p) => p,
        Err(err) => return Some(Err(err.to_string())),
    };
    Some(Ok(Binary { headers, payload }))
}

/// The header of extension attribute `name` (`datacontenttype` is a spec attribute, but an
/// extension of that name is written as the SDK writes it). The extensions the broker itself
/// stamps on every event it produces have static names; any other is made for it.
fn header(name: &str) -> HeaderName {
    const STAMPED: [(&str, &str); 4] = [
        ("workflowid", "ce_workflowid"),
        ("workflowinstanceid", "ce_workflowinstanceid"),
        ("traceparent", "ce_traceparent"),
        ("tracestate", "ce_tracestate"),
    ];
    if name == "datacontenttype" {
        return "content-type".into();
    }
    match STAMPED.iter().find(|(n, _)| *n == name) {
        Some((_, h)) => Cow::Borrowed(h),
        None => format!("ce_{name}").into(),
    }
}

/// The SDK's record, for an event it refuses (its error) or would write in its own way.
fn through_sdk(e: &Event) -> Result<Binary<'static>, String> {
    use cloudevents::binding::rdkafka::{FutureRecordExt, MessageRecord};
    use rdkafka::message::Headers;
    let ce = crate::cloudevent::to_sdk(e)?;
    let mr = MessageRecord::from_event(ce).map_err(|err| err.to_string())?;
    let r = rdkafka::producer::FutureRecord::<(), Vec<u8>>::to("").message_record(&mr);
    let headers = r
        .headers
        .as_ref()
        .map(|hs| {
            hs.iter()
                .map(|h| {
                    (
                        h.key.to_string().into(),
                        Cow::Owned(h.value.unwrap_or_default().to_vec()),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Binary {
        headers,
        payload: r.payload.cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    /// `b` with its extension headers sorted (the SDK writes them in hash order): the spec
    /// attributes' headers, `spec` of them, stay in place.
    fn sorted_extensions(mut b: Binary<'_>, spec: usize) -> Binary<'_> {
        b.headers[spec..].sort();
        b
    }

    /// How many spec attribute headers the record of `e` starts with.
    fn spec_headers(e: &Event) -> usize {
        4 + usize::from(e.data.is_some())
            + usize::from(e.subject.is_some())
            + usize::from(e.time.is_some())
    }

    /// Deterministic pseudo-random numbers (no dependency for a test).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    fn event(r: &mut Lcg) -> Event {
        let values = [
            json!("text"),
            json!(""),
            json!(42),
            json!(-7),
            json!(1.5),
            json!(true),
            json!(null),
            json!({"a": [1, "b"]}),
            json!("ünïcode \"quoted\""),
            json!(18446744073709551615u64),
        ];
        let times = [
            None,
            Some("2020-01-01T00:00:00Z"),
            Some("2026-11-27T06:30:00.123456789+02:00"),
            Some("2026-11-27T06:30:00.5-05:30"),
            Some("1999-12-31T23:59:59.000Z"),
        ];
        let types = [
            None,
            Some("application/json"),
            Some("text/plain"),
            Some("application/xml"),
        ];
        let mut extensions = Map::new();
        // extension names a definition may give, some the same as a spec attribute's, and
        // those the broker stamps (their headers have static names)
        let names = [
            "ext",
            "subject",
            "time",
            "dataschema",
            "datacontenttype",
            "id",
            "workflowid",
            "workflowinstanceid",
            "traceparent",
            "tracestate",
        ];
        for i in 0..r.next(4) {
            let name = names[r.next(names.len() as u64) as usize];
            extensions.insert(
                format!(
                    "{name}{}",
                    if name == "ext" {
                        i.to_string()
                    } else {
                        String::new()
                    }
                ),
                values[r.next(values.len() as u64) as usize].clone(),
            );
        }
        Event {
            id: format!("id-{}", r.next(1000)),
            source: ["/s", "https://example.com/x?y=1", "urn:a:b"][r.next(3) as usize].into(),
            event_type: "com.example.t".into(),
            time: times[r.next(times.len() as u64) as usize].map(String::from),
            datacontenttype: types[r.next(types.len() as u64) as usize].map(String::from),
            subject: (r.next(2) == 0).then(|| "subj".to_string()),
            data: (r.next(4) != 0).then(|| values[r.next(values.len() as u64) as usize].clone()),
            extensions,
        }
    }

    #[test]
    fn records_are_the_sdks_header_for_header_and_byte_for_byte() {
        let mut r = Lcg(7);
        for _ in 0..2_000 {
            let e = event(&mut r);
            let ours = direct(&e)
                .expect("written straight, not through the SDK")
                .unwrap();
            let sdk = through_sdk(&e).unwrap();
            let spec = spec_headers(&e);
            assert_eq!(
                sorted_extensions(ours, spec),
                sorted_extensions(sdk, spec),
                "{e:?}"
            );
        }
    }

    #[test]
    fn an_event_the_sdk_refuses_is_refused_with_its_error() {
        let mut r = Lcg(1);
        let mut e = event(&mut r);
        e.time = Some("yesterday".into());
        assert!(direct(&e).is_none(), "left to the SDK");
        let err = binary(&e).unwrap_err();
        assert!(err.contains("time"), "{err}");
        e.time = None;
        e.source = String::new();
        assert!(binary(&e).is_err());
    }
}

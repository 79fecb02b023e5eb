//! W3C trace context (`traceparent`, `tracestate`; the CloudEvents distributed-tracing
//! extension): an instance continues the trace of the event or request that started it, and
//! everything it does (function calls, produced and lifecycle events, child instances) carries
//! that trace on with a span of its own.
//!
//! Span ids are derived from what they stand for (the instance id, a call's idempotency key, an
//! event's id), not drawn at random: a call retried after a crash, or an event sent again from
//! the outbox, carries the same `traceparent` as the first time, the way it carries the same
//! idempotency key. An instance started without an upstream trace gets a trace id derived from
//! its id. Pure: no clock, no I/O.
//!
//! [`span`]: finished spans as plain data, for the OTLP exporter ([`crate::otel`]).

pub mod span;

use crate::engine::Event;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A 16-byte trace id (32 lowercase hex digits on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceId(pub u128);

/// An 8-byte span id (16 lowercase hex digits on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpanId(pub u64);

/// The `N` lowercase hex digits of the low `4 * N` bits of `v`, without going through
/// `fmt` (ids are written for every event, instance record and `traceparent`).
fn hex_digits<const N: usize>(v: u128) -> [u8; N] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; N];
    for (i, d) in out.iter_mut().enumerate() {
        *d = DIGITS[((v >> (4 * (N - 1 - i))) & 0xf) as usize];
    }
    out
}

/// The digits as text (hex digits are ASCII).
fn as_text(digits: &[u8]) -> &str {
    std::str::from_utf8(digits).expect("hex digits are ASCII")
}

impl TraceId {
    /// The 32 lowercase hex digits of the id.
    fn digits(self) -> [u8; 32] {
        hex_digits(self.0)
    }
}

impl SpanId {
    /// The 16 lowercase hex digits of the id.
    fn digits(self) -> [u8; 16] {
        hex_digits(u128::from(self.0))
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(as_text(&self.digits()))
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(as_text(&self.digits()))
    }
}

macro_rules! hex_serde {
    ($t:ty, $int:ty, $len:expr) => {
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(as_text(&self.digits()))
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                hex::<$int>(&s, $len).map(Self).ok_or_else(|| {
                    serde::de::Error::custom(format!("not a {}-digit hex id: {s:?}", $len))
                })
            }
        }
    };
}
hex_serde!(TraceId, u128, 32);
hex_serde!(SpanId, u64, 16);

/// `len` lowercase hex digits, not all zero (an invalid id in W3C trace context).
fn hex<T: TryFrom<u128>>(s: &str, len: usize) -> Option<T> {
    if s.len() != len
        || !s
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let v = u128::from_str_radix(s, 16).ok()?;
    if v == 0 {
        return None;
    }
    T::try_from(v).ok()
}

/// A parsed `traceparent` (version `00`), with the `tracestate` that came with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub sampled: bool,
    pub state: Option<String>,
}

impl Upstream {
    /// `traceparent` (and `tracestate`) as W3C Trace Context defines them; `None` for a value
    /// that is not one (it is then ignored, as the recommendation says, and a new trace starts).
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Upstream> {
        let mut parts = traceparent.trim().split('-');
        let version = parts.next()?;
        let trace = parts.next()?;
        let span = parts.next()?;
        let flags = parts.next()?;
        // a future version may add fields after the flags; version 00 has none
        if version != "00" && (version.len() != 2 || version == "ff") {
            return None;
        }
        if version == "00" && parts.next().is_some() {
            return None;
        }
        let flags = u8::from_str_radix(flags, 16)
            .ok()
            .filter(|_| flags.len() == 2)?;
        Some(Upstream {
            trace_id: TraceId(hex(trace, 32)?),
            span_id: SpanId(hex(span, 16)?),
            sampled: flags & 1 == 1,
            state: tracestate
                .map(str::trim)
                .filter(|s| !s.is_empty() && s.len() <= 512)
                .map(str::to_string),
        })
    }

    /// The trace context an event carries in its `traceparent`/`tracestate` attributes.
    pub fn of_event(e: &Event) -> Option<Upstream> {
        let parent = e.extensions.get("traceparent")?.as_str()?;
        let state = e.extensions.get("tracestate").and_then(|v| v.as_str());
        Upstream::parse(parent, state)
    }
}

/// `traceparent` and `tracestate` as a request carried them, unparsed (a start travels with
/// them through the work topic to its partition, which parses them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Carrier {
    pub traceparent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

impl Carrier {
    pub fn upstream(&self) -> Option<Upstream> {
        Upstream::parse(&self.traceparent, self.tracestate.as_deref())
    }
}

/// An instance's place in a trace: its own span, and the span it continues.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceContext {
    pub trace_id: TraceId,
    /// The instance's span (derived from its id).
    pub span_id: SpanId,
    /// The span it continues: the upstream event's or request's, or the parent instance's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<SpanId>,
    #[serde(default = "yes")]
    pub sampled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

fn yes() -> bool {
    true
}

/// A non-zero id derived from `parts`.
fn derive64(parts: &[&str]) -> u64 {
    joined(parts, xxhash_rust::xxh3::xxh3_64).max(1)
}

fn derive128(parts: &[&str]) -> u128 {
    joined(parts, xxhash_rust::xxh3::xxh3_128).max(1)
}

/// `hash` of `parts` joined by U+001F: the bytes of `parts.join("\u{1f}")`, put together on
/// the stack when they are short (as they are for every id derived here), so that deriving an
/// id allocates nothing.
fn joined<T>(parts: &[&str], hash: impl Fn(&[u8]) -> T) -> T {
    const ON_STACK: usize = 256;
    let len = parts
        .iter()
        .map(|p| p.len() + 1)
        .sum::<usize>()
        .saturating_sub(1);
    if len > ON_STACK {
        return hash(parts.join("\u{1f}").as_bytes());
    }
    let mut buf = [0u8; ON_STACK];
    let mut at = 0;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            buf[at] = 0x1f;
            at += 1;
        }
        buf[at..at + p.len()].copy_from_slice(p.as_bytes());
        at += p.len();
    }
    hash(&buf[..at])
}

impl TraceContext {
    /// The context of instance `id`: continuing `upstream` when there is one, else a trace of
    /// its own.
    pub fn for_instance(id: &str, upstream: Option<&Upstream>) -> TraceContext {
        match upstream {
            Some(u) => TraceContext {
                trace_id: u.trace_id,
                span_id: SpanId(derive64(&["instance", id, as_text(&u.trace_id.digits())])),
                parent: Some(u.span_id),
                sampled: u.sampled,
                state: u.state.clone(),
            },
            None => TraceContext {
                trace_id: TraceId(derive128(&["trace", id])),
                span_id: SpanId(derive64(&["instance", id])),
                parent: None,
                sampled: true,
                state: None,
            },
        }
    }

    /// The context of a child instance `id` this instance starts: same trace, parented to
    /// this instance's span.
    pub fn for_child(&self, id: &str) -> TraceContext {
        TraceContext {
            trace_id: self.trace_id,
            span_id: SpanId(derive64(&[
                "instance",
                id,
                as_text(&self.trace_id.digits()),
            ])),
            parent: Some(self.span_id),
            sampled: self.sampled,
            state: self.state.clone(),
        }
    }

    /// The span of something this instance does, named by `what` (`call`, `event`, `state`)
    /// and its stable key.
    pub fn span_of(&self, what: &str, key: &str) -> SpanId {
        SpanId(derive64(&[what, key, as_text(&self.trace_id.digits())]))
    }

    /// `traceparent` for span `span` of this trace.
    pub fn traceparent(&self, span: SpanId) -> String {
        let mut t = String::with_capacity(55);
        t.push_str("00-");
        t.push_str(as_text(&self.trace_id.digits()));
        t.push('-');
        t.push_str(as_text(&span.digits()));
        t.push_str(if self.sampled { "-01" } else { "-00" });
        t
    }

    /// Sets `traceparent` (and `tracestate`) on an event this instance sends, with the span
    /// derived from the event's id.
    pub fn stamp(&self, e: &mut Event) {
        let span = self.span_of("event", &e.id);
        e.extensions
            .insert("traceparent".into(), self.traceparent(span).into());
        if let Some(s) = &self.state {
            e.extensions.insert("tracestate".into(), s.clone().into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_traceparents_are_written_as_fmt_wrote_them() {
        for v in [
            1u128,
            0xf,
            0x00f0_67aa_0ba9_02b7,
            u128::MAX,
            0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736,
        ] {
            assert_eq!(TraceId(v).to_string(), format!("{v:032x}"));
            let s = v as u64;
            assert_eq!(SpanId(s).to_string(), format!("{s:016x}"));
            assert_eq!(
                serde_json::to_string(&TraceId(v)).unwrap(),
                format!("\"{v:032x}\"")
            );
            for sampled in [true, false] {
                let t = TraceContext {
                    trace_id: TraceId(v),
                    span_id: SpanId(1),
                    parent: None,
                    sampled,
                    state: None,
                };
                let want = format!("00-{v:032x}-{s:016x}-{:02x}", u8::from(sampled));
                assert_eq!(t.traceparent(SpanId(s)), want);
            }
        }
    }

    #[test]
    fn derived_ids_hash_the_joined_parts() {
        // short parts are joined on the stack, long ones as before: both hash the same bytes
        let long = "x".repeat(300);
        for parts in [
            vec!["instance", "abc"],
            vec!["event", "id-1", "4bf92f3577b34da6a3ce929d0e0e4736"],
            vec![""],
            vec!["a", &long],
            vec![&long[..255]],
            vec![&long[..256]],
            vec![&long[..257]],
            vec![&long[..127], &long[..128]],
        ] {
            let bytes = parts.join("\u{1f}");
            assert_eq!(
                derive64(&parts),
                xxhash_rust::xxh3::xxh3_64(bytes.as_bytes()).max(1)
            );
            assert_eq!(
                derive128(&parts),
                xxhash_rust::xxh3::xxh3_128(bytes.as_bytes()).max(1)
            );
        }
    }

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn parses_the_w3c_example_and_refuses_what_is_not_one() {
        let u = Upstream::parse(TP, Some("congo=t61rcWkgMzE")).unwrap();
        assert_eq!(u.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(u.span_id.to_string(), "00f067aa0ba902b7");
        assert!(u.sampled);
        assert_eq!(u.state.as_deref(), Some("congo=t61rcWkgMzE"));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(Upstream::parse(bad, None), None, "{bad:?}");
        }
        // a later version may carry more fields
        assert!(Upstream::parse(&format!("01{}-x", &TP[2..]), None).is_some());
    }

    #[test]
    fn an_instance_continues_its_upstream_trace_with_stable_span_ids() {
        let u = Upstream::parse(TP, None).unwrap();
        let t = TraceContext::for_instance("p1-abc", Some(&u));
        assert_eq!(t.trace_id, u.trace_id);
        assert_eq!(t.parent, Some(u.span_id));
        assert_ne!(t.span_id, u.span_id);
        assert_eq!(t, TraceContext::for_instance("p1-abc", Some(&u)), "stable");
        let call = t.span_of("call", "p1-abc/2/a0");
        assert_ne!(call, t.span_id);
        assert_eq!(
            t.traceparent(call),
            format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{call}-01")
        );
        let child = t.for_child("p1-abc/3/i0");
        assert_eq!(
            (child.trace_id, child.parent),
            (t.trace_id, Some(t.span_id))
        );
        // without an upstream: a trace of its own, the same on every replay
        let own = TraceContext::for_instance("p1-abc", None);
        assert_ne!(own.trace_id, u.trace_id);
        assert_eq!(own, TraceContext::for_instance("p1-abc", None));
        let back: TraceContext = serde_json::from_value(serde_json::to_value(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }
}

//! The ids a durable execution's actions carry, each starting with the instance id so they
//! are unique in the partition and an input finds what it answers: invocation keys
//! (`{instance}/inv{n}`), timer ids (`{instance}/op/{operation}/{what}{n}`,
//! `{instance}/inv/retry{n}`, `{instance}/deadline`) and chained-invoke children
//! (`{instance}/c{n}`); the callback events' types and attribute.

/// The CloudEvent types that answer a callback (with a `callbackid` attribute).
pub const CALLBACK_SUCCESS: &str = "flowbroker.callback.success";
pub const CALLBACK_FAILURE: &str = "flowbroker.callback.failure";
pub const CALLBACK_HEARTBEAT: &str = "flowbroker.callback.heartbeat";
/// The attribute naming the callback an event answers.
pub const CALLBACK_ATTR: &str = "callbackid";

/// What a timer of a durable execution is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Timer {
    /// A WAIT operation's end.
    Wait(String),
    /// A STEP retry is due.
    Retry(String),
    /// A CALLBACK's timeout.
    CallbackTimeout(String),
    /// A CALLBACK's heartbeat timeout (armed again on every heartbeat).
    Heartbeat(String, u64),
    /// Invoke again after a failed invocation.
    Reinvoke(u64),
    /// The execution's timeout.
    Deadline,
}

pub fn invocation(instance: &str, n: u64) -> String {
    format!("{instance}/inv{n}")
}

pub fn child(instance: &str, n: usize) -> String {
    format!("{instance}/c{n}")
}

pub fn timer(instance: &str, t: &Timer) -> String {
    match t {
        Timer::Wait(op) => format!("{instance}/op/{op}/wait"),
        Timer::Retry(op) => format!("{instance}/op/{op}/retry"),
        Timer::CallbackTimeout(op) => format!("{instance}/op/{op}/timeout"),
        Timer::Heartbeat(op, n) => format!("{instance}/op/{op}/heartbeat{n}"),
        Timer::Reinvoke(n) => format!("{instance}/inv/retry{n}"),
        Timer::Deadline => format!("{instance}/deadline"),
    }
}

/// The timer an id names, if it is one of `instance`'s.
pub fn parse_timer(instance: &str, id: &str) -> Option<Timer> {
    let rest = id.strip_prefix(instance)?.strip_prefix('/')?;
    if rest == "deadline" {
        return Some(Timer::Deadline);
    }
    if let Some(n) = rest.strip_prefix("inv/retry") {
        return n.parse().ok().map(Timer::Reinvoke);
    }
    let (op, what) = rest.strip_prefix("op/")?.rsplit_once('/')?;
    let op = op.to_string();
    match what {
        "wait" => Some(Timer::Wait(op)),
        "retry" => Some(Timer::Retry(op)),
        "timeout" => Some(Timer::CallbackTimeout(op)),
        _ => what
            .strip_prefix("heartbeat")?
            .parse()
            .ok()
            .map(|n| Timer::Heartbeat(op, n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_ids_round_trip() {
        let i = "p1-abc/c2";
        for t in [
            Timer::Wait("a-1".into()),
            Timer::Retry("b".into()),
            Timer::CallbackTimeout("c".into()),
            Timer::Heartbeat("d".into(), 3),
            Timer::Reinvoke(2),
            Timer::Deadline,
        ] {
            assert_eq!(parse_timer(i, &timer(i, &t)), Some(t));
        }
        assert_eq!(parse_timer("p1-abc", "p1-abc/c2/deadline"), None);
    }
}

//! The ids a machine hands out: call keys (which are also task tokens) and timer ids, each
//! `{instance}/{visit}/{what}{attempt}`, so an input names the thread and attempt it is for
//! and a stale one (an earlier visit or attempt) is told and ignored; and the types of the
//! events that carry task tokens.

/// The event type a `.waitForTaskToken` Task sends: its data is the effective input, its
/// `tasktoken` attribute the token to answer with.
pub const TASK_EVENT: &str = "flowbroker.task.requested";
/// Answers to a task token (attribute `tasktoken`): the data is the task's result.
pub const TASK_SUCCESS: &str = "flowbroker.task.success";
/// The data is `{"error": ..., "cause": ...}`.
pub const TASK_FAILURE: &str = "flowbroker.task.failure";
/// Restarts the task's `HeartbeatSeconds` clock.
pub const TASK_HEARTBEAT: &str = "flowbroker.task.heartbeat";

/// What a timer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// A Wait state's wait.
    Wait,
    /// The pause before a retry.
    Retry,
    /// A Task's `TimeoutSeconds`.
    Timeout,
    /// A Task's `HeartbeatSeconds`.
    Heartbeat,
    /// The machine's own `TimeoutSeconds` (visit 0).
    Deadline,
}

impl Timer {
    const ALL: [Timer; 5] = [
        Timer::Wait,
        Timer::Retry,
        Timer::Timeout,
        Timer::Heartbeat,
        Timer::Deadline,
    ];

    fn name(self) -> &'static str {
        match self {
            Timer::Wait => "wait",
            Timer::Retry => "retry",
            Timer::Timeout => "timeout",
            Timer::Heartbeat => "heartbeat",
            Timer::Deadline => "deadline",
        }
    }
}

/// The key of attempt `attempt` of the Task entered at `visit`: the call's idempotency key
/// and, for `.waitForTaskToken`, the task token.
pub fn call(instance: &str, visit: u64, attempt: u32) -> String {
    format!("{instance}/{visit}/t{attempt}")
}

pub fn timer(instance: &str, visit: u64, t: Timer, attempt: u32) -> String {
    format!("{instance}/{visit}/{}{attempt}", t.name())
}

/// A call key, task token or timer id taken apart: `(instance, visit, what, attempt)`.
fn split(id: &str) -> Option<(&str, u64, &str, u32)> {
    let mut parts = id.rsplitn(3, '/');
    let last = parts.next()?;
    let visit = parts.next()?.parse().ok()?;
    let instance = parts.next()?;
    let digits = last.find(|c: char| c.is_ascii_digit())?;
    let (what, attempt) = last.split_at(digits);
    Some((instance, visit, what, attempt.parse().ok()?))
}

/// `(visit, attempt)` of a call key or task token of `instance`.
pub fn parse_call(instance: &str, key: &str) -> Option<(u64, u32)> {
    let (i, visit, what, attempt) = split(key)?;
    (i == instance && what == "t").then_some((visit, attempt))
}

/// `(visit, timer, attempt)` of a timer id of `instance`.
pub fn parse_timer(instance: &str, id: &str) -> Option<(u64, Timer, u32)> {
    let (i, visit, what, attempt) = split(id)?;
    let t = Timer::ALL.into_iter().find(|t| t.name() == what)?;
    (i == instance).then_some((visit, t, attempt))
}

/// The instance a task token belongs to (the router's lookup).
pub fn token_instance(token: &str) -> Option<&str> {
    let (i, _, what, _) = split(token)?;
    (what == "t").then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_back_even_for_child_instance_ids() {
        let inst = "p3-abc/7/b1";
        let k = call(inst, 12, 2);
        assert_eq!(k, "p3-abc/7/b1/12/t2");
        assert_eq!(parse_call(inst, &k), Some((12, 2)));
        assert_eq!(parse_call("p3-other", &k), None);
        assert_eq!(token_instance(&k), Some(inst));
        let t = timer(inst, 4, Timer::Heartbeat, 0);
        assert_eq!(parse_timer(inst, &t), Some((4, Timer::Heartbeat, 0)));
        assert_eq!(parse_call(inst, &t), None);
        assert_eq!(token_instance(&t), None);
        assert_eq!(token_instance("nonsense"), None);
    }
}

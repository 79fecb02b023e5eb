//! Error handling: retries of a failed action, then `onError`, else the instance fails.

use super::data;
use super::instance::{ErrorInfo, Slot, Status};
use super::{flow, run, Action, Cx};
use crate::model::RetryDef;
use crate::time::{Duration, Written};
use serde_json::{json, Value};

/// Without `maxAttempts` (or `Rn/`), a matching retry definition allows this many retries
/// (the Amazon States Language default).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// Without `interval`, retries wait this long (as in the Amazon States Language).
pub const DEFAULT_INTERVAL_MS: u64 = 1000;

/// The data onError and retry expressions see: the state data plus `error`, `errors` and
/// `exceptions`.
pub fn error_view(state_data: &Value, error: &ErrorInfo) -> Value {
    let mut v = match state_data {
        Value::Object(_) => state_data.clone(),
        _ => json!({}),
    };
    let e = serde_json::to_value(error).unwrap_or(Value::Null);
    data::put(&mut v, "error", e.clone());
    data::put(&mut v, "errors", json!([e.clone()]));
    data::put(&mut v, "exceptions", json!([e]));
    v
}

/// The wait before retry number `attempt + 1` (attempt 0 is the first retry), or `None` when
/// the definition allows no more.
pub fn retry_wait(def: &RetryDef, attempt: u32) -> Option<Duration> {
    let interval = def.interval.as_ref().and_then(Written::get);
    let max = match (def.max_attempts, interval.and_then(|i| i.repetitions)) {
        (Some(m), Some(r)) => m.0.min(r),
        (Some(m), None) => m.0,
        (None, Some(r)) => r,
        (None, None) => DEFAULT_MAX_ATTEMPTS,
    };
    if attempt >= max {
        return None;
    }
    let base = interval
        .map(|i| i.every)
        .unwrap_or(Duration::from_millis(DEFAULT_INTERVAL_MS));
    let step = def
        .multiplier
        .as_ref()
        .and_then(Written::get)
        .map(|m| m.times(attempt))
        .unwrap_or(Duration::from_millis(0));
    Some(base.plus(&step))
}

/// An action failed on `attempt`: retry it if a retry definition matches and allows it,
/// otherwise handle the error at the state.
pub fn action_error(cx: &mut Cx, lane: Option<usize>, idx: usize, attempt: u32, error: ErrorInfo) {
    let view = error_view(&run::run_data(cx, lane), &error);
    let retry = cx
        .state()
        .common()
        .retry
        .iter()
        .find(|r| cx.is_true(&r.expression, &view));
    if let Some(wait) = retry.and_then(|r| retry_wait(r, attempt)) {
        if let Some(key) = run::key_of(cx, lane, idx) {
            run::set_slot(
                cx,
                lane,
                idx,
                Slot::RetryWait {
                    attempt: attempt + 1,
                },
            );
            let due = wait.after(cx.now);
            cx.arm(format!("{key}/retry"), due);
            return;
        }
    }
    if lane.is_none() {
        // The state's own run holds the freshest state data.
        cx.inst.data = run::run_data(cx, None);
    }
    state_error(cx, error);
}

/// An error at the state: the first matching `onError` takes its transition (or end) with the
/// error data merged through `errorDataFilter`. An unhandled `TimeoutError` lets the state move
/// on as its timeout would; anything else fails the instance.
pub fn state_error(cx: &mut Cx, error: ErrorInfo) {
    let view = error_view(&cx.inst.data, &error);
    let handler = cx
        .state()
        .common()
        .on_error
        .iter()
        .find(|h| cx.is_true(&h.expression, &view));
    match handler {
        Some(h) => {
            let filter = h
                .error_data_filter
                .as_ref()
                .and_then(|f| f.data_output_path.as_deref())
                .and_then(|p| cx.path(p));
            let mut data = std::mem::take(&mut cx.inst.data);
            data::merge_result(&mut data, view, filter.as_deref());
            flow::leave(cx);
            cx.inst.data = data;
            let outer = std::mem::replace(&mut cx.handling_error, true);
            match (&h.transition, &h.end) {
                (Some(t), _) => flow::take(cx, t),
                (None, Some(e)) => flow::finish(cx, e, cx.inst.data.clone()),
                (None, None) => fail(cx, error),
            }
            cx.handling_error = outer;
        }
        None if error.name == "TimeoutError" => flow::complete(cx),
        None => fail(cx, error),
    }
}

/// Fails the instance with `error`.
pub fn fail(cx: &mut Cx, error: ErrorInfo) {
    flow::leave(cx);
    cx.inst.status = Status::Failed;
    cx.inst.error = Some(error.clone());
    cx.out.push(Action::Fail { error });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(interval: Option<&str>, multiplier: Option<&str>, max: Option<u32>) -> RetryDef {
        RetryDef {
            expression: "{{ $.error }}".into(),
            interval: interval.map(Written::parse),
            multiplier: multiplier.map(Written::parse),
            max_attempts: max.map(crate::model::lenient::Count),
            extra: Default::default(),
        }
    }

    #[test]
    fn spec_multiplier_example_waits_1_3_5_7_minutes() {
        let d = def(Some("R4/PT1M"), Some("PT2M"), Some(4));
        let minutes: Vec<u64> = (0..5)
            .map_while(|a| retry_wait(&d, a))
            .map(|w| (w.after(chrono::DateTime::UNIX_EPOCH).timestamp() / 60) as u64)
            .collect();
        assert_eq!(minutes, vec![1, 3, 5, 7]);
    }

    #[test]
    fn limits() {
        assert!(retry_wait(&def(Some("PT1M"), None, Some(0)), 0).is_none());
        assert!(retry_wait(&def(Some("R2/PT1M"), None, Some(5)), 2).is_none());
        assert!(retry_wait(&def(None, None, None), DEFAULT_MAX_ATTEMPTS - 1).is_some());
        assert!(retry_wait(&def(None, None, None), DEFAULT_MAX_ATTEMPTS).is_none());
    }
}

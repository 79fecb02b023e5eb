//! Data flow rules: deep merge, merging results under a filter, state and event filters.

use crate::expr::Path;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Objects merge key by key, recursively; anything else is replaced.
pub fn deep_merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(existing) => deep_merge(existing, v),
                    None => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

/// Stores `value` under `key` of `data`, making `data` an object if it is not one.
pub fn put(data: &mut Value, key: &str, value: Value) {
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    if let Value::Object(m) = data {
        m.insert(key.to_string(), value);
    }
}

/// Merges a result into state data (docs/semantics.md, "Data flow"):
/// - no filter: an object deep-merges, anything else goes under `result`;
/// - a filter: the selection goes under the path's last member name; `$` deep-merges it all;
///   a filter that selects nothing leaves the data unchanged.
pub fn merge_result(data: &mut Value, result: Value, filter: Option<&Path>) {
    match filter {
        None => match result {
            Value::Object(_) => deep_merge(data, result),
            other => put(data, "result", other),
        },
        Some(path) => {
            if let Ok(selected) = path.select_owned(result) {
                put_selected(data, path, selected);
            }
        }
    }
}

/// Puts what `path` selected into the data: under its last member name, or merged.
fn put_selected(data: &mut Value, path: &Path, selected: Value) {
    match path.last_member() {
        Some(name) => put(data, name, selected),
        None => deep_merge(data, selected),
    }
}

/// Like [`merge_result`] with a filter, tried on the whole event first and on its data when
/// it selects nothing there: `payload`, or the whole event's `data` member when `None` (taken
/// out of it, not copied).
pub fn merge_event(data: &mut Value, whole: Value, payload: Option<Value>, filter: &Path) {
    let selected = filter.select_owned(whole).or_else(|mut whole| {
        let payload =
            payload.unwrap_or_else(|| whole.get_mut("data").map_or(Value::Null, Value::take));
        filter.select_owned(payload)
    });
    if let Ok(selected) = selected {
        put_selected(data, filter, selected);
    }
}

/// `dataInputPath` / `dataOutputPath`: the selection replaces the data; a path that selects
/// nothing leaves it unfiltered.
pub fn filter(data: Value, path: Option<&Path>) -> Value {
    match path {
        Some(p) => p.select_owned(data).unwrap_or_else(|data| data),
        None => data,
    }
}

/// [`filter`] of data the caller keeps: borrowed when the path selects nothing (or there is
/// none), so only a selection is copied.
pub fn filtered<'a>(data: &'a Value, path: Option<&Path>) -> Cow<'a, Value> {
    match path.and_then(|p| p.selection(data)) {
        Some(selected) => Cow::Owned(selected),
        None => Cow::Borrowed(data),
    }
}

/// State data is always an object (SEMANTICS.md "Data flow"): a filter's selection that is not
/// one is stored under the last member name of the selecting path (`$.jobstatus` selecting
/// `"RUNNING"` gives `{"jobstatus": "RUNNING"}`; `$.items[?(@.ok)]` gives `{"items": [...]}`),
/// or under `result` when the path names no member (`$[0]`).
pub fn state_data(selected: Value, path: Option<&Path>) -> Value {
    if selected.is_object() {
        return selected;
    }
    let name = path.and_then(Path::name).unwrap_or("result");
    let mut data = Value::Object(Map::new());
    put(&mut data, name, selected);
    data
}

/// Sets the value at a plain member chain (`$.a.b`), creating objects on the way.
pub fn set_path(data: &mut Value, chain: &[String], value: Value) {
    let Some((last, parents)) = chain.split_last() else {
        *data = value;
        return;
    };
    let mut cur = data;
    for p in parents {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        cur = cur
            .as_object_mut()
            .map(|m| m.entry(p.clone()).or_insert(Value::Null))
            .expect("made an object above");
    }
    put(cur, last, value);
}

/// The value at a plain member chain.
pub fn get_path<'a>(data: &'a Value, chain: &[String]) -> Option<&'a Value> {
    chain.iter().try_fold(data, |cur, k| cur.get(k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Path {
        Path::compile(s).unwrap()
    }

    #[test]
    fn merge_rules() {
        let mut d = json!({"a": {"x": 1}, "k": 1});
        merge_result(&mut d, json!({"a": {"y": 2}, "k": [1]}), None);
        assert_eq!(d, json!({"a": {"x": 1, "y": 2}, "k": [1]}));
        merge_result(&mut d, json!("plain"), None);
        assert_eq!(d["result"], json!("plain"));
        let mut d = json!({});
        merge_result(
            &mut d,
            json!({"greeting": "hi", "x": 1}),
            Some(&p("$.greeting")),
        );
        assert_eq!(d, json!({"greeting": "hi"}));
        merge_result(
            &mut d,
            json!({"data": {"greet": 5}}),
            Some(&p("$.data.greet")),
        );
        assert_eq!(d["greet"], json!(5));
        merge_result(
            &mut d,
            json!({"exceptions": [7, 8]}),
            Some(&p("$.exceptions[0]")),
        );
        assert_eq!(d["exceptions"], json!(7));
        merge_result(&mut d, json!({"z": 1}), Some(&p("$")));
        assert_eq!(d["z"], json!(1));
        merge_result(&mut d, json!({"other": 1}), Some(&p("$.missing")));
        assert!(d.get("missing").is_none());
    }

    #[test]
    fn filters_replace_or_pass() {
        let d = json!({"hello": {"en": "Hello"}});
        assert_eq!(
            filter(d.clone(), Some(&p("$.hello"))),
            json!({"en": "Hello"})
        );
        assert_eq!(filter(d.clone(), Some(&p("$.nothing"))), d);
    }

    #[test]
    fn event_filter_falls_back_to_data() {
        let ev = json!({"id": "1", "source": "s", "data": {"customer": {"n": 1}}});
        for payload in [None, Some(ev["data"].clone())] {
            let mut d = json!({});
            merge_event(&mut d, ev.clone(), payload.clone(), &p("$.customer"));
            assert_eq!(d, json!({"customer": {"n": 1}}));
            let mut d = json!({});
            merge_event(&mut d, ev.clone(), payload, &p("$.source"));
            assert_eq!(d, json!({"source": "s"}));
        }
        // a payload given apart is the one the fallback reads
        let mut d = json!({});
        merge_event(&mut d, ev, Some(json!({"customer": 2})), &p("$.customer"));
        assert_eq!(d, json!({"customer": 2}));
        let mut d = json!({"k": 1});
        merge_event(&mut d, json!({"id": "1"}), None, &p("$.absent"));
        assert_eq!(d, json!({"k": 1}), "selecting nothing changes nothing");
    }

    #[test]
    fn state_data_is_always_an_object() {
        let d = json!({"jobstatus": "RUNNING", "list": [1, 2]});
        let path = p("$.jobstatus");
        let selected = filter(d.clone(), Some(&path));
        assert_eq!(selected, json!("RUNNING"));
        assert_eq!(
            state_data(selected, Some(&path)),
            json!({"jobstatus": "RUNNING"})
        );
        let path = p("$.list[0]");
        assert_eq!(
            state_data(filter(d.clone(), Some(&path)), Some(&path)),
            json!({"list": 1})
        );
        assert_eq!(
            state_data(json!({"a": 1}), Some(&p("$.x"))),
            json!({"a": 1})
        );
    }

    #[test]
    fn set_and_get_paths() {
        let mut d = json!({"a": 1});
        set_path(&mut d, &["r".into(), "x".into()], json!([1]));
        assert_eq!(get_path(&d, &["r".into(), "x".into()]), Some(&json!([1])));
    }
}

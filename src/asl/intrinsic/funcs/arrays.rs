//! The array functions: `States.Array`, `States.ArrayPartition`, `States.ArrayContains`,
//! `States.ArrayRange`, `States.ArrayGetItem`, `States.ArrayLength` and `States.ArrayUnique`.

use super::super::sig::Func;
use super::args::{describe, rounded, whole, Args, Why};
use serde_json::Value;
use std::collections::HashSet;

/// The most elements `States.ArrayRange` may make (AWS: "up to 1000 elements").
pub(crate) const MAX_RANGE: i128 = 1000;

/// `States.Array(v...)`: the values, in order.
pub(super) fn array(args: Args) -> Result<Value, Why> {
    Ok(Value::Array(args.0.to_vec()))
}

/// The chunk size of `States.ArrayPartition`: rounded, at least 1.
fn chunk_size(v: &Value) -> Result<usize, String> {
    let n = rounded(v)?;
    if n < 1 {
        return Err(format!(
            "must be a positive integer (fractions are rounded), but is {}",
            describe(v).trim_start_matches("the number ")
        ));
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// `States.ArrayPartition(array, size)`: the array in chunks of `size`, the last one shorter
/// when the items run out.
pub(super) fn partition(args: Args) -> Result<Value, Why> {
    let items = args.array(0)?;
    let size = args.at(1, chunk_size)?;
    let chunks = items.chunks(size).map(|c| Value::Array(c.to_vec()));
    Ok(Value::Array(chunks.collect()))
}

/// `States.ArrayContains(array, value)`: whether an item equals `value` (JSON equality: the
/// same type and value; objects equal whatever their key order).
pub(super) fn contains(args: Args) -> Result<Value, Why> {
    let items = args.array(0)?;
    let wanted = args.value(1)?;
    Ok(Value::Bool(items.contains(wanted)))
}

/// The step of `States.ArrayRange`: rounded, not zero.
fn step(v: &Value) -> Result<i64, String> {
    match rounded(v)? {
        0 => Err("must not be 0 (fractions are rounded to the nearest integer)".to_string()),
        n => Ok(n),
    }
}

/// `States.ArrayRange(first, last, step)`: `first`, `first + step`, ... up to and including
/// `last` when a step lands on it; at most 1000 elements. A negative step counts down.
pub(super) fn range(args: Args) -> Result<Value, Why> {
    let first = i128::from(args.rounded(0)?);
    let last = i128::from(args.rounded(1)?);
    let step = i128::from(args.at(2, step)?);
    let count = if step > 0 && first <= last {
        (last - first) / step + 1
    } else if step < 0 && first >= last {
        (first - last) / -step + 1
    } else {
        0
    };
    if count > MAX_RANGE {
        return Err(Why::call(format!(
            "the range from {first} to {last} by {step} has {count} elements, more than the \
             limit of {MAX_RANGE}; use a larger step or a shorter range"
        )));
    }
    let items = (0..count).map(|k| {
        let n = first + k * step;
        // between first and last, so it fits in an i64
        Value::from(i64::try_from(n).unwrap_or_default())
    });
    Ok(Value::Array(items.collect()))
}

/// The index of `States.ArrayGetItem`: a whole number, not negative.
fn item_index(v: &Value) -> Result<usize, String> {
    let n = whole(v)?;
    usize::try_from(n).map_err(|_| format!("must not be negative, but is {n}"))
}

/// `States.ArrayGetItem(array, index)`: the item at `index` (from 0).
pub(super) fn get_item(args: Args) -> Result<Value, Why> {
    let items = args.array(0)?;
    let i = args.at(1, item_index)?;
    items.get(i).cloned().ok_or_else(|| {
        let has = match items.len() {
            0 => "the array is empty".to_string(),
            1 => "the array has 1 item (index 0)".to_string(),
            n => format!("the array has {n} items (indexes 0 to {})", n - 1),
        };
        Why::arg(1, format!("is {i}, but {has}"))
    })
}

/// `States.ArrayLength(array)`: the number of items.
pub(super) fn length(args: Args) -> Result<Value, Why> {
    Ok(Value::from(args.array(0)?.len()))
}

/// `States.ArrayUnique(array)`: the items without repeats, each kept where it first appears.
pub(super) fn unique(args: Args) -> Result<Value, Why> {
    let items = args.array(0)?;
    let mut seen = HashSet::with_capacity(items.len());
    let kept = items.iter().filter(|v| {
        let mut key = String::new();
        canonical(v, &mut key);
        seen.insert(key)
    });
    Ok(Value::Array(kept.cloned().collect()))
}

/// A text equal for two values exactly when they are equal JSON (object keys sorted), so
/// duplicates are found in linear time.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(item) = map.get(k) {
                    canonical(item, out);
                }
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Deploy-time checks of one literal argument.
pub(super) fn check_arg(f: Func, index: usize, v: &Value) -> Result<(), String> {
    match (f, index) {
        (Func::ArrayPartition, 1) => chunk_size(v).map(drop),
        (Func::ArrayRange, 0 | 1) => rounded(v).map(drop),
        (Func::ArrayRange, 2) => step(v).map(drop),
        (Func::ArrayGetItem, 1) => item_index(v).map(drop),
        _ => Ok(()),
    }
}

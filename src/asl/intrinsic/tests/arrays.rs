//! The array functions, on AWS's documented examples and AWS's recorded results (LocalStack's
//! snapshot tests, validated against AWS), and their runtime errors.

use super::{fails, run};
use serde_json::json;

#[test]
fn array_collects_its_arguments() {
    // AWS: {"Id": 123456}, States.Array($.Id) -> [123456]
    assert_eq!(
        run("States.Array($.Id)", json!({"Id": 123456})),
        json!([123456])
    );
    assert_eq!(run("States.Array()", json!({})), json!([]));
    assert_eq!(
        run(
            "States.Array('a', 1, -2.5, true, false, null, $.o)",
            json!({"o": {"k": [1]}})
        ),
        json!(["a", 1, -2.5, true, false, null, {"k": [1]}])
    );
}

#[test]
fn array_partition_chunks() {
    // AWS: [1..9] in chunks of 4 -> [[1,2,3,4],[5,6,7,8],[9]]
    let data = json!({"inputArray": [1, 2, 3, 4, 5, 6, 7, 8, 9]});
    assert_eq!(
        run("States.ArrayPartition($.inputArray,4)", data),
        json!([[1, 2, 3, 4], [5, 6, 7, 8], [9]])
    );
    assert_eq!(
        run("States.ArrayPartition($.a, 1)", json!({"a": []})),
        json!([])
    );
    assert_eq!(
        run("States.ArrayPartition($.a, 5)", json!({"a": [0, 1]})),
        json!([[0, 1]])
    );
    // a fraction is rounded (AWS: "round it off to the nearest integer")
    assert_eq!(
        run(
            "States.ArrayPartition($.a, $.n)",
            json!({"a": [0, 1, 2], "n": 1.5})
        ),
        json!([[0, 1], [2]])
    );
}

#[test]
fn array_partition_errors() {
    let cause = fails("States.ArrayPartition($.a, $.n)", json!({"a": [1], "n": 0}));
    assert_eq!(
        cause,
        "States.ArrayPartition: argument 2 (chunk size) must be a positive integer \
         (fractions are rounded), but is 0"
    );
    let cause = fails("States.ArrayPartition($.a, 2)", json!({"a": "abc"}));
    assert_eq!(
        cause,
        "States.ArrayPartition: argument 1 (array) must be an array, but is the string \"abc\""
    );
}

#[test]
fn array_contains_compares_json_values() {
    // AWS: lookingFor 5 in [1..9] -> true
    let data = json!({"inputArray": [1, 2, 3, 4, 5, 6, 7, 8, 9], "lookingFor": 5});
    assert_eq!(
        run("States.ArrayContains($.inputArray, $.lookingFor)", data),
        json!(true)
    );
    // AWS's recorded results: arrays and objects compare by value
    let data =
        json!({"a": [[1, 2, 3], 2, {"1": 2, "2": []}], "x": [1, 2, 3], "o": {"2": [], "1": 2}});
    assert_eq!(
        run("States.ArrayContains($.a, $.x)", data.clone()),
        json!(true)
    );
    assert_eq!(
        run("States.ArrayContains($.a, $.o)", data.clone()),
        json!(true)
    );
    assert_eq!(
        run("States.ArrayContains($.a, null)", data.clone()),
        json!(false)
    );
    assert_eq!(run("States.ArrayContains($.a, '2')", data), json!(false));
    let cause = fails("States.ArrayContains($.a, 1)", json!({"a": {"k": 1}}));
    assert!(cause.starts_with("States.ArrayContains: argument 1 (array) must be an array"));
}

#[test]
fn array_range_counts_inclusively() {
    // AWS: States.ArrayRange(1, 9, 2) -> [1,3,5,7,9]
    assert_eq!(
        run("States.ArrayRange(1, 9, 2)", json!({})),
        json!([1, 3, 5, 7, 9])
    );
    // AWS's recorded results
    assert_eq!(
        run("States.ArrayRange(0, 10, 3)", json!({})),
        json!([0, 3, 6, 9])
    );
    assert_eq!(run("States.ArrayRange(1, 9, 9)", json!({})), json!([1]));
    // counting down, and an empty range
    assert_eq!(
        run("States.ArrayRange(5, 1, -2)", json!({})),
        json!([5, 3, 1])
    );
    assert_eq!(run("States.ArrayRange(5, 1, 2)", json!({})), json!([]));
    // rounded arguments
    assert_eq!(
        run("States.ArrayRange($.a, 3.4, 1)", json!({"a": 0.5})),
        json!([1, 2, 3])
    );
    // 1000 elements is the limit
    let big = run("States.ArrayRange(1, 1000, 1)", json!({}));
    assert_eq!(big.as_array().map(Vec::len), Some(1000));
}

#[test]
fn array_range_errors() {
    let cause = fails("States.ArrayRange(1, $.n, 1)", json!({"n": 1001}));
    assert!(
        cause.starts_with(
            "States.ArrayRange: the range from 1 to 1001 by 1 has 1001 elements, \
                           more than the limit of 1000"
        ),
        "{cause}"
    );
    let cause = fails("States.ArrayRange(1, 5, $.s)", json!({"s": 0.2}));
    assert_eq!(
        cause,
        "States.ArrayRange: argument 3 (step) must not be 0 (fractions are rounded to the \
         nearest integer)"
    );
    let cause = fails("States.ArrayRange($.a, 5, 1)", json!({"a": "1"}));
    assert!(cause.contains("argument 1 (first) must be a number, but is the string \"1\""));
    // huge bounds do not overflow or allocate
    let cause = fails(
        "States.ArrayRange($.a, $.b, 1)",
        json!({"a": i64::MIN, "b": i64::MAX}),
    );
    assert!(cause.contains("more than the limit of 1000"), "{cause}");
}

#[test]
fn array_get_item_by_index() {
    // AWS: index 5 of [1..9] -> 6
    let data = json!({"inputArray": [1, 2, 3, 4, 5, 6, 7, 8, 9], "index": 5});
    assert_eq!(
        run("States.ArrayGetItem($.inputArray, $.index)", data),
        json!(6)
    );
    assert_eq!(
        run("States.ArrayGetItem($.a, 0)", json!({"a": [{"x": 1}]})),
        json!({"x": 1})
    );
}

#[test]
fn array_get_item_errors() {
    let data = json!({"a": [1, 2, 3], "i": 3});
    assert_eq!(
        fails("States.ArrayGetItem($.a, $.i)", data),
        "States.ArrayGetItem: argument 2 (index) is 3, but the array has 3 items (indexes 0 to 2)"
    );
    assert_eq!(
        fails("States.ArrayGetItem($.a, 0)", json!({"a": []})),
        "States.ArrayGetItem: argument 2 (index) is 0, but the array is empty"
    );
    assert_eq!(
        fails("States.ArrayGetItem($.a, $.i)", json!({"a": [1], "i": -1})),
        "States.ArrayGetItem: argument 2 (index) must not be negative, but is -1"
    );
    assert_eq!(
        fails("States.ArrayGetItem($.a, $.i)", json!({"a": [1], "i": 0.5})),
        "States.ArrayGetItem: argument 2 (index) must be an integer, but is 0.5"
    );
}

#[test]
fn array_length_counts() {
    // AWS: [1..9] -> 9
    let data = json!({"inputArray": [1, 2, 3, 4, 5, 6, 7, 8, 9]});
    assert_eq!(run("States.ArrayLength($.inputArray)", data), json!(9));
    assert_eq!(run("States.ArrayLength($.a)", json!({"a": []})), json!(0));
    let cause = fails("States.ArrayLength($.a)", json!({"a": null}));
    assert_eq!(
        cause,
        "States.ArrayLength: argument 1 (array) must be an array, but is null"
    );
}

#[test]
fn array_unique_keeps_first_occurrences_in_order() {
    // AWS: [1,2,3,3,3,3,3,3,4] -> [1,2,3,4]
    let data = json!({"inputArray": [1, 2, 3, 3, 3, 3, 3, 3, 4]});
    assert_eq!(
        run("States.ArrayUnique($.inputArray)", data),
        json!([1, 2, 3, 4])
    );
    let data = json!({"a": [3, null, "x", 1, null, true, [null], 3, {"a": 1, "b": 2},
                            "x", [null], {"b": 2, "a": 1}, {"a": 1, "b": 1}, true, false]});
    assert_eq!(
        run("States.ArrayUnique($.a)", data),
        json!([3, null, "x", 1, true, [null], {"a": 1, "b": 2}, {"a": 1, "b": 1}, false])
    );
}

//! `States.Format`, `States.StringSplit`, `States.StringToJson`, `States.JsonToString` and
//! `States.JsonMerge`, on AWS's documented examples and recorded results.

use super::{fails, run};
use serde_json::json;

#[test]
fn format_fills_placeholders() {
    // AWS: both forms give "Hello, my name is Arnav."
    let data = json!({"name": "Arnav", "template": "Hello, my name is {}."});
    assert_eq!(
        run(
            "States.Format('Hello, my name is {}.', $.name)",
            data.clone()
        ),
        json!("Hello, my name is Arnav.")
    );
    assert_eq!(
        run("States.Format($.template, $.name)", data),
        json!("Hello, my name is Arnav.")
    );
    assert_eq!(
        run("States.Format('no placeholders')", json!({})),
        json!("no placeholders")
    );
}

#[test]
fn format_writes_values_as_step_functions_does() {
    // AWS's recorded results (LocalStack test_format_1/2): strings as they are, scalars as
    // JSON, arrays and objects in Java's notation
    let data = json!({"s": "", "n": null, "i": 1, "f": 1.1, "b": true,
                      "o": {"Arg1": 1, "Arg2": []}, "a": ["x", 2, {"k": "v"}]});
    let expr = "States.Format('[{}|{}|{}|{}|{}|{}|{}]', $.s, $.n, $.i, $.f, $.b, $.o, $.a)";
    assert_eq!(
        run(expr, data),
        json!("[|null|1|1.1|true|{Arg1=1, Arg2=[]}|[x, 2, {k=v}]]")
    );
}

#[test]
fn format_escapes() {
    // `\{` and `\}` are braces, not placeholders; `\'` a quote, `\\` a backslash
    let expr = r"States.Format('\{\} {} \{{}\} it\'s a\\b', 1, 'x')";
    assert_eq!(run(expr, json!({})), json!(r"{} 1 {x} it's a\b"));
    // a template read from the data has no escapes: each `{}` is a placeholder
    let data = json!({"t": "\\{}", "v": 7});
    assert_eq!(run("States.Format($.t, $.v)", data), json!("\\7"));
    // a brace that is not part of `{}` is just a character
    assert_eq!(run("States.Format('{ {} }', 2)", json!({})), json!("{ 2 }"));
}

#[test]
fn format_errors() {
    let cause = fails("States.Format($.t, 1)", json!({"t": "{} and {}"}));
    assert_eq!(
        cause,
        "States.Format: argument 1 (template) has 2 `{}` placeholder(s), but 1 value(s) follow it"
    );
    let cause = fails("States.Format($.t)", json!({"t": 5}));
    assert_eq!(
        cause,
        "States.Format: argument 1 (template) must be a string, but is the number 5"
    );
}

#[test]
fn string_split_on_any_delimiter_character() {
    // AWS's documented examples
    let data = json!({"inputString": "1,2,3,4,5", "splitter": ","});
    assert_eq!(
        run("States.StringSplit($.inputString, $.splitter)", data),
        json!(["1", "2", "3", "4", "5"])
    );
    let data = json!({"inputString": "This.is+a,test=string", "splitter": ".+,="});
    assert_eq!(
        run("States.StringSplit($.inputString, $.splitter)", data),
        json!(["This", "is", "a", "test", "string"])
    );
    // AWS's recorded results: empty pieces are left out
    assert_eq!(
        run("States.StringSplit(', , ,', ',')", json!({})),
        json!([" ", " "])
    );
    assert_eq!(run("States.StringSplit(',,,,', ',')", json!({})), json!([]));
    assert_eq!(
        run(
            "States.StringSplit($.s, $.d)",
            json!({"s": "split on T and \nnew line", "d": "T\n"})
        ),
        json!(["split on ", " and ", "new line"])
    );
    // no delimiters: the text whole
    assert_eq!(
        run("States.StringSplit('a,b', '')", json!({})),
        json!(["a,b"])
    );
    let cause = fails("States.StringSplit($.s, ',')", json!({"s": 12}));
    assert!(cause.starts_with("States.StringSplit: argument 1 (text) must be a string"));
}

#[test]
fn string_to_json_parses() {
    // AWS: "{\"foo\": \"bar\"}" -> {"foo": "bar"}
    let data = json!({"escapedJsonString": "{\"foo\": \"bar\"}"});
    assert_eq!(
        run("States.StringToJson($.escapedJsonString)", data),
        json!({"foo": "bar"})
    );
    // AWS's recorded results
    for (text, value) in [
        ("", json!(null)),
        (" ", json!(null)),
        ("null", json!(null)),
        ("-0", json!(0)),
        ("1.1", json!(1.1)),
        ("\"HelloWorld\"", json!("HelloWorld")),
        ("[1, 2, \"HelloWorld\"]", json!([1, 2, "HelloWorld"])),
    ] {
        assert_eq!(
            run("States.StringToJson($.t)", json!({ "t": text })),
            value,
            "{text:?}"
        );
    }
    assert_eq!(
        run("States.StringToJson('{\"a\": [1]}')", json!({})),
        json!({"a": [1]})
    );
    let cause = fails("States.StringToJson($.t)", json!({"t": "{oops"}));
    assert!(cause.starts_with("States.StringToJson: argument 1 (JSON text) is not JSON text"));
}

#[test]
fn json_to_string_writes_compact_json() {
    // AWS: {"foo": "bar"} -> "{\"foo\":\"bar\"}" (compact, as AWS's recorded results show)
    let data = json!({"unescapedJson": {"foo": "bar"}});
    assert_eq!(
        run("States.JsonToString($.unescapedJson)", data),
        json!("{\"foo\":\"bar\"}")
    );
    let data = json!({"v": {"Arg2": [], "Arg1": 1}, "s": "HelloWorld"});
    assert_eq!(
        run("States.JsonToString($.v)", data.clone()),
        json!("{\"Arg2\":[],\"Arg1\":1}")
    );
    assert_eq!(
        run("States.JsonToString($.s)", data),
        json!("\"HelloWorld\"")
    );
    assert_eq!(run("States.JsonToString(1.1)", json!({})), json!("1.1"));
}

#[test]
fn json_merge_is_shallow() {
    // AWS's documented example
    let data = json!({"json1": {"a": {"a1": 1, "a2": 2}, "b": 2},
                      "json2": {"a": {"a3": 1, "a4": 2}, "c": 3}});
    assert_eq!(
        run("States.JsonMerge($.json1, $.json2, false)", data),
        json!({"a": {"a3": 1, "a4": 2}, "b": 2, "c": 3})
    );
    // the first object's key order is kept, the second's new keys follow
    let data = json!({"x": {"d": 1, "a": 1}, "y": {"z": 2, "d": 2}});
    let merged = run("States.JsonMerge($.x, $.y, false)", data);
    let keys: Vec<&String> = merged
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["d", "a", "z"]);
    assert_eq!(merged["d"], json!(2));
}

#[test]
fn json_merge_errors() {
    let data = json!({"x": {}, "y": [], "deep": true});
    assert_eq!(
        fails("States.JsonMerge($.x, $.y, false)", data.clone()),
        "States.JsonMerge: argument 2 (second object) must be a JSON object, but is an array \
         of 0 items"
    );
    assert_eq!(
        fails("States.JsonMerge($.x, $.x, $.deep)", data),
        "States.JsonMerge: argument 3 (deep) is true, but Step Functions supports only the \
         shallow merge: pass false"
    );
}

//! Deploy-time errors: syntax, names, argument counts and types, literal values.

use super::{fails, rejected};
use crate::asl::intrinsic::{parse, IntrinsicError};
use crate::asl::path::PathError;
use serde_json::json;

#[test]
fn syntax_errors_say_where_and_what() {
    use IntrinsicError::*;
    assert_eq!(
        rejected("$.a"),
        NotACall {
            text: "$.a".to_string()
        }
    );
    assert_eq!(
        rejected("States.Array(1) x"),
        Trailing {
            at: 17,
            text: "x".to_string()
        }
    );
    assert_eq!(
        rejected("States.Array(1, 2"),
        Unclosed {
            function: "States.Array".to_string()
        }
    );
    assert_eq!(
        rejected("States.Array("),
        Unclosed {
            function: "States.Array".to_string()
        }
    );
    assert_eq!(rejected("States.Format('abc)"), UnclosedString { at: 15 });
    assert_eq!(
        rejected(r"States.Format('a\tb')"),
        BadEscape { at: 17, found: 't' }
    );
    let e = rejected("States.Array(1,)");
    assert_eq!(
        e.to_string(),
        "at character 16: argument 2 of States.Array is missing: remove \
                               the extra `,` or write an argument"
    );
    let e = rejected("States.Array(1 2)");
    assert_eq!(
        e.to_string(),
        "at character 16: expected `,` or `)` after argument 1 of \
                               States.Array, found `2`"
    );
    let e = rejected("States.Array(abc)");
    assert!(
        e.to_string()
            .starts_with("at character 14: `abc` is not a value"),
        "{e}"
    );
    let e = rejected("States.Array(#)");
    assert!(
        e.to_string()
            .starts_with("at character 14: `#` cannot start an argument"),
        "{e}"
    );
    let e = rejected("States.Array(01)");
    assert!(e.to_string().contains("\"01\" is not a number"), "{e}");
    let e = rejected("States.UUID");
    assert!(
        e.to_string().contains("expected `(` after States.UUID"),
        "{e}"
    );
}

#[test]
fn unknown_functions_suggest_the_nearest() {
    let e = rejected("States.Formatt('x')");
    assert_eq!(
        e,
        IntrinsicError::UnknownFunction {
            name: "States.Formatt".to_string(),
            suggestion: " (did you mean \"States.Format\"?)".to_string()
        }
    );
    assert!(e
        .to_string()
        .contains("the functions are States.Array, States.ArrayPartition"));
    let e = rejected("States.Array(States.uuid())");
    assert!(
        e.to_string().contains("did you mean \"States.UUID\""),
        "{e}"
    );
}

#[test]
fn argument_counts() {
    let count = |expr: &str| match rejected(expr) {
        IntrinsicError::ArgCount {
            expected, found, ..
        } => (expected, found),
        other => panic!("{expr}: {other}"),
    };
    assert_eq!(count("States.UUID(1)"), ("no arguments".to_string(), 1));
    assert_eq!(
        count("States.ArrayLength()"),
        ("1 argument (array)".to_string(), 0)
    );
    assert_eq!(
        count("States.ArrayPartition($.a)"),
        ("2 arguments (array, chunk size)".to_string(), 1)
    );
    assert_eq!(
        count("States.MathRandom(1)"),
        ("2 to 3 arguments (start, end[, seed])".to_string(), 1)
    );
    assert_eq!(count("States.MathRandom(1, 2, 3, 4)").1, 4);
    assert_eq!(
        count("States.Format()"),
        ("1 or more arguments (template, value, ...)".to_string(), 0)
    );
    assert_eq!(
        rejected("States.JsonMerge($.a, $.b)").to_string(),
        "States.JsonMerge takes 3 arguments (first object, second object, deep), but is given 2"
    );
}

#[test]
fn literal_and_nested_argument_types() {
    let e = rejected("States.ArrayRange('a', 2, 1)");
    assert_eq!(
        e,
        IntrinsicError::ArgType {
            function: "States.ArrayRange",
            index: 1,
            name: "first",
            expected: "a number",
            found: "is the string \"a\"".to_string()
        }
    );
    assert_eq!(
        e.to_string(),
        "States.ArrayRange: argument 1 (first) must be a number, but is the string \"a\""
    );
    assert!(matches!(
        rejected("States.ArrayLength('abc')"),
        IntrinsicError::ArgType { .. }
    ));
    assert!(matches!(
        rejected("States.Format(1)"),
        IntrinsicError::ArgType { .. }
    ));
    assert!(matches!(
        rejected("States.StringSplit(null, ',')"),
        IntrinsicError::ArgType { .. }
    ));
    assert!(matches!(
        rejected("States.JsonMerge($.a, $.b, 'no')"),
        IntrinsicError::ArgType { .. }
    ));
    assert_eq!(
        rejected("States.ArrayLength(States.Format('x'))").to_string(),
        "States.ArrayLength: argument 1 (array) must be an array, but States.Format returns a \
         string"
    );
    // results of unknown type are checked when the call runs
    assert!(parse("States.ArrayLength(States.StringToJson($.s))").is_ok());
    assert!(parse("States.ArrayLength(States.ArrayGetItem($.a, 0))").is_ok());
}

#[test]
fn literal_values_that_can_never_work() {
    let message = |expr: &str| rejected(expr).to_string();
    assert_eq!(
        message("States.ArrayRange(1, 5, 0)"),
        "States.ArrayRange: argument 3 (step) must not be 0 (fractions are rounded to the \
         nearest integer)"
    );
    assert!(message("States.ArrayRange(1, 5, 0.4)").contains("must not be 0"));
    assert!(message("States.ArrayRange(1, 2000, 1)").contains("more than the limit of 1000"));
    assert!(message("States.ArrayPartition($.a, 0)").contains("must be a positive integer"));
    assert!(message("States.ArrayGetItem($.a, -1)").contains("must not be negative"));
    assert!(message("States.ArrayGetItem($.a, 1.5)").contains("must be an integer"));
    assert_eq!(
        message("States.Hash($.d, 'SHA256')"),
        "States.Hash: argument 2 (algorithm) is \"SHA256\", not one of MD5, SHA-1, SHA-256, \
         SHA-384, SHA-512 (did you mean \"SHA-256\"?)"
    );
    assert!(message("States.Hash($.d, 'CRC32')").contains("not one of MD5"));
    assert_eq!(
        message("States.JsonMerge($.a, $.b, true)"),
        "States.JsonMerge: argument 3 (deep) is true, but Step Functions supports only the \
         shallow merge: pass false"
    );
    assert!(message("States.MathAdd($.a, 2147483648)").contains("outside the range"));
    assert!(message("States.MathRandom(5, 1)").contains("must be less than end"));
    assert!(message("States.StringToJson('{')").contains("is not JSON text"));
    assert!(message("States.Base64Decode('***')").contains("is not Base64"));
}

#[test]
fn nested_calls_of_literals_that_always_fail_are_rejected() {
    // the nested call's value is known at deploy time, so the call is run there, and fails
    // with the message a run would give
    let e = rejected("States.ArrayGetItem(States.Array(1,2), 5)");
    assert!(matches!(e, IntrinsicError::BadArg { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        fails("States.ArrayGetItem($.a, 5)", json!({"a": [1, 2]}))
    );
    // however deep, and with a seeded States.MathRandom, whose value is always the same
    let e = rejected(
        "States.Format('{}', States.ArrayGetItem(States.StringSplit(States.Format('{}-{}', 'a', \
         'b'), '-'), States.MathAdd(States.ArrayLength(States.Array(1)), 1)))",
    );
    assert!(
        e.to_string()
            .starts_with("States.ArrayGetItem: argument 2 (index) is 2"),
        "{e}"
    );
    assert!(
        rejected("States.ArrayGetItem(States.Array(1), States.MathRandom(5, 9, 1))")
            .to_string()
            .starts_with("States.ArrayGetItem: argument 2 (index) is ")
    );
    let e = rejected("States.ArrayLength(States.StringToJson('{\"a\": 1}'))");
    assert_eq!(
        e.to_string(),
        fails(
            "States.ArrayLength(States.StringToJson($.s))",
            json!({"s": "{\"a\": 1}"})
        )
    );
    // a path anywhere, or a random value, is known only at run time
    assert!(parse("States.ArrayGetItem(States.Array($.a, 2), 5)").is_ok());
    assert!(parse("States.ArrayGetItem(States.Array(States.UUID()), 0)").is_ok());
    assert!(parse("States.MathAdd(States.MathRandom(1, 3), 2147483647)").is_ok());
    assert!(parse("States.UUID()").is_ok());
    assert!(parse("States.ArrayGetItem(States.Array(1,2), 1)").is_ok());
}

#[test]
fn format_placeholders_must_match_the_values() {
    assert_eq!(
        rejected("States.Format('{} and {}', $.a)"),
        IntrinsicError::Placeholders {
            holes: 2,
            values: 1
        }
    );
    assert_eq!(
        rejected("States.Format('none', $.a)"),
        IntrinsicError::Placeholders {
            holes: 0,
            values: 1
        }
    );
    // escaped braces are not placeholders
    assert!(parse(r"States.Format('\{\} {}', $.a)").is_ok());
    assert_eq!(
        rejected(r"States.Format('\{}', $.a)"),
        IntrinsicError::Placeholders {
            holes: 0,
            values: 1
        }
    );
}

#[test]
fn paths_are_compiled() {
    let e = rejected("States.Array($.a[)");
    assert!(
        matches!(
            &e,
            IntrinsicError::BadPath {
                function: "States.Array",
                index: 1,
                error: PathError::Bad { .. }
            }
        ),
        "{e:?}"
    );
    let call = parse("States.Array($.a[?(@.b == 'x,y')], $, $$.Execution.Id)").unwrap();
    let paths: Vec<&str> = call.paths().iter().map(|p| p.source()).collect();
    assert_eq!(paths, ["$.a[?(@.b == 'x,y')]", "$", "$$.Execution.Id"]);
}

#[test]
fn odd_inputs_do_not_panic() {
    for s in [
        "States.",
        "States.(",
        "States.Array(",
        "States.Array(')",
        "States.Array($",
        "States.Array($[",
        "States.Array('\\",
        "States.Format('{')",
        "States.Format('}{')",
        "States.Array(-)",
        "States.Array(1e)",
        "States.Array(\u{0}é)",
        "States.Format('é{}é', 'ü')",
        " States.Array()(",
        "States.Array($.a\"",
        "States.Array($.a'b)",
        "States.ArrayRange(1e308, -1e308, 1)",
    ] {
        let _ = parse(s);
    }
    assert_eq!(
        parse("States.Format('é{}é', 'ü')").map(|c| c.name().to_string()),
        Ok("States.Format".to_string())
    );
}

//! `States.MathRandom`, `States.MathAdd` and `States.UUID`, and their determinism.

use super::{fails, run, run_with};
use crate::asl::intrinsic::Dice;
use serde_json::{json, Value};

#[test]
fn math_add_sums_rounded_integers() {
    // AWS: 111 + -1 -> 110
    let data = json!({"value1": 111, "step": -1});
    assert_eq!(run("States.MathAdd($.value1, $.step)", data), json!(110));
    // AWS's recorded results: each argument rounded half up first
    for (a, b, sum) in [
        (1.49, 1.5, 3),
        (1.5, 1.51, 4),
        (-1.49, -1.5, -2),
        (-1.5, -1.51, -3),
        (-0.5, 0.5, 1),
        (-2.5, 0.0, -2),
    ] {
        let data = json!({"a": a, "b": b});
        assert_eq!(
            run("States.MathAdd($.a, $.b)", data),
            json!(sum),
            "{a} + {b}"
        );
    }
    assert_eq!(
        run("States.MathAdd(2147483647, 2147483647)", json!({})),
        json!(4_294_967_294_i64)
    );
}

#[test]
fn math_add_errors() {
    let cause = fails("States.MathAdd($.a, 1)", json!({"a": 2_147_483_648_i64}));
    assert_eq!(
        cause,
        "States.MathAdd: argument 1 (first number) is 2147483648, outside the range \
         -2147483648 to 2147483647"
    );
    let cause = fails("States.MathAdd(1, $.b)", json!({"b": "2"}));
    assert_eq!(
        cause,
        "States.MathAdd: argument 2 (second number) must be a number, but is the string \"2\""
    );
}

#[test]
fn math_random_is_at_least_start_and_below_end() {
    // AWS: start inclusive, end exclusive
    let mut dice = Dice::new("math-random");
    let mut seen = [false; 3];
    for _ in 0..200 {
        let v = run_with("States.MathRandom(1, 4)", &json!({}), &mut dice).unwrap();
        let n = v.as_i64().unwrap();
        assert!((1..4).contains(&n), "{n}");
        seen[(n - 1) as usize] = true;
    }
    assert_eq!(seen, [true; 3]);
    // one possible value
    assert_eq!(run("States.MathRandom(-5, -4)", json!({})), json!(-5));
    // rounded bounds: 0.6 -> 1, 2.4 -> 2
    assert_eq!(
        run("States.MathRandom($.a, $.b)", json!({"a": 0.6, "b": 2.4})),
        json!(1)
    );
    // the whole i64 range does not overflow
    let data = json!({"a": i64::MIN, "b": i64::MAX});
    assert!(run("States.MathRandom($.a, $.b)", data).is_i64());
}

#[test]
fn math_random_with_a_seed_depends_on_the_seed_alone() {
    let draw = |seed: i64, dice: &str| -> Value {
        run_with(
            "States.MathRandom(0, 1000000, $.s)",
            &json!({"s": seed}),
            &mut Dice::new(dice),
        )
        .unwrap()
    };
    assert_eq!(draw(3, "one"), draw(3, "two"));
    let draws: Vec<Value> = (0..5).map(|s| draw(s, "one")).collect();
    assert!(
        draws.windows(2).any(|w| w[0] != w[1]),
        "seeds give different numbers: {draws:?}"
    );
    // without a seed the dice decide
    let free = |dice: &str| {
        run_with(
            "States.MathRandom(0, 1000000)",
            &json!({}),
            &mut Dice::new(dice),
        )
        .unwrap()
    };
    assert_eq!(free("a"), free("a"));
    assert_ne!(free("a"), free("b"));
}

#[test]
fn math_random_errors() {
    let cause = fails("States.MathRandom($.a, 5)", json!({"a": 5}));
    assert_eq!(
        cause,
        "States.MathRandom: start (5) must be less than end (5): the result is at least start \
         and less than end"
    );
    let cause = fails("States.MathRandom(1, 5, $.s)", json!({"s": "x"}));
    assert!(cause.starts_with("States.MathRandom: argument 3 (seed) must be a number"));
}

#[test]
fn uuid_is_v4_and_replays() {
    let uuid = |seed: &str| {
        let v = run_with("States.UUID()", &json!({}), &mut Dice::new(seed)).unwrap();
        v.as_str().unwrap().to_string()
    };
    let a = uuid("instance-1/visit-2/field");
    assert_eq!(a.len(), 36);
    let parsed = uuid::Uuid::parse_str(&a).unwrap();
    assert_eq!(parsed.get_version_num(), 4);
    assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
    assert_eq!(a, a.to_lowercase());
    assert_eq!(uuid("instance-1/visit-2/field"), a);
    assert_ne!(uuid("instance-1/visit-3/field"), a);
    // two UUIDs in one field differ
    let pair = run_with(
        "States.Array(States.UUID(), States.UUID())",
        &json!({}),
        &mut Dice::new("p"),
    )
    .unwrap();
    assert_ne!(pair[0], pair[1]);
}

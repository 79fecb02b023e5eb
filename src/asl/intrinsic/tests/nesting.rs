//! Calls as arguments of calls, blanks, and `$$` paths.

use super::{fails, rejected, run};
use crate::asl::intrinsic::IntrinsicError;
use serde_json::json;

#[test]
fn nested_calls_evaluate_inside_out() {
    assert_eq!(
        run(
            "States.Format('{}', States.ArrayLength(States.Array(1,2)))",
            json!({})
        ),
        json!("2")
    );
    // AWS's recorded nested calls, on the context object
    assert_eq!(
        run(
            "States.ArrayGetItem(States.StringSplit($$.StateMachine.Name, '-'), 0)",
            json!({})
        ),
        json!("orders")
    );
    let last = "States.ArrayGetItem(States.StringSplit($$.StateMachine.Name, '-'), \
                States.MathAdd(States.ArrayLength(States.StringSplit($$.StateMachine.Name, '-')), -1))";
    assert_eq!(run(last, json!({})), json!("prod"));
}

#[test]
fn awss_nine_call_example() {
    // AWS's example of nine nested calls
    let expr = "States.Format('{}.{}.{}', States.ArrayGetItem(States.StringSplit(\
                States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 0), \
                States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit(\
                $.ImageRecipe.Arn, '/'), 2), '.'), 1))";
    let data = json!({"ImageRecipe": {"Arn": "arn:aws:imagebuilder:r:1:image-recipe/x/1.2.3"}});
    // the third `{}` has no value: AWS's own example would fail; with two placeholders it works
    assert_eq!(
        rejected(expr),
        IntrinsicError::Placeholders {
            holes: 3,
            values: 2
        }
    );
    let fixed = expr.replacen("'{}.{}.{}'", "'{}.{}'", 1);
    assert_eq!(run(&fixed, data), json!("1.2"));
}

#[test]
fn blanks_around_arguments_are_allowed() {
    let expr = "  States.Format(\n  'x={} y={}' ,\t$.x ,  States.MathAdd( 1 , 2 )  )  ";
    assert_eq!(run(expr, json!({"x": "a"})), json!("x=a y=3"));
}

#[test]
fn a_nested_failure_names_the_inner_function() {
    let cause = fails(
        "States.Format('{}', States.ArrayGetItem($.a, 5))",
        json!({"a": [1]}),
    );
    assert!(
        cause.starts_with("States.ArrayGetItem: argument 2 (index) is 5"),
        "{cause}"
    );
}

#[test]
fn nesting_is_limited_to_ten_calls() {
    let nest = |n: usize| format!("{}1{}", "States.Array(".repeat(n), ")".repeat(n));
    let ten = run(&nest(10), json!({}));
    assert_eq!(ten, json!([[[[[[[[[[1]]]]]]]]]]));
    assert_eq!(
        rejected(&nest(11)),
        IntrinsicError::TooDeep { at: 131, limit: 10 }
    );
    // very deep input is refused without deep recursion
    assert!(matches!(
        rejected(&nest(100_000)),
        IntrinsicError::TooDeep { .. }
    ));
}

#[test]
fn variable_paths_are_handed_to_the_caller() {
    let call = crate::asl::intrinsic::parse("States.Format('{}-{}', $order.id, $)").unwrap();
    let sources: Vec<&str> = call.paths().iter().map(|p| p.source()).collect();
    assert_eq!(sources, ["$order.id", "$"]);
    // the caller decides what each path reads
    let mut select = |p: &crate::asl::path::Path| Ok(json!(p.source().len()));
    let mut dice = crate::asl::intrinsic::Dice::new("v");
    assert_eq!(call.eval(&mut select, &mut dice), Ok(json!("9-1")));
}

//! Numbers and identifiers: `States.MathRandom`, `States.MathAdd` and `States.UUID`. Their
//! randomness comes from the caller's [`Dice`], or from the seed argument alone.

use super::super::dice::Dice;
use super::super::sig::Func;
use super::args::{rounded, Args, Why};
use serde_json::Value;

/// An argument of `States.MathAdd`: rounded, and within a 32-bit integer as AWS requires
/// ("integer values in the range of -2147483648 and 2147483647").
fn int32(v: &Value) -> Result<i64, String> {
    let n = rounded(v)?;
    if i32::try_from(n).is_err() {
        return Err(format!(
            "is {n}, outside the range -2147483648 to 2147483647"
        ));
    }
    Ok(n)
}

/// `States.MathAdd(a, b)`: the sum, each argument rounded to the nearest integer first.
pub(super) fn math_add(args: Args) -> Result<Value, Why> {
    let a = args.at(0, int32)?;
    let b = args.at(1, int32)?;
    Ok(Value::from(a + b))
}

/// `States.MathRandom(start, end[, seed])`: an integer at least `start` and less than `end`
/// (AWS: "start number (inclusive) and end number (exclusive)"). With a seed the result
/// depends on the seed alone, so the same seed gives the same number.
pub(super) fn math_random(args: Args, dice: &mut Dice) -> Result<Value, Why> {
    let start = args.rounded(0)?;
    let end = args.rounded(1)?;
    let seed = match args.0.get(2) {
        Some(_) => Some(args.rounded(2)?),
        None => None,
    };
    if start >= end {
        return Err(Why::call(format!(
            "start ({start}) must be less than end ({end}): the result is at least start and \
             less than end"
        )));
    }
    let span = i128::from(end) - i128::from(start);
    let span = u64::try_from(span).unwrap_or(u64::MAX);
    let offset = match seed {
        Some(seed) => Dice::new(&format!("States.MathRandom seed {seed}")).below(span),
        None => dice.below(span),
    };
    let n = i128::from(start) + i128::from(offset);
    // start <= n < end, so it fits in an i64
    Ok(Value::from(i64::try_from(n).unwrap_or(start)))
}

/// `States.UUID()`: a version 4 UUID, its random bits drawn from the dice.
pub(super) fn uuid(dice: &mut Dice) -> Result<Value, Why> {
    let id = uuid::Builder::from_random_bytes(dice.bytes16()).into_uuid();
    Ok(Value::String(id.hyphenated().to_string()))
}

/// Deploy-time checks of one literal argument.
pub(super) fn check_arg(f: Func, index: usize, v: &Value) -> Result<(), String> {
    match (f, index) {
        (Func::MathAdd, _) => int32(v).map(drop),
        (Func::MathRandom, _) => rounded(v).map(drop),
        _ => Ok(()),
    }
}

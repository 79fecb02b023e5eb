//! What the functions share: reading an argument as the type it must have, rounding numbers
//! the way Step Functions does, describing a value in a message, and [`Why`], the error a
//! function gives (a runtime `States.IntrinsicFailure`, or a deploy-time error when the
//! arguments are literals).

use super::super::error::{IntrinsicError, INTRINSIC_FAILURE};
use super::super::sig::Func;
use crate::asl::failure::Failure;
use serde_json::{Map, Value};

/// Why a function cannot give a result: about one argument (0-based `index`) or the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Why {
    pub index: Option<usize>,
    pub message: String,
}

impl Why {
    /// About the argument at `index` (0-based); `message` follows "argument N (name) ".
    pub fn arg(index: usize, message: impl Into<String>) -> Why {
        Why {
            index: Some(index),
            message: message.into(),
        }
    }

    /// About the call as a whole.
    pub fn call(message: impl Into<String>) -> Why {
        Why {
            index: None,
            message: message.into(),
        }
    }

    fn param(f: Func, index: usize) -> &'static str {
        f.sig().param(index).map_or("value", |p| p.0)
    }

    /// The runtime error: `States.IntrinsicFailure` with "<function>: <what is wrong>".
    pub fn failure(&self, f: Func) -> Failure {
        let cause = match self.index {
            Some(i) => format!(
                "{}: argument {} ({}) {}",
                f.name(),
                i + 1,
                Why::param(f, i),
                self.message
            ),
            None => format!("{}: {}", f.name(), self.message),
        };
        Failure::new(INTRINSIC_FAILURE, cause)
    }

    /// The same problem found at deploy time (the arguments were literals).
    pub fn deploy(&self, f: Func) -> IntrinsicError {
        match self.index {
            Some(i) => IntrinsicError::BadArg {
                function: f.name(),
                index: i + 1,
                name: Why::param(f, i),
                message: self.message.clone(),
            },
            None => IntrinsicError::Invalid {
                function: f.name(),
                message: self.message.clone(),
            },
        }
    }
}

/// A value in a message: "the string \"abc\"", "the number 5", "an array of 3 items".
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => {
            let mut short: String = s.chars().take(40).collect();
            if short.len() < s.len() {
                short.push_str("...");
            }
            format!("the string {short:?}")
        }
        Value::Array(a) if a.len() == 1 => "an array of 1 item".to_string(),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(_) => "a JSON object".to_string(),
    }
}

/// `v` as a string.
pub(crate) fn string(v: &Value) -> Result<&str, String> {
    v.as_str()
        .ok_or_else(|| format!("must be a string, but is {}", describe(v)))
}

/// `v` as an array.
pub(crate) fn array(v: &Value) -> Result<&Vec<Value>, String> {
    v.as_array()
        .ok_or_else(|| format!("must be an array, but is {}", describe(v)))
}

/// `v` as a JSON object.
pub(crate) fn object(v: &Value) -> Result<&Map<String, Value>, String> {
    v.as_object()
        .ok_or_else(|| format!("must be a JSON object, but is {}", describe(v)))
}

/// Rounds half up, like Java's `Math.round` (which Step Functions uses: AWS rounds
/// non-integer arguments "to the nearest integer", and -1.5 gives -1, 2.5 gives 3).
pub(crate) fn java_round(x: f64) -> f64 {
    let floor = x.floor();
    if x - floor >= 0.5 {
        floor + 1.0
    } else {
        floor
    }
}

/// A float that is a whole number, as an `i64`, if it fits.
fn to_i64(x: f64) -> Option<i64> {
    // 2^63 is exactly representable; every whole f64 below it fits in an i64.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (x.is_finite() && x.fract() == 0.0 && (-LIMIT..LIMIT).contains(&x)).then_some(x as i64)
}

/// `v` as an integer, a non-integer rounded to the nearest one (as AWS documents for the
/// arguments of `States.ArrayPartition`, `States.ArrayRange`, `States.MathRandom` and
/// `States.MathAdd`).
pub(crate) fn rounded(v: &Value) -> Result<i64, String> {
    let Value::Number(n) = v else {
        return Err(format!("must be a number, but is {}", describe(v)));
    };
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    n.as_f64()
        .and_then(|x| to_i64(java_round(x)))
        .ok_or_else(|| format!("is {n}, too large for an integer"))
}

/// `v` as an integer, not rounded: a fraction is refused.
pub(crate) fn whole(v: &Value) -> Result<i64, String> {
    let Value::Number(n) = v else {
        return Err(format!("must be an integer, but is {}", describe(v)));
    };
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    match n.as_f64() {
        Some(x) if x.fract() != 0.0 => Err(format!("must be an integer, but is {n}")),
        Some(x) => to_i64(x).ok_or_else(|| format!("is {n}, too large for an integer")),
        None => Err(format!("is {n}, too large for an integer")),
    }
}

/// A call's evaluated arguments, read by position; each reader names the argument that is
/// wrong.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Args<'a>(pub &'a [Value]);

impl<'a> Args<'a> {
    /// The argument at `index` (the parser guarantees the count; this never panics anyway).
    pub fn value(&self, index: usize) -> Result<&'a Value, Why> {
        self.0
            .get(index)
            .ok_or_else(|| Why::arg(index, "is missing"))
    }

    /// The argument at `index`, read by `read`; its message names the argument.
    pub fn at<T>(
        &self,
        index: usize,
        read: impl FnOnce(&'a Value) -> Result<T, String>,
    ) -> Result<T, Why> {
        read(self.value(index)?).map_err(|m| Why::arg(index, m))
    }

    pub fn string(&self, index: usize) -> Result<&'a str, Why> {
        self.at(index, string)
    }

    pub fn array(&self, index: usize) -> Result<&'a Vec<Value>, Why> {
        self.at(index, array)
    }

    pub fn object(&self, index: usize) -> Result<&'a Map<String, Value>, Why> {
        self.at(index, object)
    }

    pub fn rounded(&self, index: usize) -> Result<i64, Why> {
        self.at(index, rounded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rounds_half_up_like_java() {
        // AWS's recorded results for States.MathAdd (LocalStack's snapshot tests, validated
        // against AWS): 1.5 -> 2, 2.5 -> 3, -0.5 -> 0, -1.5 -> -1, -2.5 -> -2, 1.49 -> 1.
        for (x, r) in [
            (1.5, 2.0),
            (2.5, 3.0),
            (-0.5, 0.0),
            (-1.5, -1.0),
            (-2.5, -2.0),
            (1.49, 1.0),
            (-1.51, -2.0),
            (0.499_999_999_999_999_94, 0.0),
        ] {
            assert_eq!(java_round(x), r, "round({x})");
        }
    }

    #[test]
    fn integers_from_json() {
        assert_eq!(rounded(&json!(3)), Ok(3));
        assert_eq!(rounded(&json!(2.5)), Ok(3));
        assert!(rounded(&json!(1e300)).unwrap_err().contains("too large"));
        assert!(rounded(&json!(u64::MAX)).unwrap_err().contains("too large"));
        assert!(rounded(&json!("3"))
            .unwrap_err()
            .contains("must be a number"));
        assert_eq!(whole(&json!(4.0)), Ok(4));
        assert!(whole(&json!(4.5))
            .unwrap_err()
            .contains("must be an integer"));
    }

    #[test]
    fn describes_values_briefly() {
        assert_eq!(describe(&json!("abc")), "the string \"abc\"");
        assert_eq!(describe(&json!([1])), "an array of 1 item");
        assert_eq!(describe(&json!({"a": 1})), "a JSON object");
        let long = "é".repeat(100);
        assert!(describe(&json!(long)).ends_with("...\""));
    }
}

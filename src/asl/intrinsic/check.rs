//! Deploy-time checks of one parsed call: the number of arguments, the type of each literal
//! argument and of each nested call's result, the values of literal arguments (a chunk size
//! of 0, an unknown hash algorithm, a deep merge...), `States.Format`'s placeholders against
//! its values, and, when every argument is known (a literal, or a nested call of known
//! arguments whose result is not random), the call itself run once.

use super::call::{Arg, Call};
use super::dice::Dice;
use super::error::IntrinsicError;
use super::funcs::{self, args::describe};
use super::sig::{Func, Ty};
use serde_json::Value;

/// Checks `call` (its nested calls were checked when they were read).
pub(crate) fn call(call: &Call) -> Result<(), IntrinsicError> {
    let f = call.func;
    let sig = f.sig();
    let n = call.args.len();
    if n < sig.min() || sig.max().is_some_and(|max| n > max) {
        return Err(IntrinsicError::ArgCount {
            function: f.name(),
            expected: sig.arity(),
            found: n,
        });
    }
    for (i, arg) in call.args.iter().enumerate() {
        let Some((name, want)) = sig.param(i) else {
            continue;
        };
        let wrong_type = |found: String| IntrinsicError::ArgType {
            function: f.name(),
            index: i + 1,
            name,
            expected: want.words(),
            found,
        };
        match arg {
            Arg::Literal(v) => {
                if !want.accepts(Ty::of(v)) {
                    return Err(wrong_type(format!("is {}", describe(v))));
                }
                funcs::check_arg(f, i, v).map_err(|message| IntrinsicError::BadArg {
                    function: f.name(),
                    index: i + 1,
                    name,
                    message,
                })?;
            }
            Arg::Call(inner) => {
                let gives = inner.func.sig().returns;
                if !want.accepts(gives) {
                    return Err(wrong_type(format!(
                        "{} returns {}",
                        inner.name(),
                        gives.words()
                    )));
                }
            }
            Arg::Path(_) => {}
        }
    }
    if let Some(t) = &call.template {
        if t.holes() != n.saturating_sub(1) {
            return Err(IntrinsicError::Placeholders {
                holes: t.holes(),
                values: n.saturating_sub(1),
            });
        }
    }
    // Every argument known: run it once, so what would fail at every run fails now, with the
    // message the run would give. Pure, and cheap (results are bounded: ArrayRange makes at
    // most 1000 items).
    let known: Option<Vec<Value>> = call.args.iter().map(known).collect();
    if let Some(values) = known {
        let mut dice = Dice::new("deploy-time check");
        funcs::run(f, &values, call.template.as_ref(), &mut dice).map_err(|why| why.deploy(f))?;
    }
    Ok(())
}

/// The value `arg` has at every run, if it is known at deploy time: a literal, or a nested
/// call whose arguments are all known and whose result does not depend on the dice
/// (`States.UUID()` and `States.MathRandom` without a seed differ at every run, so a call
/// taking their result is left to run time).
fn known(arg: &Arg) -> Option<Value> {
    match arg {
        Arg::Literal(v) => Some(v.clone()),
        Arg::Path(_) => None,
        Arg::Call(inner) => {
            let random = match inner.func {
                Func::Uuid => true,
                Func::MathRandom => inner.args.len() < 3,
                _ => false,
            };
            if random {
                return None;
            }
            let values: Vec<Value> = inner.args.iter().map(known).collect::<Option<_>>()?;
            // The nested call was checked when it was read: had it failed on these values,
            // the parse would have stopped there.
            let mut dice = Dice::new("deploy-time check");
            funcs::run(inner.func, &values, inner.template.as_ref(), &mut dice).ok()
        }
    }
}

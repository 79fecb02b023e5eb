//! Intrinsic functions: the `States.Format('Hello {}', $.name)` calls a `.$` field of
//! `Parameters`, `ResultSelector` (and the other fields AWS lists) may hold instead of a path.
//! AWS documents the eighteen functions in "Intrinsic functions for JSONPath states in Step
//! Functions"; this module follows that page, and AWS's recorded results where the page is
//! silent (see each function's notes).
//!
//! - [`parse`] reads a call and checks it as a deploy would: the function's name (with a
//!   suggestion when it is misspelled), the number of arguments, the type of each literal
//!   argument and nested call, values that can never work (a chunk size of 0, an unknown hash
//!   algorithm), and a `States.Format` template's `{}` against its values.
//! - [`Call::eval`] runs it. The caller resolves path arguments; randomness (`States.UUID`,
//!   `States.MathRandom` without a seed) comes from a [`Dice`] the caller seeds, so a replay
//!   gives the same values. Nothing here does I/O or reads a clock.
//! - A call that fails at runtime raises `States.IntrinsicFailure`, its cause naming the
//!   function and the argument: "States.ArrayGetItem: argument 2 (index) is 9, but the array
//!   has 3 items (indexes 0 to 2)".
//!
//! Files, each importing only those after it in this list (`mod.rs` declares and re-exports
//! them; of the files here only `tests`, which go through the public API, import it): `parse` (the grammar; it checks each call as it reads it),
//! `lex` (tokens), `check` (deploy checks), `call` ([`Call`], [`Arg`] and [`Call::eval`]),
//! `funcs` (the implementations), `dice` (entropy), `error` ([`IntrinsicError`] and the
//! constants [`INTRINSIC_FAILURE`] and [`MAX_NESTING`]) and `sig` (the functions'
//! signatures).

mod call;
mod check;
mod dice;
mod error;
mod funcs;
mod lex;
mod parse;
mod sig;
#[cfg(test)]
mod tests;

pub use call::{Arg, Call};
pub use dice::Dice;
pub use error::{IntrinsicError, INTRINSIC_FAILURE, MAX_NESTING};

use crate::asl::failure::Failure;
use serde_json::Value;
use sig::Func;

/// Whether a `.$` field's string is an intrinsic call (it starts with `States.` after leading
/// whitespace) rather than a path.
pub fn is_call(s: &str) -> bool {
    s.trim_start().starts_with("States.")
}

/// Parses a call and checks it as a deploy does (see the module's documentation).
pub fn parse(s: &str) -> Result<Call, IntrinsicError> {
    parse::call(s)
}

/// Runs the function named `name` (e.g. `States.Hash`) on arguments already evaluated: the
/// JSONata functions AWS defines as these (`$hash`, `$partition`, ...). `None`: no such
/// function.
pub fn run_named(name: &str, values: &[Value], dice: &mut Dice) -> Option<Result<Value, Failure>> {
    let f = Func::from_name(name)?;
    Some(funcs::run(f, values, None, dice).map_err(|why| why.failure(f)))
}

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
//! Files: `lex` (tokens), `parse` (grammar), `check` (deploy checks), `sig` (the functions'
//! signatures), `funcs` (the implementations), `dice` (entropy) and `error`.

mod check;
mod dice;
mod error;
mod funcs;
mod lex;
mod parse;
mod sig;
#[cfg(test)]
mod tests;

pub use dice::Dice;
pub use error::IntrinsicError;

use crate::asl::failure::Failure;
use crate::asl::path::Path;
use funcs::Template;
use serde_json::Value;
use sig::Func;

/// The error a call raises when it fails at runtime.
pub const INTRINSIC_FAILURE: &str = "States.IntrinsicFailure";

/// How deep calls may nest: AWS allows "up to 10 intrinsic functions within a field".
pub const MAX_NESTING: usize = 10;

/// A parsed, validated call such as `States.Format('Hello {}', $.name)`.
#[derive(Debug, Clone)]
pub struct Call {
    func: Func,
    args: Vec<Arg>,
    /// `States.Format`'s template, when it is written in the call (its `\{` and `\}` are
    /// braces, not placeholders).
    template: Option<Template>,
}

/// An argument of a call.
#[derive(Debug, Clone)]
pub enum Arg {
    /// A string, number, `true`, `false` or `null` written in the call.
    Literal(Value),
    /// A path (`$.a`, `$$.Execution.Id`, `$`, `$var`), resolved by the caller.
    Path(Path),
    /// A nested call.
    Call(Box<Call>),
}

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

impl Call {
    /// Evaluates the call: its arguments left to right (nested calls first), then the
    /// function. `select` resolves a path argument (the caller decides what `$`, `$$` and
    /// `$var` read and what error a path that selects nothing raises); `dice` gives
    /// `States.UUID`'s and an unseeded `States.MathRandom`'s randomness.
    pub fn eval(
        &self,
        select: &mut dyn FnMut(&Path) -> Result<Value, Failure>,
        dice: &mut Dice,
    ) -> Result<Value, Failure> {
        let mut values = Vec::with_capacity(self.args.len());
        for arg in &self.args {
            values.push(match arg {
                Arg::Literal(v) => v.clone(),
                Arg::Path(p) => select(p)?,
                Arg::Call(c) => c.eval(select, dice)?,
            });
        }
        funcs::run(self.func, &values, self.template.as_ref(), dice)
            .map_err(|why| why.failure(self.func))
    }

    /// Every path argument, nested calls' included, in the order they are written.
    pub fn paths(&self) -> Vec<&Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut out);
        out
    }

    fn collect_paths<'a>(&'a self, out: &mut Vec<&'a Path>) {
        for arg in &self.args {
            match arg {
                Arg::Path(p) => out.push(p),
                Arg::Call(c) => c.collect_paths(out),
                Arg::Literal(_) => {}
            }
        }
    }

    /// The function's name, e.g. `States.Format`.
    pub fn name(&self) -> &str {
        self.func.name()
    }

    /// The arguments, as written.
    pub fn args(&self) -> &[Arg] {
        &self.args
    }
}

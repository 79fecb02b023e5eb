//! A parsed call ([`Call`]) and its arguments ([`Arg`]), and running it: arguments left to
//! right, nested calls first, then the function.

use super::dice::Dice;
use super::funcs::{self, Template};
use super::sig::Func;
use crate::asl::failure::Failure;
use crate::asl::path::Path;
use serde_json::Value;

/// A parsed, validated call such as `States.Format('Hello {}', $.name)`.
#[derive(Debug, Clone)]
pub struct Call {
    pub(super) func: Func,
    pub(super) args: Vec<Arg>,
    /// `States.Format`'s template, when it is written in the call (its `\{` and `\}` are
    /// braces, not placeholders).
    pub(super) template: Option<Template>,
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

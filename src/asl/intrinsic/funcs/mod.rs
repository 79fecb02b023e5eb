//! The functions' implementations, grouped by what they work on, and the dispatch from a
//! [`Func`] to its implementation. Each takes its evaluated arguments and gives a value or a
//! [`Why`]; the same code checks literal arguments at deploy time, so a deploy error and the
//! runtime failure it prevents say the same thing.

pub(crate) mod args;
mod arrays;
mod encode;
mod math;
mod text;

pub(crate) use args::Why;
pub(crate) use text::Template;

use super::dice::Dice;
use super::sig::Func;
use args::Args;
use serde_json::Value;

/// Runs `f` on its evaluated arguments. `template` is `States.Format`'s template when it was
/// a literal; `dice` gives the randomness of `States.UUID` and an unseeded
/// `States.MathRandom`.
pub(crate) fn run(
    f: Func,
    values: &[Value],
    template: Option<&Template>,
    dice: &mut Dice,
) -> Result<Value, Why> {
    let args = Args(values);
    match f {
        Func::Format => text::format(args, template),
        Func::StringToJson => text::string_to_json(args),
        Func::JsonToString => text::json_to_string(args),
        Func::JsonMerge => text::json_merge(args),
        Func::StringSplit => text::string_split(args),
        Func::Array => arrays::array(args),
        Func::ArrayPartition => arrays::partition(args),
        Func::ArrayContains => arrays::contains(args),
        Func::ArrayRange => arrays::range(args),
        Func::ArrayGetItem => arrays::get_item(args),
        Func::ArrayLength => arrays::length(args),
        Func::ArrayUnique => arrays::unique(args),
        Func::Base64Encode => encode::base64_encode(args),
        Func::Base64Decode => encode::base64_decode(args),
        Func::Hash => encode::hash(args),
        Func::MathRandom => math::math_random(args, dice),
        Func::MathAdd => math::math_add(args),
        Func::Uuid => math::uuid(dice),
    }
}

/// Checks a literal argument's value (its type is already right) at deploy time: the message
/// follows "argument N (name) ".
pub(crate) fn check_arg(f: Func, index: usize, v: &Value) -> Result<(), String> {
    arrays::check_arg(f, index, v)?;
    text::check_arg(f, index, v)?;
    encode::check_arg(f, index, v)?;
    math::check_arg(f, index, v)
}

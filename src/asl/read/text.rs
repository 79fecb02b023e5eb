//! A Fail state's `Error` and `Cause`: a string, or made when the state runs from
//! `ErrorPath`/`CausePath` (a path or an intrinsic function that makes a string) or, in a
//! JSONata state, from an expression.

use super::super::model::*;
use super::super::out::{member, Out};
use super::fields::{self, dynamic, string, Given};
use serde_json::{Map, Value};

/// The intrinsic functions a Fail state's `ErrorPath` and `CausePath` may call (they make a
/// string).
const TEXT_CALLS: [&str; 7] = [
    "States.Format",
    "States.JsonToString",
    "States.ArrayGetItem",
    "States.Base64Encode",
    "States.Base64Decode",
    "States.Hash",
    "States.UUID",
];

/// A Fail state's `k` (`Error` or `Cause`): the string, or `{k}Path`'s path or intrinsic.
pub(super) fn text(
    o: &Map<String, Value>,
    k: &str,
    at: &str,
    lang: Lang,
    out: &mut Out,
) -> Option<Text> {
    let pk = format!("{k}Path");
    match fields::given(o, k, at, lang, out)? {
        Given::Value(v) => string(Some(v), &member(at, k), out).map(Text::Fixed),
        Given::Expr(e) => Some(Text::Expr(e)),
        Given::Path(s) => match dynamic(s, &member(at, &pk), out)? {
            TemplateField::Path(p) => Some(Text::Path(p)),
            TemplateField::Call(c) if TEXT_CALLS.contains(&c.name()) => Some(Text::Call(c)),
            TemplateField::Call(c) => {
                out.error(
                    member(at, &pk),
                    format!(
                        "{} does not make a string; \"{pk}\" takes a path or one of {}",
                        c.name(),
                        TEXT_CALLS.join(", ")
                    ),
                );
                None
            }
            TemplateField::Value(_) => None,
        },
    }
}

//! Why an intrinsic call is not valid when the machine is deployed: its syntax, the function's
//! name, the number and the types of its arguments, and literal arguments whose value can
//! never work. Each message says what to write instead.

use super::sig::Func;
use crate::asl::path::PathError;

/// The error a call raises when it fails at runtime.
pub const INTRINSIC_FAILURE: &str = "States.IntrinsicFailure";

/// How deep calls may nest: AWS allows "up to 10 intrinsic functions within a field".
pub const MAX_NESTING: usize = 10;

/// The functions' names, for messages.
fn names() -> String {
    let all: Vec<&str> = Func::ALL.iter().map(|f| f.name()).collect();
    all.join(", ")
}

/// Why a call is not valid at deploy time. Positions (`at`) count characters from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntrinsicError {
    #[error(
        "{text:?} is not an intrinsic function call: a call starts with `States.`, \
         e.g. \"States.Format('Hello {{}}', $.name)\""
    )]
    NotACall { text: String },
    #[error("at character {at}: {message}")]
    Syntax { at: usize, message: String },
    #[error(
        "at character {at}: the string that starts here is not closed; end it with `'` \
         (write `\\'` for a quote inside a string)"
    )]
    UnclosedString { at: usize },
    #[error(
        "at character {at}: `\\{found}` is not an escape; inside a string only `\\'`, `\\{{`, \
         `\\}}` and `\\\\` are, so write `\\\\` for a backslash"
    )]
    BadEscape { at: usize, found: char },
    #[error("the call to {function} is not closed: add `)` after its last argument")]
    Unclosed { function: String },
    #[error(
        "at character {at}: {text:?} follows the call's closing `)`; a field holds exactly one \
         call (pass calls as arguments to nest them)"
    )]
    Trailing { at: usize, text: String },
    #[error(
        "{name:?} is not an intrinsic function{suggestion}; the functions are {}",
        names()
    )]
    UnknownFunction { name: String, suggestion: String },
    #[error("{function} takes {expected}, but is given {found}")]
    ArgCount {
        function: &'static str,
        expected: String,
        found: usize,
    },
    #[error("{function}: argument {index} ({name}) must be {expected}, but {found}")]
    ArgType {
        function: &'static str,
        index: usize,
        name: &'static str,
        expected: &'static str,
        found: String,
    },
    #[error("{function}: argument {index} ({name}) {message}")]
    BadArg {
        function: &'static str,
        index: usize,
        name: &'static str,
        message: String,
    },
    #[error("{function}: {message}")]
    Invalid {
        function: &'static str,
        message: String,
    },
    #[error("{function}: argument {index}: {error}")]
    BadPath {
        function: &'static str,
        index: usize,
        error: PathError,
    },
    #[error(
        "at character {at}: calls are nested more than {limit} deep; Step Functions allows \
         {limit} (split the work over two states)"
    )]
    TooDeep { at: usize, limit: usize },
    #[error(
        "States.Format: the template has {holes} `{{}}` placeholder(s) but {values} value(s) \
         follow it; give one value per `{{}}` (write `\\{{` and `\\}}` for literal braces)"
    )]
    Placeholders { holes: usize, values: usize },
}

//! A machine's runtime error: a predefined error name and its cause (depends on nothing
//! else in `asl`, so every part can raise one).

/// A runtime error of the machine's own making: a predefined error name and its cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}: {cause}")]
pub struct Failure {
    pub error: String,
    pub cause: String,
}

impl Failure {
    pub fn new(error: &str, cause: impl Into<String>) -> Failure {
        Failure {
            error: error.to_string(),
            cause: cause.into(),
        }
    }
}

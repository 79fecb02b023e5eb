//! A time value as a definition writes it (`PT30S`, `R5/PT1M`), parsed once, when the
//! definition is read. A value that does not parse keeps its error, which validation reports
//! at the field's path with how to write it (beside every other problem of the file, as a
//! failed deserialization would not), so a deployed definition holds only parsed values and
//! the engine never parses one again. It serializes back to the text it was written as.

use super::{Duration, DurationError, IntervalError, RepeatingInterval, TimeInterval};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A time value with a textual form.
pub trait FromText: Sized {
    type Error: fmt::Display;
    fn from_text(text: &str) -> Result<Self, Self::Error>;
}

impl FromText for Duration {
    type Error = DurationError;
    fn from_text(text: &str) -> Result<Self, DurationError> {
        Duration::parse(text)
    }
}

impl FromText for RepeatingInterval {
    type Error = IntervalError;
    fn from_text(text: &str) -> Result<Self, IntervalError> {
        RepeatingInterval::parse(text)
    }
}

impl FromText for TimeInterval {
    type Error = IntervalError;
    fn from_text(text: &str) -> Result<Self, IntervalError> {
        TimeInterval::parse(text)
    }
}

/// `T` as written, and its value (or why the text is not one).
#[derive(Debug, Clone, PartialEq)]
pub struct Written<T> {
    text: String,
    value: Result<T, String>,
}

impl<T: FromText> Written<T> {
    pub fn parse(text: &str) -> Self {
        Written {
            value: T::from_text(text).map_err(|e| e.to_string()),
            text: text.to_string(),
        }
    }
}

impl<T: Copy> Written<T> {
    /// The value; `None` only in a definition that failed validation.
    pub fn get(&self) -> Option<T> {
        self.value.as_ref().ok().copied()
    }
}

impl<T> Written<T> {
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Why the text is not a `T` (with how to write one).
    pub fn error(&self) -> Option<&str> {
        self.value.as_ref().err().map(String::as_str)
    }
}

impl<T> fmt::Display for Written<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<T> Serialize for Written<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de, T: FromText> Deserialize<'de> for Written<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Written::parse(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsed_once_and_written_back_as_it_was() {
        let d: Written<Duration> = serde_json::from_str("\"PT1M30S\"").unwrap();
        assert_eq!(d.get(), Some(Duration::parse("PT90S").unwrap()));
        assert_eq!(d.error(), None);
        assert_eq!(serde_json::to_string(&d).unwrap(), "\"PT1M30S\"");
        let r: Written<RepeatingInterval> = serde_json::from_str("\"R3/PT1S\"").unwrap();
        assert_eq!(r.get().unwrap().repetitions, Some(3));
    }

    #[test]
    fn a_bad_value_keeps_how_to_write_it() {
        let d: Written<Duration> = serde_json::from_str("\"1 hour\"").unwrap();
        assert_eq!(d.get(), None);
        let e = d.error().unwrap();
        assert!(
            e.contains("is not an ISO 8601 duration") && e.contains("PT15M"),
            "{e}"
        );
        assert_eq!(serde_json::to_string(&d).unwrap(), "\"1 hour\"");
        let e = serde_json::from_str::<Written<Duration>>("[1]").unwrap_err();
        assert!(e.to_string().contains("expected a string"), "{e}");
    }
}

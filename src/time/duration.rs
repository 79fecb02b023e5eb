use chrono::{DateTime, Months, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("{input:?} is not an ISO 8601 duration: {reason}; write e.g. \"PT15M\", \"P2DT3H4M\" or \"P1Y2M10DT2H30M\"")]
    Invalid { input: String, reason: String },
    #[error("{input:?} is longer than {MAX_YEARS} years, the longest duration a definition or setting may give (in its years and months, or in its days to seconds)")]
    TooLong { input: String },
}

/// The longest duration accepted, in years, for each of its calendar part (years and months)
/// and its exact part (days to seconds, in 366-day years): far beyond any timer, and small
/// enough that the arithmetic stays exact.
const MAX_YEARS: u32 = 10_000;
const MAX_MONTHS: f64 = MAX_YEARS as f64 * 12.0;
const MAX_SECS: f64 = MAX_YEARS as f64 * 366.0 * 86_400.0;

/// An ISO 8601 duration. Years and months are calendar units, applied with calendar arithmetic;
/// the rest is exact.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Duration {
    months: u32,
    millis: u64,
}

impl Duration {
    pub fn parse(input: &str) -> Result<Duration, DurationError> {
        let err = |reason: String| DurationError::Invalid {
            input: input.to_string(),
            reason,
        };
        let text = input.trim();
        if !text.starts_with('P') {
            return Err(err("it must start with `P`".into()));
        }
        if text.ends_with('T') || text == "P" {
            return Err(err("it has no value after `P`/`T`".into()));
        }
        let d = iso8601_duration::Duration::parse(text)
            .map_err(|e| err(format!("unexpected input at position {}", e.position)))?;
        let negative = [d.year, d.month, d.day, d.hour, d.minute, d.second]
            .iter()
            .any(|v| *v < 0.0 || !v.is_finite());
        if negative {
            return Err(err("parts must be non-negative".into()));
        }
        if d.year.fract() != 0.0 || d.month.fract() != 0.0 {
            return Err(err("years and months must be whole numbers".into()));
        }
        let months = f64::from(d.year) * 12.0 + f64::from(d.month);
        let secs = f64::from(d.day) * 86_400.0
            + f64::from(d.hour) * 3_600.0
            + f64::from(d.minute) * 60.0
            + f64::from(d.second);
        if months > MAX_MONTHS || secs > MAX_SECS {
            return Err(DurationError::TooLong {
                input: input.to_string(),
            });
        }
        let months = months as u32;
        Ok(Duration {
            months,
            millis: (secs * 1000.0).round() as u64,
        })
    }

    /// A duration of exact milliseconds.
    pub fn from_millis(millis: u64) -> Duration {
        Duration { months: 0, millis }
    }

    /// `self` added `times` times (calendar months and exact time add separately).
    pub fn times(&self, times: u32) -> Duration {
        Duration {
            months: self.months.saturating_mul(times),
            millis: self.millis.saturating_mul(u64::from(times)),
        }
    }

    pub fn plus(&self, other: &Duration) -> Duration {
        Duration {
            months: self.months.saturating_add(other.months),
            millis: self.millis.saturating_add(other.millis),
        }
    }

    /// The instant this duration after `at`.
    pub fn after(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        let base = at
            .checked_add_months(Months::new(self.months))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        // (a sum of durations, `plus` and `times`, may pass what one parse allows)
        i64::try_from(self.millis)
            .ok()
            .and_then(chrono::Duration::try_milliseconds)
            .and_then(|d| base.checked_add_signed(d))
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }

    pub fn is_zero(&self) -> bool {
        self.months == 0 && self.millis == 0
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "P")?;
        if self.months > 0 {
            write!(f, "{}M", self.months)?;
        }
        if self.millis > 0 || self.months == 0 {
            let secs = self.millis as f64 / 1000.0;
            write!(f, "T{secs}S")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn parses_spec_examples() {
        let at = t("2020-01-31T00:00:00Z");
        assert_eq!(
            Duration::parse("PT15M").unwrap().after(at),
            t("2020-01-31T00:15:00Z")
        );
        assert_eq!(
            Duration::parse("P2DT3H4M").unwrap().after(at),
            t("2020-02-02T03:04:00Z")
        );
        // Calendar arithmetic: one month after Jan 31 is the last day of February.
        assert_eq!(
            Duration::parse("P1Y2M10DT2H30M").unwrap().after(at),
            Utc.with_ymd_and_hms(2021, 3, 31, 2, 30, 0).unwrap() + chrono::Duration::days(10)
        );
        assert_eq!(
            Duration::parse("PT0.5S").unwrap(),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["15M", "P", "PT", "PXM", "", "P-1D", "soon"] {
            assert!(Duration::parse(bad).is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn rejects_durations_beyond_ten_thousand_years() {
        // found by the config fuzz target: year * 12 overflowed u32
        for huge in ["P400000000Y", "P10001Y", "P120001M", "PT1e20S", "P4000000D"] {
            let e = Duration::parse(huge).expect_err(huge);
            assert!(matches!(e, DurationError::TooLong { .. }), "{e}");
            assert!(e.to_string().contains("is longer than 10000 years"), "{e}");
        }
        let most = Duration::parse("P10000Y").unwrap();
        let at = t("2020-01-01T00:00:00Z");
        // sums saturate, and the instant after saturates at the latest one chrono has
        let sum = Duration::from_millis(u64::MAX).plus(&most.times(u32::MAX));
        assert_eq!(sum.after(at), DateTime::<Utc>::MAX_UTC);
        assert_eq!(
            Duration::from_millis(1 << 63).after(at),
            DateTime::<Utc>::MAX_UTC
        );
        let later = Utc.with_ymd_and_hms(12020, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(most.after(at), later);
    }

    #[test]
    fn arithmetic() {
        let one = Duration::parse("PT1M").unwrap();
        let two = Duration::parse("PT2M").unwrap();
        assert_eq!(one.plus(&two.times(3)), Duration::parse("PT7M").unwrap());
    }
}

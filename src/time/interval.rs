use super::duration::{Duration, DurationError};
use chrono::{DateTime, Utc};

/// Why an interval did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntervalError {
    #[error("{0}")]
    Duration(#[from] DurationError),
    #[error("{input:?} is not an ISO 8601 repeating interval; write \"R5/PT15M\" (5 times, every 15 minutes) or a plain duration \"PT15M\"")]
    Repeating { input: String },
    #[error("{input:?} is not an ISO 8601 time interval: {reason}; write \"2020-03-20T13:00:00Z/2021-05-11T15:30:00Z\", \"2020-03-20T13:00:00Z/P1Y2M\", \"P1Y2M/2021-05-11T15:30:00Z\" or \"P1Y2M\"")]
    Time { input: String, reason: String },
}

/// `Rn/duration` or a plain duration (unbounded repetitions).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepeatingInterval {
    pub repetitions: Option<u32>,
    pub every: Duration,
}

impl RepeatingInterval {
    pub fn parse(input: &str) -> Result<RepeatingInterval, IntervalError> {
        let text = input.trim();
        if let Some(rest) = text.strip_prefix('R') {
            let (count, dur) = rest
                .split_once('/')
                .ok_or_else(|| IntervalError::Repeating {
                    input: input.to_string(),
                })?;
            let repetitions = if count.is_empty() {
                None
            } else {
                Some(count.parse::<u32>().map_err(|_| IntervalError::Repeating {
                    input: input.to_string(),
                })?)
            };
            let every = Duration::parse(dur).map_err(|_| IntervalError::Repeating {
                input: input.to_string(),
            })?;
            return Ok(RepeatingInterval { repetitions, every });
        }
        Ok(RepeatingInterval {
            repetitions: None,
            every: Duration::parse(text)?,
        })
    }
}

/// When a scheduled start state is active.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeInterval {
    StartEnd(DateTime<Utc>, DateTime<Utc>),
    StartDuration(DateTime<Utc>, Duration),
    DurationEnd(Duration, DateTime<Utc>),
    /// Counted from an anchor the caller supplies (the definition's first deployment).
    Duration(Duration),
}

fn instant(input: &str, part: &str) -> Result<DateTime<Utc>, IntervalError> {
    DateTime::parse_from_rfc3339(part.trim())
        .map(|d| d.with_timezone(&Utc))
        .map_err(|e| IntervalError::Time {
            input: input.to_string(),
            reason: format!("{part:?} is not an RFC 3339 date-time ({e})"),
        })
}

impl TimeInterval {
    pub fn parse(input: &str) -> Result<TimeInterval, IntervalError> {
        let text = input.trim();
        let Some((a, b)) = text.split_once('/') else {
            return Ok(TimeInterval::Duration(Duration::parse(text)?));
        };
        let interval = match (a.trim().starts_with('P'), b.trim().starts_with('P')) {
            (false, false) => TimeInterval::StartEnd(instant(input, a)?, instant(input, b)?),
            (false, true) => TimeInterval::StartDuration(instant(input, a)?, Duration::parse(b)?),
            (true, false) => TimeInterval::DurationEnd(Duration::parse(a)?, instant(input, b)?),
            (true, true) => {
                return Err(IntervalError::Time {
                    input: input.to_string(),
                    reason: "both sides are durations".into(),
                })
            }
        };
        if let TimeInterval::StartEnd(s, e) = &interval {
            if e <= s {
                return Err(IntervalError::Time {
                    input: input.to_string(),
                    reason: "the end is not after the start".into(),
                });
            }
        }
        Ok(interval)
    }

    /// The active window `[from, until)`. `anchor` (the definition's first deployment) is when
    /// a bare duration, or a duration/end pair, starts counting; duration/end is active for the
    /// duration or until the end, whichever comes first (spec).
    pub fn window(&self, anchor: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
        match self {
            TimeInterval::StartEnd(s, e) => (*s, *e),
            TimeInterval::StartDuration(s, d) => (*s, d.after(*s)),
            TimeInterval::DurationEnd(d, e) => (anchor, d.after(anchor).min(*e)),
            TimeInterval::Duration(d) => (anchor, d.after(anchor)),
        }
    }

    pub fn contains(&self, anchor: DateTime<Utc>, at: DateTime<Utc>) -> bool {
        let (from, until) = self.window(anchor);
        from <= at && at < until
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn repeating() {
        let r = RepeatingInterval::parse("R5/PT1M").unwrap();
        assert_eq!(r.repetitions, Some(5));
        assert_eq!(r.every, Duration::parse("PT1M").unwrap());
        assert_eq!(RepeatingInterval::parse("PT2M").unwrap().repetitions, None);
        assert!(RepeatingInterval::parse("Rx/PT1M").is_err());
        assert!(RepeatingInterval::parse("R5").is_err());
    }

    #[test]
    fn four_interval_forms() {
        let anchor = t("2020-01-01T00:00:00Z");
        let a = TimeInterval::parse("2020-03-20T13:00:00Z/2021-05-11T15:30:00Z").unwrap();
        assert!(a.contains(anchor, t("2020-06-01T00:00:00Z")));
        assert!(!a.contains(anchor, t("2021-05-11T15:30:00Z")));
        let b = TimeInterval::parse("2020-03-20T13:00:00Z/P1Y2M10DT2H30M").unwrap();
        assert_eq!(b.window(anchor).1, t("2021-05-30T15:30:00Z"));
        let c = TimeInterval::parse("P1Y2M10DT2H30M/2020-05-11T15:30:00Z").unwrap();
        assert!(c.contains(anchor, t("2020-05-01T00:00:00Z")));
        assert!(!c.contains(anchor, t("2020-05-11T15:30:00Z")));
        let short = TimeInterval::parse("PT1H/2020-05-11T15:30:00Z").unwrap();
        assert!(
            !short.contains(anchor, t("2020-01-01T01:00:00Z")),
            "the duration ends first"
        );
        let d = TimeInterval::parse("PT1H").unwrap();
        assert!(d.contains(anchor, t("2020-01-01T00:59:59Z")));
        assert!(!d.contains(anchor, t("2020-01-01T01:00:00Z")));
    }

    #[test]
    fn bad_intervals() {
        for bad in [
            "2020-03-20T13:00:00Z/2020-03-20T12:00:00Z",
            "PT1H/PT2H",
            "yesterday/2020-03-20T12:00:00Z",
            "2020-03-20/P1D",
        ] {
            assert!(TimeInterval::parse(bad).is_err(), "{bad}");
        }
    }
}

use chrono::{DateTime, TimeZone, Utc};
use croner::Cron;

/// Why a cron expression did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a cron expression ({reason}); write 5 fields \"min hour day-of-month month day-of-week\" (e.g. \"0 */2 * * *\") or 6 with seconds first (e.g. \"0 0/15 * * * ?\")")]
pub struct CronError {
    pub input: String,
    pub reason: String,
}

/// A parsed cron expression: 5 fields, or 6 with seconds first; Quartz `?` means "any".
#[derive(Debug, Clone)]
pub struct CronSchedule {
    source: String,
    cron: Cron,
}

impl CronSchedule {
    pub fn parse(input: &str) -> Result<CronSchedule, CronError> {
        let fields = input.split_whitespace().count();
        if !(5..=6).contains(&fields) {
            return Err(CronError {
                input: input.to_string(),
                reason: format!("it has {fields} fields"),
            });
        }
        let cron = Cron::new(input.trim())
            .with_seconds_optional()
            .parse()
            .map_err(|e| CronError {
                input: input.to_string(),
                reason: e.to_string(),
            })?;
        Ok(CronSchedule {
            source: input.trim().to_string(),
            cron,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The first tick strictly after `after`, evaluated in zone `tz`.
    pub fn next_after<Z: TimeZone>(&self, after: DateTime<Utc>, tz: &Z) -> Option<DateTime<Utc>> {
        let local = after.with_timezone(tz);
        self.cron
            .find_next_occurrence(&local, false)
            .ok()
            .map(|d| d.with_timezone(&Utc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn five_and_six_fields() {
        let every_two_hours = CronSchedule::parse("0 */2 * * *").unwrap();
        assert_eq!(
            every_two_hours.next_after(t("2020-01-01T00:30:00Z"), &Utc),
            Some(t("2020-01-01T02:00:00Z"))
        );
        let quartz = CronSchedule::parse("0 0/15 * * * ?").unwrap();
        assert_eq!(
            quartz.next_after(t("2020-01-01T00:00:00Z"), &Utc),
            Some(t("2020-01-01T00:15:00Z"))
        );
        let monthly = CronSchedule::parse("0 9 8 * *").unwrap();
        assert_eq!(
            monthly.next_after(t("2020-01-01T00:00:00Z"), &Utc),
            Some(t("2020-01-08T09:00:00Z"))
        );
    }

    #[test]
    fn zone_aware() {
        let tz: chrono_tz::Tz = "Europe/Berlin".parse().unwrap();
        let nine = CronSchedule::parse("0 9 * * *").unwrap();
        assert_eq!(
            nine.next_after(t("2020-07-01T00:00:00Z"), &tz),
            Some(t("2020-07-01T07:00:00Z"))
        );
    }

    #[test]
    fn rejects_bad() {
        for bad in ["* * * *", "61 * * * *", "a b c d e", "* * * * * * *"] {
            assert!(CronSchedule::parse(bad).is_err(), "{bad}");
        }
    }
}

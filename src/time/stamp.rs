//! Timestamps written as chrono's serde writes them (RFC 3339 in UTC, `Z`, fractional seconds
//! in 3, 6 or 9 digits as needed: `2024-01-01T10:01:00.123Z`), from a stack buffer in one pass.
//! chrono's own `Serialize` goes through `fmt` a character at a time; stored records carry
//! several timestamps each (an instance's `created`, `updated` and `since`, a history entry's
//! `at`, a dedupe entry), and writing them was 5% of the core's instructions. Reading them
//! back is chrono's `Deserialize`, unchanged. Years outside 0000-9999 and leap seconds are
//! left to chrono.

use chrono::{DateTime, Datelike, Timelike, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest form: `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`.
const LONGEST: usize = 30;

/// A timestamp serialized as [`serialize`] writes it (for values stored on their own), and
/// read back as chrono reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp(pub DateTime<Utc>);

impl Serialize for Stamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize(&self.0, s)
    }
}

impl<'de> Deserialize<'de> for Stamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        DateTime::<Utc>::deserialize(d).map(Stamp)
    }
}

/// For `#[serde(serialize_with = "crate::time::stamp::serialize")]`.
pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    let mut buf = [0u8; LONGEST];
    match write(t, &mut buf) {
        // only ASCII digits and separators were written
        Some(n) => {
            s.serialize_str(std::str::from_utf8(&buf[..n]).map_err(serde::ser::Error::custom)?)
        }
        None => t.serialize(s),
    }
}

/// [`serialize`] of an optional field (with `skip_serializing_if = "Option::is_none"`, or
/// written as `null`).
pub fn serialize_option<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => serialize(t, s),
        None => s.serialize_none(),
    }
}

/// Writes `t` into `buf`; its length, or `None` where chrono's form differs (a year outside
/// 0000-9999, a leap second).
fn write(t: &DateTime<Utc>, buf: &mut [u8; LONGEST]) -> Option<usize> {
    let year = u32::try_from(t.year()).ok().filter(|y| *y <= 9999)?;
    let nano = t.nanosecond();
    if nano >= 1_000_000_000 {
        return None;
    }
    let digits = |buf: &mut [u8; LONGEST], at: usize, width: usize, mut v: u32| {
        for i in (at..at + width).rev() {
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    digits(buf, 0, 4, year);
    buf[4] = b'-';
    digits(buf, 5, 2, t.month());
    buf[7] = b'-';
    digits(buf, 8, 2, t.day());
    buf[10] = b'T';
    digits(buf, 11, 2, t.hour());
    buf[13] = b':';
    digits(buf, 14, 2, t.minute());
    buf[16] = b':';
    digits(buf, 17, 2, t.second());
    let mut n = 19;
    if nano != 0 {
        buf[n] = b'.';
        let (width, v) = if nano % 1_000_000 == 0 {
            (3, nano / 1_000_000)
        } else if nano % 1_000 == 0 {
            (6, nano / 1_000)
        } else {
            (9, nano)
        };
        digits(buf, n + 1, width, v);
        n += 1 + width;
    }
    buf[n] = b'Z';
    Some(n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn ours(t: DateTime<Utc>) -> String {
        serde_json::to_string(&Stamp(t)).unwrap()
    }

    fn chrono(t: DateTime<Utc>) -> String {
        serde_json::to_string(&t).unwrap()
    }

    #[test]
    fn written_as_chrono_writes_them() {
        let mut cases = vec![
            Utc.with_ymd_and_hms(2024, 1, 1, 10, 1, 0).unwrap(),
            Utc.with_ymd_and_hms(0, 1, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).unwrap(),
            Utc.with_ymd_and_hms(10000, 1, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(-1, 6, 15, 12, 0, 0).unwrap(),
        ];
        // a spread of instants and every kind of fraction (none, ms, us, ns)
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let secs = (x % 253_402_300_800) as i64; // 0000-01-01 .. 9999-12-31 from 1970
            let secs = secs - 62_167_219_200;
            let nano = match x % 4 {
                0 => 0,
                1 => ((x >> 20) % 1000) as u32 * 1_000_000,
                2 => ((x >> 20) % 1_000_000) as u32 * 1_000,
                _ => ((x >> 20) % 1_000_000_000) as u32,
            };
            cases.push(Utc.timestamp_opt(secs, nano).unwrap());
        }
        // a leap second (chrono writes `:60`)
        cases.push(
            chrono::NaiveDate::from_ymd_opt(2016, 12, 31)
                .unwrap()
                .and_hms_nano_opt(23, 59, 59, 1_500_000_000)
                .unwrap()
                .and_utc(),
        );
        for t in cases {
            assert_eq!(ours(t), chrono(t), "{t:?}");
            let back: DateTime<Utc> = serde_json::from_str(&ours(t)).unwrap();
            assert_eq!(back, t);
            let back: Stamp = serde_json::from_str(&ours(t)).unwrap();
            assert_eq!(back, Stamp(t));
        }
    }

    #[test]
    fn fields_and_options_use_it() {
        #[derive(Serialize)]
        struct Record {
            #[serde(serialize_with = "serialize")]
            at: DateTime<Utc>,
            #[serde(serialize_with = "serialize_option")]
            since: Option<DateTime<Utc>>,
        }
        let at = Utc.timestamp_opt(1_700_000_000, 5_000_000).unwrap();
        let r = Record {
            at,
            since: Some(at),
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"at":"2023-11-14T22:13:20.005Z","since":"2023-11-14T22:13:20.005Z"}"#
        );
        let r = Record { at, since: None };
        assert!(serde_json::to_string(&r)
            .unwrap()
            .ends_with(r#""since":null}"#));
    }
}

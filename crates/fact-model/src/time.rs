//! [`Timestamp`]: a UTC instant with microsecond precision, RFC 3339 on the wire.
//!
//! The conversion between days and civil dates follows Howard Hinnant's
//! `days_from_civil` / `civil_from_days` algorithms, so no date crate is needed.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

const MICROS_PER_SEC: i64 = 1_000_000;
const SECS_PER_DAY: i64 = 86_400;
/// `0000-01-01T00:00:00Z` in seconds since the Unix epoch.
const MIN_SECS: i64 = -62_167_219_200;
/// `9999-12-31T23:59:59Z` in seconds since the Unix epoch.
const MAX_SECS: i64 = 253_402_300_799;

/// A UTC instant with microsecond precision, between years 0000 and 9999.
///
/// Serialized as an RFC 3339 string in UTC: `2026-11-22T03:02:08Z`, with a fraction of
/// three digits when the instant has whole milliseconds (`…08.250Z`) and six otherwise.
/// Parsing accepts any RFC 3339 offset (`Z`, `+02:00`, `-05:30`) and converts to UTC; a
/// fraction finer than a microsecond is truncated. Every value the constructors accept
/// formats to a string that parses back to the same value.
///
/// Time never comes from the system here: obtain timestamps from a [`Clock`](crate::Clock).
///
/// # Examples
///
/// ```
/// use fact_model::Timestamp;
///
/// let t: Timestamp = "2026-11-22T04:02:08.5+01:00".parse()?;
/// assert_eq!(t.to_string(), "2026-11-22T03:02:08.500Z");
/// assert_eq!(t, Timestamp::from_unix_micros(t.unix_micros())?);
/// # Ok::<(), fact_model::TimestampError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    micros: i64,
}

/// Why a timestamp could not be built or parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimestampError {
    /// The instant lies outside years 0000 to 9999, which RFC 3339 cannot express.
    #[error("timestamp {micros} µs since the Unix epoch is outside years 0000..=9999")]
    OutOfRange {
        /// The rejected value, in microseconds since the Unix epoch.
        micros: i64,
    },
    /// The text is not an RFC 3339 date-time.
    #[error(
        "invalid RFC 3339 timestamp {input:?}: {reason} (expected e.g. \"2026-11-22T03:02:08Z\")"
    )]
    Syntax {
        /// The rejected text, clipped to 64 characters.
        input: String,
        /// What was wrong with it.
        reason: &'static str,
    },
}

impl Timestamp {
    /// The Unix epoch, `1970-01-01T00:00:00Z`.
    pub const UNIX_EPOCH: Timestamp = Timestamp { micros: 0 };

    /// The earliest representable instant, `0000-01-01T00:00:00Z`.
    pub const MIN: Timestamp = Timestamp {
        micros: MIN_SECS * MICROS_PER_SEC,
    };

    /// The latest representable instant, `9999-12-31T23:59:59.999999Z`.
    pub const MAX: Timestamp = Timestamp {
        micros: MAX_SECS * MICROS_PER_SEC + (MICROS_PER_SEC - 1),
    };

    /// Builds a timestamp from microseconds since the Unix epoch.
    ///
    /// # Errors
    ///
    /// [`TimestampError::OutOfRange`] outside years 0000 to 9999.
    pub fn from_unix_micros(micros: i64) -> Result<Self, TimestampError> {
        let secs = micros.div_euclid(MICROS_PER_SEC);
        if (MIN_SECS..=MAX_SECS).contains(&secs) {
            Ok(Timestamp { micros })
        } else {
            Err(TimestampError::OutOfRange { micros })
        }
    }

    /// Builds a timestamp from whole seconds since the Unix epoch.
    ///
    /// # Errors
    ///
    /// [`TimestampError::OutOfRange`] outside years 0000 to 9999.
    pub fn from_unix_secs(secs: i64) -> Result<Self, TimestampError> {
        let micros = secs
            .checked_mul(MICROS_PER_SEC)
            .ok_or(TimestampError::OutOfRange { micros: i64::MAX })?;
        Self::from_unix_micros(micros)
    }

    /// Microseconds since the Unix epoch (negative before 1970).
    #[must_use]
    pub fn unix_micros(self) -> i64 {
        self.micros
    }

    /// This instant moved `by` later, or `None` when that leaves years 0000 to 9999.
    ///
    /// ```
    /// # use fact_model::Timestamp;
    /// use std::time::Duration;
    /// let t = Timestamp::UNIX_EPOCH.checked_add(Duration::from_millis(1500)).unwrap();
    /// assert_eq!(t.to_string(), "1970-01-01T00:00:01.500Z");
    /// ```
    #[must_use]
    pub fn checked_add(self, by: Duration) -> Option<Timestamp> {
        let delta = i64::try_from(by.as_micros()).ok()?;
        Self::from_unix_micros(self.micros.checked_add(delta)?).ok()
    }
}

/// Days since 1970-01-01 for a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date `(year, month, day)` of a day count since 1970-01-01; also
/// used by the fast timestamp writer of a fact's wire form.
pub(crate) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.micros.div_euclid(MICROS_PER_SEC);
        let frac = self.micros.rem_euclid(MICROS_PER_SEC);
        let (year, month, day) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
        let sod = secs.rem_euclid(SECS_PER_DAY);
        let (hour, minute, second) = (sod / 3600, sod % 3600 / 60, sod % 60);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}"
        )?;
        if frac == 0 {
        } else if frac % 1000 == 0 {
            write!(f, ".{:03}", frac / 1000)?;
        } else {
            write!(f, ".{frac:06}")?;
        }
        f.write_str("Z")
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({self})")
    }
}

/// A byte cursor over the input that never indexes out of bounds.
struct Cursor<'a> {
    input: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn error(&self, reason: &'static str) -> TimestampError {
        TimestampError::Syntax {
            input: crate::clip(self.input, 64).into_owned(),
            reason,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn digits(&mut self, count: usize, what: &'static str) -> Result<i64, TimestampError> {
        let mut value = 0i64;
        for _ in 0..count {
            match self.peek() {
                Some(b @ b'0'..=b'9') => {
                    value = value * 10 + i64::from(b - b'0');
                    self.pos += 1;
                }
                _ => return Err(self.error(what)),
            }
        }
        Ok(value)
    }

    fn expect(&mut self, accepted: &[u8], what: &'static str) -> Result<u8, TimestampError> {
        match self.peek() {
            Some(b) if accepted.contains(&b) => {
                self.pos += 1;
                Ok(b)
            }
            _ => Err(self.error(what)),
        }
    }
}

impl FromStr for Timestamp {
    type Err = TimestampError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let mut c = Cursor {
            input,
            bytes: input.as_bytes(),
            pos: 0,
        };
        let year = c.digits(4, "year must be four digits")?;
        c.expect(b"-", "expected '-' after the year")?;
        let month = c.digits(2, "month must be two digits")?;
        c.expect(b"-", "expected '-' after the month")?;
        let day = c.digits(2, "day must be two digits")?;
        c.expect(b"Tt ", "expected 'T' between date and time")?;
        let hour = c.digits(2, "hour must be two digits")?;
        c.expect(b":", "expected ':' after the hour")?;
        let minute = c.digits(2, "minute must be two digits")?;
        c.expect(b":", "expected ':' after the minute")?;
        let second = c.digits(2, "second must be two digits")?;
        let mut frac_micros = 0i64;
        if c.peek() == Some(b'.') {
            c.pos += 1;
            let mut digits = 0;
            while let Some(b @ b'0'..=b'9') = c.peek() {
                if digits < 6 {
                    frac_micros = frac_micros * 10 + i64::from(b - b'0');
                }
                digits += 1;
                c.pos += 1;
            }
            if digits == 0 {
                return Err(c.error("expected digits after '.'"));
            }
            for _ in digits..6 {
                frac_micros *= 10;
            }
        }
        let offset_secs = match c.expect(b"Zz+-", "expected 'Z' or a '+hh:mm'/'-hh:mm' offset")? {
            b'Z' | b'z' => 0,
            sign => {
                let oh = c.digits(2, "offset hours must be two digits")?;
                c.expect(b":", "expected ':' in the offset")?;
                let om = c.digits(2, "offset minutes must be two digits")?;
                if oh > 23 || om > 59 {
                    return Err(c.error("offset out of range"));
                }
                let secs = oh * 3600 + om * 60;
                if sign == b'-' { -secs } else { secs }
            }
        };
        if c.pos != c.bytes.len() {
            return Err(c.error("unexpected text after the timestamp"));
        }
        if !(1..=12).contains(&month) {
            return Err(c.error("month out of range"));
        }
        if day < 1 || day > days_in_month(year, month) {
            return Err(c.error("day out of range for the month"));
        }
        if hour > 23 || minute > 59 {
            return Err(c.error("time of day out of range"));
        }
        if second > 59 {
            return Err(c.error("second out of range (leap seconds are not supported)"));
        }
        let secs =
            days_from_civil(year, month, day) * SECS_PER_DAY + hour * 3600 + minute * 60 + second
                - offset_secs;
        Timestamp::from_unix_micros(secs * MICROS_PER_SEC + frac_micros)
    }
}

/// A span of time as people write it: whole seconds (`3600`), or a whole number with a unit
/// `s`, `m`, `h`, `d` or `w` (any case: `90m`, `24h`, `30d`, `2w`); at least one second.
///
/// ```
/// use std::time::Duration;
/// use fact_model::parse_duration;
///
/// assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
/// assert_eq!(parse_duration(" 90M "), Ok(Duration::from_secs(5_400)));
/// assert!(parse_duration("1.5h").unwrap_err().contains("whole number"));
/// assert!(parse_duration("0s").is_err() && parse_duration("soon").is_err());
/// ```
///
/// # Errors
///
/// A message naming the text: not a number with a known unit, not a whole number, zero,
/// or too large.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    let digits = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(digits);
    let unit_secs: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 604_800,
        _ => {
            return Err(format!(
                "{text:?} is not a duration: give seconds (3600) or a whole number with s, m, \
                 h, d or w (60m, 24h, 30d)"
            ));
        }
    };
    let secs = number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit_secs))
        .ok_or_else(|| format!("{text:?} is not a duration: give a whole number"))?;
    if secs == 0 {
        return Err(format!("{text:?}: a duration is at least one second"));
    }
    Ok(Duration::from_secs(secs))
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(input: &str, expect: &str) {
        let parsed: Timestamp = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(parsed.to_string(), expect, "{input}");
    }

    fn check_err(input: &str, reason: &str) {
        let err = input.parse::<Timestamp>().unwrap_err();
        assert!(err.to_string().contains(reason), "{input}: {err}");
    }

    #[test]
    fn parses_and_normalises_to_utc() {
        check("1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z");
        check("2026-11-22T03:02:08z", "2026-11-22T03:02:08Z");
        check("2026-11-22 03:02:08Z", "2026-11-22T03:02:08Z");
        check("2026-11-22T03:02:08.1Z", "2026-11-22T03:02:08.100Z");
        check(
            "2026-11-22T03:02:08.123456789Z",
            "2026-11-22T03:02:08.123456Z",
        );
        check("2026-11-22T00:30:00+01:00", "2026-11-21T23:30:00Z");
        check("2026-12-31T23:30:00-05:30", "2027-01-01T05:00:00Z");
        check("2024-02-29T12:00:00Z", "2024-02-29T12:00:00Z");
        check("0000-01-01T00:00:00Z", "0000-01-01T00:00:00Z");
        check("1969-12-31T23:59:59.999999Z", "1969-12-31T23:59:59.999999Z");
        check("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z");
    }

    #[test]
    fn rejects_malformed_text_with_a_reason() {
        check_err("", "year must be four digits");
        check_err("2026-11-22", "expected 'T'");
        check_err("2026-13-01T00:00:00Z", "month out of range");
        check_err("2023-02-29T00:00:00Z", "day out of range");
        check_err("2026-11-22T24:00:00Z", "time of day out of range");
        check_err("2026-11-22T23:59:60Z", "leap seconds");
        check_err("2026-11-22T03:02:08", "expected 'Z'");
        check_err("2026-11-22T03:02:08.Z", "digits after '.'");
        check_err("2026-11-22T03:02:08Zjunk", "unexpected text");
        check_err("2026-11-22T03:02:08+1:00", "offset hours");
        check_err("0000-01-01T00:00:00+01:00", "outside years");
        check_err("２０２６-11-22T03:02:08Z", "year must be four digits");
    }

    #[test]
    fn range_is_checked() {
        assert!(Timestamp::from_unix_micros(i64::MAX).is_err());
        assert!(Timestamp::from_unix_micros(i64::MIN).is_err());
        assert!(Timestamp::from_unix_secs(i64::MAX).is_err());
        assert_eq!(
            Timestamp::from_unix_secs(1_700_000_000)
                .unwrap()
                .to_string(),
            "2023-11-14T22:13:20Z"
        );
    }

    #[test]
    fn serde_uses_rfc3339() {
        let t = Timestamp::from_unix_micros(1_500).unwrap();
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, "\"1970-01-01T00:00:00.001500Z\"");
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), t);
        assert!(serde_json::from_str::<Timestamp>("\"yesterday\"").is_err());
        assert!(serde_json::from_str::<Timestamp>("12").is_err());
    }

    proptest! {
        #[test]
        fn display_then_parse_roundtrips(
            micros in (MIN_SECS * MICROS_PER_SEC)..=(MAX_SECS * MICROS_PER_SEC + 999_999)
        ) {
            let t = Timestamp::from_unix_micros(micros).unwrap();
            let text = t.to_string();
            prop_assert_eq!(text.parse::<Timestamp>().unwrap(), t);
        }

        #[test]
        fn parse_never_panics(text in ".{0,40}") {
            let _ = text.parse::<Timestamp>();
        }

        #[test]
        fn civil_conversion_is_inverse(days in -719_528i64..2_932_896) {
            let (y, m, d) = civil_from_days(days);
            prop_assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}

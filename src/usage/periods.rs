//! The periods of a person's calendar in their own time zone: the start of today, of this week
//! (Monday) and of this month, as the millisecond instants the usage ledger is queried from.
//! Daylight saving is the zone's: a day that starts at 01:00 because of a change starts there.
//!
//! Pure time arithmetic: it must never read the store or the clock itself (callers pass `now`).

use chrono::{Datelike, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use serde::Serialize;

/// A period of the usage report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Today,
    ThisWeek,
    ThisMonth,
}

impl Period {
    pub const ALL: [Period; 3] = [Period::Today, Period::ThisWeek, Period::ThisMonth];

    pub fn label(self) -> &'static str {
        match self {
            Self::Today => "Today",
            Self::ThisWeek => "This week",
            Self::ThisMonth => "This month",
        }
    }

    /// The period's first instant (ms) for a person in `zone` (an IANA name; unknown: UTC).
    pub fn start_ms(self, zone: &str, now_ms: i64) -> i64 {
        let tz: Tz = zone.trim().parse().unwrap_or(chrono_tz::UTC);
        let Some(now) = Utc.timestamp_millis_opt(now_ms).single() else { return now_ms };
        let today = now.with_timezone(&tz).date_naive();
        let first = match self {
            Self::Today => today,
            Self::ThisWeek => today - chrono::Days::new(u64::from(today.weekday().num_days_from_monday())),
            Self::ThisMonth => today.with_day(1).unwrap_or(today),
        };
        local_midnight(tz, first).unwrap_or(now_ms)
    }
}

/// The first instant of `day` in `tz` (a day may start after 00:00 when the clocks jump).
fn local_midnight(tz: Tz, day: NaiveDate) -> Option<i64> {
    (0..24 * 60).step_by(15).find_map(|minute| {
        let at = day.and_hms_opt(minute / 60, minute % 60, 0)?;
        tz.from_local_datetime(&at).earliest().map(|t| t.timestamp_millis())
    })
}

/// The start of the day `now_ms` falls in, for a person in `zone`.
pub fn day_start_ms(zone: &str, now_ms: i64) -> i64 {
    Period::Today.start_ms(zone, now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp_millis()
    }

    #[test]
    fn periods_start_at_the_persons_own_midnight() {
        // (zone, now, period, start)
        let cases = [
            ("UTC", "2026-12-04T15:00:00Z", Period::Today, "2026-12-04T00:00:00Z"),
            // Tokyo is 9 hours ahead: 20:00 UTC on the 4th is already the 5th there.
            ("Asia/Tokyo", "2026-12-04T20:00:00Z", Period::Today, "2026-12-04T15:00:00Z"),
            ("America/New_York", "2026-12-04T03:00:00Z", Period::Today, "2026-12-03T05:00:00Z"),
            // 2026-12-04 is a Friday: the week began on Monday the 30th of November.
            ("UTC", "2026-12-04T15:00:00Z", Period::ThisWeek, "2026-11-30T00:00:00Z"),
            ("Europe/Berlin", "2026-12-04T15:00:00Z", Period::ThisMonth, "2026-11-30T23:00:00Z"),
            // A Monday counts from that Monday.
            ("UTC", "2026-11-30T10:00:00Z", Period::ThisWeek, "2026-11-30T00:00:00Z"),
            // Summer time in Berlin: the month starts at 22:00 UTC the day before.
            ("Europe/Berlin", "2026-07-15T12:00:00Z", Period::ThisMonth, "2026-06-30T22:00:00Z"),
            // Unknown zones count in UTC.
            ("Mars/Olympus", "2026-12-04T15:00:00Z", Period::Today, "2026-12-04T00:00:00Z"),
        ];
        for (zone, now, period, want) in cases {
            assert_eq!(period.start_ms(zone, ms(now)), ms(want), "{zone} {now} {period:?}");
        }
    }

    #[test]
    fn a_day_that_skips_midnight_starts_at_its_first_hour() {
        // Chile (America/Santiago) moved its clocks from 00:00 to 01:00 on 2026-09-06.
        let start = day_start_ms("America/Santiago", ms("2026-09-06T12:00:00Z"));
        assert_eq!(start, ms("2026-09-06T04:00:00Z"), "01:00 local, UTC-3");
    }
}

//! Fire times: standard 5-field crontab (names, ranges, steps, lists, the day-of-month /
//! day-of-week OR rule, croner's `L`, `W`, `#` and `+` extensions and the `@daily`-style
//! nicknames, plus the Vixie/Quartz and croniter forms `fields.rs` rewrites) read in an IANA zone, and the times people write for one-shot jobs.
//!
//! Daylight saving follows croner 4, which matches the rules Butler promises (the tables in
//! `tests/schedule/cron.rs` pin them down for New York, Berlin and Sao Paulo):
//! - a fixed time that falls in a skipped hour fires once, at the first instant after the gap;
//! - a fixed time in a repeated hour fires once, on its first pass;
//! - an interval job (`*` or a step in the minute or hour field) keeps its real-time cadence:
//!   instants that do not exist are skipped, and each real hour of a repeated hour counts.
//!
//! Searches start from the exact previous fire time (croner decides the pass of a repeated hour
//! from it). This module never reads the clock: callers pass `now`.

use chrono::{
    DateTime, Duration, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, TimeZone, Timelike, Utc,
};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

/// Why a cron expression, a zone or a time cannot be read. The text says what to write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("the cron expression is empty; write minute hour day-of-month month day-of-week, e.g. `0 8 * * 1-5`")]
    EmptyCron,
    #[error(
        "`{expr}` is not a 5-field crontab (minute hour day-of-month month day-of-week, e.g. `0 8 * * 1-5` for \
         8:00 on weekdays): {reason}"
    )]
    NotCrontab { expr: String, reason: String },
    #[error("`{expr}`: the {field} field `{value}` {reason}")]
    Field { expr: String, field: &'static str, value: String, reason: String },
    #[error("`{0}` is not an IANA time zone; use a name such as UTC, Europe/Berlin or America/New_York")]
    UnknownZone(String),
    #[error("`{time}` does not exist in {tz}")]
    NoSuchLocalTime { time: String, tz: String },
    #[error("the clock is out of range")]
    ClockOutOfRange,
    #[error(
        "`{0}` is not a time I can read; use RFC 3339 (2025-03-10T08:00:00+01:00), a local time \
         (2025-03-10 08:00 or 08:00) or a delay (in 20 minutes)"
    )]
    UnreadableTime(String),
    #[error("`in {0}`: write a number and a unit, e.g. `in 20 minutes`")]
    DelayShape(String),
    #[error("`in {text}`: `{number}` is not a whole number")]
    DelayNumber { text: String, number: String },
    #[error("`in {text}`: `{unit}` is not a unit (seconds, minutes, hours, days, weeks)")]
    DelayUnit { text: String, unit: String },
    #[error("`in {text}`: the delay must be between one {unit} and ten years")]
    DelayRange { text: String, unit: String },
}

/// Parses a 5-field crontab (no seconds, no year field).
pub fn parse_cron(expr: &str) -> Result<Cron, CronError> {
    let expr = expr.trim();
    if expr.is_empty() {
        return Err(CronError::EmptyCron);
    }
    let normalized = super::fields::normalize(expr).map_err(|e| CronError::Field {
        expr: expr.to_string(),
        field: e.field,
        value: e.value,
        reason: e.reason,
    })?;
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(&normalized)
        .map_err(|e| CronError::NotCrontab { expr: expr.to_string(), reason: e.to_string() })
}

/// Parses an IANA zone name.
pub fn parse_tz(name: &str) -> Result<Tz, CronError> {
    name.trim().parse::<Tz>().map_err(|_| CronError::UnknownZone(name.to_string()))
}

/// `ms` as a time in `tz`, whole seconds (fire times never have fractions).
fn in_zone(tz: Tz, ms: i64) -> Option<DateTime<Tz>> {
    DateTime::<Utc>::from_timestamp_millis(ms.div_euclid(1000) * 1000).map(|d| d.with_timezone(&tz))
}

/// The first fire time strictly after `after_ms`.
pub fn next_after(cron: &Cron, tz: Tz, after_ms: i64) -> Option<i64> {
    let start = in_zone(tz, after_ms)?;
    cron.find_next_occurrence(&start, false).ok().map(|t| t.timestamp_millis())
}

/// The last fire time at or before `at_ms`.
pub fn latest_until(cron: &Cron, tz: Tz, at_ms: i64) -> Option<i64> {
    let start = in_zone(tz, at_ms)?;
    cron.find_previous_occurrence(&start, true).ok().map(|t| t.timestamp_millis())
}

/// The next `count` fire times after `after_ms`, each searched from the one before.
pub fn fire_times(cron: &Cron, tz: Tz, after_ms: i64, count: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(count.min(1000));
    let mut from = after_ms;
    while out.len() < count {
        match next_after(cron, tz, from) {
            Some(t) => {
                out.push(t);
                from = t;
            }
            None => break,
        }
    }
    out
}

/// RFC 3339 with the zone's offset: `2025-03-09T03:00:00-04:00`.
pub fn rfc3339(ms: i64, tz: Tz) -> String {
    in_zone(tz, ms).map_or_else(|| ms.to_string(), |t| t.to_rfc3339_opts(SecondsFormat::Secs, false))
}

/// For people: `Mon 2025-03-10 08:00 CET`.
pub fn human(ms: i64, tz: Tz) -> String {
    in_zone(tz, ms).map_or_else(|| ms.to_string(), |t| t.format("%a %Y-%m-%d %H:%M %Z").to_string())
}

/// A wall time in `tz`: the earlier instant when it happens twice, the first instant after the
/// gap when it does not happen at all (as a fixed-time cron job would fire).
pub fn resolve_local(tz: Tz, naive: NaiveDateTime) -> Option<DateTime<Tz>> {
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(t) => Some(t),
        LocalResult::Ambiguous(first, _) => Some(first),
        LocalResult::None => {
            let minute = naive.with_second(0)?.with_nanosecond(0)?;
            (1..=24 * 60).find_map(|m| match tz.from_local_datetime(&(minute + Duration::minutes(m))) {
                LocalResult::Single(t) => Some(t),
                LocalResult::Ambiguous(first, _) => Some(first),
                LocalResult::None => None,
            })
        }
    }
}

/// Reads a time as people write it, in `tz` unless it carries its own offset:
/// RFC 3339 (`2025-03-09T08:00:00-05:00`, `...Z`), a wall time (`2025-03-09 08:00`,
/// `2025-03-09T08:00:30`), a time of day (`08:00`: its next occurrence after `now_ms`), or a
/// delay (`in 20 minutes`, `in 2 hours`, `in 1 day`, `in 90 seconds`, `in an hour`).
pub fn parse_time(text: &str, tz: Tz, now_ms: i64) -> Result<i64, CronError> {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix("in ").or_else(|| t.strip_prefix("In ")) {
        return parse_delay(rest).map(|d| now_ms + d);
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Ok(dt.timestamp_millis());
    }
    let formats = ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"];
    if let Some(naive) = formats.iter().find_map(|f| NaiveDateTime::parse_from_str(t, f).ok()) {
        return resolve_local(tz, naive)
            .map(|d| d.timestamp_millis())
            .ok_or_else(|| CronError::NoSuchLocalTime { time: t.to_string(), tz: tz.to_string() });
    }
    if let Some(time) = ["%H:%M:%S", "%H:%M"].iter().find_map(|f| NaiveTime::parse_from_str(t, f).ok()) {
        let now = in_zone(tz, now_ms).ok_or(CronError::ClockOutOfRange)?;
        let today: NaiveDate = now.date_naive();
        for day in [today, today + Duration::days(1), today + Duration::days(2)] {
            if let Some(at) = resolve_local(tz, day.and_time(time)).map(|d| d.timestamp_millis()) {
                if at > now_ms {
                    return Ok(at);
                }
            }
        }
    }
    Err(CronError::UnreadableTime(t.to_string()))
}

/// `20 minutes` -> milliseconds.
fn parse_delay(text: &str) -> Result<i64, CronError> {
    let mut words = text.split_whitespace();
    let (n, unit) = match (words.next(), words.next(), words.next()) {
        (Some(n), Some(unit), None) => (n, unit),
        (Some(joined), None, None) => {
            let split = joined.find(|c: char| !c.is_ascii_digit()).unwrap_or(joined.len());
            (&joined[..split], &joined[split..])
        }
        _ => return Err(CronError::DelayShape(text.to_string())),
    };
    let n: i64 = match n {
        "a" | "an" | "one" => 1,
        n => n.parse().map_err(|_| CronError::DelayNumber { text: text.to_string(), number: n.to_string() })?,
    };
    let unit_ms: i64 = match unit.trim_end_matches('s') {
        "" | "sec" | "second" => 1_000,
        "m" | "min" | "minute" => 60_000,
        "h" | "hr" | "hour" => 3_600_000,
        "d" | "day" => 86_400_000,
        "w" | "week" => 7 * 86_400_000,
        other => return Err(CronError::DelayUnit { text: text.to_string(), unit: other.to_string() }),
    };
    if !(1..=10 * 366 * 86_400_000 / unit_ms).contains(&n) {
        return Err(CronError::DelayRange { text: text.to_string(), unit: unit.trim_end_matches('s').to_string() });
    }
    Ok(n * unit_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        DateTime::parse_from_rfc3339(s).unwrap().timestamp_millis()
    }

    #[test]
    fn times_people_write() {
        let berlin = parse_tz("Europe/Berlin").unwrap();
        let now = ms("2025-03-29T12:00:00Z"); // 13:00 CET, the day before the spring gap
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("in 20 minutes", Ok("2025-03-29T12:20:00Z")),
            ("in 1 hour", Ok("2025-03-29T13:00:00Z")),
            ("in an hour", Ok("2025-03-29T13:00:00Z")),
            ("in 90s", Ok("2025-03-29T12:01:30Z")),
            ("in 2 days", Ok("2025-03-31T12:00:00Z")),
            ("2025-04-01T08:00:00-05:00", Ok("2025-04-01T13:00:00Z")),
            ("2025-04-01 08:00", Ok("2025-04-01T06:00:00Z")),
            ("2025-03-30T02:30", Ok("2025-03-30T01:00:00Z")), // in the gap: 03:00 CEST
            ("2025-10-26 02:30", Ok("2025-10-26T00:30:00Z")), // repeated: the first pass (CEST)
            ("14:00", Ok("2025-03-29T13:00:00Z")),
            ("09:00", Ok("2025-03-30T07:00:00Z")), // tomorrow, already summer time
            ("in 0 minutes", Err("between")),
            ("in 3 fortnights", Err("not a unit")),
            ("tomorrow-ish", Err("not a time I can read")),
        ];
        for (text, want) in cases {
            match (parse_time(text, berlin, now), want) {
                (Ok(got), Ok(w)) => assert_eq!(got, ms(w), "{text}: got {}", rfc3339(got, berlin)),
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{text}: {e}"),
                (got, w) => panic!("{text}: got {got:?}, want {w:?}"),
            }
        }
    }

    #[test]
    fn five_fields_only_and_zones_by_name() {
        assert!(parse_cron("0 8 * * 1-5").is_ok());
        assert!(parse_cron("@daily").is_ok());
        assert!(parse_cron("0 0 8 * * 1-5").unwrap_err().to_string().contains("5-field"));
        assert!(parse_cron("").unwrap_err().to_string().contains("empty"));
        assert!(parse_tz("Mars/Base").unwrap_err().to_string().contains("IANA"));
        assert_eq!(
            rfc3339(ms("2025-03-09T07:00:00Z"), parse_tz("America/New_York").unwrap()),
            "2025-03-09T03:00:00-04:00"
        );
    }

    /// The typed errors keep the texts the functions returned as strings before.
    #[test]
    fn error_texts_are_the_same_as_before() {
        let utc = chrono_tz::UTC;
        let now = ms("2025-03-10T12:00:00Z");
        let table: [(Result<(), CronError>, &str); 9] = [
            (
                parse_cron(" ").map(drop),
                "the cron expression is empty; write minute hour day-of-month month day-of-week, e.g. `0 8 * * 1-5`",
            ),
            (
                parse_tz("Mars/Base").map(drop),
                "`Mars/Base` is not an IANA time zone; use a name such as UTC, Europe/Berlin or America/New_York",
            ),
            (
                Err(CronError::NoSuchLocalTime { time: "2025-03-09 02:30".into(), tz: "America/New_York".into() }),
                "`2025-03-09 02:30` does not exist in America/New_York",
            ),
            (
                parse_time("soon", utc, now).map(drop),
                "`soon` is not a time I can read; use RFC 3339 (2025-03-10T08:00:00+01:00), a local time \
                 (2025-03-10 08:00 or 08:00) or a delay (in 20 minutes)",
            ),
            (parse_time("in 2 3 4", utc, now).map(drop), "`in 2 3 4`: write a number and a unit, e.g. `in 20 minutes`"),
            (parse_time("in x minutes", utc, now).map(drop), "`in x minutes`: `x` is not a whole number"),
            (
                parse_time("in 3 fortnights", utc, now).map(drop),
                "`in 3 fortnights`: `fortnight` is not a unit (seconds, minutes, hours, days, weeks)",
            ),
            (
                parse_time("in 0 minutes", utc, now).map(drop),
                "`in 0 minutes`: the delay must be between one minute and ten years",
            ),
            (Err(CronError::ClockOutOfRange), "the clock is out of range"),
        ];
        for (got, want) in table {
            assert_eq!(got.unwrap_err().to_string(), want);
        }
        let crontab = parse_cron("0 0 8 * * 1-5").unwrap_err().to_string();
        let head = "`0 0 8 * * 1-5` is not a 5-field crontab (minute hour day-of-month month day-of-week, e.g. \
                    `0 8 * * 1-5` for 8:00 on weekdays): ";
        assert!(crontab.starts_with(head), "{crontab}");
    }

    /// Forms from other crons fire as they do there: (expression, after, the next fire times).
    #[test]
    fn other_crons_forms_fire_as_there() {
        let utc = chrono_tz::UTC;
        let cases: [(&str, &str, &[&str]); 6] = [
            ("0/15 * * * *", "2025-03-10T12:01:00Z", &["2025-03-10T12:15:00+00:00", "2025-03-10T12:30:00+00:00"]),
            ("5/15 * * * *", "2025-03-10T12:01:00Z", &["2025-03-10T12:05:00+00:00", "2025-03-10T12:20:00+00:00"]),
            // February 2025 has no 29th: the next is March 29th; in February only leap years match.
            ("0 9 29-L * *", "2025-02-01T00:00:00Z", &["2025-03-29T09:00:00+00:00", "2025-03-30T09:00:00+00:00"]),
            ("0 9 29-L 2 *", "2024-01-01T00:00:00Z", &["2024-02-29T09:00:00+00:00", "2028-02-29T09:00:00+00:00"]),
            ("0 9 * * 5L", "2025-03-01T00:00:00Z", &["2025-03-28T09:00:00+00:00", "2025-04-25T09:00:00+00:00"]),
            ("0 9 * * L5", "2025-03-01T00:00:00Z", &["2025-03-28T09:00:00+00:00", "2025-04-25T09:00:00+00:00"]),
        ];
        for (expr, after, want) in cases {
            let cron = parse_cron(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
            let got: Vec<String> =
                fire_times(&cron, utc, ms(after), want.len()).into_iter().map(|t| rfc3339(t, utc)).collect();
            assert_eq!(got, want, "{expr}");
        }
        let hour = parse_cron("0 25 * * *").unwrap_err().to_string();
        assert_eq!(hour, "`0 25 * * *`: the hour field `25` has 25, which is out of range: hours are 0-23");
    }
}

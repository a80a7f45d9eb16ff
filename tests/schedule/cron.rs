//! Next fire times: tables of fixed start times and expected times (with the zone's offset) for
//! the 5-field syntax (names, ranges, steps, lists, the day-of-month / day-of-week OR rule and
//! croner's extensions) and for daylight-saving changes in New York, Berlin and Sao Paulo:
//! a time in a skipped hour runs once right after the gap, a time in a repeated hour runs once.

use butler::schedule::cron::{fire_times, parse_cron, parse_tz, rfc3339};

fn ms(s: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp_millis()
}

/// Checks `(pattern, zone, start, expected next times)` rows.
fn check(rows: &[(&str, &str, &str, &[&str])]) {
    for (pattern, zone, start, want) in rows {
        let cron = parse_cron(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        let tz = parse_tz(zone).unwrap();
        let got: Vec<String> =
            fire_times(&cron, tz, ms(start), want.len()).into_iter().map(|t| rfc3339(t, tz)).collect();
        assert_eq!(got, *want, "`{pattern}` in {zone} after {start}");
    }
}

#[test]
fn five_field_syntax() {
    check(&[
        // Names of months and weekdays.
        (
            "0 9 * JAN,FEB MON",
            "UTC",
            "2025-01-01T00:00:00Z",
            &["2025-01-06T09:00:00+00:00", "2025-01-13T09:00:00+00:00"],
        ),
        ("0 12 * * SUN", "UTC", "2025-01-01T00:00:00Z", &["2025-01-05T12:00:00+00:00"]),
        ("0 12 * * 7", "UTC", "2025-01-01T00:00:00Z", &["2025-01-05T12:00:00+00:00"]),
        // Ranges, steps, ranges with steps, lists.
        (
            "0 9-11 * * *",
            "UTC",
            "2025-01-01T00:00:00Z",
            &[
                "2025-01-01T09:00:00+00:00",
                "2025-01-01T10:00:00+00:00",
                "2025-01-01T11:00:00+00:00",
                "2025-01-02T09:00:00+00:00",
            ],
        ),
        (
            "*/20 * * * *",
            "UTC",
            "2025-01-01T00:00:00Z",
            &["2025-01-01T00:20:00+00:00", "2025-01-01T00:40:00+00:00", "2025-01-01T01:00:00+00:00"],
        ),
        (
            "10-50/20 * * * *",
            "UTC",
            "2025-01-01T00:00:00Z",
            &[
                "2025-01-01T00:10:00+00:00",
                "2025-01-01T00:30:00+00:00",
                "2025-01-01T00:50:00+00:00",
                "2025-01-01T01:10:00+00:00",
            ],
        ),
        (
            "0 0 1,15 * *",
            "UTC",
            "2025-01-01T00:00:00Z",
            &["2025-01-15T00:00:00+00:00", "2025-02-01T00:00:00+00:00", "2025-02-15T00:00:00+00:00"],
        ),
        // Both day fields restricted: either matches (the 13th, or any Friday).
        (
            "0 0 13 * 5",
            "UTC",
            "2025-01-01T00:00:00Z",
            &[
                "2025-01-03T00:00:00+00:00",
                "2025-01-10T00:00:00+00:00",
                "2025-01-13T00:00:00+00:00",
                "2025-01-17T00:00:00+00:00",
            ],
        ),
        // croner's `+`: both must match (Friday the 13th).
        ("0 0 13 * +5", "UTC", "2025-01-01T00:00:00Z", &["2025-06-13T00:00:00+00:00", "2026-02-13T00:00:00+00:00"]),
        // Last day, last Friday, nearest weekday, nth weekday, nicknames.
        (
            "0 0 L * *",
            "UTC",
            "2025-01-01T00:00:00Z",
            &["2025-01-31T00:00:00+00:00", "2025-02-28T00:00:00+00:00", "2025-03-31T00:00:00+00:00"],
        ),
        (
            "0 0 * * 5#L",
            "UTC",
            "2025-01-01T00:00:00Z",
            &["2025-01-31T00:00:00+00:00", "2025-02-28T00:00:00+00:00", "2025-03-28T00:00:00+00:00"],
        ),
        (
            "0 0 15W * *",
            "UTC",
            "2025-01-01T00:00:00Z",
            &["2025-01-15T00:00:00+00:00", "2025-02-14T00:00:00+00:00", "2025-03-14T00:00:00+00:00"],
        ),
        (
            "0 0 * * MON#1",
            "UTC",
            "2025-01-01T00:00:00Z",
            &["2025-01-06T00:00:00+00:00", "2025-02-03T00:00:00+00:00", "2025-03-03T00:00:00+00:00"],
        ),
        ("@daily", "UTC", "2025-01-01T00:00:00Z", &["2025-01-02T00:00:00+00:00", "2025-01-03T00:00:00+00:00"]),
        // Every weekday at 8, in the zone: winter and summer offsets.
        (
            "0 8 * * 1-5",
            "Europe/Berlin",
            "2025-01-03T12:00:00Z",
            &["2025-01-06T08:00:00+01:00", "2025-01-07T08:00:00+01:00"],
        ),
        ("0 8 * * 1-5", "America/New_York", "2025-07-04T13:00:00Z", &["2025-07-07T08:00:00-04:00"]),
        ("0 8 * * *", "America/Sao_Paulo", "2025-06-01T00:00:00Z", &["2025-06-01T08:00:00-03:00"]),
    ]);
}

#[test]
fn not_five_fields_or_never_firing() {
    for bad in ["61 * * * *", "* * * *", "0 0 8 * * 1", "0 0 * * MOON", "0 25 * * *", "*/0 * * * *", ""] {
        assert!(parse_cron(bad).is_err(), "`{bad}` should be refused");
    }
    let feb30 = parse_cron("0 0 30 2 *").unwrap();
    assert!(fire_times(&feb30, chrono_tz::UTC, ms("2025-01-01T00:00:00Z"), 1).is_empty(), "February 30th never comes");
}

#[test]
fn new_york_transitions() {
    check(&[
        // 2025-03-09 02:00 EST -> 03:00 EDT: 02:30 does not exist, it runs once at 03:00.
        (
            "30 2 * * *",
            "America/New_York",
            "2025-03-08T12:00:00Z",
            &["2025-03-09T03:00:00-04:00", "2025-03-10T02:30:00-04:00"],
        ),
        (
            "0 2 * * *",
            "America/New_York",
            "2025-03-08T12:00:00Z",
            &["2025-03-09T03:00:00-04:00", "2025-03-10T02:00:00-04:00"],
        ),
        // An interval job skips the instants that do not exist.
        (
            "*/30 * * * *",
            "America/New_York",
            "2025-03-09T06:00:00Z",
            &["2025-03-09T01:30:00-05:00", "2025-03-09T03:00:00-04:00", "2025-03-09T03:30:00-04:00"],
        ),
        // 2025-11-02 02:00 EDT -> 01:00 EST: 01:30 happens twice, the job runs once.
        (
            "30 1 * * *",
            "America/New_York",
            "2025-11-01T12:00:00Z",
            &["2025-11-02T01:30:00-04:00", "2025-11-03T01:30:00-05:00"],
        ),
        // Started between the two passes: still not the second one.
        ("30 1 * * *", "America/New_York", "2025-11-02T05:45:00Z", &["2025-11-03T01:30:00-05:00"]),
        // Hourly stays hourly in real time: both 01:00s are distinct hours.
        (
            "0 * * * *",
            "America/New_York",
            "2025-11-02T04:00:00Z",
            &["2025-11-02T01:00:00-04:00", "2025-11-02T01:00:00-05:00", "2025-11-02T02:00:00-05:00"],
        ),
    ]);
}

#[test]
fn berlin_transitions() {
    check(&[
        // 2025-03-30 02:00 CET -> 03:00 CEST.
        (
            "30 2 * * *",
            "Europe/Berlin",
            "2025-03-29T12:00:00Z",
            &["2025-03-30T03:00:00+02:00", "2025-03-31T02:30:00+02:00"],
        ),
        (
            "15 2 * * SUN",
            "Europe/Berlin",
            "2025-03-29T12:00:00Z",
            &["2025-03-30T03:00:00+02:00", "2025-04-06T02:15:00+02:00"],
        ),
        (
            "0 8 * * 1-5",
            "Europe/Berlin",
            "2025-03-28T12:00:00Z",
            &["2025-03-31T08:00:00+02:00", "2025-04-01T08:00:00+02:00"],
        ),
        // 2025-10-26 03:00 CEST -> 02:00 CET: 02:30 happens twice, the job runs once.
        (
            "30 2 * * *",
            "Europe/Berlin",
            "2025-10-25T12:00:00Z",
            &["2025-10-26T02:30:00+02:00", "2025-10-27T02:30:00+01:00"],
        ),
        ("30 2 * * *", "Europe/Berlin", "2025-10-26T00:45:00Z", &["2025-10-27T02:30:00+01:00"]),
    ]);
}

#[test]
fn sao_paulo_transitions() {
    check(&[
        // 2018-11-04 00:00 -03 -> 01:00 -02: midnight does not exist; the run comes at 01:00.
        (
            "0 0 * * *",
            "America/Sao_Paulo",
            "2018-11-03T12:00:00Z",
            &["2018-11-04T01:00:00-02:00", "2018-11-05T00:00:00-02:00"],
        ),
        (
            "30 0 * * *",
            "America/Sao_Paulo",
            "2018-11-03T12:00:00Z",
            &["2018-11-04T01:00:00-02:00", "2018-11-05T00:30:00-02:00"],
        ),
        // 2019-02-17 00:00 -02 -> 2019-02-16 23:00 -03: 23:30 on the 16th happens twice, runs once.
        (
            "30 23 * * *",
            "America/Sao_Paulo",
            "2019-02-16T12:00:00Z",
            &["2019-02-16T23:30:00-02:00", "2019-02-17T23:30:00-03:00"],
        ),
        ("30 23 * * *", "America/Sao_Paulo", "2019-02-17T01:45:00Z", &["2019-02-17T23:30:00-03:00"]),
    ]);
}

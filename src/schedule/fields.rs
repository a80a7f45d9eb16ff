//! The five fields of a crontab read one by one before croner sees them: each value checked
//! against its field's range (so an hour of 25 is reported as the hour field, not as "not a
//! crontab"), and the forms people bring from other crons rewritten to croner's own:
//! - Vixie/Quartz single-number steps: `0/15` = every 15 from 0 to the field's end (`0-59/15`);
//! - `29-L` in the day of month: the 29th to the month's last day (`29-31`; a day past the
//!   month's end never matches, so this is exact in every month);
//! - croniter's `L5` in the day of week: the month's last Friday (croner writes `5L`).
//!
//! It never decides fire times: croner does. It must reject nothing croner reads correctly.

/// One field that cannot be read: which, the value as written and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FieldError {
    pub field: &'static str,
    pub value: String,
    pub reason: String,
}

struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    /// Names allowed in place of numbers (lower case; index + `min` is the number).
    names: &'static [&'static str],
    /// `L`, `W`, `#` and `?` forms allowed (day of month / day of week).
    special: bool,
}

const FIELDS: [Field; 5] = [
    Field { name: "minute", min: 0, max: 59, names: &[], special: false },
    Field { name: "hour", min: 0, max: 23, names: &[], special: false },
    Field { name: "day-of-month", min: 1, max: 31, names: &[], special: true },
    Field {
        name: "month",
        min: 1,
        max: 12,
        names: &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
        special: false,
    },
    Field {
        name: "day-of-week",
        min: 0,
        max: 7,
        names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
        special: true,
    },
];

/// The expression in croner's dialect, or the first field that cannot be read. Nicknames
/// (`@daily`) and a wrong number of fields are left to croner, which names them.
pub(super) fn normalize(expr: &str) -> Result<String, FieldError> {
    let parts: Vec<&str> = expr.split_whitespace().collect();
    if expr.starts_with('@') || parts.len() != FIELDS.len() {
        return Ok(expr.to_string());
    }
    let mut out = Vec::with_capacity(parts.len());
    for (part, field) in parts.iter().zip(&FIELDS) {
        // croner's `+` before the day of week (both day fields must match) is kept as it is.
        let (plus, list) = match part.strip_prefix('+') {
            Some(rest) if field.name == "day-of-week" => ("+", rest),
            _ => ("", *part),
        };
        let items: Result<Vec<String>, String> = list.split(',').map(|item| rewrite(item, field)).collect();
        match items {
            Ok(items) => out.push(format!("{plus}{}", items.join(","))),
            Err(reason) => return Err(FieldError { field: field.name, value: part.to_string(), reason }),
        }
    }
    Ok(out.join(" "))
}

/// One comma-separated item of a field, checked and rewritten.
fn rewrite(item: &str, f: &Field) -> Result<String, String> {
    if item.is_empty() {
        return Err("has an empty list item".into());
    }
    let (base, step) = match item.split_once('/') {
        Some((base, step)) => (base, Some(step)),
        None => (item, None),
    };
    if let Some(step) = step {
        let n: u32 = step.parse().map_err(|_| format!("has the step `{step}`, which is not a whole number"))?;
        if n == 0 || n > f.max {
            return Err(format!("has the step {n}; steps are 1-{}", f.max));
        }
    }
    let lower = base.to_ascii_lowercase();
    let base = if f.special && f.name == "day-of-week" && lower.len() == 2 && lower.starts_with('l') {
        // croniter's `L5` is croner's `5L`.
        format!("{}L", &base[1..])
    } else {
        base.to_string()
    };
    let value = |v: &str| -> Result<(), String> { check_value(v, f) };
    let base = match base.split_once('-') {
        _ if base == "*" || (f.special && base == "?") => base,
        Some((from, to)) if f.name == "day-of-month" && to.eq_ignore_ascii_case("l") => {
            value(from)?;
            format!("{from}-{}", f.max)
        }
        Some((from, to)) => {
            value(from)?;
            value(to)?;
            base
        }
        None if step.is_some() && number(&base).is_some() => {
            // `0/15`: from the number to the field's end.
            value(&base)?;
            format!("{base}-{}", f.max)
        }
        None => {
            value(&base)?;
            base
        }
    };
    Ok(match step {
        Some(step) => format!("{base}/{step}"),
        None => base,
    })
}

fn number(v: &str) -> Option<u32> {
    (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())).then(|| v.parse().ok()).flatten()
}

/// A single value of the field: a number in range, a name, or (day fields) an `L`/`W`/`#` form
/// whose numbers are in range.
fn check_value(v: &str, f: &Field) -> Result<(), String> {
    let out_of_range = |n: u32| format!("has {n}, which is out of range: {} are {}-{}", plural(f.name), f.min, f.max);
    // A plain number or name of this field.
    let plain = |v: &str| -> Option<Result<(), String>> {
        if let Some(n) = number(v) {
            return Some(if (f.min..=f.max).contains(&n) { Ok(()) } else { Err(out_of_range(n)) });
        }
        f.names.contains(&v).then_some(Ok(()))
    };
    let lower = v.to_ascii_lowercase();
    if let Some(r) = plain(&lower) {
        return r;
    }
    let special = match (f.special, f.name) {
        (false, _) => None,
        (true, "day-of-month") => match lower.as_str() {
            "l" | "lw" => Some(Ok(())),
            _ => lower.strip_suffix('w').and_then(|d| number(d).map(|_| d)).and_then(plain),
        },
        (true, _) => match lower.split_once('#') {
            _ if lower == "l" => Some(Ok(())),
            Some((day, nth)) => plain(day).map(|r| {
                r.and_then(|()| match number(nth) {
                    Some(1..=5) => Ok(()),
                    _ if nth == "l" => Ok(()),
                    _ => Err(format!("has `#{nth}`; the week of the month is 1-5 or L (the last)")),
                })
            }),
            None => lower.strip_suffix('l').and_then(plain),
        },
    };
    if let Some(r) = special {
        return r;
    }
    let names = if f.names.is_empty() { String::new() } else { format!(" or a name ({})", f.names.join(", ")) };
    Err(format!("has `{v}`, which is not a value: {} are {}-{}{names}", plural(f.name), f.min, f.max))
}

fn plural(field: &str) -> &'static str {
    match field {
        "minute" => "minutes",
        "hour" => "hours",
        "day-of-month" => "days of the month",
        "month" => "months",
        _ => "days of the week (0 or 7 is Sunday)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_table() {
        let cases = [
            ("0 8 * * 1-5", "0 8 * * 1-5"),
            ("0/15 * * * *", "0-59/15 * * * *"),
            ("5/15 * * * *", "5-59/15 * * * *"),
            ("0 0/6 * * *", "0 0-23/6 * * *"),
            ("*/10 * * * *", "*/10 * * * *"),
            ("0 9 29-L * *", "0 9 29-31 * *"),
            ("0 9 L * *", "0 9 L * *"),
            ("0 9 * * 5L", "0 9 * * 5L"),
            ("0 9 * * L5", "0 9 * * 5L"),
            ("0 9 * * 1#2", "0 9 * * 1#2"),
            ("0 9 15W * *", "0 9 15W * *"),
            ("0 9 * JAN,jul MON-FRI", "0 9 * JAN,jul MON-FRI"),
            ("@daily", "@daily"),
            ("0 0 13 * +5", "0 0 13 * +5"),
            ("0 0 * * 5#L", "0 0 * * 5#L"),
            ("0 0 * * MON#1", "0 0 * * MON#1"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input).as_deref(), Ok(want), "{input}");
        }
    }

    #[test]
    fn errors_name_the_field_table() {
        // (expression, field, start of the reason)
        let cases = [
            ("0 25 * * *", "hour", "has 25, which is out of range: hours are 0-23"),
            ("60 * * * *", "minute", "has 60, which is out of range"),
            ("0 8 32 * *", "day-of-month", "has 32, which is out of range"),
            ("0 8 0 * *", "day-of-month", "has 0, which is out of range"),
            ("0 8 * 13 *", "month", "has 13, which is out of range"),
            ("0 8 * * 8", "day-of-week", "has 8, which is out of range"),
            ("0 8 * foo *", "month", "has `foo`, which is not a value"),
            ("*/0 * * * *", "minute", "has the step 0"),
            ("*/x * * * *", "minute", "has the step `x`"),
            ("0 8 * * 9L", "day-of-week", "has 9, which is out of range"),
            ("1,,2 * * * *", "minute", "has an empty list item"),
            ("0 8 * * 1#6", "day-of-week", "has `#6`"),
            ("0 8 40W * *", "day-of-month", "has 40, which is out of range"),
        ];
        for (expr, field, reason) in cases {
            let e = normalize(expr).unwrap_err();
            assert_eq!(e.field, field, "{expr}: {e:?}");
            assert!(e.reason.starts_with(reason), "{expr}: {}", e.reason);
        }
    }
}

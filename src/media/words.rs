//! The small words of media texts: sizes (`31.5 MB`), durations (`3 min 2 s`), counts
//! (`12,345`), quoted names, and a phrase made a sentence. Shared by the errors and the blocks so
//! every text reads the same.
//!
//! Pure formatting: this file must never touch the disk, the network, or a secret.

/// `512 bytes`, `3.4 KB`, `120 KB`, `2.0 MB`, `31.5 MB`, `20 MB` (binary units, as `[media]
/// max_bytes` counts them).
pub fn size(bytes: u64) -> String {
    const UNITS: &[&str] = &["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return if bytes == 1 { "1 byte".into() } else { format!("{bytes} bytes") };
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let rounded = (value * 10.0).round() / 10.0;
    let number = if rounded < 10.0 || (rounded < 100.0 && rounded.fract() != 0.0) {
        format!("{rounded:.1}")
    } else {
        format!("{}", rounded.round() as u64)
    };
    format!("{number} {}", UNITS[unit])
}

/// `7 s`, `3 min 2 s`, `1 h 5 min`.
pub fn duration(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 if secs.is_multiple_of(60) => format!("{} min", secs / 60),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        _ if (secs % 3600) < 60 => format!("{} h", secs / 3600),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}

/// `12345` -> `12,345`.
pub fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A name between double quotes, with its own double quotes and brackets made harmless so it
/// cannot end the block it sits in.
pub fn quoted(name: &str) -> String {
    let inner: String = name
        .chars()
        .map(|c| match c {
            '"' => '\'',
            '[' => '(',
            ']' => ')',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    format!("\"{inner}\"")
}

/// A phrase as a sentence: first letter upper case, a final period unless it ends in one.
pub fn sentence(phrase: &str) -> String {
    let mut chars = phrase.trim().chars();
    let Some(first) = chars.next() else { return String::new() };
    let mut out: String = first.to_uppercase().chain(chars).collect();
    if !out.ends_with(['.', '!', '?']) {
        out.push('.');
    }
    out
}

/// At most `max` characters of `text`, cut at a word boundary when one is near, with `…`.
pub fn shorten(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    let at = match cut.rfind(char::is_whitespace) {
        Some(i) if i > cut.len() * 3 / 4 => i,
        _ => cut.len(),
    };
    format!("{}…", cut[..at].trim_end())
}

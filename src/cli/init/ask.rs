//! The questions of `butler init`: one prompt, one line read from stdin; secrets read with the
//! terminal's echo off; yes/no with a stated default.
//!
//! It must never print what was typed for a secret, and never leave the terminal without echo
//! (the echo comes back even when reading fails).

use std::io::{BufRead, Write};

/// Input ended (Ctrl-D, a closed pipe): nothing more can be asked.
#[derive(Debug)]
pub(super) struct Ended;

/// Asks `question` (the default shown in brackets by the caller) and returns the trimmed answer.
pub(super) fn line(question: &str) -> Result<String, Ended> {
    print!("{question}");
    let _ = std::io::stdout().flush();
    read_line()
}

/// Asks for a secret: what is typed is not shown.
pub(super) fn secret(question: &str) -> Result<String, Ended> {
    // Echo goes off before the question shows: an answer typed (or pasted) the moment the
    // question appears is never echoed.
    let echo = EchoOff::new();
    print!("{question}");
    let _ = std::io::stdout().flush();
    let answer = read_line();
    if echo.was_off() {
        // The Enter that ended the line was not echoed either.
        println!();
    }
    drop(echo);
    answer
}

/// A yes/no question; Enter gives `default`.
pub(super) fn yes_no(question: &str, default: bool) -> Result<bool, Ended> {
    let hint = if default { "[Y/n]" } else { "[y/N]" };
    loop {
        match line(&format!("{question} {hint}: "))?.to_ascii_lowercase().as_str() {
            "" => return Ok(default),
            "y" | "yes" => return Ok(true),
            "n" | "no" => return Ok(false),
            _ => println!("  please answer y or n"),
        }
    }
}

/// One of `choices` (by number or by name); Enter gives the first.
pub(super) fn choice<'a>(question: &str, choices: &[&'a str]) -> Result<&'a str, Ended> {
    loop {
        let answer = line(question)?;
        if answer.is_empty() {
            return Ok(choices[0]);
        }
        if let Some(c) = answer.parse::<usize>().ok().and_then(|n| n.checked_sub(1)).and_then(|i| choices.get(i)) {
            return Ok(c);
        }
        if let Some(c) = choices.iter().find(|c| c.eq_ignore_ascii_case(&answer)) {
            return Ok(c);
        }
        println!("  please answer 1 to {}", choices.len());
    }
}

fn read_line() -> Result<String, Ended> {
    let mut buf = String::new();
    match std::io::stdin().lock().read_line(&mut buf) {
        Ok(0) | Err(_) => Err(Ended),
        Ok(_) => Ok(buf.trim().to_string()),
    }
}

/// The terminal's echo turned off for as long as this lives (nothing happens when stdin is
/// not a terminal).
struct EchoOff {
    saved: Option<libc::termios>,
}

impl EchoOff {
    fn new() -> Self {
        // SAFETY: tcgetattr/tcsetattr on fd 0 with a termios owned here; failures leave the
        // terminal as it was.
        unsafe {
            if libc::isatty(0) != 1 {
                return Self { saved: None };
            }
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return Self { saved: None };
            }
            let saved = t;
            t.c_lflag &= !libc::ECHO;
            t.c_lflag |= libc::ICANON;
            if libc::tcsetattr(0, libc::TCSANOW, &t) != 0 {
                return Self { saved: None };
            }
            Self { saved: Some(saved) }
        }
    }

    fn was_off(&self) -> bool {
        self.saved.is_some()
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(saved) = self.saved.take() {
            // SAFETY: restores the settings read in `new` on the same fd.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &saved);
            }
        }
    }
}

//! The message asking a person for an approval ([`approval_notice`]): the summary, then what
//! exactly the call would do (its [`Detail`]) in a code block, who asked and when it expires,
//! with buttons (or the commands that answer); a question's message (its options as buttons or
//! numbered). How much of the detail the message carries depends on where it is shown
//! ([`Room`], from the channel's `Caps`):
//! - a client that renders Markdown itself (the web page, the terminal) gets the whole detail
//!   when it fits the channel's `max_len`: the page folds a long block behind "Show all", the
//!   terminal prints it;
//! - a chat platform (Telegram, Slack, Discord) gets at most [`PREVIEW_LINES`] lines and
//!   [`PREVIEW_CHARS`] characters (less if its `max_len` needs it), "… N more lines", and the
//!   whole detail as a file sent with the message ([`DetailFile`]), as does a Markdown client
//!   whose `max_len` is too short.
//!
//! Pure functions over the approval row: nothing here reads or writes the store or a file,
//! and nothing here may show more than the row holds (its summary and detail are masked when
//! the row is made).

use crate::store::{ApprovalKind, ApprovalRow, Detail, DetailKind, NewOutbox};
use butler_channel::{Button, ButtonStyle, Caps, TextFormat};

/// Most lines of a detail a chat message shows.
pub const PREVIEW_LINES: usize = 30;
/// Most characters of a detail a chat message shows.
pub const PREVIEW_CHARS: usize = 1_500;
/// Characters kept free in a message for the fences and the "… N more lines" note.
const NOTE_ROOM: usize = 200;

/// Where an approval request is shown: what its channel can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Room {
    /// Buttons answer it (else the message says which commands do).
    pub buttons: bool,
    /// The longest message the channel takes.
    pub max_len: usize,
    /// The client renders Markdown itself (the web page, the terminal): it may get the whole
    /// detail in the message.
    pub whole: bool,
}

impl Room {
    /// The room of a channel with these capabilities.
    pub fn of(caps: &Caps) -> Self {
        Self { buttons: caps.buttons, max_len: caps.max_len, whole: caps.format == TextFormat::Markdown }
    }

    /// No channel to show it on (nothing is delivered): no buttons, a chat platform's length.
    pub fn none() -> Self {
        Self { buttons: false, max_len: 4_096, whole: false }
    }

    /// Text with no length limit that renders Markdown (the OpenAI-compatible API's answers).
    pub fn text() -> Self {
        Self { buttons: false, max_len: usize::MAX, whole: true }
    }
}

/// A detail too long for its message, sent whole as a text file right after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetailFile {
    /// The outbox key of the file's message (`approval:<id>:detail`).
    pub key: String,
    pub conversation: String,
    /// The file's name as shown (`diff-0123abcd.diff`).
    pub name: String,
    pub mime: &'static str,
    /// The text sent with the file.
    pub caption: String,
    /// The whole detail.
    pub text: String,
}

/// An approval request's message, and the file with its whole detail when the message shows
/// only the start of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub message: NewOutbox,
    pub file: Option<DetailFile>,
}

/// The message asking for `row` (asked by `asker`), as `room` can show it.
pub(crate) fn approval_notice(row: &ApprovalRow, asker: &str, room: Room) -> Notice {
    if row.kind == ApprovalKind::Question {
        return Notice { message: question_notice(row, asker, room.buttons), file: None };
    }
    let minutes = ((row.expires_ms - row.created_ms) / 60_000).max(1);
    let head = format!("🔐 **Approval needed**: Butler wants to {}.", row.summary);
    let mut tail = format!("Asked by {asker}; this request expires in {minutes} minutes.");
    if !room.buttons {
        tail.push_str(&format!("\nReply `/approve {id}` or `/deny {id}`.", id = row.id));
    }
    let (block, file) = match &row.detail {
        Some(detail) => detail_block(row, detail, room, units(&head) + units(&tail)),
        None => (String::new(), None),
    };
    let text = if block.is_empty() { format!("{head}\n{tail}") } else { format!("{head}\n{block}\n{tail}") };
    let message = NewOutbox::message(super::approval::approval_key(&row.id), row.conversation.clone(), text)
        .with_buttons(vec![
            Button::new("Approve once", format!("ap:{}:once", row.id), ButtonStyle::Primary),
            Button::new("Always for this session", format!("ap:{}:session", row.id), ButtonStyle::Default),
            Button::new("Deny", format!("ap:{}:deny", row.id), ButtonStyle::Danger),
        ]);
    Notice { message, file }
}

/// The detail as a code block (whole, or its start with a note), and the file with the whole of
/// it when only the start is shown. `beside` is the length of the rest of the message.
fn detail_block(row: &ApprovalRow, detail: &Detail, room: Room, beside: usize) -> (String, Option<DetailFile>) {
    let body = detail.text.trim_end_matches(['\n', '\r']);
    if body.is_empty() {
        return ("_(empty)_".to_string(), None);
    }
    let fence = "`".repeat(fence_len(body));
    let lang = match detail.kind {
        DetailKind::Content => "",
        DetailKind::Diff => "diff",
        DetailKind::Command => "sh",
        DetailKind::Request => "http",
        DetailKind::Arguments => "json",
    };
    let whole = format!("{fence}{lang}\n{body}\n{fence}");
    let fits = beside.saturating_add(units(&whole)).saturating_add(2) <= room.max_len;
    if room.whole && fits {
        return (whole, None);
    }
    let budget = PREVIEW_CHARS.min(room.max_len.saturating_sub(beside + NOTE_ROOM + 2 * fence.len() + lang.len()));
    let Some(cut) = head_of(body, PREVIEW_LINES, budget) else { return (whole, None) };
    let what = detail.kind.as_str();
    let ext = if detail.kind == DetailKind::Diff { "diff" } else { "txt" };
    let name = format!("{what}-{}.{ext}", row.id.get(..8).unwrap_or(&row.id));
    let more = match cut.more {
        More::Lines(n) => format!("{n} more line{}", if n == 1 { "" } else { "s" }),
        More::Chars(n) => format!("{n} more characters"),
    };
    let block =
        format!("{fence}{lang}\n{}\n{fence}\n_… {more}: the whole {what} is in the attached file {name}._", cut.shown);
    let lines = body.split('\n').count();
    let file = DetailFile {
        key: format!("{}:detail", super::approval::approval_key(&row.id)),
        conversation: row.conversation.clone(),
        name: name.clone(),
        mime: if detail.kind == DetailKind::Diff { "text/x-diff" } else { "text/plain" },
        caption: format!(
            "📎 The whole {what} of the approval request above ({lines} line{}).",
            if lines == 1 { "" } else { "s" }
        ),
        text: format!("{body}\n"),
    };
    (block, Some(file))
}

/// What a cut preview leaves out.
#[derive(Debug, PartialEq, Eq)]
enum More {
    /// Whole lines.
    Lines(usize),
    /// Characters of a first line too long to show whole (and of everything after it).
    Chars(usize),
}

/// The start of a text cut to fit.
#[derive(Debug, PartialEq, Eq)]
struct Cut {
    shown: String,
    more: More,
}

/// The first whole lines of `text` within `max_lines` lines and `max_chars` characters (a first
/// line longer than that is itself cut, ending in `…`), or `None` when all of it fits.
fn head_of(text: &str, max_lines: usize, max_chars: usize) -> Option<Cut> {
    let lines: Vec<&str> = text.split('\n').collect();
    let total = text.chars().count();
    if lines.len() <= max_lines && total <= max_chars {
        return None;
    }
    let (mut shown, mut used, mut count) = (String::new(), 0, 0);
    for line in lines.iter().take(max_lines) {
        let len = line.chars().count() + usize::from(count > 0);
        if used + len > max_chars {
            break;
        }
        if count > 0 {
            shown.push('\n');
        }
        shown.push_str(line);
        (used, count) = (used + len, count + 1);
    }
    if count == 0 {
        let keep = max_chars.saturating_sub(1);
        let shown = format!("{}…", lines[0].chars().take(keep).collect::<String>());
        return Some(Cut { shown, more: More::Chars(total - keep) });
    }
    Some(Cut { shown, more: More::Lines(lines.len() - count) })
}

/// Backticks of a fence no line of `body` closes: three, or one more than the longest run
/// that starts a line.
fn fence_len(body: &str) -> usize {
    let longest = body.lines().map(|l| l.trim_start().chars().take_while(|c| *c == '`').count()).max().unwrap_or(0);
    if longest >= 3 {
        longest + 1
    } else {
        3
    }
}

/// Length as the channels count it (UTF-16 units, never fewer than characters).
fn units(s: &str) -> usize {
    s.encode_utf16().count()
}

/// A question's message: the question, then one button per option (carrying only
/// `ap:<id>:<n>`, n = the option's index), or, without buttons, the options numbered; without
/// options, no buttons and "reply to answer".
fn question_notice(row: &ApprovalRow, asker: &str, buttons: bool) -> NewOutbox {
    let mut text = format!("❓ **Question for {asker}**: {}", row.summary);
    let mut shown = Vec::new();
    if row.options.is_empty() {
        text.push_str("\n_Reply to answer._");
    } else if buttons {
        text.push_str("\n_Pick one, or reply in your own words._");
        shown = row
            .options
            .iter()
            .enumerate()
            .map(|(n, option)| Button::new(option.clone(), format!("ap:{}:{n}", row.id), ButtonStyle::Default))
            .collect();
    } else {
        let numbered: Vec<String> = row.options.iter().enumerate().map(|(n, o)| format!("{}. {o}", n + 1)).collect();
        text.push_str(&format!("\n{} - reply with a number or your own words", numbered.join("  ")));
    }
    NewOutbox::message(super::approval::approval_key(&row.id), row.conversation.clone(), text).with_buttons(shown)
}

#[cfg(test)]
#[path = "notice_tests.rs"]
mod tests;

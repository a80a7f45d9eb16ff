//! Answers to a request on platforms without buttons (Signal, Matrix) or where people may also
//! react (WhatsApp): a reaction to the request message arrives as [`crate::EventBody::Action`]
//! with the action [`ANSWER_YES`], [`ANSWER_ALWAYS`] or [`ANSWER_NO`] and the reacted message's
//! platform id, and Butler
//! finds the request delivered as that message. A numbered reply quoting the request is an
//! ordinary message with `reply_to` set; Butler reads the number.
//!
//! Only the vocabulary lives here: it must never decide what a request is or who may answer.

/// A thumbs-up on a request: approve once (or the first option).
pub const ANSWER_YES: &str = "#yes";
/// A thumbs-down on a request: deny.
pub const ANSWER_NO: &str = "#no";
/// 🔁 on a request: approve it from now on (the request's option that is neither the first
/// approval nor the denial).
pub const ANSWER_ALWAYS: &str = "#always";

/// The reactions Butler puts under a request on platforms where people answer by reacting
/// (Matrix): once, always, deny.
pub const ANSWER_REACTIONS: [&str; 3] = ["✅", "🔁", "❌"];

/// The choices of a request as a line people answer by number ("Reply to this message with a
/// number: 1 Approve once · 2 Deny"), for platforms without buttons; each adds how else to answer.
pub fn numbered_choices(buttons: &[crate::Button]) -> String {
    let numbered: Vec<String> = buttons.iter().enumerate().map(|(n, b)| format!("{} {}", n + 1, b.label)).collect();
    format!("Reply to this message with a number: {}", numbered.join(" · "))
}

/// What a reaction with `emoji` answers, if anything: 👍 (any skin tone) or ✅ yes, 🔁 always,
/// 👎 or ❌ no.
pub fn reaction_answer(emoji: &str) -> Option<&'static str> {
    // Skin tones (U+1F3FB..U+1F3FF) and the variation selector do not change the meaning.
    let base: String =
        emoji.chars().filter(|c| !matches!(*c, '\u{1F3FB}'..='\u{1F3FF}' | '\u{FE0F}' | '\u{FE0E}')).collect();
    match base.as_str() {
        "👍" | "✅" | "✔" => Some(ANSWER_YES),
        "🔁" => Some(ANSWER_ALWAYS),
        "👎" | "❌" => Some(ANSWER_NO),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn thumbs_answer_and_other_reactions_do_not() {
        let cases = [
            ("👍", Some("#yes")),
            ("👍🏽", Some("#yes")),
            ("👎🏿", Some("#no")),
            ("👎", Some("#no")),
            ("✅", Some("#yes")),
            ("✔️", Some("#yes")),
            ("🔁", Some("#always")),
            ("❌", Some("#no")),
            ("❤️", None),
            ("😂", None),
            ("", None),
        ];
        for (emoji, want) in cases {
            assert_eq!(super::reaction_answer(emoji), want, "{emoji}");
        }
    }
}

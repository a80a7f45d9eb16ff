//! Answers to a request on platforms without buttons (Signal) or where people may also react
//! (WhatsApp): a reaction to the request message arrives as [`crate::EventBody::Action`] with
//! the action [`ANSWER_YES`] or [`ANSWER_NO`] and the reacted message's platform id, and Butler
//! finds the request delivered as that message. A numbered reply quoting the request is an
//! ordinary message with `reply_to` set; Butler reads the number.
//!
//! Only the vocabulary lives here: it must never decide what a request is or who may answer.

/// A thumbs-up on a request: approve once (or the first option).
pub const ANSWER_YES: &str = "#yes";
/// A thumbs-down on a request: deny.
pub const ANSWER_NO: &str = "#no";

/// What a reaction with `emoji` answers, if anything: 👍 (any skin tone) yes, 👎 no.
pub fn reaction_answer(emoji: &str) -> Option<&'static str> {
    // Skin tones (U+1F3FB..U+1F3FF) and the variation selector do not change the meaning.
    let base: String =
        emoji.chars().filter(|c| !matches!(*c, '\u{1F3FB}'..='\u{1F3FF}' | '\u{FE0F}' | '\u{FE0E}')).collect();
    match base.as_str() {
        "👍" => Some(ANSWER_YES),
        "👎" => Some(ANSWER_NO),
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
            ("❤️", None),
            ("😂", None),
            ("", None),
        ];
        for (emoji, want) in cases {
            assert_eq!(super::reaction_answer(emoji), want, "{emoji}");
        }
    }
}

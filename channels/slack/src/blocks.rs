//! One outbound message as Slack Block Kit: the text rendered to mrkdwn and split into section
//! blocks of at most 3,000 characters (never inside a code block: a split closes and reopens
//! the fence), the buttons as one actions block, and a short fallback `text` for
//! notifications. The delivery worker has already cut the reply into messages of at most
//! [`MESSAGE_MAX`] characters.
//!
//! Nothing here talks to Slack; it must never drop text silently (a message that would need
//! more than Slack's 50 blocks ends with a visible note, and is logged).

use crate::render::to_mrkdwn;
use butler_channel::{chunk_text, Button, ButtonStyle, ChunkLimit};
use slack_morphism::prelude::*;

/// Characters of mrkdwn one section block may hold.
pub const SECTION_MAX: usize = 3_000;
/// Characters one message may hold (Slack truncates `text` beyond this).
pub const MESSAGE_MAX: usize = 40_000;
/// Blocks one message may hold.
pub const BLOCKS_MAX: usize = 50;
/// Characters of the notification fallback text.
const FALLBACK_MAX: usize = 3_000;
/// Characters of a button label.
const LABEL_MAX: usize = 75;

/// A message ready for chat.postMessage / chat.update.
#[derive(Debug)]
pub struct Rendered {
    /// The notification text (the start of the message).
    pub text: String,
    pub blocks: Vec<SlackBlock>,
}

/// The section texts for `markdown`: mrkdwn chunks of at most [`SECTION_MAX`] characters.
pub fn sections(markdown: &str) -> Vec<String> {
    let mrkdwn = to_mrkdwn(markdown);
    if mrkdwn.trim().is_empty() {
        return Vec::new();
    }
    chunk_text(&mrkdwn, ChunkLimit::Chars(SECTION_MAX))
}

/// Blocks and fallback text for a message with `markdown` and `buttons`.
pub fn render(markdown: &str, buttons: &[Button]) -> Rendered {
    let mut parts = sections(markdown);
    let room = BLOCKS_MAX - usize::from(!buttons.is_empty());
    if parts.len() > room {
        tracing::warn!(sections = parts.len(), "a Slack message needs more than 50 blocks; the end is cut");
        parts.truncate(room - 1);
        parts.push("_… (the rest did not fit in one Slack message)_".into());
    }
    let text = match parts.first() {
        Some(first) => first.chars().take(FALLBACK_MAX).collect(),
        None => String::new(),
    };
    let mut blocks: Vec<SlackBlock> = parts
        .into_iter()
        .map(|s| SlackSectionBlock::new().with_text(SlackBlockMarkDownText::new(s).into()).into())
        .collect();
    if !buttons.is_empty() {
        let elements = buttons.iter().enumerate().map(|(i, b)| button(i, b)).collect();
        blocks.push(SlackActionsBlock::new(elements).with_block_id("butler-actions".into()).into());
    }
    Rendered { text, blocks }
}

fn button(i: usize, b: &Button) -> SlackActionBlockElement {
    let label: String = b.label.chars().take(LABEL_MAX).collect();
    let el = SlackBlockButtonElement::new(label.as_str().into())
        .with_action_id(format!("butler-{i}").into())
        .with_value(b.action.clone());
    let el = match b.style {
        ButtonStyle::Primary => el.with_style(SlackBlockButtonStyle::Primary),
        ButtonStyle::Danger => el.with_style(SlackBlockButtonStyle::Danger),
        ButtonStyle::Default => el,
    };
    SlackActionBlockElement::Button(el)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn json(r: &Rendered) -> Vec<Value> {
        r.blocks.iter().map(|b| serde_json::to_value(b).unwrap()).collect()
    }

    #[test]
    fn short_text_with_buttons() {
        let buttons = vec![
            Button::new("Approve once", "ap:1:once", ButtonStyle::Primary),
            Button::new("Deny", "ap:1:deny", ButtonStyle::Danger),
            Button::new("Later", "ap:1:later", ButtonStyle::Default),
        ];
        let r = render("**Approval needed** for `rm`", &buttons);
        assert_eq!(r.text, "*Approval needed* for `rm`");
        let blocks = json(&r);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0]["type"], "section");
        assert_eq!(blocks[0]["text"]["type"], "mrkdwn");
        assert_eq!(blocks[1]["type"], "actions");
        let els = blocks[1]["elements"].as_array().unwrap();
        assert_eq!(els.len(), 3);
        assert_eq!(els[0]["type"], "button");
        assert_eq!(els[0]["value"], "ap:1:once");
        assert_eq!(els[0]["style"], "primary");
        assert_eq!(els[1]["style"], "danger");
        assert!(els[2].get("style").is_none());
        assert_eq!(els[0]["text"]["type"], "plain_text");
        let ids: std::collections::BTreeSet<_> = els.iter().map(|e| e["action_id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 3, "action ids are unique within the message");
    }

    #[test]
    fn long_text_splits_into_sections_without_breaking_code() {
        let code = format!("```python\n{}```", "print('x' * 40)  # a line of code\n".repeat(200));
        let text = format!("{}\n\n{code}\n\n{}", "Intro words. ".repeat(400), "Outro & more. ".repeat(300));
        assert!(text.chars().count() < MESSAGE_MAX);
        let r = render(&text, &[]);
        let blocks = json(&r);
        assert!(blocks.len() > 3 && blocks.len() <= BLOCKS_MAX);
        let mut joined = String::new();
        for b in &blocks {
            let t = b["text"]["text"].as_str().unwrap();
            assert!(t.chars().count() <= SECTION_MAX, "section of {}", t.chars().count());
            let fences = t.lines().filter(|l| l.trim_start().starts_with("```")).count();
            assert_eq!(fences % 2, 0, "a section with an unbalanced code fence: {t}");
            joined.push_str(t);
        }
        assert_eq!(joined.matches("a line of code").count(), 200, "no code line lost");
        assert_eq!(joined.matches("Outro &amp; more.").count(), 300);
        assert!(r.text.chars().count() <= FALLBACK_MAX);
    }

    #[test]
    fn too_many_blocks_end_with_a_note() {
        // Escaping can grow text: 40,000 characters of `&&&& ` become 168,000 of `&amp;`.
        let r = render(&"&&&& ".repeat(8_000), &[Button::new("Stop", "stop:1", ButtonStyle::Danger)]);
        assert_eq!(r.blocks.len(), BLOCKS_MAX);
        let blocks = json(&r);
        assert!(blocks[BLOCKS_MAX - 2]["text"]["text"].as_str().unwrap().contains("did not fit"));
        assert_eq!(blocks[BLOCKS_MAX - 1]["type"], "actions");
    }

    #[test]
    fn empty_text_has_no_sections() {
        assert!(render("  \n", &[]).blocks.is_empty());
    }
}

//! The system prompt, built once when a session opens and stored with it, so every turn sends
//! the same bytes (provider prompt caches depend on it). It must never contain per-turn data
//! such as the time, recalled memories or the user's latest message. The skills section is the
//! catalog at the session's opening: a running session keeps its bytes when skills change, a
//! new session sees the change.

use butler_channel::ConversationKind;

/// `skills` is the skills section of the prompt ([`crate::skills::prompt_section`]), `""` for none.
pub(crate) fn system_prompt(
    name: &str,
    instructions: Option<&str>,
    channel: &str,
    kind: ConversationKind,
    skills: &str,
) -> String {
    let place = match kind {
        ConversationKind::Direct => format!("a private conversation on {channel}"),
        ConversationKind::Group => format!(
            "a group conversation on {channel}; each user message starts with the speaker's name in brackets, \
             answer the person who addressed you"
        ),
    };
    let mut p = format!(
        "You are {name}, a personal assistant that people reach through their chat apps. \
         This is {place}.\n\
         \n\
         - Answer concisely; use Markdown sparingly (short paragraphs, lists, code blocks).\n\
         - Use tools when they help: `now` for the date and time, `remember` to keep durable facts the user \
         shares or asks you to keep, `recall` to look them up, `forget` to delete one.\n\
         - Never invent tool results. If a tool fails, say so briefly and continue if you can.\n\
         - Actions with side effects may need the user's approval; if one is denied, do not retry it."
    );
    if let Some(extra) = instructions.filter(|s| !s.trim().is_empty()) {
        p.push_str("\n\n");
        p.push_str(extra.trim());
    }
    if !skills.trim().is_empty() {
        p.push_str("\n\n");
        p.push_str(skills.trim_end());
    }
    p
}

//! Telegram's HTML parse mode as the Bot API server applies it: the tags and entities it knows,
//! nesting rules, and the visible text (whose length Telegram limits, in UTF-16 units). Errors
//! read like the server's ("can't parse entities: ..."). It must never accept what Telegram
//! would refuse: a test that passes here would fail against the real API otherwise.

/// A formatting span of the visible text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entity {
    /// `bold`, `italic`, `code`, `pre`, `text_link`, ...
    pub kind: String,
    /// The visible text it covers.
    pub text: String,
    /// `href` of a link, language of a code block.
    pub value: Option<String>,
}

fn kind_of(tag: &str) -> Option<&'static str> {
    Some(match tag {
        "b" | "strong" => "bold",
        "i" | "em" => "italic",
        "u" | "ins" => "underline",
        "s" | "strike" | "del" => "strikethrough",
        "tg-spoiler" | "span" => "spoiler",
        "a" => "text_link",
        "code" => "code",
        "pre" => "pre",
        "blockquote" => "blockquote",
        "tg-emoji" => "custom_emoji",
        _ => return None,
    })
}

struct Open {
    tag: String,
    kind: &'static str,
    start: usize,
    value: Option<String>,
}

/// Parses `html`; returns the visible text and its entities, or Telegram's error description.
pub fn parse(html: &str) -> Result<(String, Vec<Entity>), String> {
    let err = |what: String| Err(format!("Bad Request: can't parse entities: {what}"));
    let mut text = String::new();
    let mut entities = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    let bytes = html.as_bytes();
    let mut i = 0;
    while i < html.len() {
        match bytes[i] {
            b'&' => {
                let Some(end) = html[i..].find(';').map(|e| i + e) else {
                    return err(format!("Character entity expected at byte offset {i}"));
                };
                let name = &html[i + 1..end];
                let c = match name {
                    "lt" => '<',
                    "gt" => '>',
                    "amp" => '&',
                    "quot" => '"',
                    n if n.starts_with("#x") => {
                        u32::from_str_radix(&n[2..], 16).ok().and_then(char::from_u32).unwrap_or('\u{FFFD}')
                    }
                    n if n.starts_with('#') => n[1..].parse().ok().and_then(char::from_u32).unwrap_or('\u{FFFD}'),
                    _ => return err(format!("Unsupported HTML entity \"&{name};\" at byte offset {i}")),
                };
                text.push(c);
                i = end + 1;
            }
            b'>' => return err(format!("Unexpected end tag at byte offset {i}")),
            b'<' => {
                let Some(end) = html[i..].find('>').map(|e| i + e) else {
                    return err(format!("Unclosed start tag at byte offset {i}"));
                };
                let inner = &html[i + 1..end];
                if let Some(name) = inner.strip_prefix('/') {
                    let Some(open) = stack.pop() else {
                        return err(format!("Unexpected end tag at byte offset {i}"));
                    };
                    if open.tag != name.trim() {
                        return err(format!(
                            "Can't find end tag corresponding to start tag \"{}\" at byte offset {i}",
                            open.tag
                        ));
                    }
                    entities.push(Entity {
                        kind: open.kind.into(),
                        text: text[open.start..].to_string(),
                        value: open.value,
                    });
                } else {
                    let (name, attrs) = inner.split_once(' ').unwrap_or((inner, ""));
                    let Some(kind) = kind_of(name) else {
                        return err(format!("Unsupported start tag \"{name}\" at byte offset {i}"));
                    };
                    if let Some(top) = stack.last() {
                        let allowed = match top.kind {
                            "pre" => name == "code",
                            "code" => false,
                            _ => !(name == "a" && stack.iter().any(|o| o.kind == "text_link")),
                        };
                        if !allowed {
                            return err(format!(
                                "Unsupported start tag \"{name}\" inside \"{}\" at byte offset {i}",
                                top.tag
                            ));
                        }
                    }
                    let value = attr(attrs, if name == "a" { "href" } else { "class" });
                    if name == "a" && value.is_none() {
                        return err(format!("Can't find href of the link at byte offset {i}"));
                    }
                    stack.push(Open { tag: name.to_string(), kind, start: text.len(), value });
                }
                i = end + 1;
            }
            _ => {
                let c = html[i..].chars().next().unwrap_or('\u{FFFD}');
                text.push(c);
                i += c.len_utf8();
            }
        }
    }
    if let Some(open) = stack.last() {
        return err(format!("Can't find end tag corresponding to start tag \"{}\"", open.tag));
    }
    Ok((text, entities))
}

fn attr(attrs: &str, name: &str) -> Option<String> {
    let rest = attrs.split_once(&format!("{name}=\""))?.1;
    let value = rest.split_once('"')?.0;
    Some(value.replace("&amp;", "&").replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">"))
}

//! A small HTML-to-text converter for `web_fetch`: drops scripts, styles and other non-text
//! elements, keeps link targets as `text (url)`, decodes the common entities, turns block
//! elements into line breaks and collapses whitespace.
//!
//! It is a readable-text extractor, not a parser: it must never execute or fetch anything,
//! never panic on malformed input, and always finish in time linear in the input.

use reqwest::Url;

/// Elements whose content is never text for a reader.
const SKIPPED: &[&str] = &["script", "style", "noscript", "template", "svg", "iframe", "object"];

/// Elements that start and end a line.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "tr",
    "ul",
];

struct Tag<'a> {
    name: String,
    closing: bool,
    attrs: &'a str,
}

/// Readable text of `html`; relative links are resolved against `base` when given.
pub fn to_text(html: &str, base: Option<&Url>) -> String {
    let mut out = Out::default();
    let mut rest = html;
    // The open link: its target and where its text starts in the output.
    let mut link: Option<(String, usize)> = None;
    let mut title: Option<String> = None;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            out.text(&decode_entities(rest));
            break;
        };
        out.text(&decode_entities(&rest[..lt]));
        rest = &rest[lt..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |i| &after[i + 3..]);
            continue;
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            rest = rest.find('>').map_or("", |i| &rest[i + 1..]);
            continue;
        }
        let Some((tag, after)) = parse_tag(rest) else {
            // A `<` that starts no tag is text.
            out.text("<");
            rest = &rest[1..];
            continue;
        };
        rest = after;
        let name = tag.name.as_str();
        if !tag.closing && name == "title" && title.is_none() {
            let (inner, after) = raw_content(rest, "title");
            title = Some(collapse(&decode_entities(inner)));
            rest = after;
            continue;
        }
        if !tag.closing && SKIPPED.contains(&name) {
            rest = raw_content(rest, name).1;
            continue;
        }
        match (name, tag.closing) {
            ("a", false) => {
                let href = attr(tag.attrs, "href").map(|h| decode_entities(&h));
                link = href.filter(|h| is_followable(h)).map(|h| (resolve(&h, base), out.buf.len()));
            }
            ("a", true) => {
                if let Some((href, start)) = link.take() {
                    let text = out.buf.get(start..).unwrap_or_default().trim().to_string();
                    if !text.is_empty() && text != href {
                        out.text(&format!(" ({href})"));
                    } else if text.is_empty() {
                        out.text(&href);
                    }
                }
            }
            ("img", _) => {
                if let Some(alt) = attr(tag.attrs, "alt").filter(|a| !a.trim().is_empty()) {
                    out.text(&format!(" [{}] ", decode_entities(&alt)));
                }
            }
            ("pre", closing) => {
                out.block();
                out.pre = !closing;
            }
            ("li", false) => {
                out.block();
                out.text("- ");
            }
            ("td" | "th", false) => out.text(" "),
            ("p" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "table" | "blockquote", _) => out.paragraph(),
            (n, _) if BLOCKS.contains(&n) => out.block(),
            _ => {}
        }
    }
    let body = out.finish();
    match title.filter(|t| !t.is_empty() && !body.starts_with(t.as_str())) {
        Some(t) if body.is_empty() => t,
        Some(t) => format!("{t}\n\n{body}"),
        None => body,
    }
}

/// The tag at the start of `s` (`<name attrs>` or `</name>`) and the text after it.
fn parse_tag(s: &str) -> Option<(Tag<'_>, &str)> {
    let inner = s.strip_prefix('<')?;
    let (closing, inner) = match inner.strip_prefix('/') {
        Some(r) => (true, r),
        None => (false, inner),
    };
    let name_len = inner.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == ':')).unwrap_or(inner.len());
    if name_len == 0 || !inner.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    // Find the closing `>`, skipping quoted attribute values.
    let mut quote: Option<char> = None;
    let mut end = None;
    for (i, c) in inner.char_indices().skip(name_len) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '>') => {
                end = Some(i);
                break;
            }
            _ => {}
        }
    }
    let end = end.unwrap_or(inner.len());
    let tag = Tag { name: inner[..name_len].to_ascii_lowercase(), closing, attrs: &inner[name_len..end] };
    Some((tag, inner.get(end + 1..).unwrap_or("")))
}

/// The content up to `</name` (case-insensitive) and the text after that closing tag.
fn raw_content<'a>(s: &'a str, name: &str) -> (&'a str, &'a str) {
    let mut from = 0;
    while let Some(i) = s[from..].find("</") {
        let at = from + i;
        let candidate = &s.as_bytes()[at + 2..];
        if candidate.len() >= name.len() && candidate[..name.len()].eq_ignore_ascii_case(name.as_bytes()) {
            let after = &s[at..];
            return (&s[..at], after.find('>').map_or("", |j| &after[j + 1..]));
        }
        from = at + 2;
    }
    (s, "")
}

/// The value of attribute `name` in a tag's attribute text.
fn attr(attrs: &str, name: &str) -> Option<String> {
    let mut rest = attrs;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '/');
        if rest.is_empty() {
            return None;
        }
        let key_len = rest.find(|c: char| c.is_whitespace() || c == '=' || c == '/').unwrap_or(rest.len());
        let key = rest[..key_len].to_ascii_lowercase();
        rest = rest[key_len..].trim_start();
        let value = if let Some(v) = rest.strip_prefix('=') {
            let v = v.trim_start();
            let (value, after) = match v.chars().next() {
                Some(q @ ('"' | '\'')) => {
                    let body = &v[1..];
                    let end = body.find(q).unwrap_or(body.len());
                    (&body[..end], body.get(end + 1..).unwrap_or(""))
                }
                _ => {
                    let end = v.find(char::is_whitespace).unwrap_or(v.len());
                    (&v[..end], &v[end..])
                }
            };
            rest = after;
            Some(value)
        } else {
            None
        };
        if key == name {
            return value.map(str::to_string);
        }
        if key_len == 0 && value.is_none() {
            // Nothing was consumed: skip one character to make progress.
            let mut chars = rest.chars();
            chars.next();
            rest = chars.as_str();
        }
    }
}

fn is_followable(href: &str) -> bool {
    let h = href.trim().to_ascii_lowercase();
    !(h.is_empty() || h.starts_with('#') || h.starts_with("javascript:") || h.starts_with("data:"))
}

fn resolve(href: &str, base: Option<&Url>) -> String {
    let href = href.trim();
    match base.and_then(|b| b.join(href).ok()) {
        Some(u) => u.to_string(),
        None => href.to_string(),
    }
}

/// Decodes `&amp;`, `&#39;`, `&#x2014;` and the other common entities; leaves unknown ones.
pub fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest[1..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '#')).map(|e| e + 1);
        let (name, consumed) = match end {
            Some(e) if rest[e..].starts_with(';') => (&rest[1..e], e + 1),
            Some(e) => (&rest[1..e], e),
            None => (&rest[1..], rest.len()),
        };
        match entity(name) {
            Some(c) => {
                out.push(c);
                rest = &rest[consumed..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "bull" => '•',
        "middot" => '·',
        "euro" => '€',
        "pound" => '£',
        "yen" => '¥',
        "cent" => '¢',
        "deg" => '°',
        "times" => '×',
        "divide" => '÷',
        "larr" => '←',
        "rarr" => '→',
        _ => return None,
    })
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text being built: whitespace collapsed, at most one blank line in a row.
#[derive(Default)]
struct Out {
    buf: String,
    /// Inside `<pre>`: whitespace is kept.
    pre: bool,
    /// A space is owed before the next word.
    space: bool,
}

impl Out {
    fn text(&mut self, s: &str) {
        if self.pre {
            self.buf.push_str(s);
            return;
        }
        for (i, word) in s.split(|c: char| c.is_whitespace()).enumerate() {
            if i > 0 {
                self.space = true;
            }
            if word.is_empty() {
                continue;
            }
            if self.space && !self.buf.is_empty() && !self.buf.ends_with('\n') {
                self.buf.push(' ');
            }
            self.space = false;
            self.buf.push_str(word);
        }
    }

    fn block(&mut self) {
        self.space = false;
        let trimmed = self.buf.trim_end_matches([' ', '\t']).len();
        self.buf.truncate(trimmed);
        if !self.buf.is_empty() && !self.buf.ends_with('\n') {
            self.buf.push('\n');
        }
    }

    fn paragraph(&mut self) {
        self.block();
        if !self.buf.is_empty() && !self.buf.ends_with("\n\n") {
            self.buf.push('\n');
        }
    }

    fn finish(self) -> String {
        let mut out = String::with_capacity(self.buf.len());
        let mut blank = 0;
        for line in self.buf.lines().map(str::trim_end) {
            if line.trim().is_empty() {
                blank += 1;
                continue;
            }
            if !out.is_empty() {
                out.push_str(if blank > 0 { "\n\n" } else { "\n" });
            }
            blank = 0;
            out.push_str(line);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts() {
        let base = Url::parse("https://example.com/dir/page.html").unwrap();
        let cases: &[(&str, &str)] = &[
            ("<p>Hello <b>world</b></p><p>Second</p>", "Hello world\n\nSecond"),
            ("<script>alert('x')</script>Hi<style>p{}</style>", "Hi"),
            ("<SCRIPT type=x>if (a<b) {}</SCRIPT>after", "after"),
            ("Fish &amp; chips &lt;3 &#39;x&#x27; &mdash; &nbsp;ok &bogus; &", "Fish & chips <3 'x' — ok &bogus; &"),
            ("<a href=\"/docs?a=1&amp;b=2\">Docs</a>", "Docs (https://example.com/docs?a=1&b=2)"),
            ("<a href='other.html'>other</a>", "other (https://example.com/dir/other.html)"),
            ("<a href=\"#top\">Top</a>", "Top"),
            ("<a href=\"javascript:void(0)\">JS</a>", "JS"),
            ("<a href=\"https://x.org/\"></a>", "https://x.org/"),
            ("<ul><li>one</li><li>two</li></ul>", "- one\n- two"),
            ("a  \n\t b<br>c", "a b\nc"),
            ("<!-- hidden -->shown<!DOCTYPE html>", "shown"),
            (
                "<html><head><title>T &amp; t</title><meta charset=utf-8></head><body>Body</body></html>",
                "T & t\n\nBody",
            ),
            ("<pre>  a\n  b</pre>", "  a\n  b"),
            ("x < y and <3", "x < y and <3"),
            ("<img alt=\"a cat\" src=c.png>", "[a cat]"),
            ("<div a=\"x>y\">in</div>", "in"),
            ("<p>unterminated <a href=\"u", "unterminated"),
        ];
        for (html, want) in cases {
            assert_eq!(to_text(html, Some(&base)), *want, "{html}");
        }
    }
}

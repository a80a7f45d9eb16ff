//! What exactly a tool call would do, shown under its plain-words summary when a person is
//! asked to approve it ([`Detail`]): the content a file write puts, the diff of an edit, the
//! whole command line, the request, the arguments. Kept with the approval row.
//!
//! Plain data: whoever makes a `Detail` masks the secrets in it first; nothing here reads the
//! database or renders anything.

/// What kind of thing a [`Detail`] shows (it decides the heading of its code block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DetailKind {
    /// The whole content a file write would put.
    Content,
    /// A unified diff of a file edit (or the old and new text as `-`/`+` lines).
    Diff,
    /// A command line, whole, after a `# in <folder>` line naming where it runs.
    Command,
    /// An HTTP request: the request line, headers, a blank line and the body.
    Request,
    /// A call's arguments as pretty JSON.
    Arguments,
}

impl DetailKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Content => "content",
            Self::Diff => "diff",
            Self::Command => "command",
            Self::Request => "request",
            Self::Arguments => "arguments",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "content" => Self::Content,
            "diff" => Self::Diff,
            "command" => Self::Command,
            "request" => Self::Request,
            "arguments" => Self::Arguments,
            _ => return None,
        })
    }
}

/// What exactly a call would do, secrets masked, as text shown in a code block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detail {
    pub kind: DetailKind,
    pub text: String,
}

impl Detail {
    pub fn new(kind: DetailKind, text: impl Into<String>) -> Self {
        Self { kind, text: text.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_as_stored() {
        let kinds =
            [DetailKind::Content, DetailKind::Diff, DetailKind::Command, DetailKind::Request, DetailKind::Arguments];
        for kind in kinds {
            assert_eq!(DetailKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(DetailKind::parse("other"), None);
    }
}

//! Butler's channel seam: the platform-independent types every channel adapter speaks.
//!
//! A channel adapter (Telegram, Slack, Discord, the web chat, the terminal) turns platform
//! traffic into [`InboundEvent`]s, hands them to an [`Ingress`] and acknowledges the platform only
//! after the ingress says the event is durable. It delivers [`Outbound`] messages through the
//! [`Channel`] trait and describes what it can do as data ([`Caps`]).
//!
//! This crate must never depend on a platform SDK, a database, Redis or an LLM: it is the
//! vocabulary shared by adapters that must not know each other.

mod answer;
mod api_error;
mod backoff;
mod channel;
mod chunk;
mod clock;
mod event;
mod hosts;
mod html;
pub mod limit;
mod links;
mod media;
mod outbound;
pub mod signature;
mod statuses;
mod storable;
mod stored;
mod unreadable;

pub use answer::{numbered_choices, reaction_answer, ANSWER_ALWAYS, ANSWER_NO, ANSWER_REACTIONS, ANSWER_YES};
pub use api_error::{error_body, error_type};
pub use backoff::Backoff;
pub use channel::{Accepted, Caps, Channel, ChannelError, Ingress, IngressError, TextFormat};
pub use chunk::{chunk_text, ChunkLimit};
pub use clock::now_ms;
pub use event::{Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent};
pub use hosts::FileHosts;
pub use html::{escape as escape_html, markdown_html};
pub use links::AnswerLinks;
pub use media::{Attachment, ByteStream, Download, FileSource, MediaKind, OutFile};
pub use outbound::{Button, ButtonStyle, MessageRef, Outbound, PrivateTo};
pub use statuses::{count_status, status_counts};
pub use storable::{storable_text, REPLACEMENT};
pub use stored::accept_until_stored;
pub use unreadable::{count_unreadable, unreadable_counts};

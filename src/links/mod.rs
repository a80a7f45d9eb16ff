//! Answer links: for a channel without buttons (email), a web address per choice of a request
//! that answers it as the person it was sent to, as a button press would. `[server]
//! public_url` turns them on; the key that signs them is made once and kept in the database, so
//! every replica makes and opens the same links.
//!
//! A link is bound to one person, one conversation and one choice of one request, expires after
//! [`TTL_MS`], and works once (its event id is its token's digest: the inbox keeps one); the
//! request's own decision stays with triage, which checks that the person may decide. Opening a
//! link only shows a page; the answer is the page's button (a POST), so a mail scanner that
//! fetches every link answers nothing.
//!
//! It must never log a token or the key, nor settle anything itself: it hands the press to the
//! ingress like any other channel event.

mod maker;
mod page;
mod token;

pub use maker::{Links, TTL_MS};
pub use page::routes;

//! The built-in web chat: a channel whose "platform" is Butler's own store and a page served
//! from the binary. Messages posted to the API go through the same ingress, triage and sessions
//! as every other channel; replies come back through the outbox and are pushed to open pages
//! over server-sent events. Files people attach are uploaded first (`files_api`, kept by
//! `uploads`) and named by id in the message; files Butler sends are served back from there.
//!
//! Without a configured token the API trusts the `user` field, so the server must only listen
//! on loopback then (config validation enforces it). Nothing here may render model output as
//! HTML: the page builds DOM nodes from text.

mod api;
mod auth;
mod channel;
mod conversations;
mod events;
mod files_api;
mod hub;
mod names;
mod openai;
mod panels;
mod stores;
mod uploads;

pub(crate) use api::{routes, PageInfo, WebState};
pub(crate) use auth::{WebAuth, LOCAL_USER};
pub(crate) use channel::WebChannel;
pub(crate) use events::event_routes;
pub(crate) use files_api::{download_routes, upload_routes};
pub(crate) use hub::WebHub;
pub(crate) use openai::routes as openai_routes;
pub(crate) use panels::{panel_routes, Panels};
pub(crate) use stores::WebStores;
// For the fuzz targets (fuzz/): the request readers, without a server or a store.
#[doc(hidden)]
pub use api::check_body;
#[doc(hidden)]
pub use openai::{parse_request, ChatRequest, OpenAiError};
#[doc(hidden)]
pub use uploads::{FileMeta, UploadError, Uploads};

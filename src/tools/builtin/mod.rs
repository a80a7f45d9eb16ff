//! Built-in tools: the clock, the user's memory and past conversations (store only), and the
//! acting tools: the web (`web_fetch`, `web_search`, `http_get`, `http_request`), the shell,
//! files in the user's workspace and `send_file`, and `send_message`; and the user's scheduled
//! jobs (`schedule`, `schedules_list`). They must never touch another user's data or workspace,
//! never reach a network address or path their guards refuse, and never show a secret in an
//! action summary.

mod confine;
mod conversations;
mod file_detail;
mod files;
pub mod html;
mod http_auth;
mod memory;
pub mod net;
mod now;
pub mod plain;
mod schedule;
mod search;
mod search_api;
mod send;
mod send_file;
mod shell;
mod web;

pub use conversations::ConversationSearch;
pub use files::{file_tools, FileEdit, FileList, FileRead, FileWrite};
pub use memory::memory_tools;
pub use net::NetGuard;
pub use now::Now;
pub use schedule::{schedule_tools, ScheduleTool, SchedulesList};
pub use search::{WebSearch, MAX_COUNT as WEB_SEARCH_MAX_COUNT};
pub use send::SendMessage;
pub use send_file::{as_photo, SendFile, MAX_SEND_BYTES};
pub use shell::{Shell, SAFE_PATH};
pub use web::{http_tools, http_tools_with_guard, HttpGet, HttpRequest, WebFetch};

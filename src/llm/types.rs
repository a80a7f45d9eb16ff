//! Provider-neutral request, stream event and assembled-response types.

use serde::{Deserialize, Serialize};

/// A tool the model may call. Built once per tool and shared by every request: its schema is
/// serialized here, once, not on each model call.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(from = "ToolDefFields", into = "ToolDefFields")]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object (an object schema with no properties when the tool
    /// gave something else).
    pub parameters: serde_json::Value,
    /// `parameters` as JSON text: what providers send and what context estimates count.
    schema: std::sync::Arc<serde_json::value::RawValue>,
}

impl ToolDef {
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: serde_json::Value) -> Self {
        let parameters =
            if parameters.is_object() { parameters } else { serde_json::json!({"type": "object", "properties": {}}) };
        let schema =
            serde_json::value::RawValue::from_string(parameters.to_string()).expect("a serialized Value is valid JSON");
        Self { name: name.into(), description: description.into(), parameters, schema: schema.into() }
    }

    /// The arguments schema as JSON text, serialized when the tool was defined.
    pub fn schema(&self) -> &serde_json::value::RawValue {
        &self.schema
    }

    /// Characters the definition adds to a request (name, description and schema).
    pub fn chars(&self) -> usize {
        self.name.len() + self.description.len() + self.schema.get().len()
    }
}

/// [`ToolDef`] as it is (de)serialized: without the cached text.
#[derive(Serialize, Deserialize)]
struct ToolDefFields {
    name: String,
    description: String,
    parameters: serde_json::Value,
}

impl From<ToolDefFields> for ToolDef {
    fn from(f: ToolDefFields) -> Self {
        Self::new(f.name, f.description, f.parameters)
    }
}

impl From<ToolDef> for ToolDefFields {
    fn from(t: ToolDef) -> Self {
        Self { name: t.name, description: t.description, parameters: t.parameters }
    }
}

impl PartialEq for ToolDef {
    fn eq(&self, other: &Self) -> bool {
        (&self.name, &self.description, &self.parameters) == (&other.name, &other.description, &other.parameters)
    }
}

/// One tool call requested by the model. `arguments` is the raw JSON text the model produced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    User {
        content: String,
        /// The speaker in a group conversation.
        name: Option<String>,
        /// Images the person sent with this message (photos, screenshots), for vision models.
        /// Only the current turn's message carries them; the stored transcript keeps the text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    Assistant {
        content: String,
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        call_id: String,
        content: String,
        is_error: bool,
        /// Images the tool returned (a screenshot, a chart), shown to vision models.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
}

/// An image for the model: base64 `data` of a `mime` type (`image/png`, `image/jpeg`, ...).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub mime: String,
    pub data: String,
}

impl Image {
    /// The `data:` URL OpenAI-style APIs take.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime, self.data)
    }
}

#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Byte-stable for a session; never carries per-turn context.
    pub system: String,
    pub messages: Vec<ChatMessage>,
    /// Shared, so the agent sends the same list every call without copying it.
    pub tools: std::sync::Arc<[ToolDef]>,
    pub max_tokens: Option<u32>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens that were neither read from nor written to the prompt cache (Anthropic's
    /// `input_tokens`; OpenAI's `prompt_tokens` minus `cached_tokens`). The whole prompt is
    /// `input_tokens + cache_read_tokens + cache_write_tokens`.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens served from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache (Anthropic only).
    pub cache_write_tokens: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
    Other(String),
}

/// One event of a streamed completion, the same for every provider.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    /// A piece of the assistant's text.
    Text(String),
    /// A tool call begins. `index` is the call's 0-based position among this response's tool
    /// calls (parsers map a provider's own block indices to it).
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// More of a tool call's JSON arguments.
    ToolCallArgs {
        index: usize,
        delta: String,
    },
    /// Token counts; later events overwrite earlier non-zero counts.
    Usage(Usage),
    /// The model answering, as configured for the endpoint that answers (a fallback's own
    /// model when the primary failed). Every endpoint sends it first; usage is priced by it.
    Model(String),
    Finish(FinishReason),
}

/// The whole response, assembled from the stream.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assembled {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub finish: Option<FinishReason>,
    /// The model that answered ([`StreamEvent::Model`]); empty when the stream did not say.
    pub model: String,
}

impl Assembled {
    /// Folds one stream event into the response.
    pub fn push(&mut self, ev: &StreamEvent) {
        match ev {
            StreamEvent::Text(t) => self.text.push_str(t),
            StreamEvent::ToolCallStart { index, id, name } => {
                let slot = self.slot(*index);
                if !id.is_empty() {
                    slot.id.clone_from(id);
                }
                if !name.is_empty() {
                    slot.name.clone_from(name);
                }
            }
            StreamEvent::ToolCallArgs { index, delta } => self.slot(*index).arguments.push_str(delta),
            StreamEvent::Usage(u) => {
                let merge = |old: &mut u64, new: u64| {
                    if new > 0 {
                        *old = new;
                    }
                };
                merge(&mut self.usage.input_tokens, u.input_tokens);
                merge(&mut self.usage.output_tokens, u.output_tokens);
                merge(&mut self.usage.cache_read_tokens, u.cache_read_tokens);
                merge(&mut self.usage.cache_write_tokens, u.cache_write_tokens);
            }
            StreamEvent::Finish(f) => self.finish = Some(f.clone()),
            StreamEvent::Model(m) => self.model.clone_from(m),
        }
    }

    /// The model that answered, or `asked` (the provider's own model) when the stream did not
    /// say which.
    pub fn model_or<'a>(&'a self, asked: &'a str) -> &'a str {
        if self.model.is_empty() {
            asked
        } else {
            &self.model
        }
    }

    fn slot(&mut self, index: usize) -> &mut ToolCall {
        while self.tool_calls.len() <= index {
            self.tool_calls.push(ToolCall { id: String::new(), name: String::new(), arguments: String::new() });
        }
        &mut self.tool_calls[index]
    }
}

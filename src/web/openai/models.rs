//! `GET /v1/models` and `GET /v1/models/{id}`: the one model Butler serves, `butler` (Butler has
//! no model tiers to offer yet). Same auth as the rest of the web API; nothing is stored.

use super::error::OpenAiError;
use super::wire::{model, MODEL};
use crate::store::now_ms;
use crate::web::api::WebState;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde_json::{json, Value};

pub(super) async fn list(State(s): State<WebState>, headers: HeaderMap) -> Result<Json<Value>, OpenAiError> {
    s.auth.user(&headers, None)?;
    Ok(Json(json!({"object": "list", "data": [model(now_ms() / 1000)]})))
}

pub(super) async fn get(
    State(s): State<WebState>,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, OpenAiError> {
    s.auth.user(&headers, None)?;
    match id {
        Ok(Path(id)) if id == MODEL => Ok(Json(model(now_ms() / 1000))),
        Ok(Path(id)) => Err(OpenAiError::not_found(
            "model_not_found",
            format!("the model `{id}` does not exist; Butler serves `{MODEL}`"),
        )),
        Err(_) => Err(OpenAiError::invalid("invalid_path", "the model id in the path is not valid")),
    }
}

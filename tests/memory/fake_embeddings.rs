//! The fake LLM's `POST /v1/embeddings`, checked over plain HTTP: OpenAI's request and response
//! shapes, the vectors of `support::embedder`, its key check, its script (500s, 429s, delay),
//! and that embedding requests never count as chat requests.

use crate::support::embedder::embed;
use crate::support::fake_llm::{EmbeddingRequest, FakeLlm};
use base64::Engine as _;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn post(llm: &FakeLlm, key: Option<&str>, body: Value) -> (u16, Option<String>, Value) {
    let mut req = reqwest::Client::new().post(format!("{}/embeddings", llm.openai_url())).json(&body);
    if let Some(key) = key {
        req = req.bearer_auth(key);
    }
    let resp = req.send().await.expect("the fake answers");
    let status = resp.status().as_u16();
    let retry = resp.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    (status, retry, resp.json().await.expect("a JSON body"))
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array().expect("a list of floats").iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

#[tokio::test]
async fn embeddings_answer_in_openais_shape_with_the_fake_models_vectors() {
    let llm = FakeLlm::start().await;
    let (status, _, body) = post(&llm, None, json!({"model": "emb", "input": "My sister Anna"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "list");
    assert_eq!(body["model"], "emb");
    assert_eq!(body["data"][0]["object"], "embedding");
    assert_eq!(body["data"][0]["index"], 0);
    assert_eq!(floats(&body["data"][0]["embedding"]), embed("emb", "My sister Anna", 64), "64 dimensions by default");
    assert_eq!(body["usage"], json!({"prompt_tokens": 3, "total_tokens": 3}));

    let texts = ["first text", "second"];
    let (status, _, body) =
        post(&llm, None, json!({"model": "emb", "input": texts, "dimensions": 8, "encoding_format": "float"})).await;
    assert_eq!(status, 200, "{body}");
    for (i, text) in texts.iter().enumerate() {
        assert_eq!(body["data"][i]["index"], i);
        assert_eq!(floats(&body["data"][i]["embedding"]), embed("emb", text, 8));
    }

    let (_, _, body) = post(&llm, None, json!({"model": "emb", "input": ["x y"], "encoding_format": "base64"})).await;
    let bytes =
        base64::engine::general_purpose::STANDARD.decode(body["data"][0]["embedding"].as_str().unwrap()).unwrap();
    let decoded: Vec<f32> = bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(decoded, embed("emb", "x y", 64), "base64 of little-endian f32s, as OpenAI sends");

    assert_eq!(llm.request_count(), 0, "embedding requests are not chat requests");
    assert!(llm.requests().is_empty());
    let want = |inputs: &[&str], dimensions| EmbeddingRequest {
        model: "emb".into(),
        inputs: inputs.iter().map(|s| s.to_string()).collect(),
        dimensions,
        api_key: None,
    };
    assert_eq!(
        llm.embedding_requests(),
        [want(&["My sister Anna"], None), want(&texts, Some(8)), want(&["x y"], None)]
    );
}

#[tokio::test]
async fn malformed_embedding_requests_get_openais_400() {
    let llm = FakeLlm::start().await;
    let cases = [
        json!({"input": "no model"}),
        json!({"model": "emb"}),
        json!({"model": "emb", "input": ""}),
        json!({"model": "emb", "input": []}),
        json!({"model": "emb", "input": [[1, 2, 3]]}),
        json!({"model": "emb", "input": "x", "dimensions": 0}),
        json!({"model": "emb", "input": "x", "encoding_format": "int8"}),
    ];
    for case in cases {
        let (status, _, body) = post(&llm, None, case.clone()).await;
        assert_eq!(status, 400, "{case}: {body}");
        assert_eq!(body["error"]["type"], "invalid_request_error", "{case}: {body}");
    }
    assert!(llm.embedding_requests().is_empty(), "only well-formed requests are listed");
}

#[tokio::test]
async fn embeddings_need_the_key_and_follow_their_script() {
    let llm = FakeLlm::start().await;
    llm.require_api_key("sk-embeddings-key");
    let one = json!({"model": "emb", "input": "hello"});
    let (status, _, body) = post(&llm, None, one.clone()).await;
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("invalid_api_key")), "{body}");
    let (status, _, _) = post(&llm, Some("sk-wrong"), one.clone()).await;
    assert_eq!(status, 401);

    let key = Some("sk-embeddings-key");
    llm.embeddings_rate_limited(1, 3);
    llm.fail_embeddings(2);
    // (status, Retry-After, error code): the 429s first, then the 500s, then answers again.
    let want: [(u16, Option<&str>, Value); 4] = [
        (429, Some("3"), json!("rate_limit_exceeded")),
        (500, None, Value::Null),
        (500, None, Value::Null),
        (200, None, Value::Null),
    ];
    for (i, (status, retry, code)) in want.into_iter().enumerate() {
        let (got, got_retry, body) = post(&llm, key, one.clone()).await;
        assert_eq!((got, got_retry.as_deref()), (status, retry), "request {i}: {body}");
        if status != 200 {
            assert_eq!(body["error"]["code"], code, "request {i}: {body}");
            assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
    }
    let keys: Vec<Option<String>> = llm.embedding_requests().into_iter().map(|r| r.api_key).collect();
    assert_eq!(keys.len(), 6);
    assert_eq!(keys[5].as_deref(), key);

    llm.embedding_delay(Duration::from_millis(200));
    let started = Instant::now();
    let (status, _, _) = post(&llm, key, one.clone()).await;
    assert_eq!(status, 200);
    assert!(started.elapsed() >= Duration::from_millis(200), "{:?}", started.elapsed());

    llm.reset();
    assert!(llm.embedding_requests().is_empty());
    let started = Instant::now();
    assert_eq!(post(&llm, None, one).await.0, 200, "reset drops the key, the script and the delay");
    assert!(started.elapsed() < Duration::from_millis(200));
    assert_eq!(llm.request_count(), 0);
}

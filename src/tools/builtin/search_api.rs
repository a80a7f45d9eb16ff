//! The wire shapes of the three web search APIs `web_search` can ask: how a search is asked
//! (path, query parameters, headers, body) and which fields of the answer are a result.
//!
//! - SearXNG: `GET {base}/search?q=…&format=json` -> `results[].{title, url, content}` (the JSON
//!   format must be enabled in the instance's `search.formats`).
//! - Brave: `GET {base}/web/search?q=…&count=N`, header `X-Subscription-Token` ->
//!   `web.results[].{title, url, description}` (descriptions carry `<strong>` highlights).
//! - Tavily: `POST {base}/search`, `Authorization: Bearer KEY`, JSON `{query, max_results}` ->
//!   `results[].{title, url, content}`.
//!
//! This file only builds requests and reads answers: it never sends anything, and the API key
//! goes only into the header of the request it builds (never into a URL or a message).

use crate::config::{SearchProvider, Secret};
use reqwest::Url;
use serde::Deserialize;
use serde_json::json;

/// One search result as the provider gave it (snippets may still hold HTML).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// The request for `query` asking for `count` results, against the API root `base`.
pub fn request(
    client: &reqwest::Client,
    provider: SearchProvider,
    base: &Url,
    key: Option<&Secret>,
    query: &str,
    count: usize,
) -> reqwest::RequestBuilder {
    let key = key.map(Secret::expose).filter(|k| !k.is_empty());
    match provider {
        SearchProvider::Searxng => {
            let mut url = endpoint(base, "search");
            url.query_pairs_mut().append_pair("q", query).append_pair("format", "json");
            let req = client.get(url).header(reqwest::header::ACCEPT, "application/json");
            match key {
                Some(k) => req.bearer_auth(k),
                None => req,
            }
        }
        SearchProvider::Brave => {
            let mut url = endpoint(base, "web/search");
            url.query_pairs_mut().append_pair("q", query).append_pair("count", &count.to_string());
            client
                .get(url)
                .header(reqwest::header::ACCEPT, "application/json")
                .header("X-Subscription-Token", key.unwrap_or_default())
        }
        SearchProvider::Tavily => {
            let req = client.post(endpoint(base, "search")).json(&json!({"query": query, "max_results": count}));
            req.bearer_auth(key.unwrap_or_default())
        }
    }
}

/// `base` with `path` appended to its path (`…/res/v1` + `web/search`), query and fragment
/// dropped.
fn endpoint(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_query(None);
    url.set_fragment(None);
    let joined = format!("{}/{path}", url.path().trim_end_matches('/'));
    url.set_path(&joined);
    url
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    title: Option<String>,
    url: String,
    /// SearXNG and Tavily.
    #[serde(default)]
    content: Option<String>,
    /// Brave.
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize)]
struct Results {
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Brave {
    /// Absent when Brave found nothing on the web.
    #[serde(default)]
    web: Option<Results>,
}

/// The results of an answer body, in the provider's order; the serde error when the body is
/// not the provider's search JSON.
pub fn parse(provider: SearchProvider, body: &[u8]) -> Result<Vec<Hit>, serde_json::Error> {
    let items = match provider {
        SearchProvider::Searxng | SearchProvider::Tavily => serde_json::from_slice::<Results>(body)?.results,
        SearchProvider::Brave => serde_json::from_slice::<Brave>(body)?.web.map(|w| w.results).unwrap_or_default(),
    };
    Ok(items
        .into_iter()
        .map(|i| Hit {
            title: i.title.unwrap_or_default(),
            url: i.url,
            snippet: i.content.or(i.description).unwrap_or_default(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_keep_the_base_path() {
        let cases = [
            ("https://api.search.brave.com/res/v1", "web/search", "https://api.search.brave.com/res/v1/web/search"),
            ("https://api.search.brave.com/res/v1/", "web/search", "https://api.search.brave.com/res/v1/web/search"),
            ("http://10.0.0.2:8888", "search", "http://10.0.0.2:8888/search"),
            ("https://host/searx/?x=1", "search", "https://host/searx/search"),
        ];
        for (base, path, want) in cases {
            assert_eq!(endpoint(&Url::parse(base).unwrap(), path).as_str(), want, "{base}");
        }
    }

    #[test]
    fn parses_each_shape() {
        let cases: &[(SearchProvider, &str, usize)] = &[
            (SearchProvider::Searxng, r#"{"query":"q","results":[{"title":"A","url":"https://a","content":"x"}]}"#, 1),
            (SearchProvider::Brave, r#"{"type":"search","query":{"original":"q"}}"#, 0),
            (SearchProvider::Brave, r#"{"web":{"results":[{"title":"B","url":"https://b","description":"y"}]}}"#, 1),
            (SearchProvider::Tavily, r#"{"query":"q","results":[]}"#, 0),
        ];
        for (p, body, n) in cases {
            assert_eq!(parse(*p, body.as_bytes()).unwrap().len(), *n, "{p:?} {body}");
        }
        assert!(parse(SearchProvider::Tavily, b"<html>").is_err());
        assert!(parse(SearchProvider::Searxng, br#"{"answers":[]}"#).is_err());
    }
}

//! The web API's share of the load: one new conversation per message (so sessions come and go
//! as they do for many people), uploads through `POST /api/v1/files` attached to the message,
//! approvals clicked through `POST /api/v1/actions`; and the count of each conversation's
//! answers at the end.

use crate::people::STALL;
use crate::script::{self, Kind, Turn, WEB_KINDS};
use crate::support::fake_llm::FakeLlm;
use crate::Tally;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// One message sent and the answers it must get, each exactly once.
struct Expect {
    conv: String,
    answers: Vec<String>,
}

pub struct Web {
    http: reqwest::Client,
    base: String,
    expects: Vec<Expect>,
    /// Expects (by index) whose approval request is still to be clicked, oldest first, with
    /// when they were sent.
    to_click: VecDeque<(usize, Instant)>,
    pub approvals: usize,
    pub uploads: usize,
    /// Posts Butler did not take (counted lost).
    pub refused: usize,
}

impl Web {
    pub fn new(base: &str) -> Self {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("http client");
        Self {
            http,
            base: base.into(),
            expects: Vec::new(),
            to_click: VecDeque::new(),
            approvals: 0,
            uploads: 0,
            refused: 0,
        }
    }

    pub fn sent(&self) -> usize {
        self.expects.len() + self.refused
    }

    pub fn clicks_waiting(&self) -> usize {
        self.to_click.len()
    }

    /// A JSON POST; its answer when Butler took it.
    async fn post(&self, path: &str, body: &Value) -> Option<Value> {
        let r = self.http.post(format!("{}{path}", self.base)).json(body).send().await.ok()?;
        if !r.status().is_success() {
            eprintln!("soak_one: POST {path} answered {}", r.status());
            return None;
        }
        Some(r.json().await.unwrap_or_default())
    }

    /// Message `n`, the `k`th of the web's, in a conversation of its own.
    pub async fn send(&mut self, llm: &FakeLlm, n: usize, k: usize) {
        let kind = WEB_KINDS[k % WEB_KINDS.len()];
        let Turn { text, answers } = script::turn(llm, "web", kind, n);
        let conv = format!("soak-{n}");
        let mut body = json!({"conversation": conv, "user": "local", "text": text});
        if kind == Kind::Upload {
            let url = format!("{}/api/v1/files?user=local&name=note-{n}.txt", self.base);
            let up = self.http.post(url).body(format!("a note for {n}\n")).send().await;
            let file: Value = match up {
                Ok(r) if r.status().is_success() => r.json().await.unwrap_or_default(),
                _ => Value::Null,
            };
            if file["id"].is_null() {
                eprintln!("soak_one: upload {n} refused");
                self.refused += 1;
                return;
            }
            self.uploads += 1;
            body["files"] = json!([file["id"]]);
        }
        if self.post("/api/v1/messages", &body).await.is_none() {
            self.refused += 1;
            return;
        }
        if kind == Kind::Approval {
            self.to_click.push_back((self.expects.len(), Instant::now()));
        }
        self.expects.push(Expect { conv, answers });
    }

    /// The assistant texts and the `ap:…:once` actions of conversation `conv`.
    async fn read(&self, conv: &str) -> Option<(Vec<String>, Vec<String>)> {
        let url = format!("{}/api/v1/conversations/{conv}/messages?limit=1000", self.base);
        let r = self.http.get(url).send().await.ok()?;
        if r.status() != 200 {
            return None;
        }
        let v: Value = r.json().await.ok()?;
        let msgs = v["messages"].as_array().cloned().unwrap_or_default();
        let said = msgs
            .iter()
            .filter(|m| m["role"] == "assistant")
            .map(|m| m["text"].as_str().unwrap_or_default().to_string())
            .collect();
        let actions = msgs
            .iter()
            .flat_map(|m| m["buttons"].as_array().cloned().unwrap_or_default())
            .filter_map(|b| b["action"].as_str().map(str::to_string))
            .filter(|a| a.starts_with("ap:") && a.ends_with(":once"))
            .collect();
        Some((said, actions))
    }

    /// Clicks "approve once" on up to `max` of the requests waiting, oldest first (one whose
    /// request is not shown yet stays in line, for [`STALL`] at most: then it counts lost).
    pub async fn click(&mut self, max: usize) {
        for _ in 0..max.min(self.to_click.len()) {
            let Some((i, sent)) = self.to_click.pop_front() else { break };
            let conv = self.expects[i].conv.clone();
            let answered = |said: &[String]| said.iter().any(|s| script::answers(s, &self.expects[i].answers[0]));
            match self.read(&conv).await {
                Some((said, _)) if answered(&said) => {}
                Some((_, actions)) if !actions.is_empty() => {
                    let body = json!({"conversation": conv, "user": "local", "action": actions[0]});
                    match self.post("/api/v1/actions", &body).await {
                        Some(_) => self.approvals += 1,
                        None => self.to_click.push_back((i, sent)),
                    }
                }
                _ if sent.elapsed() > STALL => eprintln!("soak_one: web gave up waiting for the request of {conv}"),
                _ => {
                    self.to_click.push_front((i, sent));
                    break;
                }
            }
        }
    }

    /// Each message's answers counted in its conversation.
    pub async fn tally(&self) -> Tally {
        let mut tally = Tally { lost: self.refused, ..Tally::default() };
        for e in &self.expects {
            let said = self.read(&e.conv).await.map(|(s, _)| s).unwrap_or_default();
            let counts: Vec<usize> =
                e.answers.iter().map(|a| said.iter().filter(|s| script::answers(s, a)).count()).collect();
            if counts.contains(&0) {
                if tally.lost < 3 {
                    eprintln!("soak_one: lost on web: {} wanted {:?}, said {said:?}", e.conv, e.answers);
                }
                tally.lost += 1;
            } else {
                tally.answered += 1;
            }
            if counts.iter().any(|c| *c > 1) {
                eprintln!("soak_one: doubled on web: {} wanted {:?}, said {said:?}", e.conv, e.answers);
                tally.doubled += 1;
            }
        }
        tally
    }

    /// Whether every message has its answers now (for the wait at the end).
    pub async fn all_answered(&self, from: usize) -> Option<usize> {
        for (i, e) in self.expects.iter().enumerate().skip(from) {
            let said = self.read(&e.conv).await.map(|(s, _)| s).unwrap_or_default();
            if !e.answers.iter().all(|a| said.iter().any(|s| script::answers(s, a))) {
                return Some(i);
            }
        }
        None
    }

    /// How many answers conversation `conv` holds (paged; for the scheduled job's).
    pub async fn count_answers(&self, conv: &str) -> usize {
        let (mut after, mut count) = (0i64, 0usize);
        loop {
            let url = format!("{}/api/v1/conversations/{conv}/messages?limit=1000&after={after}", self.base);
            let Ok(r) = self.http.get(url).send().await else { return count };
            let v: Value = r.json().await.unwrap_or_default();
            let msgs = v["messages"].as_array().cloned().unwrap_or_default();
            count += msgs
                .iter()
                .filter(|m| m["role"] == "assistant" && m["buttons"].as_array().is_none_or(Vec::is_empty))
                .count();
            match msgs.last().and_then(|m| m["id"].as_i64()) {
                Some(id) if msgs.len() == 1000 => after = id,
                _ => return count,
            }
        }
    }
}

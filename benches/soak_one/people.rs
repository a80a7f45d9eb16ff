//! One person on each chat platform, writing to Butler in their direct conversation (an email
//! starts a thread of its own) the way people do: a message, then waiting for its answer
//! (approving the request on the way when the turn asks) before the next one. A message that
//! waits longer than [`STALL`] is given up on (and counted lost at the end unless its answer
//! came late), so one stuck turn never stops the load.

use crate::script::{self, Kind, Turn, PERSON_KINDS};
use crate::support::fake_llm::FakeLlm;
use crate::support::platforms::Fake;
use crate::Tally;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a person waits for an answer before writing again.
pub const STALL: Duration = Duration::from_secs(120);

/// The message a person waits on.
struct Waiting {
    answer: String,
    kind: Kind,
    /// How many messages Butler had shown the person when it was sent.
    from: usize,
    clicked: bool,
    at: Instant,
}

pub struct Person {
    pub fake: Fake,
    /// Messages sent (their expected answers), in order.
    sent: Vec<String>,
    waiting: Option<Waiting>,
    /// Approvals answered, messages given up on.
    pub approvals: usize,
    pub stalls: usize,
}

impl Person {
    pub fn new(fake: Fake) -> Self {
        Self { fake, sent: Vec::new(), waiting: None, approvals: 0, stalls: 0 }
    }

    pub fn name(&self) -> &'static str {
        self.fake.name()
    }

    pub fn sent(&self) -> usize {
        self.sent.len()
    }

    pub fn idle(&self) -> bool {
        self.waiting.is_none()
    }

    /// Looks at what Butler showed since the waited-on message (approving its request when
    /// there is one), and writes the next message when nothing is waited on and `may_send`.
    /// `next` numbers messages and clicks across the whole run.
    pub async fn step(&mut self, base: &str, llm: &FakeLlm, next: &mut usize, may_send: bool) {
        if let Some(w) = &mut self.waiting {
            let said = self.fake.said(w.from);
            if said.iter().any(|s| script::answers(&s.text, &w.answer)) {
                self.waiting = None;
            } else if w.kind == Kind::Approval && !w.clicked {
                if let Some(request) = said.iter().find_map(|s| s.request.clone()) {
                    *next += 1;
                    w.clicked = self.fake.approve(base, *next, &request).await;
                    self.approvals += usize::from(w.clicked);
                }
            } else if w.at.elapsed() > STALL {
                eprintln!("soak_one: {} gave up waiting for {:?}", self.fake.name(), w.answer);
                self.stalls += 1;
                self.waiting = None;
            }
        }
        if self.waiting.is_some() || !may_send {
            return;
        }
        *next += 1;
        let kind = PERSON_KINDS[self.sent.len() % PERSON_KINDS.len()];
        let Turn { text, mut answers } = script::turn(llm, self.fake.name(), kind, *next);
        let from = self.fake.said_count();
        self.fake.say(base, *next, &text).await;
        let answer = answers.remove(0);
        self.sent.push(answer.clone());
        self.waiting = Some(Waiting { answer, kind, from, clicked: false, at: Instant::now() });
    }

    /// Each message's answer counted in all Butler showed the person.
    pub fn tally(&self) -> Tally {
        let mut shown: HashMap<String, usize> = HashMap::new();
        for said in self.fake.said(0) {
            *shown.entry(said.text).or_default() += 1;
        }
        let mut tally = Tally::default();
        for answer in &self.sent {
            match shown.get(answer).copied().unwrap_or(0) {
                0 => {
                    if tally.lost < 3 {
                        eprintln!("soak_one: lost on {}: {answer:?}", self.fake.name());
                    }
                    tally.lost += 1;
                }
                1 => tally.answered += 1,
                _ => {
                    eprintln!("soak_one: doubled on {}: {answer:?}", self.fake.name());
                    tally.answered += 1;
                    tally.doubled += 1;
                }
            }
        }
        tally
    }
}

//! A deterministic fake embedding model for tests: texts that say the same thing in other words
//! get close vectors, unrelated texts nearly orthogonal ones, and each model name its own space.
//! It must never be random between runs, never call out, and never know about Butler's types.
//!
//! How a text becomes a vector: lowercase words (split on anything not a letter or digit), words
//! of one letter and stopwords dropped, a crude stem (plural `s`/`ies`, `-ing`, `-ed`, a final
//! `e`), then each word is looked up in the lexicon of `tests/fixtures/memory_eval.json`: a word
//! in one or more synonym groups stands for those groups' concepts, any other word is a concept
//! of its own. The vector is the sum over the text's concepts (with repeats) of a unit vector
//! drawn from a small PRNG seeded by hash(model, concept), normalised to length 1. A text with no
//! concept at all (empty, only stopwords) gets the vector of the concept "<empty>".
//!
//! ```ignore
//! let a = embed("fake-embed", "My sister Anna turns 30 on May 4", 64);
//! let b = embed("fake-embed", "When is my sibling's birthday?", 64);
//! assert!(cosine(&a, &b) > 0.4);   // shares the sister~sibling and turns~birthday concepts
//! ```

use std::collections::HashMap;
use std::sync::OnceLock;

/// Words that carry no meaning of their own here (questions are full of them), space-separated.
const STOPWORDS: &str = "\
    about after again all also am an and any anything are aren as at be been before being but by can \
    could day days did didn do does doesn don done for from get gets getting go goes going gone got had \
    has have he her here him his how if in into is isn it its kind know let ll make many me mention \
    mentioned might mine more most much must my myself need needs no not now of on or our ours out put \
    putting re remember said saw say see seeing shall she should so some something still take takes tell \
    than that the their them then there these they this those through to told too toward towards up us \
    use used uses using ve very was we were what when whenever where which who whom whose why will with \
    won would you your";

/// The synonym groups of the eval fixture; the model reads only its `lexicon`.
const FIXTURE: &str = include_str!("../fixtures/memory_eval.json");

/// Stemmed word -> the indexes of the lexicon groups it belongs to.
fn lexicon() -> &'static HashMap<String, Vec<usize>> {
    static LEXICON: OnceLock<HashMap<String, Vec<usize>>> = OnceLock::new();
    LEXICON.get_or_init(|| {
        let doc: serde_json::Value = serde_json::from_str(FIXTURE).expect("memory_eval.json is JSON");
        let groups = doc["lexicon"].as_array().expect("memory_eval.json has a lexicon");
        let mut map: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, group) in groups.iter().enumerate() {
            for word in group.as_array().expect("a lexicon group is a list").iter().filter_map(|w| w.as_str()) {
                let ids = map.entry(stem(&word.to_lowercase())).or_default();
                if !ids.contains(&i) {
                    ids.push(i);
                }
            }
        }
        map
    })
}

/// The crude stem both texts and the lexicon go through.
pub fn stem(word: &str) -> String {
    let mut w = word.to_string();
    if w.len() > 4 && w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
        w.pop();
    }
    if w.len() > 5 && w.ends_with("ing") {
        w.truncate(w.len() - 3);
    } else if w.len() > 4 && w.ends_with("ed") {
        w.truncate(w.len() - 2);
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

/// The concepts of a text, in order, with repeats: `lex:<group>` or `word:<stem>`.
pub fn concepts(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() > 1) {
        let word = word.to_lowercase();
        if STOPWORDS.split_whitespace().any(|s| s == word) {
            continue;
        }
        let stemmed = stem(&word);
        match lexicon().get(&stemmed) {
            Some(groups) => out.extend(groups.iter().map(|g| format!("lex:{g}"))),
            None => out.push(format!("word:{stemmed}")),
        }
    }
    out
}

/// The fake model's embedding of `text`: `dims` floats of unit length.
pub fn embed(model: &str, text: &str, dims: usize) -> Vec<f32> {
    let mut found = concepts(text);
    if found.is_empty() {
        found.push("<empty>".to_string());
    }
    let mut sum = vec![0f64; dims];
    for concept in &found {
        for (s, x) in sum.iter_mut().zip(unit_vector(model, concept, dims)) {
            *s += x;
        }
    }
    normalised(sum).into_iter().map(|x| x as f32).collect()
}

/// Cosine similarity of two vectors (0 when either is all zeros).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// A direction drawn uniformly on the sphere, the same for the same (model, concept, dims).
fn unit_vector(model: &str, concept: &str, dims: usize) -> Vec<f64> {
    let mut rng = SplitMix(fnv1a(model.bytes().chain([0x1f]).chain(concept.bytes())));
    let mut v = Vec::with_capacity(dims + 1);
    while v.len() < dims {
        // Box-Muller: two normal deviates from two uniform ones (u1 in (0, 1], never 0).
        let u1 = ((rng.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let u2 = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let r = (-2.0 * u1.ln()).sqrt();
        let angle = std::f64::consts::TAU * u2;
        v.push(r * angle.cos());
        v.push(r * angle.sin());
    }
    v.truncate(dims);
    normalised(v)
}

fn normalised(mut v: Vec<f64>) -> Vec<f64> {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// SplitMix64: small, fast, and the same on every machine.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

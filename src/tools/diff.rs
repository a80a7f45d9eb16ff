//! A small unified diff (`diff -u` style) of two texts, for showing a person what a file edit
//! would change before they approve it.
//!
//! Lines are compared whole (with their line ending); the common head and tail are taken off
//! first, and the rest is matched by a longest-common-subsequence table when that table is small
//! ([`MAX_CELLS`]), else shown as all of the old lines removed and all of the new ones added
//! (still a correct diff, only not the shortest). Pure text in, text out: it must never touch
//! the file system.

/// Largest LCS table (cells) built for the changed middle of two texts.
const MAX_CELLS: usize = 1_000_000;

/// One step of the edit script: a line kept, removed (old index) or added (new index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Same(usize, usize),
    Del(usize),
    Add(usize),
}

/// The unified diff turning `old` into `new`, with `context` lines around each change and the
/// file names on the `---`/`+++` lines; empty when the texts are equal. A last line without a
/// line ending is followed by `\ No newline at end of file`, as `diff -u` writes it.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str, context: usize) -> String {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let ops = script(&a, &b);
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| !matches!(ops[k], Op::Same(..))).collect();
    if changed.is_empty() {
        return String::new();
    }
    // Hunks as ranges of the script, merged when their context would touch.
    let mut hunks: Vec<(usize, usize)> = Vec::new();
    for &k in &changed {
        let (start, end) = (k.saturating_sub(context), (k + 1 + context).min(ops.len()));
        match hunks.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => hunks.push((start, end)),
        }
    }
    // Old and new lines before each step of the script.
    let mut before = Vec::with_capacity(ops.len() + 1);
    let (mut i, mut j) = (0, 0);
    for op in &ops {
        before.push((i, j));
        match op {
            Op::Same(..) => (i, j) = (i + 1, j + 1),
            Op::Del(_) => i += 1,
            Op::Add(_) => j += 1,
        }
    }
    before.push((i, j));
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    for (start, end) in hunks {
        let (i0, j0) = before[start];
        let (i1, j1) = before[end];
        out.push_str(&format!("@@ -{} +{} @@\n", range(i0, i1 - i0), range(j0, j1 - j0)));
        for op in &ops[start..end] {
            let (mark, line) = match *op {
                Op::Same(i, _) => (' ', a[i]),
                Op::Del(i) => ('-', a[i]),
                Op::Add(j) => ('+', b[j]),
            };
            out.push(mark);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

/// A hunk's range as `diff -u` writes it: `start,count`, the count left out when it is 1, and
/// the line before the hunk as the start of an empty range.
fn range(lines_before: usize, count: usize) -> String {
    match count {
        0 => format!("{lines_before},0"),
        1 => format!("{}", lines_before + 1),
        n => format!("{},{n}", lines_before + 1),
    }
}

/// The edit script from `a` to `b`: the common head and tail kept, the middle matched by LCS
/// (removals before additions where lines differ), or wholly replaced when it is too large.
fn script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..].iter().rev().zip(b[head..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut ops: Vec<Op> = (0..head).map(|k| Op::Same(k, k)).collect();
    let (n, m) = (ma.len(), mb.len());
    if n.saturating_mul(m) > MAX_CELLS {
        ops.extend((0..n).map(|i| Op::Del(head + i)));
        ops.extend((0..m).map(|j| Op::Add(head + j)));
    } else {
        // lcs[i * (m + 1) + j]: the longest common subsequence of ma[i..] and mb[j..].
        let w = m + 1;
        let mut lcs = vec![0u32; (n + 1) * w];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * w + j] = if ma[i] == mb[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && ma[i] == mb[j] {
                ops.push(Op::Same(head + i, head + j));
                (i, j) = (i + 1, j + 1);
            } else if j == m || (i < n && lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
                ops.push(Op::Del(head + i));
                i += 1;
            } else {
                ops.push(Op::Add(head + j));
                j += 1;
            }
        }
    }
    ops.extend((0..tail).map(|k| Op::Same(a.len() - tail + k, b.len() - tail + k)));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies a unified diff made by [`unified`] to `old` (a check that it says the truth).
    fn apply(old: &str, diff: &str) -> String {
        let a: Vec<&str> = old.split_inclusive('\n').collect();
        let mut out = String::new();
        let mut at = 0;
        let mut lines = diff.split_inclusive('\n').skip(2).peekable();
        while let Some(line) = lines.next() {
            if let Some(header) = line.strip_prefix("@@ -") {
                let old_range = header.split(' ').next().unwrap();
                let (start, count) = match old_range.split_once(',') {
                    Some((s, c)) => (s.parse::<usize>().unwrap(), c.parse::<usize>().unwrap()),
                    None => (old_range.parse().unwrap(), 1),
                };
                let first = if count == 0 { start } else { start - 1 };
                a[at..first].iter().for_each(|l| out.push_str(l));
                at = first;
                continue;
            }
            let body = &line[1..];
            let no_newline = lines.peek().is_some_and(|l| l.starts_with('\\'));
            let body = if no_newline { body.strip_suffix('\n').unwrap() } else { body };
            match line.as_bytes()[0] {
                b' ' => {
                    out.push_str(body);
                    at += 1;
                }
                b'-' => at += 1,
                b'+' => out.push_str(body),
                b'\\' => {}
                other => panic!("unexpected line start {other} in {diff}"),
            }
            if no_newline {
                lines.next();
            }
        }
        a[at..].iter().for_each(|l| out.push_str(l));
        out
    }

    fn numbered(range: std::ops::Range<usize>) -> String {
        range.map(|n| format!("line {n}\n")).collect()
    }

    #[test]
    fn unified_diff_table() {
        let ten = numbered(1..11);
        let changed_5 = ten.replace("line 5\n", "line five\n");
        let far = ten.replace("line 1\n", "line one\n").replace("line 10\n", "line ten\n");
        let near = ten.replace("line 3\n", "line three\n").replace("line 9\n", "line nine\n");
        // (what, old, new, diff)
        let cases: Vec<(&str, String, String, &str)> = vec![
            ("equal texts", ten.clone(), ten.clone(), ""),
            ("both empty", String::new(), String::new(), ""),
            (
                "one line in the middle, three lines of context",
                ten.clone(),
                changed_5,
                "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n",
            ),
            ("a new file", String::new(), "a\nb\n".into(), "--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n"),
            ("everything removed", "a\nb\n".into(), String::new(), "--- a/f\n+++ b/f\n@@ -1,2 +0,0 @@\n-a\n-b\n"),
            ("one line to one line", "a\n".into(), "b\n".into(), "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"),
            (
                "a line added at the end of a text without a last newline",
                "a\nb".into(),
                "a\nb\nc\n".into(),
                "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n",
            ),
            (
                "the last newline removed",
                "a\n".into(),
                "a".into(),
                "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n",
            ),
            (
                "an insertion keeps the lines around it as context",
                "a\nb\nc\nd\n".into(),
                "a\nb\nnew\nc\nd\n".into(),
                "--- a/f\n+++ b/f\n@@ -1,4 +1,5 @@\n a\n b\n+new\n c\n d\n",
            ),
            (
                "two changes far apart: two hunks",
                ten.clone(),
                far,
                "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-line 1\n+line one\n line 2\n line 3\n line 4\n\
                 @@ -7,4 +7,4 @@\n line 7\n line 8\n line 9\n-line 10\n+line ten\n",
            ),
            (
                "five lines between two changes: one hunk",
                ten.clone(),
                near,
                "--- a/f\n+++ b/f\n@@ -1,10 +1,10 @@\n line 1\n line 2\n-line 3\n+line three\n line 4\n line 5\n line 6\n \
                 line 7\n line 8\n-line 9\n+line nine\n line 10\n",
            ),
            (
                "a line moved: kept lines matched, not all replaced",
                "x\na\nb\nc\n".into(),
                "a\nb\nc\nx\n".into(),
                "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-x\n a\n b\n c\n+x\n",
            ),
        ];
        for (what, old, new, want) in cases {
            let got = unified(&old, &new, "a/f", "b/f", 3);
            assert_eq!(got, want, "{what}");
            if !got.is_empty() {
                assert_eq!(apply(&old, &got), new, "{what}: the diff applies");
            }
        }
    }

    #[test]
    fn a_large_change_is_still_a_correct_diff() {
        // 1,200 x 1,200 differing lines is over MAX_CELLS: all old lines out, all new ones in.
        let old: String = (0..1200).map(|n| format!("old {n}\n")).collect();
        let new: String = (0..1200).map(|n| format!("new {n}\n")).collect();
        let (old, new) = (format!("head\n{old}tail\n"), format!("head\n{new}tail\n"));
        let diff = unified(&old, &new, "a/f", "b/f", 3);
        assert!(diff.starts_with("--- a/f\n+++ b/f\n@@ -1,1202 +1,1202 @@\n head\n-old 0\n"), "{}", &diff[..80]);
        assert_eq!(apply(&old, &diff), new);
    }
}

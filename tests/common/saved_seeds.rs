//! Saved proptest cases replayed into the strategy of the test that saved them. A saved line is
//! `cc <seed> # shrinks to <argument> = <value>, ...`: proptest regenerates the failing case from the seed,
//! runs it first, and shrinks it to the case written. A strategy changed since (another range, another
//! argument, another order) makes another case of the same seed, and the failure once found is silently no
//! longer tested. [`replay`] checks it still is: proptest's own runner, given the seed as its only
//! persisted failure, generates from it and shrinks, each case failing while it still holds the saved one
//! (every number as far or farther from where proptest shrinks it, every list with the saved elements in
//! order, every variant the same or a later choice of its `prop_oneof!`); the case it ends on must be the
//! saved case. The bug's own failure is gone, so this stands in for it: a case made from the seed that no
//! longer holds the saved one (another range, another argument, another shape) is what it catches.
//!
//! Shared by the library's unit tests (`saved_seeds` in src/lib.rs) and the integration tests.

use proptest::strategy::Strategy;
use proptest::test_runner::{
    Config, FailurePersistence, PersistedSeed, TestCaseError, TestError, TestRunner,
};
use std::any::Any;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

/// One saved case: its seed line and the arguments the comment gives, by name.
#[derive(Clone, Debug)]
pub struct Saved {
    pub seed: String,
    pub arguments: Vec<(String, String)>,
}

/// The saved cases of `file` (none when there is no such file).
pub fn saved(file: &Path) -> Vec<Saved> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| l.starts_with("cc "))
        .map(|line| {
            let (seed, comment) = line.split_once('#').unwrap_or((line, ""));
            let case = comment
                .trim()
                .strip_prefix("shrinks to ")
                .unwrap_or_default();
            Saved {
                seed: seed.trim().to_string(),
                arguments: arguments(case),
            }
        })
        .collect()
}

/// `a = 1, b = [2, 3]` (each argument as the proptest! macro prints it) or `(a, b) = (1, [2, 3])` (one
/// pattern) as (name, value) pairs.
pub fn arguments(case: &str) -> Vec<(String, String)> {
    if let Some(rest) = case.strip_prefix('(')
        && let Some((names, values)) = rest.split_once(") = ")
    {
        let names = names.split(',').map(|n| n.trim().to_string());
        let values = top_level(
            values
                .strip_prefix('(')
                .and_then(|v| v.strip_suffix(')'))
                .unwrap_or(values),
        );
        return names.zip(values).collect();
    }
    top_level(case)
        .into_iter()
        .filter_map(|a| {
            a.split_once(" = ")
                .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// `text` split at its commas outside brackets and strings.
fn top_level(text: &str) -> Vec<String> {
    let (mut parts, mut depth, mut quoted, mut start) = (Vec::new(), 0i32, false, 0);
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' if i == 0 || bytes[i - 1] != b'\\' => quoted = !quoted,
            b'(' | b'[' | b'{' if !quoted => depth += 1,
            b')' | b']' | b'}' if !quoted => depth -= 1,
            b',' if !quoted && depth == 0 => {
                parts.push(text[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = text[start..].trim();
    if !last.is_empty() {
        parts.push(last.to_string());
    }
    parts
}

/// A value as Debug prints it, read back as a tree.
#[derive(Clone, Debug, PartialEq)]
enum Tree {
    Number(i128),
    Word(String),
    Text(String),
    /// `[..]`, `(..)`, `Name(..)`, `Name { field: .. }`: the name (empty for none), the bracket, the items
    /// (with their field names for structs).
    Group(String, u8, Vec<(Option<String>, Tree)>),
}

fn parse(text: &str) -> Tree {
    let tokens = tokens(text);
    let mut at = 0;
    let tree = parse_at(&tokens, &mut at);
    assert_eq!(at, tokens.len(), "unread Debug output: {text}");
    tree
}

fn tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '"' {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i] != '"' || chars[i - 1] == '\\') {
                i += 1;
            }
            i += 1;
            tokens.push(chars[start..i.min(chars.len())].iter().collect());
        } else if c.is_alphanumeric() || c == '_' || c == '-' || c == '.' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || "_-.".contains(chars[i])) {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else {
            tokens.push(c.to_string());
            i += 1;
        }
    }
    tokens
}

fn parse_at(tokens: &[String], at: &mut usize) -> Tree {
    let token = tokens[*at].clone();
    *at += 1;
    if let b @ (b'[' | b'(' | b'{') = token.as_bytes()[0] {
        return group(String::new(), b, tokens, at);
    }
    if token.starts_with('"') {
        return Tree::Text(token);
    }
    if let Ok(n) = token.parse::<i128>() {
        return Tree::Number(n);
    }
    match tokens.get(*at).map(|t| t.as_bytes()[0]) {
        Some(b @ (b'(' | b'{')) => {
            *at += 1;
            group(token, b, tokens, at)
        }
        _ => Tree::Word(token),
    }
}

fn group(name: String, open: u8, tokens: &[String], at: &mut usize) -> Tree {
    let close = match open {
        b'[' => "]",
        b'(' => ")",
        _ => "}",
    };
    let mut items = Vec::new();
    while tokens[*at] != close {
        let field = (tokens.get(*at + 1).is_some_and(|t| t == ":")).then(|| {
            let f = tokens[*at].clone();
            *at += 2;
            f
        });
        items.push((field, parse_at(tokens, at)));
        if tokens[*at] == "," {
            *at += 1;
        }
    }
    *at += 1;
    Tree::Group(name, open, items)
}

/// Whether shrinking `value` may still reach `target`: numbers between it and zero, `false` from `true`,
/// `None` from `Some`, fewer elements of a list (each matched in order), every part of anything else; and
/// an earlier variant of the `variants` a `prop_oneof!` chooses among, in its order (proptest shrinks a
/// union towards its first choices).
fn covers(value: &Tree, target: &Tree, variants: &[&str]) -> bool {
    let name = |t: &Tree| match t {
        Tree::Word(w) | Tree::Group(w, _, _) => variants.iter().position(|v| v == w),
        _ => None,
    };
    if let (Some(v), Some(t)) = (name(value), name(target))
        && t < v
    {
        return true;
    }
    let covers = |v: &Tree, t: &Tree| covers(v, t, variants);
    match (value, target) {
        (Tree::Number(v), Tree::Number(t)) => (0..=*v).contains(t) || (*v..=0).contains(t),
        (Tree::Word(v), Tree::Word(t)) => v == t || (v == "true" && t == "false"),
        (Tree::Group(name, _, _), Tree::Word(t)) => name == "Some" && t == "None",
        (Tree::Group(vn, b'[', vs), Tree::Group(tn, b'[', ts)) => {
            let mut from = 0;
            vn == tn
                && ts.iter().all(|(_, t)| {
                    let found = (from..vs.len()).find(|&i| covers(&vs[i].1, t));
                    found.inspect(|&i| from = i + 1).is_some()
                })
        }
        (Tree::Group(vn, vb, vs), Tree::Group(tn, tb, ts)) => {
            vn == tn
                && vb == tb
                && vs.len() == ts.len()
                && (vs.iter().zip(ts)).all(|((vf, v), (tf, t))| vf == tf && covers(v, t))
        }
        _ => value == target,
    }
}

/// A persistence holding one seed and keeping nothing: proptest's runner started from a saved seed.
#[derive(Debug)]
pub struct One(pub PersistedSeed);

impl FailurePersistence for One {
    fn load_persisted_failures2(&self, _: Option<&'static str>) -> Vec<PersistedSeed> {
        vec![self.0.clone()]
    }

    fn save_persisted_failure2(
        &mut self,
        _: Option<&'static str>,
        _: PersistedSeed,
        _: &dyn Debug,
    ) {
    }

    fn box_clone(&self) -> Box<dyn FailurePersistence> {
        Box::new(One(self.0.clone()))
    }

    fn eq(&self, other: &dyn FailurePersistence) -> bool {
        other
            .as_any()
            .downcast_ref::<One>()
            .is_some_and(|o| o.0 == self.0)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Replays `saved` into `strategy` (whose values are tuples of the test's arguments, in order), whose
/// `prop_oneof!`s choose among `variants`.
/// What it gave instead of the saved case, if anything else.
pub fn replay_one<S>(saved: &Saved, strategy: &S, variants: &[&str]) -> Result<(), String>
where
    S: Strategy,
    S::Value: Debug,
{
    let seed: PersistedSeed = saved.seed.parse().expect("a seed proptest reads");
    let config = Config {
        cases: 0,
        failure_persistence: Some(Box::new(One(seed))),
        source_file: None,
        max_shrink_iters: 1_000_000,
        max_shrink_time: 0,
        ..Config::default()
    };
    let target: Vec<Tree> = (saved.arguments.iter()).map(|(_, v)| parse(v)).collect();
    let as_arguments = |value: &S::Value| -> Vec<String> {
        let text = format!("{value:?}");
        let inner = text.strip_prefix('(').and_then(|t| t.strip_suffix(')'));
        top_level(inner.unwrap_or(&text))
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(strategy, |value| {
        let values = as_arguments(&value);
        let holds = values.len() == target.len()
            && (values.iter().zip(&target)).all(|(v, t)| covers(&parse(v), t, variants));
        if holds {
            Err(TestCaseError::fail("holds the saved case"))
        } else {
            Ok(())
        }
    });
    match result {
        Ok(()) => Err("the case made from the seed does not hold the saved one".into()),
        Err(TestError::Fail(_, value)) => {
            let got = as_arguments(&value);
            let saved: Vec<&String> = saved.arguments.iter().map(|(_, v)| v).collect();
            if got.iter().eq(saved) {
                Ok(())
            } else {
                Err(format!("it shrinks to {}", got.join(", ")))
            }
        }
        Err(TestError::Abort(why)) => panic!("{why}"),
    }
}

/// The saved cases of the test whose arguments are `names`, in proptest's file for `source` (a path
/// `file!()` gives, from the package root); each must replay into `strategy` (see [`replay_one`]). Returns
/// how many did.
pub fn replay<S>(source: &str, names: &[&str], strategy: S, variants: &[&str]) -> usize
where
    S: Strategy,
    S::Value: Debug,
{
    let file = saved_file(Path::new(source));
    let mine: Vec<Saved> = (saved(&file).into_iter())
        .filter(|s| {
            s.arguments
                .iter()
                .map(|(n, _)| n.as_str())
                .eq(names.iter().copied())
        })
        .collect();
    let failed: Vec<String> = (mine.iter())
        .filter_map(|s| {
            replay_one(s, &strategy, variants)
                .err()
                .map(|e| format!("{}: {e}", s.seed))
        })
        .collect();
    assert!(
        failed.is_empty(),
        "saved cases in {} the strategy no longer makes:\n{}",
        file.display(),
        failed.join("\n")
    );
    mine.len()
}

/// How many cases are saved for `source`: the replays of its tests must account for them all.
pub fn count(source: &str) -> usize {
    saved(&saved_file(Path::new(source))).len()
}

/// Where proptest keeps `source`'s saved cases: beside `src/` in `proptest-regressions/` for the
/// library's files, `<file>.proptest-regressions` beside the others (nothing above `tests/` holds a lib.rs
/// or main.rs, so proptest falls back to its `WithSource`).
pub fn saved_file(source: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match source.strip_prefix("src") {
        Ok(rest) => root
            .join("proptest-regressions")
            .join(rest)
            .with_extension("txt"),
        Err(_) => root.join(source).with_extension("proptest-regressions"),
    }
}

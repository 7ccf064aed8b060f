//! CEL's `matches()`, as `s.matches(re)` and `matches(s, re)`, with each pattern compiled once and shared.
//!
//! cel's own `matches` (its `regex` feature) compiles the pattern on every call. A selector such as NVIDIA's
//! `productName.lowerAscii().matches('^.*a10g.*$')` runs once per device (each GPU has its own uuid, so no
//! verdict is shared between devices), on every node the loop simulates: compiling there was most of the
//! first allocation on a node. Here the compiled regex, or why the pattern is bad, is kept by pattern.
//!
//! Kubernetes evaluates selectors with cel-go, whose `matches` is Go's `regexp` (RE2 syntax, unanchored).
//! The `regex` crate is the same family (RE2 syntax, linear time, no backreferences or lookaround), and
//! agrees on the patterns selectors are written with. Where the two differ:
//! - `\d`, `\w`, `\s` and `\b` are ASCII in Go and Unicode here: `'٣'.matches('^\\d$')` is true here.
//! - Go reads `\Q...\E` as literal text; here it is a bad pattern.
//! - Here `[a&&b]`, `[a--b]` and `[a~~b]` are class set operations and `[[a]]` a nested class; Go reads the
//!   `&`, `-`, `~` and `[` as characters of the class.
//! - Here the `x` (verbose) and `R` (CRLF) flags are accepted, and a repetition may exceed `{1000}` (within
//!   the compiled size limit); Go refuses them as bad patterns.

use crate::model::FastMap;
use cel::common::types::{CelBool, CelString};
use cel::{DeclarationError, Env, ExecutionError};
use regex::Regex;
use std::sync::{Arc, LazyLock, Mutex};

/// How many distinct patterns are kept. Selectors are written by people, so a cluster has a handful; the
/// cap only bounds a stream of ever new patterns (built from attribute values, say).
const MAX_PATTERNS: usize = 256;

/// A pattern compiled, or the `regex` crate's reason it does not compile.
type CompiledRegex = Result<Arc<Regex>, Arc<str>>;

/// Compiled patterns by their text, shared by every selector and thread.
#[derive(Debug)]
pub(crate) struct RegexCache {
    compiled: Mutex<FastMap<Box<str>, CompiledRegex>>,
    cap: usize,
}

impl RegexCache {
    pub(crate) fn new(cap: usize) -> RegexCache {
        RegexCache {
            compiled: Mutex::new(FastMap::default()),
            cap: cap.max(1),
        }
    }

    /// `pattern` compiled (once, while it stays cached). The lock is held while compiling, so that threads
    /// asking for the same new pattern compile it once.
    pub(crate) fn get(&self, pattern: &str) -> CompiledRegex {
        let mut compiled = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = compiled.get(pattern) {
            return found.clone();
        }
        if compiled.len() >= self.cap {
            // Full: drop an arbitrary pattern (the map's order is hashed, so no pattern is favoured).
            if let Some(victim) = compiled.keys().next().cloned() {
                compiled.remove(&victim);
            }
        }
        let result = Regex::new(pattern)
            .map(Arc::new)
            .map_err(|e| Arc::from(e.to_string()));
        compiled.insert(pattern.into(), result.clone());
        result
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.compiled.lock().unwrap().len()
    }
}

static PATTERNS: LazyLock<RegexCache> = LazyLock::new(|| RegexCache::new(MAX_PATTERNS));

/// Whether `re` matches anywhere in `this`. A bad pattern is an error of the call, so of the selector
/// evaluating it, with the message cel's own `matches` gives.
fn matches(this: &CelString<'_>, re: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    match PATTERNS.get(re.inner()) {
        Ok(regex) => Ok(CelBool::from(regex.is_match(this.inner()))),
        Err(e) => Err(ExecutionError::FunctionError {
            function: "matches".to_string(),
            message: format!("'{}' not a valid regex:\n{e}", re.inner()),
        }),
    }
}

/// Declares `matches(string, string)` and `string.matches(string)` (cel-go's overloads `matches` and
/// `matches_string`), as cel's standard library declares them with its `regex` feature.
pub(crate) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    cel::add_overload!(env, fn matches: (CelString, CelString) -> Result<CelBool>, id = "matches")?;
    cel::add_member_overload!(env, fn matches: (CelString, CelString) -> Result<CelBool>,
        id = "matches_string")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cel::{Context, Value};

    fn eval(expression: &str) -> Result<Value, ExecutionError> {
        let mut env = Env::stdlib();
        env.add_extension(library).unwrap();
        env.add_extension(cel::extensions::strings).unwrap();
        let program = env.compile(expression).unwrap();
        program.execute(&Context::with_env(Arc::new(env)))
    }

    #[test]
    fn member_and_global_forms_match_anywhere_in_the_string() {
        assert_eq!(eval("'nvidia a10g'.matches('a10g')"), Ok(Value::Bool(true)));
        assert_eq!(
            eval("'nvidia a10g'.matches('^a10g')"),
            Ok(Value::Bool(false))
        );
        assert_eq!(eval("matches('tesla t4', '^.*t4$')"), Ok(Value::Bool(true)));
        assert_eq!(eval("matches('tesla t4', 'a10g')"), Ok(Value::Bool(false)));
        assert_eq!(
            eval("['A10G', 'T4'].filter(p, p.lowerAscii().matches('^a')) == ['A10G']"),
            Ok(Value::Bool(true))
        );
    }

    #[test]
    fn a_bad_pattern_is_an_error_when_evaluated() {
        for expression in ["'x'.matches('(foo')", "matches('x', '(foo')"] {
            let Err(ExecutionError::FunctionError { function, message }) = eval(expression) else {
                panic!("{expression} should fail");
            };
            assert_eq!(function, "matches");
            assert!(
                message.starts_with("'(foo' not a valid regex:")
                    && message.contains("unclosed group"),
                "{message}"
            );
        }
        // The error is cached too, and stays an error.
        assert!(eval("'x'.matches('(foo')").is_err());
    }

    #[test]
    fn only_strings_have_the_overload() {
        assert!(eval("1.matches('1')").is_err());
        assert!(eval("'1'.matches(1)").is_err());
    }

    #[test]
    fn alternating_patterns_each_get_their_own_regex() {
        let cache = RegexCache::new(8);
        for _ in 0..3 {
            for (pattern, text, expected) in [
                ("^a10g$", "a10g", true),
                ("^t4$", "a10g", false),
                ("^t4$", "t4", true),
                ("^a10g$", "t4", false),
            ] {
                let regex = cache.get(pattern).unwrap();
                assert_eq!(regex.as_str(), pattern);
                assert_eq!(regex.is_match(text), expected, "{pattern} on {text}");
            }
        }
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn the_cache_stays_within_its_cap_and_still_answers() {
        let cache = RegexCache::new(4);
        for i in 0..20 {
            let pattern = format!("^gpu-{i}$");
            assert!(cache.get(&pattern).unwrap().is_match(&format!("gpu-{i}")));
            assert!(!cache.get(&pattern).unwrap().is_match("gpu-x"));
            assert!(cache.len() <= 4, "{} patterns kept", cache.len());
        }
        // An evicted pattern compiles again, to the same regex.
        assert!(cache.get("^gpu-0$").unwrap().is_match("gpu-0"));
    }
}

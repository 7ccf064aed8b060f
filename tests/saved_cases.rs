//! proptest replays the failing cases it once found, saved as `cc <seed> # shrinks to <case>` lines: for a
//! test in `src/<path>.rs` from `proptest-regressions/<path>.txt`, for an integration test `tests/<name>.rs`
//! from `tests/<name>.proptest-regressions` (nothing above `tests/` holds a lib.rs, so proptest keeps them
//! beside the file). Move a file, break a line, or change the strategy a seed was saved from, and the case
//! is silently never run again (it happened once, when the estimator became a folder).
//!
//! Here: every saved file is where proptest looks for its test's cases (read with proptest's own
//! persistence, every line of it taken), and its source both holds the property tests and replays each
//! saved case into the strategy of the test that saved it (`the_saved_cases_replay` there, through
//! tests/common/saved_seeds.rs: proptest's runner, given the seed, regenerates the case and shrinks it to
//! the one written, or the test fails). The replay itself is checked below on a strategy made for it: a
//! seed into a strategy changed since, or a case its seed cannot make, is refused.

#[path = "common/saved_seeds.rs"]
mod saved_seeds;

use proptest::prelude::*;
use proptest::test_runner::{FailurePersistence, FileFailurePersistence};
use std::path::{Path, PathBuf};

fn files(dir: &Path, found: &mut Vec<PathBuf>, saved: &dyn Fn(&Path) -> bool) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, found, saved);
        } else if saved(&path) {
            found.push(path);
        }
    }
}

/// Every saved file, with the source (from the package root) whose property tests it is for.
fn saved_files(root: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut found = Vec::new();
    let regressions = root.join("proptest-regressions");
    let mut library = Vec::new();
    files(&regressions, &mut library, &|p| {
        p.extension().is_some_and(|e| e == "txt")
    });
    for file in library {
        let relative = file
            .strip_prefix(&regressions)
            .unwrap()
            .with_extension("rs");
        found.push((file, Path::new("src").join(relative)));
    }
    let mut integration = Vec::new();
    files(&root.join("tests"), &mut integration, &|p| {
        p.extension().is_some_and(|e| e == "proptest-regressions")
    });
    for file in integration {
        let source = file.with_extension("rs");
        found.push((file, source.strip_prefix(root).unwrap().to_path_buf()));
    }
    found
}

#[test]
fn every_saved_case_is_read_by_proptest_and_replayed_by_its_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = saved_files(root);
    assert!(!files.is_empty(), "no saved cases under {}", root.display());
    let mut wrong = Vec::new();
    for (file, source) in &files {
        let shown = file.strip_prefix(root).unwrap().display();
        let text = std::fs::read_to_string(root.join(source)).unwrap_or_default();
        if !text.contains("proptest!") {
            wrong.push(format!("{shown}: no property test in {}", source.display()));
            continue;
        }
        if !text.contains("fn the_saved_cases_replay()") {
            wrong.push(format!(
                "{shown}: {} does not replay its saved cases",
                source.display()
            ));
        }
        // Where proptest itself looks for the source's cases (it is given `file!()`, made absolute).
        let absolute: &'static str = Box::leak(root.join(source).to_string_lossy().into());
        let persistence = FileFailurePersistence::default();
        let loaded = persistence.load_persisted_failures2(Some(absolute));
        let saved = saved_seeds::saved(file);
        if loaded.len() != saved.len() {
            wrong.push(format!(
                "{shown}: proptest reads {} of its {} cases for {}",
                loaded.len(),
                saved.len(),
                source.display()
            ));
        }
        for case in saved.iter().filter(|s| s.arguments.is_empty()) {
            wrong.push(format!("{shown}: {} says no case it shrinks to", case.seed));
        }
        let file_of = saved_seeds::saved_file(source);
        if &file_of != file {
            wrong.push(format!("{shown}: replayed from {}", file_of.display()));
        }
    }
    assert!(
        wrong.is_empty(),
        "saved cases nothing replays:\n{}",
        wrong.join("\n")
    );
}

/// A strategy of two arguments, for the cases below.
fn pair() -> impl Strategy<Value = (Vec<u32>, bool)> {
    (prop::collection::vec(0u32..1000, 0..8), any::<bool>())
}

/// Runs `pair()` from `seed` as proptest does with a saved case whose test fails while the first argument
/// holds a number of at least 500, and writes the line it would save.
fn saved_line(seed: &str) -> String {
    use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
    let config = Config {
        cases: 0,
        failure_persistence: Some(Box::new(saved_seeds::One(seed.parse().unwrap()))),
        max_shrink_iters: 1_000_000,
        ..Config::default()
    };
    let result = TestRunner::new(config).run(&pair(), |(numbers, _)| {
        if numbers.iter().any(|&n| n >= 500) {
            return Err(TestCaseError::fail("a big number"));
        }
        Ok(())
    });
    let Err(TestError::Fail(_, (numbers, flag))) = result else {
        panic!("the seed makes no failing case: {result:?}");
    };
    format!("{seed} # shrinks to numbers = {numbers:?}, flag = {flag:?}")
}

/// A saved line read back.
fn read(line: &str) -> saved_seeds::Saved {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cases.txt");
    std::fs::write(&file, format!("{line}\n")).unwrap();
    saved_seeds::saved(&file).remove(0)
}

#[test]
fn a_case_replays_into_its_strategy_and_not_into_another() {
    // A seed whose case holds a number of 500 or more: proptest shrinks it to one number, 500.
    let seed = (0u8..=255)
        .map(|b| format!("cc {}", format!("{b:02x}").repeat(32)))
        .find(|s| std::panic::catch_unwind(|| saved_line(s)).is_ok_and(|l| l.contains("[500]")))
        .expect("a seed among 256");
    let line = saved_line(&seed);
    let saved = read(&line);
    assert_eq!(saved.arguments[0], ("numbers".into(), "[500]".into()));
    assert_eq!(saved_seeds::replay_one(&saved, &pair(), &[]), Ok(()));
    // As a test replays the cases saved beside its file.
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("cases.rs").to_string_lossy().into_owned();
    std::fs::write(
        dir.path().join("cases.proptest-regressions"),
        format!("{line}\n"),
    )
    .unwrap();
    assert_eq!(saved_seeds::count(&source), 1);
    assert_eq!(
        saved_seeds::replay(&source, &["numbers", "flag"], pair(), &[]),
        1
    );

    // The same seed into a strategy changed since (smaller numbers) makes a case without it.
    let changed = (prop::collection::vec(0u32..400, 0..8), any::<bool>());
    let refused = saved_seeds::replay_one(&saved, &changed, &[]).unwrap_err();
    assert!(refused.contains("does not hold the saved one"), "{refused}");
    // A case written that its seed cannot make (more numbers than the strategy draws) is refused.
    let edited = read(&line.replace("[500]", &format!("{:?}", [500; 9])));
    let refused = saved_seeds::replay_one(&edited, &pair(), &[]).unwrap_err();
    assert!(refused.contains("does not hold the saved one"), "{refused}");
}

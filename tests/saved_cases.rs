//! proptest replays the failing cases it once found from `proptest-regressions/<path>.txt`, where `<path>` is
//! the test's source file under `src/`. Move the file and the cases are silently never run again (it happened
//! once, when the estimator became a folder): this fails on any saved file whose source is gone or holds no
//! property test.

use std::path::{Path, PathBuf};

fn saved_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            saved_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "txt") {
            found.push(path);
        }
    }
}

#[test]
fn every_saved_case_has_a_property_test_to_replay_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let saved = root.join("proptest-regressions");
    let mut files = Vec::new();
    saved_files(&saved, &mut files);
    assert!(
        !files.is_empty(),
        "no saved cases under {}",
        saved.display()
    );
    let mut orphans = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&saved).unwrap().with_extension("rs");
        let source = root.join("src").join(&relative);
        let replays = std::fs::read_to_string(&source).is_ok_and(|text| text.contains("proptest!"));
        if !replays {
            orphans.push(format!(
                "{} (no property test in src/{})",
                file.strip_prefix(root).unwrap().display(),
                relative.display()
            ));
        }
    }
    assert!(
        orphans.is_empty(),
        "saved cases nothing replays; move them beside their test:\n{}",
        orphans.join("\n")
    );
}

//! Every file the project's words name exists: the paths written in docs/, the README and BENCHMARKS.md, and
//! those in the comments of src/ (module headers and the line after each `mod`). A file renamed or moved
//! without its mentions fails here, so the map a reader follows stays the territory. Read from the tree.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What a mention may end with to be taken for one of our files.
const EXTENSIONS: &[&str] = &[
    "rs", "md", "yaml", "yml", "json", "proto", "toml", "sh", "py",
];

/// Names that look like files of ours but are someone else's, each with where it lives.
const NOT_OURS: &[(&str, &str)] = &[
    (
        "config.yaml",
        "the key of the ConfigMap `ekscale-disruption` that holds the disruption configuration",
    ),
    (
        "provider.yaml",
        "the user's own provider configuration in the README's AWS example",
    ),
    (
        "CASE.yaml",
        "a placeholder in BENCHMARKS.md for the cases a bench writes out",
    ),
    (
        "CASE.json",
        "a placeholder in BENCHMARKS.md for the cases a bench writes out",
    ),
];

#[test]
fn every_path_the_docs_and_comments_name_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tree = Files::read(root);
    let mut missing = Vec::new();
    let mut checked = 0;
    for text_file in tree.texts() {
        let text = std::fs::read_to_string(root.join(&text_file)).unwrap();
        let is_source = text_file.extension().is_some_and(|e| e == "rs");
        for (number, line) in text.lines().enumerate() {
            let words = if is_source {
                match line.find("//") {
                    Some(at) => &line[at..],
                    None => continue,
                }
            } else {
                line
            };
            for mention in mentions(words) {
                checked += 1;
                if !tree.has(&mention) {
                    missing.push(format!(
                        "{}:{}: names {mention}, which is not in the tree",
                        text_file.display(),
                        number + 1
                    ));
                }
            }
        }
    }
    assert!(
        checked > 200,
        "only {checked} mentions read: is the scan broken?"
    );
    assert!(
        missing.is_empty(),
        "paths that do not exist (renamed or moved? fix the mention):\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_scan_reads_mentions_as_a_reader_would() {
    assert_eq!(
        mentions("see `src/autoscaler/core/runonce.rs`, then planner.rs; docs/testing.md#dated."),
        [
            "src/autoscaler/core/runonce.rs",
            "planner.rs",
            "docs/testing.md"
        ]
    );
    // Not files of ours: a machine's absolute path, a URL, a glob, a Go file upstream.
    assert_eq!(
        mentions(
            "/etc/ca/cloud-config.yaml https://x.io/a/b.md tests/*.rs core/scaledown/planner.go"
        ),
        Vec::<String>::new()
    );
    let tree = Files {
        all: ["src/autoscaler/core/runonce.rs", "docs/testing.md"]
            .map(PathBuf::from)
            .into_iter()
            .collect(),
    };
    assert!(tree.has("src/autoscaler/core/runonce.rs"));
    assert!(tree.has("core/runonce.rs"), "a path's tail names the file");
    assert!(
        tree.has("runonce.rs"),
        "a bare name is any file of that name"
    );
    assert!(!tree.has("ore/runonce.rs"), "a tail starts at a folder");
    assert!(!tree.has("run_once.rs"));
}

/// The file names and paths in `words`: tokens ending in one of our extensions, trimmed of the punctuation
/// and anchors around them.
fn mentions(words: &str) -> Vec<String> {
    words
        .split(|c: char| c.is_whitespace() || "`'\"()[]<>,;|".contains(c))
        .filter(|w| !w.contains("://") && !w.starts_with('/') && !w.contains('*'))
        .filter_map(|w| {
            let w = w.split('#').next().unwrap_or("");
            let w = w.split(':').next().unwrap_or("");
            let w = w.trim_end_matches(['.', '!', '?']);
            let (stem, extension) = w.rsplit_once('.')?;
            let ours = EXTENSIONS.contains(&extension)
                && !stem.is_empty()
                && stem
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
            ours.then(|| w.to_string())
        })
        .filter(|w| !NOT_OURS.iter().any(|(name, _)| name == w))
        .collect()
}

/// The repository's files, as paths from its root.
struct Files {
    all: BTreeSet<PathBuf>,
}

impl Files {
    fn read(root: &Path) -> Files {
        let mut all = BTreeSet::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy();
                if name.starts_with('.') && name != ".ci" || name == "target" {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                } else {
                    all.insert(path.strip_prefix(root).unwrap().to_path_buf());
                }
            }
        }
        Files { all }
    }

    /// The texts whose mentions are checked: the docs, and every source file of the crate.
    fn texts(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.all
            .iter()
            .filter(|p| {
                let top = p.components().next().unwrap().as_os_str();
                (top == "docs" && p.extension().is_some_and(|e| e == "md"))
                    || *p == Path::new("README.md")
                    || *p == Path::new("BENCHMARKS.md")
                    || (top == "src" && p.extension().is_some_and(|e| e == "rs"))
            })
            .cloned()
    }

    /// Whether `mention` names a file: the whole path from the root, a path's tail from a folder on, or a bare
    /// file name anywhere.
    fn has(&self, mention: &str) -> bool {
        let mention = mention.trim_start_matches("./");
        self.all.iter().any(|p| {
            let p = p.to_string_lossy();
            p == mention || p.ends_with(&format!("/{mention}"))
        })
    }
}

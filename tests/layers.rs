//! Imports go one way (docs/architecture.md, "Layers"): each top-level module of `src/` may use only modules
//! of a lower layer. The programs (`provider`, `autoscaler`) never import each other and the autoscaler never
//! the cloud: it reaches it only through the provider, over gRPC. Inside a module, no two files import each
//! other through any chain, and in the companion only the provider client speaks the wire types. Read from
//! the source, so that a `use` that goes upward or around fails here before anyone builds on it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each module's layer; a module may import those of lower layers only.
const LAYERS: &[(&str, u8)] = &[
    ("model", 0),
    ("proto", 1),
    ("clock", 0),
    ("tls", 0),
    ("telemetry", 0),
    ("http", 0),
    ("k8s", 1),
    ("simulator", 2),
    ("cloud", 2),
    ("provider", 3),
    ("autoscaler", 3),
    ("sim", 4),
    ("demo", 5),
];

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The modules a file names as `crate::<module>`, with the line of each.
fn uses(text: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap();
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push((name, n + 1));
            }
        }
    }
    found
}

#[test]
fn every_import_goes_down_a_layer() {
    let layer: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut wrong = Vec::new();
    let mut checked = 0;
    for path in all {
        let relative = path.strip_prefix(&src).unwrap();
        let top = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = top.trim_end_matches(".rs");
        if module == "bin" || module == "lib" {
            continue; // the programs' entry points wire everything together
        }
        let Some(&own) = layer.get(module) else {
            panic!("src/{module} is in no layer: add it to LAYERS and to docs/architecture.md");
        };
        for (used, line) in uses(&std::fs::read_to_string(&path).unwrap()) {
            if used == module {
                continue;
            }
            let target = layer.get(used.as_str()).copied();
            if target.is_none_or(|t| t >= own) {
                wrong.push(format!(
                    "src/{}:{line}: {module} (layer {own}) uses crate::{used} (layer {target:?})",
                    relative.display()
                ));
            }
            checked += 1;
        }
    }
    assert!(
        wrong.is_empty(),
        "imports going up or sideways:\n{}",
        wrong.join("\n")
    );
    assert!(
        checked > 100,
        "only {checked} imports read: is the scan broken?"
    );
}

#[test]
fn the_scan_sees_an_upward_import() {
    let text =
        "use crate::model::Pod;\nfn f() { crate::autoscaler::runonce::go(); } // crate::demo\n";
    assert_eq!(
        uses(text),
        [("model".to_string(), 1), ("autoscaler".to_string(), 2)]
    );
}

/// A file's module path: `src/autoscaler/scaledown/policy.rs` is `autoscaler::scaledown::policy`, a folder's
/// `mod.rs` is the folder's module.
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = (relative.components())
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The code of a file without comments and without its test module (which `src/` files keep last).
fn code(text: &str) -> String {
    let mut lines = Vec::new();
    let mut all = text.lines().peekable();
    while let Some(line) = all.next() {
        if line.trim() == "#[cfg(test)]" && all.peek().is_some_and(|l| l.starts_with("mod ")) {
            break;
        }
        lines.push(line.split("//").next().unwrap_or(""));
    }
    lines.join("\n")
}

/// Every path a file's code names from `crate::` or `super::`, with `use` groups spread out:
/// `crate::a::{b, c::D}` is `crate::a::b` and `crate::a::c::D`.
fn paths(code: &str) -> Vec<Vec<String>> {
    /// The paths of a group or path that starts at `rest`, each after `prefix`.
    fn spread(rest: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
        let mut path = prefix.to_vec();
        let mut i = 0;
        let bytes = rest.as_bytes();
        loop {
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if rest[i..].starts_with('{') {
                i += 1;
                loop {
                    while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b',') {
                        i += 1;
                    }
                    if i >= bytes.len() || bytes[i] == b'}' {
                        return i + 1;
                    }
                    i += spread(&rest[i..], &path, out);
                }
            }
            let word: String = rest[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            i += word.len();
            if !word.is_empty() && word != "self" {
                path.push(word);
            }
            if rest[i..].starts_with("::") {
                i += 2;
                continue;
            }
            out.push(path);
            // Past `as name` and anything else up to the end of this item.
            while i < bytes.len() && !matches!(bytes[i], b',' | b'}' | b';' | b'(' | b')') {
                if bytes[i].is_ascii_whitespace()
                    || bytes[i].is_ascii_alphanumeric()
                    || bytes[i] == b'_'
                {
                    i += 1;
                } else {
                    break;
                }
            }
            return i;
        }
    }
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        for (i, _) in code.match_indices(start) {
            let before = code[..i].chars().last();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let root = start.trim_end_matches("::").to_string();
            spread(&code[i + start.len()..], &[root], &mut out);
        }
    }
    out
}

/// The files of `src/` by module path, and for each the files its code names.
fn import_graph() -> (
    BTreeMap<Vec<String>, PathBuf>,
    BTreeMap<PathBuf, BTreeSet<PathBuf>>,
) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let modules: BTreeMap<Vec<String>, PathBuf> = (all.iter())
        .filter(|p| !p.starts_with(src.join("bin")))
        .map(|p| (module_of(p.strip_prefix(&src).unwrap()), p.clone()))
        .collect();
    let mut graph = BTreeMap::new();
    for (module, path) in &modules {
        let text = std::fs::read_to_string(path).unwrap();
        let mut names = BTreeSet::new();
        for named in paths(&code(&text)) {
            // `super` is the parent of the file's module; `crate` is the root.
            let mut full: Vec<String> = Vec::new();
            let mut rest = named.as_slice();
            if rest.first().is_some_and(|r| r == "super") {
                full = module.clone();
                while rest.first().is_some_and(|r| r == "super") {
                    full.pop();
                    rest = &rest[1..];
                }
            } else {
                rest = &rest[1..];
            }
            full.extend(rest.iter().cloned());
            // The longest prefix that is a file is the file it names.
            let target = (1..=full.len()).rev().find_map(|n| modules.get(&full[..n]));
            if let Some(target) = target.filter(|t| *t != path) {
                names.insert(target.clone());
            }
        }
        graph.insert(path.clone(), names);
    }
    (modules, graph)
}

/// The circles of `graph`: each strongly connected set of more than one file (Tarjan's algorithm).
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'g PathBuf, usize>,
        low: BTreeMap<&'g PathBuf, usize>,
        stack: Vec<&'g PathBuf>,
        on_stack: BTreeSet<&'g PathBuf>,
        found: Vec<Vec<PathBuf>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g PathBuf) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in &self.graph[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut set = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    set.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    self.found.push(set);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn no_two_files_import_each_other_through_any_chain() {
    let (modules, graph) = import_graph();
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    assert!(
        modules.len() > 100 && edges > 300,
        "only {} files and {edges} imports read: is the scan broken?",
        modules.len()
    );
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found: Vec<String> = circles(&graph)
        .iter()
        .map(|set| {
            let names: Vec<String> = (set.iter())
                .map(|p| p.strip_prefix(&src).unwrap().display().to_string())
                .collect();
            names.join(" <-> ")
        })
        .collect();
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_scan_sees_a_circle_through_groups_and_super() {
    let a = "use crate::x::{b::Thing, c};\nfn f() { super::d::go(); }";
    assert_eq!(
        paths(&code(a)),
        [
            vec!["crate", "x", "b", "Thing"],
            vec!["crate", "x", "c"],
            vec!["super", "d", "go"]
        ]
    );
    let graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(from, to)| (from.into(), to.into_iter().map(PathBuf::from).collect()))
    .collect();
    assert_eq!(
        circles(&graph),
        [vec![
            PathBuf::from("a"),
            PathBuf::from("b"),
            PathBuf::from("c")
        ]]
    );
}

#[test]
fn only_the_provider_client_speaks_the_wire_types_in_the_companion() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src.join("autoscaler"), &mut all);
    let client = src.join("autoscaler").join("client.rs");
    let mut wrong = Vec::new();
    for path in &all {
        let text = std::fs::read_to_string(path).unwrap();
        let speaks = uses(&code(&text)).iter().any(|(m, _)| m == "proto");
        if speaks && *path != client {
            wrong.push(path.strip_prefix(&src).unwrap().display().to_string());
        }
        if *path == client {
            assert!(
                speaks,
                "the client no longer reads crate::proto: is the scan broken?"
            );
        }
    }
    assert!(
        wrong.is_empty(),
        "wire types past the provider client: {}",
        wrong.join(", ")
    );
}

//! Imports go one way (docs/architecture.md, "Layers"): each top-level module of `src/` may use only modules
//! of a lower layer. The programs (`provider`, `autoscaler`) never import each other and the autoscaler never
//! the cloud: it reaches it only through the provider, over gRPC. No two files import each other through any
//! chain, and every folder, drawn on its own, is one-way too: its files and subfolders import each other in no
//! circle. A folder's `mod.rs` is its face: it declares and re-exports, defines nothing, and its children
//! import their siblings by their own paths, never back through it. Outside its module, code names a module's
//! face only. In the companion only the provider client speaks the wire types. Read from the source, so that
//! a `use` that goes upward or around fails here before anyone builds on it.

#[path = "layers/scan.rs"]
mod scan;

use scan::{Tree, circles, code, declared, definitions_in_face, files, paths, uses};
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
    // Test support only (tests/common/saved_seeds.rs, in the library under cfg(test)): proptest, no crate.
    ("saved_seeds", 0),
    ("k8s", 1),
    ("oracle", 1),
    ("simulator", 2),
    ("cloud", 2),
    ("provider", 3),
    ("autoscaler", 3),
    ("simulated_cluster", 4),
    ("demo", 5),
];

#[test]
fn every_import_goes_down_a_layer() {
    let layer: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let src = src();
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

#[test]
fn no_two_files_import_each_other_through_any_chain() {
    let tree = Tree::read(&src());
    let edges: usize = tree.graph.values().map(BTreeSet::len).sum();
    assert!(
        tree.modules.len() > 100 && edges > 300,
        "only {} files and {edges} imports read: is the scan broken?",
        tree.modules.len()
    );
    let found: Vec<String> = circles(&tree.graph)
        .iter()
        .map(|set| {
            let names: Vec<String> = set.iter().map(|p| tree.name(p)).collect();
            names.join(" <-> ")
        })
        .collect();
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn every_folder_is_one_way() {
    let tree = Tree::read(&src());
    let folders = tree.folders();
    assert!(
        folders.len() > 15,
        "only {} folders read: is the scan broken?",
        folders.len()
    );
    let found: Vec<String> = (folders.iter())
        .flat_map(|f| tree.folder_circles(f))
        .collect();
    assert!(
        found.is_empty(),
        "folders whose rooms import each other in a circle (a child importing through its folder's face, or \
         two rooms naming each other):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_face_declares_and_re_exports_only() {
    let tree = Tree::read(&src());
    let mut wrong = Vec::new();
    let mut faces = 0;
    for path in tree.modules.values() {
        let file = path.file_name().unwrap();
        if file != "mod.rs" && file != "lib.rs" {
            continue;
        }
        faces += 1;
        let text = std::fs::read_to_string(path).unwrap();
        for line in definitions_in_face(&text) {
            wrong.push(format!("{}: {line}", tree.name(path)));
        }
    }
    assert!(faces > 15, "only {faces} faces read: is the scan broken?");
    assert!(
        wrong.is_empty(),
        "faces that define something (move it into a file of its own, which the children import by path):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn outside_its_module_code_names_a_face_only() {
    let tree = Tree::read(&src());
    // Below the top level, a module is private unless it is a folder's face: a file is never `pub mod`.
    let mut wrong = Vec::new();
    let mut public = BTreeSet::new();
    for (path, declared) in &tree.declarations {
        if path.starts_with(src().join("proto")) || *path == src().join("proto.rs") {
            continue; // generated from proto/: its modules are the protobuf packages
        }
        let module = scan::module_of(path.strip_prefix(&tree.src).unwrap());
        for d in declared.iter().filter(|d| d.public) {
            let mut child = module.clone();
            child.push(d.name.clone());
            let Some(file) = tree.modules.get(&child) else {
                continue;
            };
            if module.is_empty() || file.ends_with("mod.rs") {
                public.insert(child);
            } else {
                wrong.push(format!(
                    "{}: `pub mod {}` is a file: make it private and re-export what others use",
                    tree.name(path),
                    d.name
                ));
            }
        }
    }
    // Every module, the programs and the companion included, uses the other modules' faces only.
    let own_top = |p: &Path| -> String {
        let relative = p.strip_prefix(src()).unwrap();
        scan::module_of(relative)
            .first()
            .cloned()
            .unwrap_or_default()
    };
    let mut checked = 0;
    let mut all = Vec::new();
    files(&src(), &mut all);
    for path in all {
        let top = own_top(&path);
        if top == "proto" || top.is_empty() || tree.test_only.contains(&path) {
            continue; // generated code; lib.rs, which only declares the top modules; tests, which may look in
        }
        {
            let text = std::fs::read_to_string(&path).unwrap();
            let code = code(&text).replace("ekscale::", "crate::");
            for named in paths(&code, &[]) {
                if named.first().is_none_or(|r| r != "crate") || named.len() < 3 {
                    continue;
                }
                if named[1] == own_top(&path) || named[1] == "proto" {
                    continue;
                }
                checked += 1;
                // Every module on the way must be public: the top module and the faces below it.
                for n in 2..named.len() {
                    let prefix = named[1..n + 1].to_vec();
                    if tree.modules.contains_key(&prefix) && !public.contains(&prefix) {
                        wrong.push(format!(
                            "{}: names {} past its face",
                            tree.name(&path),
                            named[1..].join("::")
                        ));
                        break;
                    }
                }
            }
        }
    }
    assert!(
        checked > 500,
        "only {checked} paths into other modules read: is the scan broken?"
    );
    assert!(wrong.is_empty(), "past the faces:\n{}", wrong.join("\n"));
}

/// The ratchets clippy.toml sets (function length, parameters) are never allowed away in src/: a function that
/// outgrows them is cut, not excused. Generated code is the one exception, allowed where it is included.
#[test]
fn no_ratchet_is_allowed_away() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    let mut wrong = Vec::new();
    for path in &all {
        let text = std::fs::read_to_string(path).unwrap();
        let generated = text.contains("include_proto!(");
        for (number, line) in code(&text).lines().enumerate() {
            let excused = [
                "too_many_arguments",
                "too_many_lines",
                "fn_params_excessive_bools",
            ]
            .iter()
            .any(|lint| line.contains("allow(") && line.contains(lint));
            if excused && !generated {
                wrong.push(format!(
                    "{}:{}: {}",
                    path.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        all.len() > 200,
        "only {} files read: is the scan broken?",
        all.len()
    );
    assert!(
        wrong.is_empty(),
        "ratchets allowed away:\n{}",
        wrong.join("\n")
    );
}

/// Within one top module (its tests aside), a type's name says which type: two `Plan`s in the companion, one
/// scale-up's and one scale-down's, make every reader of either look up which is meant.
#[test]
fn no_two_types_of_one_name_in_a_top_module() {
    let tree = Tree::read(&src());
    let mut seen: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut all = Vec::new();
    files(&src(), &mut all);
    for path in all {
        let relative = path.strip_prefix(src()).unwrap();
        let Some(top) = scan::module_of(relative).first().cloned() else {
            continue;
        };
        if top == "proto" || tree.test_only.contains(&path) {
            continue; // generated from proto/; test support
        }
        for name in scan::type_names(&code(&std::fs::read_to_string(&path).unwrap())) {
            seen.entry((top.clone(), name))
                .or_default()
                .insert(tree.name(&path));
        }
    }
    assert!(
        seen.len() > 300,
        "only {} types read: is the scan broken?",
        seen.len()
    );
    let twice: Vec<String> = seen
        .iter()
        .filter(|(_, files)| files.len() > 1)
        .map(|((top, name), files)| {
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            format!("{top}: {name} in {}", files.join(", "))
        })
        .collect();
    assert!(
        twice.is_empty(),
        "types of one name in one top module (name each for what it is):\n{}",
        twice.join("\n")
    );
}

#[test]
fn the_scan_sees_each_kind_of_back_import() {
    // Each tree below has one way back up; the scan must name it.
    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Tree) {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        for (path, text) in files {
            let path = src.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let tree = Tree::read(&src);
        (dir, tree)
    }
    let all_circles = |t: &Tree| -> Vec<String> {
        let mut found: Vec<String> = t
            .folders()
            .iter()
            .flat_map(|f| t.folder_circles(f))
            .collect();
        found.sort();
        found
    };
    // A clean folder: the face declares and re-exports, the children import each other by path.
    let clean = [
        ("lib.rs", "pub mod a;\n"),
        ("a/mod.rs", "mod x;\nmod y;\npub use x::X;\n"),
        ("a/x.rs", "use super::y::Y;\npub struct X(Y);\n"),
        ("a/y.rs", "pub struct Y;\n"),
    ];
    let (_dir, t) = tree(&clean);
    assert_eq!(all_circles(&t), Vec::<String>::new());
    // A child that imports what its face defines.
    let mut defined = clean.to_vec();
    defined[1] = (
        "a/mod.rs",
        "mod x;\nmod y;\npub use x::X;\npub fn observe() {}\n",
    );
    defined[3] = ("a/y.rs", "pub struct Y;\nfn f() { super::observe() }\n");
    let (_dir, t) = tree(&defined);
    assert_eq!(
        all_circles(&t),
        [
            "a: a/mod.rs <-> a/x.rs <-> a/y.rs (through a/mod.rs -> a/x.rs, a/mod.rs -> a/y.rs, \
             a/x.rs -> a/y.rs, a/y.rs -> a/mod.rs)"
        ]
    );
    assert_eq!(definitions_in_face(defined[1].1), ["pub fn observe() {}"]);
    // A child that imports a sibling through the face.
    let mut through = clean.to_vec();
    through[3] = ("a/y.rs", "use super::X;\npub struct Y;\n");
    let (_dir, t) = tree(&through);
    assert_eq!(all_circles(&t).len(), 1, "{:?}", all_circles(&t));
    // Two folders that import each other, with no circle of files.
    let folders = [
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        ("a/mod.rs", "pub mod p;\npub mod q;\n"),
        ("a/p.rs", "use crate::b::r::R;\npub struct P(R);\n"),
        ("a/q.rs", "pub struct Q;\n"),
        ("b/mod.rs", "pub mod r;\npub mod s;\n"),
        ("b/r.rs", "pub struct R;\n"),
        ("b/s.rs", "use crate::a::q::Q;\npub struct S(Q);\n"),
    ];
    let (_dir, t) = tree(&folders);
    assert_eq!(circles(&t.graph), Vec::<Vec<PathBuf>>::new());
    let found = all_circles(&t);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with(": a <-> b"), "{found:?}");
    // Test files are no rooms: a test module importing its parent's face closes no circle.
    let tests = [
        ("lib.rs", "pub mod a;\n"),
        ("a/mod.rs", "mod x;\n#[cfg(test)]\nmod tests;\n"),
        ("a/x.rs", "pub struct X;\n"),
        ("a/tests.rs", "use super::*;\nuse super::x::X;\n"),
    ];
    let (_dir, t) = tree(&tests);
    assert_eq!(all_circles(&t), Vec::<String>::new());
    assert_eq!(
        declared("#[cfg(test)]\nmod tests;\npub mod a;\npub(crate) mod b;\n")
            .iter()
            .map(|d| (d.name.as_str(), d.public, d.test_only))
            .collect::<Vec<_>>(),
        [
            ("tests", false, true),
            ("a", true, false),
            ("b", false, false)
        ]
    );
}

#[test]
fn the_scan_sees_a_circle_through_groups_and_super() {
    let a = "use crate::x::{b::Thing, c};\nfn f() { super::d::go(); }";
    assert_eq!(
        paths(&code(a), &[]),
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
    let src = src();
    let mut all = Vec::new();
    files(&src.join("autoscaler"), &mut all);
    // The client is a file or a folder of its own.
    let client = |p: &Path| {
        p.starts_with(src.join("autoscaler/client")) || p == src.join("autoscaler/client.rs")
    };
    let mut wrong = Vec::new();
    let mut spoken = false;
    for path in &all {
        let text = std::fs::read_to_string(path).unwrap();
        let speaks = uses(&code(&text)).iter().any(|(m, _)| m == "proto");
        if speaks && !client(path) {
            wrong.push(path.strip_prefix(&src).unwrap().display().to_string());
        }
        spoken |= speaks && client(path);
    }
    assert!(
        spoken,
        "the client no longer reads crate::proto: is the scan broken?"
    );
    assert!(
        wrong.is_empty(),
        "wire types past the provider client: {}",
        wrong.join(", ")
    );
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

//! Imports go one way (docs/architecture.md, "Layers"): each top-level module of `src/` may use only modules
//! of a lower layer. The programs (`provider`, `autoscaler`) never import each other and the autoscaler never
//! the cloud: it reaches it only through the provider, over gRPC. Read from the source, so that a `use` that
//! goes upward fails here before anyone builds on it.

use std::collections::BTreeMap;
use std::path::Path;

/// Each module's layer; a module may import those of lower layers only.
const LAYERS: &[(&str, u8)] = &[
    ("model", 0),
    ("proto", 0),
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

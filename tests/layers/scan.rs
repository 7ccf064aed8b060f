//! The import graph of a source tree, read as text: which file names which, the folders' faces, and the
//! circles, file by file and folder by folder. Read from the source, not the compiler, so that the tests can
//! also run it over small trees written for them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
pub fn files(dir: &Path, out: &mut Vec<PathBuf>) {
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
pub fn uses(text: &str) -> Vec<(String, usize)> {
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

/// A file's module path: `src/autoscaler/scaledown/policy.rs` is `autoscaler::scaledown::policy`, a folder's
/// `mod.rs` is the folder's module.
pub fn module_of(relative: &Path) -> Vec<String> {
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

/// The code of a file without comments and without its inline test module (which `src/` files keep last).
pub fn code(text: &str) -> String {
    let mut lines = Vec::new();
    let mut all = text.lines().peekable();
    while let Some(line) = all.next() {
        let inline_module = |l: &&str| {
            let l = match l.strip_prefix("pub(") {
                Some(rest) => rest.split_once(") ").map_or(rest, |(_, l)| l),
                None => l.trim_start_matches("pub "),
            };
            l.starts_with("mod ") && l.trim_end().ends_with('{')
        };
        if line.trim() == "#[cfg(test)]" && all.peek().is_some_and(inline_module) {
            break;
        }
        lines.push(line.split("//").next().unwrap_or(""));
    }
    lines.join("\n")
}

/// A module declaration: its name, whether it is `pub` (not `pub(crate)`), and whether it is compiled for
/// tests only.
#[derive(Debug, PartialEq)]
pub struct Declared {
    pub name: String,
    pub public: bool,
    pub test_only: bool,
}

/// The `mod name;` lines of a file (inline modules, `mod name { .. }`, are part of the file).
pub fn declared(text: &str) -> Vec<Declared> {
    let mut found = Vec::new();
    let mut test_only = false;
    for line in text.lines() {
        let line = line.split("//").next().unwrap().trim();
        if line.starts_with("#[cfg(test)]") {
            test_only = true;
            continue;
        }
        let (public, rest) = if let Some(rest) = line.strip_prefix("pub mod ") {
            (true, rest)
        } else if let Some(rest) = line.strip_prefix("pub(crate) mod ") {
            (false, rest)
        } else if let Some(rest) = line.strip_prefix("mod ") {
            (false, rest)
        } else {
            if !line.is_empty() && !line.starts_with("#[") {
                test_only = false;
            }
            continue;
        };
        if let Some(name) = rest.strip_suffix(';') {
            found.push(Declared {
                name: name.trim().to_string(),
                public,
                test_only,
            });
        }
        test_only = false;
    }
    found
}

/// Every path a file's code names from `crate::`, `super::` or `self::`, and from a child module it declares
/// (`pub use child::Thing` in a face), with `use` groups spread out: `crate::a::{b, c::D}` is `crate::a::b`
/// and `crate::a::c::D`. A child's path starts with `self`.
pub fn paths(code: &str, children: &[String]) -> Vec<Vec<String>> {
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
    // `pub(in crate::a::b)` names where an item is seen, not what the file uses.
    let mut code = code.to_string();
    while let Some(at) = code.find("pub(in ") {
        let end = at + code[at..].find(')').unwrap_or(code.len() - at);
        code.replace_range(at..=end.min(code.len() - 1), "pub");
    }
    let code = code.as_str();
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(start) {
            let before = code[..i].chars().last();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let root = start.trim_end_matches("::").to_string();
            spread(&code[i + start.len()..], &[root], &mut out);
        }
    }
    // `use child::..` and `pub use child::..`: in a file that declares `child`, the child module.
    for (i, _) in code.match_indices("use ") {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = code[i + "use ".len()..].trim_start();
        let first: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if children.contains(&first) {
            spread(rest, &["self".to_string()], &mut out);
        }
    }
    out
}

/// A source tree read as a graph: every file by module path, and for each file the files its code names.
pub struct Tree {
    pub src: PathBuf,
    pub modules: BTreeMap<Vec<String>, PathBuf>,
    pub graph: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
    /// Files compiled for tests only (declared under `#[cfg(test)]`).
    pub test_only: BTreeSet<PathBuf>,
    /// Each file's module declarations.
    pub declarations: BTreeMap<PathBuf, Vec<Declared>>,
}

impl Tree {
    /// The tree under `src`, the programs in `src/bin` left out.
    pub fn read(src: &Path) -> Tree {
        let mut all = Vec::new();
        files(src, &mut all);
        let modules: BTreeMap<Vec<String>, PathBuf> = (all.iter())
            .filter(|p| !p.starts_with(src.join("bin")))
            .map(|p| (module_of(p.strip_prefix(src).unwrap()), p.clone()))
            .collect();
        let mut graph = BTreeMap::new();
        let mut test_only = BTreeSet::new();
        let mut declarations = BTreeMap::new();
        for (module, path) in &modules {
            let text = std::fs::read_to_string(path).unwrap();
            let declared = declared(&text);
            let children: Vec<String> = declared.iter().map(|d| d.name.clone()).collect();
            let mut names = BTreeSet::new();
            for named in paths(&code(&text), &children) {
                // `super` is the parent of the file's module, `self` the file's; `crate` is the root.
                let mut full: Vec<String> = Vec::new();
                let mut rest = named.as_slice();
                if rest.first().is_some_and(|r| r == "super") {
                    full = module.clone();
                    while rest.first().is_some_and(|r| r == "super") {
                        full.pop();
                        rest = &rest[1..];
                    }
                } else if rest.first().is_some_and(|r| r == "self") {
                    full = module.clone();
                    rest = &rest[1..];
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
            // A face stands above what it declares: `mod child;` is an arrow to the child.
            for d in &declared {
                let mut child = module.clone();
                child.push(d.name.clone());
                if let Some(file) = modules.get(&child) {
                    if d.test_only {
                        test_only.insert(file.clone());
                    } else {
                        names.insert(file.clone());
                    }
                }
            }
            graph.insert(path.clone(), names);
            declarations.insert(path.clone(), declared);
        }
        // What a test module declares is tests too.
        let test_modules: Vec<Vec<String>> = (modules.iter())
            .filter(|(_, path)| test_only.contains(*path))
            .map(|(module, _)| module.clone())
            .collect();
        for (module, path) in &modules {
            if test_modules.iter().any(|t| module.starts_with(t)) {
                test_only.insert(path.clone());
            }
        }
        Tree {
            src: src.to_path_buf(),
            modules,
            graph,
            test_only,
            declarations,
        }
    }

    /// A path relative to `src/`, for messages.
    pub fn name(&self, path: &Path) -> String {
        path.strip_prefix(&self.src).unwrap().display().to_string()
    }

    /// Every folder of the tree, `src/` itself included.
    pub fn folders(&self) -> BTreeSet<PathBuf> {
        let mut folders = BTreeSet::new();
        for path in self.modules.values() {
            let mut dir = path.parent();
            while let Some(d) = dir.filter(|d| d.starts_with(&self.src)) {
                folders.insert(d.to_path_buf());
                dir = d.parent();
            }
        }
        folders
    }

    /// The circles among the rooms of `folder`, drawn on its own: each file and each folder right under it
    /// is one room, and room A imports room B when any file of A names any file of B. Test files are no
    /// rooms. Each circle is listed with the imports that close it.
    pub fn folder_circles(&self, folder: &Path) -> Vec<String> {
        let room = |p: &Path| -> Option<PathBuf> {
            let rest = p.strip_prefix(folder).ok()?;
            let first = rest.components().next()?;
            Some(folder.join(first))
        };
        let mut rooms: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        let mut why: BTreeMap<(PathBuf, PathBuf), Vec<String>> = BTreeMap::new();
        for (from, names) in &self.graph {
            if self.test_only.contains(from) {
                continue;
            }
            let Some(a) = room(from) else { continue };
            rooms.entry(a.clone()).or_default();
            for to in names.iter().filter(|t| !self.test_only.contains(*t)) {
                let Some(b) = room(to) else { continue };
                if a != b {
                    rooms.entry(a.clone()).or_default().insert(b.clone());
                    let edge = format!("{} -> {}", self.name(from), self.name(to));
                    why.entry((a.clone(), b.clone())).or_default().push(edge);
                }
            }
        }
        circles(&rooms)
            .into_iter()
            .map(|set| {
                let mut edges = Vec::new();
                for a in &set {
                    for b in &set {
                        edges.extend(why.get(&(a.clone(), b.clone())).into_iter().flatten());
                    }
                }
                let names: Vec<String> = set.iter().map(|r| self.name(r)).collect();
                format!(
                    "{}: {} (through {})",
                    self.name(folder),
                    names.join(" <-> "),
                    (edges.iter().map(|e| e.as_str()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .collect()
    }
}

/// The circles of `graph`: each strongly connected set of more than one node (Tarjan's algorithm).
pub fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
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
            for w in self.graph.get(v).into_iter().flatten() {
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

/// What a face (`mod.rs`, `lib.rs`) holds besides declarations and re-exports: each line that defines
/// something (a function, a type, a constant, an impl, a macro).
pub fn definitions_in_face(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_use = false;
    // Items start at the first column; their bodies are not listed again.
    for line in code(text)
        .lines()
        .filter(|l| !l.starts_with([' ', '}', ')', ']']))
    {
        let line = line.trim();
        if in_use {
            in_use = !line.ends_with(';');
            continue;
        }
        if line.is_empty() || line.starts_with("#[") || line.starts_with("#![") {
            continue;
        }
        let bare = (line.strip_prefix("pub(crate) "))
            .or_else(|| line.strip_prefix("pub "))
            .unwrap_or(line);
        if bare.starts_with("mod ") && bare.ends_with(';') {
            continue;
        }
        if bare.starts_with("use ") {
            in_use = !line.ends_with(';');
            continue;
        }
        found.push(line.to_string());
    }
    found
}

/// The types a file's code defines by name: every `struct`, `enum`, `trait` and `union`, at any depth, and the
/// `type` aliases of the module itself (an indented `type` is an impl's associated type, which is no name of
/// the module's).
pub fn type_names(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in code.lines() {
        let trimmed = line.trim_start();
        let item = match trimmed.strip_prefix("pub(") {
            Some(rest) => rest.split_once(") ").map_or(rest, |(_, l)| l),
            None => trimmed.trim_start_matches("pub "),
        };
        let Some((keyword, rest)) = item.split_once(' ') else {
            continue;
        };
        let counted = match keyword {
            "struct" | "enum" | "trait" | "union" => true,
            "type" => trimmed.len() == line.len(),
            _ => false,
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if counted && name.starts_with(|c: char| c.is_ascii_uppercase()) {
            names.push(name);
        }
    }
    names
}

//! Finding the programs tests drive (grpcurl, moto_server, chromium).

use std::path::PathBuf;

/// A program the tests drive: from `$env`, the project's `.venv/bin`, or PATH; `hint` says how to get it.
pub fn tool(env: &str, name: &str, hint: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env) {
        return path.into();
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(".venv/bin")
        .join(name);
    if venv.exists() {
        return venv;
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.exists())
        .unwrap_or_else(|| panic!("{name} not found: {hint}, or set {env}"))
}

//! Names made from other names, valid for what they name. EKS lets a node group's name hold upper-case
//! letters and '_' (`gpuA`, `GPU_Pool-1`), which an object's name may not: a name made from it (its template
//! node's, and from that the template's ResourceSlices' names and pools) must be a lower-case DNS subdomain,
//! and a label's value at most 63 characters. cluster-autoscaler keeps such names in memory only
//! (`template-node-for-<group>-<n>`), where nothing checks them; ours reach the API's rules, so they are made
//! valid as Kubernetes tools make generated names: a name already valid is kept as it is (so nothing valid
//! changes); another is lower-cased, every character it may not hold made '-', cut to its limit, and given a
//! short hash of the original, so that two names differing only in what was changed (`gpuA`, `gpua`) stay two.

use super::selector::{is_dns_subdomain, is_label_name};
use std::borrow::Cow;

/// The longest part a sanitized name keeps inside a DNS subdomain: one DNS label's worth, so that a prefix
/// such as `template-node-for-` leaves the whole far under the subdomain's 253.
const PART_MAX: usize = 63;
/// A label value's limit.
const LABEL_VALUE_MAX: usize = 63;

/// `name` as it may stand in an object's name (a DNS subdomain): as it is when it may, else sanitized with
/// a hash of it (`GPU_Pool-1` -> `gpu-pool-1-<8 hex digits>`).
pub fn subdomain_part(name: &str) -> Cow<'_, str> {
    if is_dns_subdomain(name) {
        return Cow::Borrowed(name);
    }
    let lower: String = (name.chars())
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '-',
        })
        .collect();
    Cow::Owned(hashed(&lower, name, PART_MAX))
}

/// `value` as a label's value may be: as it is when it may, else its invalid characters made '-', cut to 63
/// characters with a hash of it.
pub fn label_value(value: &str) -> Cow<'_, str> {
    if value.is_empty() || is_label_name(value) {
        return Cow::Borrowed(value);
    }
    let kept: String = (value.chars())
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '-',
        })
        .collect();
    Cow::Owned(hashed(&kept, value, LABEL_VALUE_MAX))
}

/// `kept` (ASCII), trimmed to start and end with a letter or digit and cut to leave room, then `-` and the
/// hash of `original`: at most `max` characters.
fn hashed(kept: &str, original: &str, max: usize) -> String {
    let hash = format!("{:08x}", fnv1a(original));
    let room = max - hash.len() - 1;
    let kept = kept.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    let kept = kept[..kept.len().min(room)].trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    if kept.is_empty() {
        hash
    } else {
        format!("{kept}-{hash}")
    }
}

/// 32-bit FNV-1a: small, and the same in every build and release (std's hasher promises neither), so a
/// derived name never changes under a user.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |hash, b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_are_kept_and_others_made_valid_and_distinct() {
        for valid in ["general", "a10g-quad", "gpu.pool", "g"] {
            assert_eq!(subdomain_part(valid), valid);
        }
        let made: Vec<String> = ["gpuA", "GPU_Pool-1", "gpu_pool-1", "a..b", "_x_"]
            .iter()
            .map(|n| subdomain_part(n).into_owned())
            .collect();
        assert_eq!(made[0], format!("gpua-{:08x}", fnv1a("gpuA")));
        assert_eq!(made[1], format!("gpu-pool-1-{:08x}", fnv1a("GPU_Pool-1")));
        for name in &made {
            assert!(is_dns_subdomain(name) && name.len() <= PART_MAX, "{name}");
        }
        // Two names that differ only in what was changed stay two.
        assert_ne!(made[1], made[2]);
        assert_eq!(made[1].len(), made[2].len());
        let long = format!("Pool_{}", "x".repeat(58));
        let part = subdomain_part(&long);
        assert!(is_dns_subdomain(&part) && part.len() == PART_MAX, "{part}");
        // FNV-1a's own test vector: the hash is the same everywhere.
        assert_eq!(fnv1a("a"), 0xe40c_292c);
    }

    #[test]
    fn label_values_longer_than_63_characters_are_cut_with_a_hash() {
        assert_eq!(label_value("GPU_Pool-1"), "GPU_Pool-1");
        assert_eq!(label_value(""), "");
        let long = format!("template-node-for-{}", "g".repeat(60));
        let value = label_value(&long);
        assert_eq!(value.len(), LABEL_VALUE_MAX);
        assert!(is_label_name(&value), "{value}");
        assert!(value.starts_with("template-node-for-ggg"), "{value}");
        assert_ne!(label_value(&format!("{long}h")), value);
    }
}

//! The API server's rules for the names DRA objects use, checked where they are read so that the allocator
//! can rely on them: DNS labels and subdomains, C identifiers, qualified names (a name without a domain is
//! in the domain of the driver that published it), label keys and values (device taints).

use crate::model::{Invalid, Name, QualifiedName, is_dns_subdomain, is_label_name};
use regex::Regex;
use std::sync::LazyLock;

const DNS_LABEL: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

static LABEL: LazyLock<Regex> = LazyLock::new(|| Regex::new(&format!("^{DNS_LABEL}$")).unwrap());
static C_IDENTIFIER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("^[A-Za-z_][A-Za-z0-9_]*$").unwrap());
/// Semantic Versioning 2.0.0's own expression (semver.org).
static SEMVER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)",
        r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?",
        r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
    ))
    .unwrap()
});

/// A DNS label (RFC 1123): request, device, counter and counter set names.
pub fn dns_label(text: &str) -> Result<(), Invalid> {
    if text.is_empty() {
        return Err(Invalid::value("must not be empty"));
    }
    if text.len() > 63 || !LABEL.is_match(text) {
        return Err(Invalid::value(format!(
            "{text:?} is not a DNS label (at most 63 lower-case letters, digits and '-', starting and \
             ending with a letter or digit)"
        )));
    }
    Ok(())
}

/// A DNS subdomain (RFC 1123) of at most `max` characters: class and driver names, domains.
pub fn dns_subdomain(text: &str, max: usize) -> Result<(), Invalid> {
    if text.is_empty() {
        return Err(Invalid::value("must not be empty"));
    }
    if text.len() > max || !is_dns_subdomain(text) {
        return Err(Invalid::value(format!(
            "{text:?} is not a DNS subdomain of at most {max} characters (lower-case DNS labels \
             joined by '.')"
        )));
    }
    Ok(())
}

/// The longest driver name (and domain of a qualified name): as for CSI drivers.
pub const DRIVER_MAX: usize = 63;

/// A driver name: a DNS subdomain of at most 63 characters.
pub fn driver(text: &str) -> Result<(), Invalid> {
    dns_subdomain(text, DRIVER_MAX)
}

/// A pool name: at most 253 characters, DNS subdomains joined by '/'.
pub fn pool(text: &str) -> Result<(), Invalid> {
    if text.is_empty() {
        return Err(Invalid::value("must not be empty"));
    }
    if text.len() > 253 || !text.split('/').all(|part| dns_subdomain(part, 253).is_ok()) {
        return Err(Invalid::value(format!(
            "{text:?} is not a pool name (at most 253 characters: DNS subdomains joined by '/')"
        )));
    }
    Ok(())
}

/// A C identifier of at most 32 characters: the id of a qualified name.
fn identifier(text: &str) -> Result<(), Invalid> {
    if text.is_empty() || text.len() > 32 || !C_IDENTIFIER.is_match(text) {
        return Err(Invalid::value(format!(
            "{text:?} is not a C identifier of at most 32 characters"
        )));
    }
    Ok(())
}

/// An attribute or capacity name as a device writes it: `id`, in the driver's domain, or `domain/id`.
pub fn qualified(text: &str, driver: &Name) -> Result<QualifiedName, Invalid> {
    match text.split_once('/') {
        Some(_) => fully_qualified(text),
        None => {
            identifier(text)?;
            Ok(QualifiedName {
                domain: driver.clone(),
                id: text.into(),
            })
        }
    }
}

/// A name with its domain (`domain/id`), as constraints name attributes: no driver to default to.
pub fn fully_qualified(text: &str) -> Result<QualifiedName, Invalid> {
    let Some((domain, id)) = text.split_once('/') else {
        return Err(Invalid::value(format!(
            "{text:?} has no domain: a constraint names an attribute as domain/id"
        )));
    };
    dns_subdomain(domain, DRIVER_MAX).map_err(|e| e.under(&format!("domain of {text:?}")))?;
    identifier(id).map_err(|e| e.under(&format!("{text:?}")))?;
    Ok(QualifiedName {
        domain: domain.into(),
        id: id.into(),
    })
}

/// A `version` attribute: a semantic version (2.0.0) of at most 64 characters.
pub fn version(text: &str) -> Result<(), Invalid> {
    if text.len() > 64 || !SEMVER.is_match(text) {
        return Err(Invalid::value(format!(
            "{text:?} is not a semantic version (2.0.0, such as 1.2.3 or 570.133.20-rc.1) of at most 64 \
             characters"
        )));
    }
    Ok(())
}

/// A label key, `[prefix/]name`, as a device taint's key is.
pub fn label_key(text: &str) -> Result<(), Invalid> {
    let (prefix, name) = match text.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, text),
    };
    if let Some(prefix) = prefix {
        dns_subdomain(prefix, 253).map_err(|e| e.under(&format!("prefix of {text:?}")))?;
    }
    if !is_label_name(name) {
        return Err(Invalid::value(format!(
            "{text:?} is not a label key (a name of at most 63 letters, digits, '-', '_' and '.', \
             starting and ending with a letter or digit, after an optional DNS subdomain and '/')"
        )));
    }
    Ok(())
}

/// A label value, as a device taint's value is: empty, or as a label key's name.
pub fn label_value(text: &str) -> Result<(), Invalid> {
    if !text.is_empty() && !is_label_name(text) {
        return Err(Invalid::value(format!(
            "{text:?} is not a label value (at most 63 letters, digits, '-', '_' and '.', starting \
             and ending with a letter or digit)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_the_api_server_takes_them() {
        assert!(dns_label("gpu-0").is_ok());
        for bad in ["", "GPU", "-a", "a-", "a.b", &"a".repeat(64)] {
            assert!(dns_label(bad).is_err(), "{bad:?}");
        }
        assert!(driver("gpu.nvidia.com").is_ok());
        assert!(
            driver(&format!("{}.com", "a".repeat(60))).is_err(),
            "over 63"
        );
        assert!(driver("Gpu.nvidia.com").is_err());
        assert!(pool("ip-10-0-1-23.ec2.internal").is_ok());
        assert!(pool("rack-1/node.a").is_ok());
        assert!(pool("a//b").is_err());
        assert!(pool("").is_err());
        assert!(label_key("example.com/gpu-broken").is_ok());
        assert!(label_key("broken").is_ok());
        assert!(label_key("-broken").is_err());
        assert!(label_key("UPPER.com/x").is_err());
        assert!(label_value("").is_ok());
        assert!(label_value("a b").is_err());
        assert!(version("570.133.20").is_ok());
        assert!(version("1.0.0-rc.1+build.5").is_ok());
        for bad in ["8.6", "v1.2.3", "01.2.3", "1.2.3-"] {
            assert!(version(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_name_without_a_domain_is_in_the_drivers() {
        let driver: Name = "gpu.nvidia.com".into();
        let name = qualified("productName", &driver).unwrap();
        assert_eq!(
            (&*name.domain, &*name.id),
            ("gpu.nvidia.com", "productName")
        );
        let name = qualified("resource.kubernetes.io/pcieRoot", &driver).unwrap();
        assert_eq!(
            (&*name.domain, &*name.id),
            ("resource.kubernetes.io", "pcieRoot")
        );
        assert!(qualified("1st", &driver).is_err());
        assert!(qualified(&"a".repeat(33), &driver).is_err());
        assert!(qualified("Bad_Domain/x", &driver).is_err());
        assert!(qualified("a.com/b/c", &driver).is_err());
        assert!(
            fully_qualified("productName")
                .unwrap_err()
                .to_string()
                .contains("no domain")
        );
    }
}

//! Kubernetes `resource.Quantity` strings written (parsing them is the model's: `model::Quantity`).
//!
//! Go's decoder parses every quantity inside a Node or Pod, and one bad string fails the whole object
//! (docs/externalgrpc.md §5, case 27), so we only ever write the canonical forms built here.

pub use crate::model::{Quantity, QuantityError};

/// CPU in millicores: "4" for whole cores, "1930m" otherwise.
pub fn cpu(millicores: u64) -> String {
    if millicores.is_multiple_of(1000) {
        (millicores / 1000).to_string()
    } else {
        format!("{millicores}m")
    }
}

/// Bytes with the largest binary suffix that divides them exactly: "16Gi", "7518Mi", "1000".
pub fn bytes(bytes: u64) -> String {
    const SUFFIXES: [(&str, u32); 6] = [
        ("Ei", 60),
        ("Pi", 50),
        ("Ti", 40),
        ("Gi", 30),
        ("Mi", 20),
        ("Ki", 10),
    ];
    for (suffix, shift) in SUFFIXES {
        if bytes != 0 && bytes.trailing_zeros() >= shift {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// A plain count (pods, GPUs).
pub fn count(n: u64) -> String {
    n.to_string()
}

/// Any parsed quantity written back (a device's capacity, a counter): thousandths as "1500m"; whole values of
/// a mebibyte or more with the largest binary suffix that divides them ("23028Mi", "15Gi"), as drivers
/// publish memory; other whole values as plain digits ("4", "1000"). Each reads back to the same value.
pub fn quantity(q: Quantity) -> String {
    let millis = q.millis();
    if millis % 1000 != 0 {
        return format!("{millis}m");
    }
    let units = millis / 1000;
    match u64::try_from(units) {
        Ok(whole) if whole >= 1 << 20 && whole.trailing_zeros() >= 20 => bytes(whole),
        _ => units.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms() {
        assert_eq!(cpu(4000), "4");
        assert_eq!(cpu(1930), "1930m");
        assert_eq!(cpu(0), "0");
        assert_eq!(bytes(16 << 30), "16Gi");
        assert_eq!(bytes(7518 << 20), "7518Mi");
        assert_eq!(bytes(1536 << 10), "1536Ki");
        assert_eq!(bytes(1000), "1000");
        assert_eq!(bytes(0), "0");
        assert_eq!(count(110), "110");
    }

    #[test]
    fn any_quantity_reads_back_to_its_value() {
        let written = |text: &str| quantity(text.parse().unwrap());
        assert_eq!(written("23028Mi"), "23028Mi");
        assert_eq!(written("15360Mi"), "15Gi");
        assert_eq!(written("24146608128"), "23028Mi");
        assert_eq!(
            written("1024"),
            "1024",
            "counts below a mebibyte stay digits"
        );
        assert_eq!(written("4"), "4");
        assert_eq!(written("1k"), "1000");
        assert_eq!(written("1500m"), "1500m");
        assert_eq!(written("-2"), "-2");
        assert_eq!(written("0"), "0");
        for text in [
            "23028Mi",
            "1.5",
            "100u",
            "7",
            "-3Gi",
            "1e20",
            "123456789012345678901234",
        ] {
            let value: Quantity = text.parse().unwrap();
            assert_eq!(
                quantity(value).parse::<Quantity>().unwrap(),
                value,
                "{text}"
            );
        }
    }
}

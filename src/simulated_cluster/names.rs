//! Names and uids the simulated API server generates.

use crate::model::Name;

/// `prefix` and five characters from the alphabet of the API server's generated names (`generateName`),
/// made from `serial` where the API server picks them at random.
pub fn generated(prefix: &str, serial: &mut u64) -> Name {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    *serial += 1;
    let base = ALPHABET.len() as u64;
    let mut n = *serial;
    let suffix: String = (0..5)
        .map(|_| {
            let c = ALPHABET[(n % base) as usize] as char;
            n /= base;
            c
        })
        .collect();
    format!("{prefix}{suffix}").into()
}

/// A new pod's `metadata.uid`.
pub fn uid(namespace: &str, pod: &str, serial: &mut u64) -> Name {
    *serial += 1;
    format!("uid-{namespace}-{pod}-{serial}").into()
}

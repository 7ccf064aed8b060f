//! Maps looked up once per pod or node of the cluster: foldhash, the hasher hashbrown itself uses (seeded per
//! process), where SipHash took a tenth of a 10,000-node loop. See docs/decisions.md.

pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

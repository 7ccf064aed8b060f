//! Pods per topology domain of one term. A hostname-keyed term makes every node a domain: held densely,
//! the counts of 5,000 Deployments spread over 5,000 nodes (each on ten of them) were 5,000 arrays of up
//! to 5,000 counts, zeroed as they grew and copied whenever the topology was forked. Few domains holding
//! any pods are kept as sorted pairs; past [`SPARSE_MAX`] of them, densely.

/// Domains with pods a sparse list holds before it turns dense.
const SPARSE_MAX: usize = 32;

#[derive(Clone, Debug)]
pub enum PerDomain {
    /// (domain, pods) for the domains with pods, by domain.
    Sparse(Vec<(u32, u32)>),
    /// Pods by domain index; domains past its end hold none.
    Dense(Vec<u32>),
}

impl Default for PerDomain {
    fn default() -> Self {
        PerDomain::Sparse(Vec::new())
    }
}

impl PerDomain {
    /// Pods in `domain`.
    pub fn read(&self, domain: u32) -> u32 {
        match self {
            PerDomain::Sparse(pairs) => {
                (pairs.binary_search_by_key(&domain, |&(d, _)| d)).map_or(0, |i| pairs[i].1)
            }
            PerDomain::Dense(list) => list.get(domain as usize).copied().unwrap_or(0),
        }
    }

    /// `by` more pods in `domain`.
    pub fn bump(&mut self, domain: u32, by: u32) {
        match self {
            PerDomain::Sparse(pairs) => match pairs.binary_search_by_key(&domain, |&(d, _)| d) {
                Ok(i) => pairs[i].1 += by,
                Err(i) if pairs.len() < SPARSE_MAX => pairs.insert(i, (domain, by)),
                Err(_) => {
                    let end = domain.max(pairs.last().map_or(0, |&(d, _)| d)) as usize;
                    let mut list = vec![0; end + 1];
                    for &(d, n) in pairs.iter() {
                        list[d as usize] = n;
                    }
                    list[domain as usize] += by;
                    *self = PerDomain::Dense(list);
                }
            },
            PerDomain::Dense(list) => {
                let i = domain as usize;
                if list.len() <= i {
                    list.resize(i + 1, 0);
                }
                list[i] += by;
            }
        }
    }

    /// `by` fewer pods in `domain` (none below zero).
    pub fn drop_by(&mut self, domain: u32, by: u32) {
        match self {
            PerDomain::Sparse(pairs) => {
                if let Ok(i) = pairs.binary_search_by_key(&domain, |&(d, _)| d) {
                    pairs[i].1 = pairs[i].1.saturating_sub(by);
                    if pairs[i].1 == 0 {
                        pairs.remove(i);
                    }
                }
            }
            PerDomain::Dense(list) => {
                if let Some(count) = list.get_mut(domain as usize) {
                    *count = count.saturating_sub(by);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_and_dense_counts_read_alike() {
        // The same moves on a plain array and on PerDomain, through the turn to dense.
        let mut plain = vec![0u32; 400];
        let mut counts = PerDomain::default();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for step in 0..4000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let d = (state % 400) as u32;
            let by = (state >> 32) as u32 % 3 + 1;
            if step % 3 == 2 {
                plain[d as usize] = plain[d as usize].saturating_sub(by);
                counts.drop_by(d, by);
            } else {
                plain[d as usize] += by;
                counts.bump(d, by);
            }
            if step % 97 == 0 {
                for (d, &n) in plain.iter().enumerate() {
                    assert_eq!(counts.read(d as u32), n, "domain {d} after {step} moves");
                }
            }
        }
        assert!(
            matches!(counts, PerDomain::Dense(_)),
            "many domains turn it dense"
        );
        let mut few = PerDomain::default();
        few.bump(4_000_000, 2);
        few.bump(7, 1);
        assert_eq!((few.read(4_000_000), few.read(7), few.read(8)), (2, 1, 0));
        assert!(
            matches!(few, PerDomain::Sparse(_)),
            "a far domain allocates nothing"
        );
    }
}

//! What a pod's Dynamic Resource Allocation makes of its equivalence key (`EquivalenceKey`, `pod.rs`): the
//! claims it names, and the extended resources it requests that a DeviceClass's devices serve (KEP-5004,
//! the class's `extendedResourceName`). Pods alike in both are alike to DRA; the rest of the key is the
//! pod's own. One pointer in the key, `None` for the many pods DRA has nothing to say of: grouping 51,000
//! pending pods hashes and compares a key per pod, and two slices there cost it 7%.

use super::claim_needs::ExtendedClaim;
use super::objects::{ClaimSource, PodClaim};
use super::pod_dra::PodDra;

/// A pod's claims, each entry by its name and where its claim comes from: a template's claim without the
/// name it was made under (pods of one ReplicaSet each have their own claim from the same template, and
/// are alike), a shared claim by its name (pods naming different claims are not). Then its requests of
/// extended resources that devices may serve (its planned needs'), by resource and count: the class that
/// serves a resource is the cluster's choice, the same for every pod.
#[derive(Clone, Copy)]
pub(crate) struct DraKey<'a>(Option<&'a PodDra>);

impl<'a> DraKey<'a> {
    /// The key of a pod's DRA parts: `None` when it names no claim and no device serves its requests.
    /// Inlined, as the comparison is: for a pod without DRA parts both come down to a test of one pointer.
    #[inline]
    pub(crate) fn of(dra: Option<&'a PodDra>) -> DraKey<'a> {
        DraKey(dra.filter(|d| !d.claims.is_empty() || !extended(d).is_empty()))
    }

    fn claims(dra: &PodDra) -> impl Iterator<Item = (&str, bool, &str)> {
        dra.claims.iter().map(|c: &PodClaim| match &c.source {
            ClaimSource::Claim(claim) => (&*c.name, false, &**claim),
            ClaimSource::Template { template, .. } => (&*c.name, true, &**template),
        })
    }

    fn extended(dra: &PodDra) -> impl Iterator<Item = (&str, u64)> {
        extended(dra).iter().map(|c| (&*c.resource, c.count))
    }
}

fn extended(dra: &PodDra) -> &[ExtendedClaim] {
    dra.needs.as_deref().map_or(&[], |n| &n.extended)
}

impl PartialEq for DraKey<'_> {
    /// Inlined into the equivalence key's comparison, the parts compared out of line: grouping compares a
    /// key per pod, and a call here for pods that claim nothing cost the 51,000 pods of upstream's
    /// benchmark 5% of their loop (the key's comparison was no longer inlined into the grouping).
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        match (self.0, other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => same_parts(a, b),
            _ => false,
        }
    }
}

/// Whether two pods' DRA parts are alike: the same claims from the same sources, the same extended
/// resources served by devices.
fn same_parts(a: &PodDra, b: &PodDra) -> bool {
    a.claims.len() == b.claims.len()
        && extended(a).len() == extended(b).len()
        && DraKey::claims(a).eq(DraKey::claims(b))
        && DraKey::extended(a).eq(DraKey::extended(b))
}

impl Eq for DraKey<'_> {}

impl std::hash::Hash for DraKey<'_> {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let Some(dra) = self.0 else {
            return state.write_u8(0);
        };
        state.write_u8(1);
        state.write_usize(dra.claims.len());
        Self::claims(dra).for_each(|part| part.hash(state));
        state.write_usize(extended(dra).len());
        Self::extended(dra).for_each(|part| part.hash(state));
    }
}

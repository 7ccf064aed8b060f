//! What a pod's Dynamic Resource Allocation makes of its equivalence key (`EquivalenceKey`, `pod.rs`): the
//! claims it names, and the extended resources it requests that a DeviceClass's devices serve (KEP-5004,
//! the class's `extendedResourceName`). Pods alike in both are alike to DRA; the rest of the key is the
//! pod's own.

use super::claim_needs::{ClaimNeeds, ExtendedClaim};
use super::dra::{ClaimSource, PodClaim};

/// A pod's requests of extended resources that devices may serve (its planned needs'), by resource and
/// count: the class that serves a resource is the cluster's choice, the same for every pod.
#[derive(Clone, Copy)]
pub(super) struct ExtendedKey<'a>(&'a [ExtendedClaim]);

impl<'a> ExtendedKey<'a> {
    /// The key of a pod's planned `needs` (none for a pod that claims nothing).
    pub(super) fn of(needs: Option<&'a ClaimNeeds>) -> ExtendedKey<'a> {
        ExtendedKey(needs.map_or(&[], |n| &n.extended))
    }

    fn parts(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|c| (&*c.resource, c.count))
    }
}

impl PartialEq for ExtendedKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len() && self.parts().eq(other.parts())
    }
}

impl Eq for ExtendedKey<'_> {}

impl std::hash::Hash for ExtendedKey<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_usize(self.0.len());
        for part in self.parts() {
            part.hash(state);
        }
    }
}

/// A pod's claims as far as they make pods alike: each entry's name and where its claim comes from, a
/// template's claim without the name it was made under (pods of one ReplicaSet each have their own claim
/// from the same template, and are alike), a shared claim by its name (pods naming different claims are
/// not).
#[derive(Clone, Copy)]
pub(super) struct ClaimsKey<'a>(&'a [PodClaim]);

impl<'a> ClaimsKey<'a> {
    /// The key of a pod's `claims`.
    pub(super) fn of(claims: &'a [PodClaim]) -> ClaimsKey<'a> {
        ClaimsKey(claims)
    }

    fn parts(&self) -> impl Iterator<Item = (&str, bool, &str)> {
        self.0.iter().map(|c| match &c.source {
            ClaimSource::Claim(claim) => (&*c.name, false, &**claim),
            ClaimSource::Template { template, .. } => (&*c.name, true, &**template),
        })
    }
}

impl PartialEq for ClaimsKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len() && self.parts().eq(other.parts())
    }
}

impl Eq for ClaimsKey<'_> {}

impl std::hash::Hash for ClaimsKey<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_usize(self.0.len());
        for part in self.parts() {
            part.hash(state);
        }
    }
}

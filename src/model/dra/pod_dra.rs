//! What Dynamic Resource Allocation reads of a pod, kept apart from the rest of it ([`super::Pod::dra`]):
//! few pods claim devices, and every loop passes over all of them.

use super::claim_needs::ClaimNeeds;
use super::objects::{Name, PodClaim};
use std::sync::Arc;

/// A pod's claims, its uid and what the claims ask of a node. Boxed in the pod, so that a pod that claims
/// nothing pays one pointer, on a cache line the loop reads anyway: as three fields at the pod's end they
/// cost a line of their own, about 20 ns a pod when 51,000 pending pods are grouped (the equivalence key
/// reads them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodDra {
    /// The ResourceClaims it names (`spec.resourceClaims`), each resolved to its claim where the pod says
    /// (a shared claim's name, or the claim made from a template once `status.resourceClaimStatuses` names
    /// it); entries the claim controller found no claim needed for are left out.
    pub claims: Vec<PodClaim>,
    /// Its `metadata.uid`, kept for pods with claims only: what a claim's owner and `reservedFor` name.
    pub uid: Option<Name>,
    /// What its claims (and its requests of extended resources a DeviceClass serves) ask of the node it
    /// goes on, found once a loop from the cluster's claims and templates ([`super::ClaimIndex`]).
    pub needs: Option<Arc<ClaimNeeds>>,
    /// The claim the scheduler made for its requests of extended resources devices serve on its node
    /// (`status.extendedResourceClaimStatus.resourceClaimName`, KEP-5004), once it is bound there.
    pub extended_claim: Option<Name>,
}

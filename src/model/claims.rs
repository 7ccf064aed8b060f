//! What a pod's claims ask of the node it goes on, found as the scheduler's DRA plugin finds them before it
//! filters nodes: each `spec.resourceClaims` entry names a shared claim, or a template from which the claim
//! controller makes the pod a claim of its own (named in `status.resourceClaimStatuses` once made). A claim
//! already allocated pins the pod to where its devices are; one not allocated yet is allocated on the node
//! the pod goes to.

use super::dra::{Allocation, ClaimSource, ClaimSpec, DraObjects, Name, ResourceClaim};
use super::fast_map::FastMap;
use super::pod::Pod;
use std::fmt;
use std::sync::Arc;

/// The cluster's claims and templates by namespace and name, made once a loop.
#[derive(Default)]
pub struct ClaimIndex<'a> {
    claims: FastMap<(&'a str, &'a str), &'a ResourceClaim>,
    templates: FastMap<(&'a str, &'a str), &'a Arc<ClaimSpec>>,
}

/// One claim a pod needs allocated where it goes.
#[derive(Clone, Debug, PartialEq)]
pub struct NeededClaim {
    /// How reasons name it: `namespace/claim`, or for a claim still to be made, `namespace/template
    /// (template)`.
    pub name: Name,
    pub spec: Arc<ClaimSpec>,
}

/// A claim of the pod that is allocated.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocatedClaim {
    pub name: Name,
    pub allocation: Allocation,
    /// The claim's spec when the claim is the pod's own (made from a template for it): what a move
    /// allocates again where the pod goes. A shared claim stays where it is allocated.
    pub own: Option<Arc<ClaimSpec>>,
}

/// What a pod's claims ask of its node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClaimNeeds {
    /// Claims to allocate on the pod's node, in the pod's order.
    pub unallocated: Vec<NeededClaim>,
    /// Claims already allocated: the pod may go only where each allocation is usable, except that a claim
    /// made for the pod alone moves with it (cluster-autoscaler's scale-down deallocates it and the
    /// destination allocates it again).
    pub allocated: Vec<AllocatedClaim>,
    /// A claim it names that the cluster does not have: no node takes the pod.
    pub missing: Option<ClaimError>,
}

/// A claim a pod names that the cluster does not have: the scheduler leaves such a pod pending, and no node
/// added changes that.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimError {
    ClaimMissing {
        namespace: Name,
        claim: Name,
    },
    TemplateMissing {
        namespace: Name,
        template: Name,
    },
    /// The claim the pod's status names was made for another pod.
    NotOwned {
        namespace: Name,
        claim: Name,
    },
}

impl fmt::Display for ClaimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimError::ClaimMissing { namespace, claim } => {
                write!(f, "resourceclaim \"{namespace}/{claim}\" not found")
            }
            ClaimError::TemplateMissing {
                namespace,
                template,
            } => write!(
                f,
                "resourceclaimtemplate \"{namespace}/{template}\" not found"
            ),
            ClaimError::NotOwned { namespace, claim } => write!(
                f,
                "resourceclaim \"{namespace}/{claim}\" was not created for the pod"
            ),
        }
    }
}

impl std::error::Error for ClaimError {}

impl<'a> ClaimIndex<'a> {
    pub fn new(objects: &'a DraObjects) -> ClaimIndex<'a> {
        ClaimIndex {
            claims: (objects.claims.iter())
                .map(|c| ((&*c.namespace, &*c.name), &**c))
                .collect(),
            templates: (objects.templates.iter())
                .map(|t| ((&*t.namespace, &*t.name), &t.spec))
                .collect(),
        }
    }

    /// What `pod`'s claims ask of its node (nothing for a pod that names none). A template entry whose claim
    /// is not made yet needs what the template says: the claim controller makes it as soon as the pod
    /// exists, and a node for it should not wait for that.
    pub fn needs(&self, pod: &Pod) -> ClaimNeeds {
        let mut needs = ClaimNeeds::default();
        if let Err(missing) = self.add_needs(pod, &mut needs) {
            needs.missing = Some(missing);
        }
        needs
    }

    fn add_needs(&self, pod: &Pod, needs: &mut ClaimNeeds) -> Result<(), ClaimError> {
        let namespace: &str = &pod.namespace;
        for entry in &pod.claims {
            let (claim, owned) = match &entry.source {
                ClaimSource::Claim(name) => (Some(name), false),
                ClaimSource::Template { made, .. } => (made.as_ref(), true),
            };
            let Some(claim) = claim else {
                let ClaimSource::Template { template, .. } = &entry.source else {
                    unreachable!("only a template entry has no claim name")
                };
                let spec = (self.templates.get(&(namespace, &**template))).ok_or_else(|| {
                    ClaimError::TemplateMissing {
                        namespace: namespace.into(),
                        template: template.clone(),
                    }
                })?;
                needs.unallocated.push(NeededClaim {
                    name: format!("{namespace}/{template} (template)").into(),
                    spec: Arc::clone(spec),
                });
                continue;
            };
            let found = (self.claims.get(&(namespace, &**claim))).ok_or_else(|| {
                ClaimError::ClaimMissing {
                    namespace: namespace.into(),
                    claim: claim.clone(),
                }
            })?;
            if owned && found.owner_pod.is_some() && found.owner_pod != pod.uid {
                return Err(ClaimError::NotOwned {
                    namespace: namespace.into(),
                    claim: claim.clone(),
                });
            }
            let name: Name = format!("{namespace}/{claim}").into();
            match &found.allocation {
                Some(allocation) => needs.allocated.push(AllocatedClaim {
                    name,
                    allocation: allocation.clone(),
                    own: (owned && found.owner_pod.is_some()).then(|| Arc::clone(&found.spec)),
                }),
                None => needs.unallocated.push(NeededClaim {
                    name,
                    spec: Arc::clone(&found.spec),
                }),
            }
        }
        Ok(())
    }
}

//! What a pod's claims ask of the node it goes on, found as the scheduler's DRA plugin finds them before it
//! filters nodes: each `spec.resourceClaims` entry names a shared claim, or a template from which the claim
//! controller makes the pod a claim of its own (named in `status.resourceClaimStatuses` once made). A claim
//! already allocated pins the pod to where its devices are; one not allocated yet is allocated on the node
//! the pod goes to.

use super::claim_needs::{AllocatedClaim, ClaimError, ClaimNeeds, NeededClaim};
use super::dra::{ClaimSource, ClaimSpec, DraObjects, Name, ResourceClaim};
use super::fast_map::FastMap;
use super::pod::Pod;
use std::sync::Arc;

/// The cluster's claims and templates by namespace and name, made once a loop.
#[derive(Default)]
pub struct ClaimIndex<'a> {
    claims: FastMap<(&'a str, &'a str), &'a ResourceClaim>,
    templates: FastMap<(&'a str, &'a str), &'a Arc<ClaimSpec>>,
}

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
                    shared: false,
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
                    shared: !owned,
                }),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Allocation, PodClaim, Resources};

    fn claim(name: &str, owner: Option<&str>, allocated: bool) -> Arc<ResourceClaim> {
        Arc::new(ResourceClaim {
            namespace: "ml".into(),
            name: name.into(),
            spec: Arc::new(ClaimSpec::default()),
            owner_pod: owner.map(Into::into),
            allocation: allocated.then(|| Allocation {
                devices: Vec::new(),
                node_selector: None,
            }),
            reserved_for: Vec::new(),
        })
    }

    fn pod(uid: &str, claims: Vec<PodClaim>) -> Pod {
        Pod {
            uid: Some(uid.into()),
            claims,
            ..Pod::pending("ml", "p", Resources::default())
        }
    }

    fn entry(name: &str, source: ClaimSource) -> PodClaim {
        PodClaim {
            name: name.into(),
            source,
        }
    }

    fn template(made: Option<&str>) -> ClaimSource {
        ClaimSource::Template {
            template: "one-gpu".into(),
            made: made.map(Into::into),
        }
    }

    #[test]
    fn each_kind_of_entry_asks_what_the_scheduler_would() {
        let objects = DraObjects {
            claims: vec![
                claim("mine", Some("uid-p"), true),
                claim("shared", None, true),
                claim("fresh", Some("uid-p"), false),
                claim("theirs", Some("uid-q"), false),
                claim("open", None, false),
            ],
            templates: vec![Arc::new(crate::model::ClaimTemplate {
                namespace: "ml".into(),
                name: "one-gpu".into(),
                spec: Arc::new(ClaimSpec::default()),
            })],
            ..DraObjects::default()
        };
        let index = ClaimIndex::new(&objects);
        let needs = index.needs(&pod(
            "uid-p",
            vec![
                entry("a", template(None)),
                entry("b", template(Some("mine"))),
                entry("c", ClaimSource::Claim("shared".into())),
                entry("d", template(Some("fresh"))),
                entry("e", ClaimSource::Claim("open".into())),
            ],
        ));
        assert_eq!(needs.missing, None);
        // Not made yet: from the template; made and unallocated: the claim's own spec; a claim the pod names
        // itself is shared (allocated once for all the pods that name it).
        let unallocated: Vec<(&str, bool)> = (needs.unallocated.iter())
            .map(|c| (&*c.name, c.shared))
            .collect();
        assert_eq!(
            unallocated,
            [
                ("ml/one-gpu (template)", false),
                ("ml/fresh", false),
                ("ml/open", true)
            ]
        );
        // Allocated: the pod's own claim moves with it, the shared one does not.
        let allocated: Vec<(&str, bool)> = (needs.allocated.iter())
            .map(|c| (&*c.name, c.own.is_some()))
            .collect();
        assert_eq!(allocated, [("ml/mine", true), ("ml/shared", false)]);

        let missing =
            |source: ClaimSource| index.needs(&pod("uid-p", vec![entry("x", source)])).missing;
        assert_eq!(
            missing(ClaimSource::Claim("gone".into()))
                .unwrap()
                .to_string(),
            "resourceclaim \"ml/gone\" not found"
        );
        assert_eq!(
            missing(template(Some("theirs"))).unwrap().to_string(),
            "resourceclaim \"ml/theirs\" was not created for the pod"
        );
        let no_template = ClaimSource::Template {
            template: "nope".into(),
            made: None,
        };
        assert!(matches!(
            missing(no_template),
            Some(ClaimError::TemplateMissing { .. })
        ));
    }
}

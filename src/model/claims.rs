//! What a pod's claims ask of the node it goes on, found as the scheduler's DRA plugin finds them before it
//! filters nodes: each `spec.resourceClaims` entry names a shared claim, or a template from which the claim
//! controller makes the pod a claim of its own (named in `status.resourceClaimStatuses` once made). A claim
//! already allocated pins the pod to where its devices are; one not allocated yet is allocated on the node
//! the pod goes to.

use super::dra::{AllocatedClaim, ClaimError, ClaimNeeds, ExtendedClaim, NeededClaim};
use super::dra::{
    AllocationMode, ClaimSource, ClaimSpec, DeviceAsk, DeviceClass, DeviceRequest, DraObjects,
    IMPLICIT_EXTENDED_RESOURCE_PREFIX, Name, ResourceClaim,
};
use super::fast_map::FastMap;
use super::pod::Pod;
use super::resources::GPU_RESOURCE;
use std::sync::Arc;

/// The cluster's claims and templates by namespace and name, and the classes that stand for extended
/// resources, made once a loop.
#[derive(Default)]
pub struct ClaimIndex<'a> {
    claims: FastMap<(&'a str, &'a str), &'a ResourceClaim>,
    templates: FastMap<(&'a str, &'a str), &'a Arc<ClaimSpec>>,
    /// The class each extended resource stands for (KEP-5004): every class for
    /// `deviceclass.resource.kubernetes.io/<class>`, and the newest of those that name a resource in
    /// `extendedResourceName` (the lower name when as new), as the scheduler's cache picks.
    by_resource: FastMap<String, &'a DeviceClass>,
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
            by_resource: by_resource(&objects.classes),
        }
    }

    /// `pod` as the loop plans it, when it claims devices: with what its claims ask of its node, and, while
    /// it is pending, its requests of extended resources a class stands for taken out of its demand into
    /// [`ClaimNeeds::extended`] (a node's device plugin or its devices serve them, whichever it has).
    /// `None` for a pod that claims nothing.
    pub fn plan(&self, pod: &Pod) -> Option<Pod> {
        let pending = pod.node_name.is_none();
        let backed = |resource: &str| self.by_resource.contains_key(resource);
        let extended = pending
            && ((pod.demand.gpus > 0 && backed(GPU_RESOURCE))
                || pod.extended.keys().any(|r| backed(r)));
        if pod.claims().is_empty() && !extended {
            return None;
        }
        let mut planned = pod.clone();
        let mut needs = self.needs(pod);
        if extended {
            let mut asked: Vec<(String, u64)> = Vec::new();
            if pod.demand.gpus > 0 && backed(GPU_RESOURCE) {
                asked.push((GPU_RESOURCE.to_string(), pod.demand.gpus));
                planned.demand.gpus = 0;
            }
            for (resource, &count) in &pod.extended {
                if count > 0 && backed(resource) {
                    asked.push((resource.clone(), count));
                    planned.extended.remove(resource);
                }
            }
            // In the order of their names, as the scheduler makes the claim's requests.
            asked.sort();
            needs.extended = (asked.into_iter())
                .map(|(resource, count)| self.extended_claim(resource, count))
                .collect();
        }
        planned.dra_mut().needs = Some(Arc::new(needs));
        Some(planned)
    }

    /// The claim the scheduler makes for `count` of `resource`: that many devices of its class.
    fn extended_claim(&self, resource: String, count: u64) -> ExtendedClaim {
        let class = &self.by_resource[&resource];
        let resource: Name = resource.into();
        ExtendedClaim {
            name: format!("for extended resource {resource}").into(),
            spec: Arc::new(ClaimSpec {
                requests: vec![DeviceRequest {
                    name: resource.clone(),
                    first_available: false,
                    asks: vec![DeviceAsk {
                        name: "".into(),
                        class: class.name.clone(),
                        selectors: Vec::new(),
                        mode: AllocationMode::ExactCount(u32::try_from(count).unwrap_or(u32::MAX)),
                        admin_access: false,
                        tolerations: Vec::new(),
                    }],
                }],
                constraints: Vec::new(),
            }),
            resource,
            count,
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
        for entry in pod.claims() {
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
            if owned && found.owner_pod.is_some() && found.owner_pod.as_ref() != pod.uid() {
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

/// Which class serves each extended resource (`ExtendedResourceCache` of kube-scheduler).
fn by_resource(classes: &[Arc<DeviceClass>]) -> FastMap<String, &DeviceClass> {
    let mut by_resource: FastMap<String, &DeviceClass> = FastMap::default();
    for class in classes {
        by_resource.insert(
            format!("{IMPLICIT_EXTENDED_RESOURCE_PREFIX}{}", class.name),
            class,
        );
    }
    for class in classes {
        let Some(resource) = &class.extended_resource_name else {
            continue;
        };
        let entry = by_resource.entry(resource.to_string()).or_insert(class);
        // Met while migrating from one class to another: the newer wins, the lower name when as new.
        let newer = (class.created, std::cmp::Reverse(&class.name))
            > (entry.created, std::cmp::Reverse(&entry.name));
        if newer {
            *entry = class;
        }
    }
    by_resource
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Allocation, PodClaim, PodDra, Resources};

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
            extended_resources: false,
        })
    }

    fn pod(uid: &str, claims: Vec<PodClaim>) -> Pod {
        Pod {
            dra: Some(Box::new(PodDra {
                claims,
                uid: Some(uid.into()),
                needs: None,
                extended_claim: None,
            })),
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

    fn class(name: &str, resource: Option<&str>, created: u64) -> Arc<crate::model::DeviceClass> {
        Arc::new(crate::model::DeviceClass {
            name: name.into(),
            selectors: Vec::new(),
            extended_resource_name: resource.map(Into::into),
            created: Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(created)),
        })
    }

    #[test]
    fn a_pending_pods_extended_resources_a_class_stands_for_become_its_claims() {
        let objects = DraObjects {
            classes: vec![
                // Two classes for one resource: the newer serves it; the lower name when as new.
                class("old-gpu", Some("nvidia.com/gpu"), 100),
                class("new-gpu", Some("nvidia.com/gpu"), 200),
                class("b-fpga", Some("example.com/fpga"), 100),
                class("a-fpga", Some("example.com/fpga"), 100),
            ],
            ..DraObjects::default()
        };
        let index = ClaimIndex::new(&objects);
        let mut asking = pod("uid-p", Vec::new());
        asking.demand.gpus = 2;
        asking.extended.insert("example.com/fpga".into(), 1);
        asking
            .extended
            .insert("deviceclass.resource.kubernetes.io/old-gpu".into(), 3);
        asking.extended.insert("example.com/other".into(), 4);
        let planned = index.plan(&asking).expect("it asks for devices");
        let needs = planned.needs().unwrap();
        let claims: Vec<(&str, u64, &str)> = (needs.extended.iter())
            .map(|c| {
                let ask = &c.spec.requests[0].asks[0];
                assert_eq!(&*c.spec.requests[0].name, &*c.resource);
                assert_eq!(
                    ask.mode,
                    AllocationMode::ExactCount(c.count.try_into().unwrap())
                );
                (&*c.resource, c.count, &*ask.class)
            })
            .collect();
        assert_eq!(
            claims,
            [
                ("deviceclass.resource.kubernetes.io/old-gpu", 3, "old-gpu"),
                ("example.com/fpga", 1, "a-fpga"),
                ("nvidia.com/gpu", 2, "new-gpu"),
            ]
        );
        // What devices may serve leaves its demand; what no class stands for stays.
        assert_eq!(planned.demand.gpus, 0);
        let left: Vec<&str> = planned.extended.keys().map(String::as_str).collect();
        assert_eq!(left, ["example.com/other"]);
        // A pod on a node holds what it holds already; a pod that asks nothing of devices is left alone.
        let bound = Pod {
            node_name: Some("n".into()),
            ..asking.clone()
        };
        assert!(index.plan(&bound).is_none());
        assert!(index.plan(&pod("uid-q", Vec::new())).is_none());
    }
}

//! The simulated cluster's Dynamic Resource Allocation, done where Kubernetes does it: drivers publish a
//! node's devices when it registers, the claim controller makes each pod its claims from templates, the
//! scheduler's DRA plugin writes the allocations it chose, and a pod's own claims go with the pod.

use super::extended::{self, Planned};
use super::names;
use crate::model::{
    Allocation, ClaimIndex, ClaimSource, DraObjects, Name, NodeScope, Pod, PoolRef, ResourceClaim,
    ResourceSlice,
};
use std::collections::HashSet;
use std::sync::Arc;

/// The slices node `node` of a group publishes: the group's template slices with the node as their pool and
/// nodeName, as NVIDIA's driver publishes one pool per node, named after it.
pub fn published(template: &[ResourceSlice], node: &str) -> Vec<Arc<ResourceSlice>> {
    (template.iter().enumerate())
        .map(|(i, slice)| {
            Arc::new(ResourceSlice {
                name: format!("{node}-{}-{i}", slice.driver).into(),
                pool: PoolRef {
                    name: node.into(),
                    ..slice.pool.clone()
                },
                scope: match slice.scope {
                    NodeScope::Node(_) => NodeScope::Node(node.into()),
                    ref other => other.clone(),
                },
                ..slice.clone()
            })
        })
        .collect()
}

/// Removes the slices published by nodes `gone` (their drivers went with them).
pub fn unpublish(dra: &mut DraObjects, gone: &HashSet<String>) {
    dra.slices
        .retain(|s| !matches!(&s.scope, NodeScope::Node(n) if gone.contains(&**n)));
}

/// The claim controller: each template entry of a pod without its claim gets one, made from the template
/// (`<pod>-<entry>-<suffix>`, owned by the pod), and the pod's status names it. `serial` makes the suffixes
/// (the API server's generateName picks random ones). An entry whose template is missing waits, as the
/// controller retries; the scheduler says why the pod cannot go anywhere.
pub fn make_claims(dra: &mut DraObjects, pods: &mut [Pod], serial: &mut u64) {
    for pod in pods.iter_mut().filter(|p| p.deleted.is_none()) {
        let Some(claims) = pod.dra.as_deref_mut() else {
            continue;
        };
        let Some(uid) = claims.uid.clone() else {
            continue;
        };
        for entry in claims.claims.iter_mut() {
            let ClaimSource::Template { template, made } = &mut entry.source else {
                continue;
            };
            if made.is_some() {
                continue;
            }
            let Some(spec) = (dra.templates.iter())
                .find(|t| *t.namespace == *pod.namespace && t.name == *template)
                .map(|t| t.spec.clone())
            else {
                continue;
            };
            let name = names::generated(&format!("{}-{}-", pod.name, entry.name), serial);
            dra.claims.push(Arc::new(ResourceClaim {
                namespace: pod.namespace.clone(),
                name: name.clone(),
                spec,
                owner_pod: Some(uid.clone()),
                allocation: None,
                reserved_for: Vec::new(),
                extended_resources: false,
            }));
            *made = Some(name);
        }
    }
}

/// What each pod's claims ask of its node, found as the scheduler's DRA plugin finds them; a pod still to
/// place with its requests of extended resources a class stands for among them, taken out of its demand
/// until the returned [`Planned`] restores them.
pub fn find_needs(dra: &DraObjects, pods: &mut [Pod]) -> Planned {
    let index = ClaimIndex::new(dra);
    let mut planned = Planned::default();
    for (i, pod) in pods.iter_mut().enumerate() {
        if pod.node_name.is_none() {
            planned.plan(&index, i, pod);
        } else if !pod.claims().is_empty() {
            pod.dra_mut().needs = Some(Arc::new(index.needs(pod)));
        } else if let Some(dra) = pod.dra.as_deref_mut() {
            // Bound where its extended resources were planned: nothing left to place.
            dra.needs = None;
        }
    }
    planned
}

/// A pod is gone (deleted, or lost with its node): the claims made for it are deleted, which frees their
/// devices, and shared claims are no longer reserved for it (deallocated once no pod holds them, as the
/// claim controller does).
pub fn release(dra: &mut DraObjects, pod: &Pod) {
    let Some(uid) = pod.uid() else {
        return;
    };
    dra.claims.retain(|c| c.owner_pod.as_ref() != Some(uid));
    for claim in dra
        .claims
        .iter_mut()
        .filter(|c| c.reserved_for.contains(uid))
    {
        let claim = Arc::make_mut(claim);
        claim.reserved_for.retain(|u| u != uid);
        if claim.reserved_for.is_empty() {
            claim.allocation = None;
        }
    }
}

/// The scheduler's DRA plugin binding `bound` (pods just bound, in the order they were, each with the
/// allocations the plain allocator found for it on its node): each claim the pod needed allocated gets its
/// allocation, and every claim of the pod is reserved for it; devices allocated for its extended resources
/// make it a claim of their own ([`extended::claim_for`], `serial` for its name).
pub fn write_allocations(
    dra: &mut DraObjects,
    pods: &mut [Pod],
    bound: Vec<(usize, Vec<(Name, Allocation)>)>,
    serial: &mut u64,
) {
    let mut writes: Vec<(Name, Name, Option<Allocation>, Name)> = Vec::new();
    let mut extended: Vec<(usize, Vec<(Name, Allocation)>)> = Vec::new();
    for (i, allocations) in bound {
        let pod = &pods[i];
        let Some(needs) = pod.needs().map(Arc::as_ref) else {
            continue;
        };
        // A pod asking only for extended resources may have no uid yet: it names no claim to reserve, and
        // the claim made for it gives it one.
        let uid = pod.uid().cloned();
        let (for_extended, named): (Vec<_>, Vec<_>) = (allocations.into_iter())
            .partition(|(claim, _)| needs.extended.iter().any(|c| c.name == *claim));
        if !for_extended.is_empty() {
            extended.push((i, for_extended));
        }
        let Some(uid) = uid else {
            continue;
        };
        for (claim, allocation) in named {
            writes.push((pod.namespace.clone(), claim, Some(allocation), uid.clone()));
        }
        // Every claim the pod names is reserved for it.
        let names = (needs.unallocated.iter().map(|c| &c.name))
            .chain(needs.allocated.iter().map(|c| &c.name));
        for claim in names {
            writes.push((pod.namespace.clone(), claim.clone(), None, uid.clone()));
        }
    }
    for (namespace, qualified, allocation, uid) in writes {
        // Needs name a claim `namespace/claim`.
        let name = (qualified.strip_prefix(&format!("{namespace}/"))).unwrap_or(&qualified);
        let Some(claim) =
            (dra.claims.iter_mut()).find(|c| c.namespace == namespace && &*c.name == name)
        else {
            continue;
        };
        let claim = Arc::make_mut(claim);
        if allocation.is_some() {
            claim.allocation = allocation;
        }
        if !claim.reserved_for.contains(&uid) {
            claim.reserved_for.push(uid);
        }
    }
    for (i, allocations) in extended {
        let pod = &mut pods[i];
        let needs = Arc::clone(pod.needs().expect("planned with extended claims"));
        let claim = extended::claim_for(pod, &needs, allocations, serial);
        dra.claims.push(Arc::new(claim));
    }
}

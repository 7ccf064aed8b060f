//! The simulated cluster's Dynamic Resource Allocation, done where Kubernetes does it: drivers publish a
//! node's devices when it registers, the claim controller makes each pod its claims from templates, the
//! scheduler's DRA plugin writes the allocations it chose, and a pod's own claims go with the pod.

use crate::model::{
    Allocation, ClaimIndex, ClaimSource, DraObjects, Name, Node, NodeScope, Pod, PoolRef,
    ResourceClaim, ResourceSlice,
};
use crate::simulator::{Dra, PlaceDevices, SharedClaims, claims_fit, reserve};
use std::collections::{HashMap, HashSet};
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
            *serial += 1;
            let name: Name = format!("{}-{}-{}", pod.name, entry.name, suffix(*serial)).into();
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

/// Five characters from the alphabet of the API server's generated names.
fn suffix(mut n: u64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let base = ALPHABET.len() as u64;
    (0..5)
        .map(|_| {
            let c = ALPHABET[(n % base) as usize] as char;
            n /= base;
            c
        })
        .collect()
}

/// What each pod's claims ask of its node, found as the scheduler's DRA plugin finds them.
pub fn find_needs(dra: &DraObjects, pods: &mut [Pod]) {
    let index = ClaimIndex::new(dra);
    for pod in pods.iter_mut().filter(|p| !p.claims().is_empty()) {
        pod.dra_mut().needs = Some(Arc::new(index.needs(pod)));
    }
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

/// The scheduler's DRA plugin binding `bound` (pods just placed on their nodes, in the order they were
/// placed): each claim the pod needed allocated gets what the allocator chose on its node, and every claim of
/// the pod is reserved for it. Returns the pods whose claims could not be allocated after all (the scheduler
/// would not bind them).
pub fn allocate_bound(
    dra: &mut DraObjects,
    nodes: &[Arc<Node>],
    pods: &[Pod],
    bound: &[usize],
) -> Vec<usize> {
    let with_claims: Vec<usize> = (bound.iter().copied())
        .filter(|&i| pods[i].needs().is_some())
        .collect();
    if with_claims.is_empty() {
        return Vec::new();
    }
    let state = Dra::new(dra);
    let mut devices: HashMap<&str, Option<Box<PlaceDevices>>> = HashMap::new();
    // A shared claim the first of its pods allocates, the others are bound where it is.
    let mut shared = SharedClaims::default();
    let mut refused = Vec::new();
    let mut writes: Vec<(Name, Name, Option<Allocation>, Name)> = Vec::new();
    for i in with_claims {
        let pod = &pods[i];
        let (Some(name), Some(uid), Some(needs)) = (
            pod.node_name.as_deref(),
            pod.uid().cloned(),
            pod.needs().map(Arc::as_ref),
        ) else {
            continue;
        };
        let Some(node) = nodes.iter().find(|n| n.name == name) else {
            refused.push(i);
            continue;
        };
        let place = devices
            .entry(name)
            .or_insert_with(|| state.devices_of(node));
        let Ok(allocations) = claims_fit(pod, node, place.as_deref(), &shared) else {
            refused.push(i);
            continue;
        };
        reserve(pod, node, place.as_deref_mut(), &mut shared);
        for (claim, allocation) in allocations {
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
    refused
}

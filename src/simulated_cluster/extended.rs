//! KEP-5004 in the simulated cluster, as kube-scheduler's DRA plugin does it: a pending pod's requests of
//! extended resources a DeviceClass stands for (`nvidia.com/gpu: 1` where a class names it in
//! `extendedResourceName`) are placed as claims of the pod's own. A node whose device plugin serves the
//! resource (it has it in its allocatable) gives it from there as before; on any other, devices of the class
//! are allocated for it, and the pod bound there gets a ResourceClaim of that allocation, made by the
//! scheduler, owned by the pod and named in its status, which goes with the pod as any claim made for it.

use super::names;
use crate::model::{
    Allocation, ClaimIndex, ClaimNeeds, ClaimSpec, DraObjects, Name, Pod, ResourceClaim,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The requests of extended resources taken out of pending pods' demand while the scheduler places them (into
/// their needs, where the placement finds whether a device plugin or devices serve them). Their spec still
/// asks for them, as the API server shows the pod and as a device plugin's resource is counted once the pod
/// is bound: [`Planned::restore`] gives them back.
#[derive(Default)]
#[must_use = "the pods' requests are to be restored once they are placed"]
pub struct Planned {
    /// Pod index, its `nvidia.com/gpu` and its other extended resources as requested.
    taken: Vec<(usize, u64, BTreeMap<String, u64>)>,
}

impl Planned {
    /// Pod `i`, waiting: its needs as the scheduler finds them, with its requests of extended resources a
    /// class stands for among them.
    pub fn plan(&mut self, index: &ClaimIndex, i: usize, pod: &mut Pod) {
        let Some(planned) = index.plan(pod) else {
            // A class that stood for its requests may be gone since the last pass.
            if let Some(dra) = pod.dra.as_deref_mut() {
                dra.needs = None;
            }
            return;
        };
        if planned.demand.gpus != pod.demand.gpus || planned.extended != pod.extended {
            self.taken
                .push((i, pod.demand.gpus, std::mem::take(&mut pod.extended)));
        }
        *pod = planned;
    }

    /// The pods' requests as their spec has them again.
    pub fn restore(self, pods: &mut [Pod]) {
        for (i, gpus, extended) in self.taken {
            pods[i].demand.gpus = gpus;
            pods[i].extended = extended;
        }
    }
}

/// The claim the scheduler makes for `pod`, bound where devices serve its requests of extended resources:
/// `allocations` are those the allocator found for its needs' claims for them, each one request named after
/// its resource, all in one claim `<pod>-extended-resources-<suffix>` (generateName) owned by and reserved
/// for the pod, which its status names. A pod without a uid gets one (the API server gives every pod one;
/// the simulated cluster keeps it only where a claim names the pod).
pub fn claim_for(
    pod: &mut Pod,
    needs: &ClaimNeeds,
    allocations: Vec<(Name, Allocation)>,
    serial: &mut u64,
) -> ResourceClaim {
    let mut spec = ClaimSpec::default();
    let mut allocation = Allocation {
        devices: Vec::new(),
        node_selector: None,
    };
    for (name, part) in allocations {
        if let Some(claim) = needs.extended.iter().find(|c| c.name == name) {
            spec.requests.extend(claim.spec.requests.iter().cloned());
        }
        allocation.devices.extend(part.devices);
        allocation.node_selector = allocation.node_selector.or(part.node_selector);
    }
    let uid = match pod.uid() {
        Some(uid) => uid.clone(),
        None => {
            let uid = names::uid(&pod.namespace, &pod.name, serial);
            pod.dra_mut().uid = Some(uid.clone());
            uid
        }
    };
    let name = names::generated(&format!("{}-extended-resources-", pod.name), serial);
    pod.dra_mut().extended_claim = Some(name.clone());
    ResourceClaim {
        namespace: pod.namespace.clone(),
        name,
        spec: Arc::new(spec),
        owner_pod: Some(uid.clone()),
        allocation: Some(allocation),
        reserved_for: vec![uid],
        extended_resources: true,
    }
}

/// `pod` sent back to waiting without leaving the cluster (preempted) holds its extended resources' claim no
/// more: the claim is deleted, which frees its devices, and the scheduler makes another where it binds the
/// pod next.
pub fn forget(dra: &mut DraObjects, pod: &mut Pod) {
    let Some(name) = (pod.dra.as_deref_mut()).and_then(|d| d.extended_claim.take()) else {
        return;
    };
    dra.claims
        .retain(|c| !(c.namespace == pod.namespace && c.name == name));
}

//! Devices on the places of the simulation (kube-scheduler's DRA plugin, over cluster-autoscaler's
//! snapshot): the pools a node reaches and which of their devices are allocated; whether a pod's claims can
//! be allocated there (the plugin's Filter: claims already allocated must be usable on the node, the others
//! are allocated by the structured allocator); and the allocation taken when the pod is put there (its
//! Reserve), given back when it is taken off. Each loop's state takes from the last loop's what did not
//! change: the classes (their selectors compiled), each pool (its devices' CEL values and verdicts), the
//! allocations by pool, the templates' pools.

use super::allocation::allocate::allocate;
use super::classes::DeviceClasses;
use super::in_use::InUse;
use super::node_selector::allocation_usable_on;
use super::pools::{NodePools, Pools};
use super::utilization::{PoolUse, utilization};
use crate::model::{
    Allocation, AttrValue, ClaimNeeds, ClaimSpec, DeviceId, DraObjects, FastMap, GPU_RESOURCE,
    NODE_NAME_FIELD, Name, Node, Pod, QualifiedName, ResourceClaim, ResourceSlice, Resources,
};
use crate::simulator::predicates::Unfit;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// What kube-scheduler's DRA plugin says of a node where a pod's claims cannot be allocated.
const NO_ALLOCATION: &str = "cannot allocate all claims";

/// The cluster's DRA state for one loop: its classes with their selectors compiled, its pools, and the
/// allocations already made, by the pools their devices are in.
pub struct Dra {
    classes: Arc<DeviceClasses>,
    pools: Arc<Pools>,
    allocated: Arc<Allocated>,
    /// The slices and claims it was made from, for the next loop's to compare with.
    slices: Vec<Arc<ResourceSlice>>,
    claims: Vec<Arc<ResourceClaim>>,
    /// The templates' pools asked for this loop, by their slices; and the last loop's, to take from.
    templates: Mutex<Vec<TemplatePools>>,
    last_templates: Vec<TemplatePools>,
}

/// The allocations of the cluster's claims, by the (driver, pool) of their devices.
type Allocated = FastMap<(Name, Name), Vec<Allocation>>;

/// A template's slices and their pools.
type TemplatePools = (Vec<Arc<ResourceSlice>>, Arc<Pools>);

/// Whether two lists hold the same objects, or equal ones.
fn same<T: PartialEq>(a: &[Arc<T>], b: &[Arc<T>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y) || x == y)
}

/// What a place's node has of devices and what of them is taken.
#[derive(Clone, Debug)]
pub struct PlaceDevices {
    classes: Arc<DeviceClasses>,
    pools: NodePools,
    in_use: InUse,
    /// The allocations made for pods put here in the simulation, latest last, by the needs they were for.
    reserved: Vec<(Arc<ClaimNeeds>, Vec<Allocation>)>,
    /// The shared claims whose devices a pod put here allocated (their allocations are in [`SharedClaims`]).
    holds: Vec<Name>,
}

/// The shared claims (named by pods' `resourceClaimName`) that the cluster had not allocated and the
/// simulation did: once, on the node of the first pod placed that names one, as the scheduler writes the
/// allocation it chose; the pods placed after it go only where that allocation is usable.
#[derive(Clone, Debug, Default)]
pub struct SharedClaims {
    claims: FastMap<Name, SharedAllocation>,
}

#[derive(Clone, Debug)]
struct SharedAllocation {
    allocation: Allocation,
    /// The pods placed that use it: the last one taken off gives its devices back.
    users: u32,
}

impl SharedAllocation {
    /// Whether a pod may use it on `node`. Node-local devices are usable on the place that holds them
    /// alone: the copies of a group's template share their node's name, which the allocation's node
    /// selector names.
    fn usable_on(&self, name: &Name, node: &Node, devices: Option<&PlaceDevices>) -> bool {
        let by_name = (self.allocation.node_selector.iter())
            .flat_map(|s| &s.terms)
            .any(|t| t.fields.iter().any(|r| r.key == NODE_NAME_FIELD));
        allocation_usable_on(&self.allocation, node)
            && (!by_name || devices.is_some_and(|d| d.holds.contains(name)))
    }
}

impl Dra {
    pub fn new(objects: &DraObjects) -> Dra {
        Dra::after(objects, None)
    }

    /// This loop's state, taking from `last` (the last loop's) what did not change: its classes when
    /// they are the same, else the expressions it compiled; each pool whose slices are the same (all of
    /// them when every slice is: a watch hands unchanged objects over as they were); the allocations
    /// when the claims are the same; the templates' pools.
    pub fn after(objects: &DraObjects, last: Option<&Dra>) -> Dra {
        let classes = match last {
            Some(l) if l.classes.made_from(&objects.classes) => l.classes.clone(),
            _ => Arc::new(DeviceClasses::reusing(
                &objects.classes,
                last.map(|l| &*l.classes),
            )),
        };
        let pools = match last {
            Some(l)
                if l.slices.len() == objects.slices.len()
                    && (l.slices.iter().zip(&objects.slices)).all(|(a, b)| Arc::ptr_eq(a, b)) =>
            {
                l.pools.clone()
            }
            Some(l) => Arc::new(Pools::reusing(&objects.slices, &l.pools)),
            None => Arc::new(Pools::new(&objects.slices)),
        };
        let allocated = match last {
            Some(l) if same(&l.claims, &objects.claims) => l.allocated.clone(),
            _ => Arc::new(allocated(&objects.claims)),
        };
        let last_templates = match last {
            Some(l) => std::mem::take(&mut *l.templates.lock().unwrap_or_else(|p| p.into_inner())),
            None => Vec::new(),
        };
        Dra {
            classes,
            pools,
            allocated,
            slices: objects.slices.clone(),
            claims: objects.claims.clone(),
            templates: Mutex::default(),
            last_templates,
        }
    }

    /// A template's pools, built once for equal slices.
    fn template_pools(&self, slices: &[Arc<ResourceSlice>]) -> Arc<Pools> {
        let mut templates = self.templates.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, pools)) = templates.iter().find(|(s, _)| same(s, slices)) {
            return pools.clone();
        }
        let pools = match self.last_templates.iter().find(|(s, _)| same(s, slices)) {
            Some((_, pools)) => pools.clone(),
            None => Arc::new(Pools::new(slices)),
        };
        templates.push((slices.to_vec(), pools.clone()));
        pools
    }

    /// A registered node's devices, with what the cluster's claims have allocated of them; `None` when it
    /// reaches no pool.
    pub fn devices_of(&self, node: &Node) -> Option<Box<PlaceDevices>> {
        let pools = self.pools.for_node(node);
        if pools.is_empty() {
            return None;
        }
        let mut in_use = InUse::new();
        for key in pools.keys() {
            for allocation in self.allocated.get(&key).into_iter().flatten() {
                in_use.add(allocation);
            }
        }
        Some(Box::new(PlaceDevices {
            classes: self.classes.clone(),
            pools,
            in_use,
            reserved: Vec::new(),
            holds: Vec::new(),
        }))
    }

    /// A node group's template node's devices: the slices its provider says a new node publishes, none in
    /// use. Each copy of the template (each node the plan adds) takes its own.
    pub fn template_devices(
        &self,
        slices: &[Arc<ResourceSlice>],
        node: &Node,
    ) -> Option<Box<PlaceDevices>> {
        let pools = self.template_pools(slices).for_node(node);
        (!pools.is_empty()).then(|| {
            Box::new(PlaceDevices {
                classes: self.classes.clone(),
                pools,
                in_use: InUse::new(),
                reserved: Vec::new(),
                holds: Vec::new(),
            })
        })
    }
}

/// The allocations of `claims`, by the pools their devices are in.
fn allocated(claims: &[Arc<ResourceClaim>]) -> Allocated {
    let mut allocated: Allocated = FastMap::default();
    for allocation in claims.iter().filter_map(|c| c.allocation.as_ref()) {
        let mut pools: Vec<(Name, Name)> = (allocation.devices.iter())
            .map(|d| (d.device.driver.clone(), d.device.pool.clone()))
            .collect();
        pools.sort_unstable();
        pools.dedup();
        for pool in pools {
            allocated.entry(pool).or_default().push(allocation.clone());
        }
    }
    allocated
}

impl PlaceDevices {
    /// How used the node's devices are, as cluster-autoscaler counts it (its busiest pool); `None` when it
    /// reaches no pool of its own (devices on every node are no reason to keep one).
    pub fn utilization(&self) -> Option<PoolUse> {
        utilization(&self.pools, &self.in_use)
    }

    /// What tells a template's devices from another template's, for keys that must keep groups whose new
    /// nodes publish different devices apart: each pool it reaches, as the object it is (a loop builds one
    /// pool for equal slices, so templates of equal slices share them; the address stands for the object,
    /// and every template holds its pools for the loop), with which of its devices the node reaches. What
    /// is in use is not read: nothing is allocated on a template (its DaemonSet pods take room only).
    pub fn identity(&self) -> Vec<(usize, &[u32])> {
        (self.pools.pools.iter())
            .map(|p| (Arc::as_ptr(&p.pool) as usize, &*p.visible))
            .collect()
    }
}

/// One claim to allocate where the pod goes.
struct ToAllocate<'a> {
    name: &'a Name,
    spec: &'a ClaimSpec,
    shared: bool,
}

/// The claims `pod` needs allocated on `node`: those not allocated yet (but for shared claims the
/// simulation allocated already, which pin it instead), and its own allocated claims whose devices are
/// elsewhere (it is moving); `Err` when an allocation it cannot take along pins it elsewhere.
fn to_allocate<'a>(
    needs: &'a ClaimNeeds,
    node: &Node,
    devices: Option<&PlaceDevices>,
    shared: &SharedClaims,
) -> Result<Vec<ToAllocate<'a>>, Unfit> {
    let elsewhere =
        |name: &Name| Unfit::Claims(format!("resourceclaim {name} is allocated on another node"));
    let mut claims = Vec::with_capacity(needs.unallocated.len());
    for claim in &needs.unallocated {
        match shared.claims.get(&claim.name).filter(|_| claim.shared) {
            Some(made) if made.usable_on(&claim.name, node, devices) => {}
            Some(_) => return Err(elsewhere(&claim.name)),
            None => claims.push(ToAllocate {
                name: &claim.name,
                spec: &claim.spec,
                shared: claim.shared,
            }),
        }
    }
    // Extended resources a device plugin does not serve here: the scheduler's claim for them.
    for claim in (needs.extended.iter()).filter(|c| !plugin_serves(node, &c.resource)) {
        claims.push(ToAllocate {
            name: &claim.name,
            spec: &claim.spec,
            shared: false,
        });
    }
    for claim in &needs.allocated {
        if allocation_usable_on(&claim.allocation, node) {
            continue;
        }
        match &claim.own {
            Some(spec) => claims.push(ToAllocate {
                name: &claim.name,
                spec,
                shared: false,
            }),
            None => return Err(elsewhere(&claim.name)),
        }
    }
    Ok(claims)
}

/// Whether `node` has `resource` in its allocatable: a device plugin serves it there, and a pod's request
/// of it is not for DRA (KEP-5004).
fn plugin_serves(node: &Node, resource: &str) -> bool {
    match resource == GPU_RESOURCE {
        true => node.allocatable.gpus > 0,
        false => node.extended.get(resource).is_some_and(|&n| n > 0),
    }
}

/// What of `pod`'s requests of extended resources a class stands for the device plugins of `node` serve
/// (taken from its room as any extended resource); `None` when none.
pub fn served_by_plugins(pod: &Pod, node: &Node) -> Option<(Resources, BTreeMap<String, u64>)> {
    let needs = pod.needs().map(Arc::as_ref)?;
    let mut served: Option<(Resources, BTreeMap<String, u64>)> = None;
    for claim in (needs.extended.iter()).filter(|c| plugin_serves(node, &c.resource)) {
        let (demand, extended) = served.get_or_insert_default();
        match &*claim.resource == GPU_RESOURCE {
            true => demand.gpus += claim.count,
            false => {
                extended.insert(claim.resource.to_string(), claim.count);
            }
        }
    }
    served
}

/// NVIDIA's DRA driver; its whole GPUs publish `type: gpu` (a MIG device, `mig`, is part of one).
const NVIDIA_DRIVER: &str = "gpu.nvidia.com";

/// How many whole GPUs `pod` takes on a new node of a group (`node` and `devices`: its template): those its
/// claims get there, and those a device plugin serves of its extended resources. The price expander prices
/// the pod as requesting them (a GPU claimed costs as a GPU requested); 0 where they cannot be allocated.
pub fn claimed_gpus(pod: &Pod, node: &Node, devices: Option<&PlaceDevices>) -> u64 {
    let served = served_by_plugins(pod, node).map_or(0, |(demand, _)| demand.gpus);
    let Some(devices) = devices else {
        return served;
    };
    let Ok(allocations) = claims_fit(pod, node, Some(devices), &SharedClaims::default()) else {
        return served;
    };
    let gpu_type = QualifiedName {
        domain: NVIDIA_DRIVER.into(),
        id: "type".into(),
    };
    let whole_gpu = |id: &DeviceId| {
        (devices.pools.pools.iter())
            .filter(|p| p.pool.driver == id.driver && p.pool.name == id.pool)
            .flat_map(|p| p.pool.devices.iter())
            .find(|d| d.id == *id)
            .is_some_and(|d| {
                d.device().attributes.get(&gpu_type) == Some(&AttrValue::Str("gpu".into()))
            })
    };
    let claimed = (allocations.iter())
        .flat_map(|(_, allocation)| &allocation.devices)
        .filter(|d| !d.admin_access && &*d.device.driver == NVIDIA_DRIVER && whole_gpu(&d.device))
        .count();
    served + claimed as u64
}

/// Whether `pod`'s claims can be allocated on `node` with its `devices`, given the shared claims the
/// simulation allocated already: the allocations the claims to allocate would get (each with the claim's
/// name), or why not in the scheduler's words.
pub fn claims_fit(
    pod: &Pod,
    node: &Node,
    devices: Option<&PlaceDevices>,
    shared: &SharedClaims,
) -> Result<Vec<(Name, Allocation)>, Unfit> {
    let Some(needs) = pod.needs().map(Arc::as_ref) else {
        return Ok(Vec::new());
    };
    if let Some(missing) = &needs.missing {
        return Err(Unfit::Claims(missing.to_string()));
    }
    let claims = to_allocate(needs, node, devices, shared)?;
    if claims.is_empty() {
        return Ok(Vec::new());
    }
    let Some(devices) = devices else {
        return Err(Unfit::Claims(format!(
            "{NO_ALLOCATION}: the node has no devices"
        )));
    };
    let specs: Vec<&ClaimSpec> = claims.iter().map(|c| c.spec).collect();
    let (classes, pools, in_use) = (&devices.classes, &devices.pools, &devices.in_use);
    match allocate(classes, pools, in_use, node, &specs) {
        Ok(allocations) => Ok((claims.iter().map(|c| c.name.clone()))
            .zip(allocations)
            .collect()),
        Err(why) => {
            // The scheduler's words first, whatever the allocator found; then which claim, by its name.
            let names: Vec<Name> = claims.iter().map(|c| c.name.clone()).collect();
            let why = why.named(&names).to_string();
            Err(Unfit::Claims(match why.starts_with(NO_ALLOCATION) {
                true => why,
                false => format!("{NO_ALLOCATION}: {why}"),
            }))
        }
    }
}

/// Takes the devices `pod`'s claims get on the place (after [`claims_fit`] said they fit): its own claims'
/// are kept with the pod, a shared claim's in `shared` for the pods that name it after it.
pub fn reserve(
    pod: &Pod,
    node: &Node,
    devices: Option<&mut PlaceDevices>,
    shared: &mut SharedClaims,
) {
    let Some(needs) = pod.needs() else {
        return;
    };
    let Ok(claims) = to_allocate(needs, node, devices.as_deref(), shared) else {
        return;
    };
    // The shared claims allocated already that the pod uses where it goes.
    for claim in needs.unallocated.iter().filter(|c| c.shared) {
        if let Some(made) = shared.claims.get_mut(&claim.name) {
            made.users += 1;
        }
    }
    let Some(devices) = devices.filter(|_| !claims.is_empty()) else {
        return;
    };
    let specs: Vec<&ClaimSpec> = claims.iter().map(|c| c.spec).collect();
    let classes = devices.classes.clone();
    let Ok(allocations) = allocate(&classes, &devices.pools, &devices.in_use, node, &specs) else {
        return;
    };
    let mut own = Vec::with_capacity(allocations.len());
    for (claim, allocation) in claims.iter().zip(allocations) {
        devices.in_use.add(&allocation);
        if claim.shared {
            devices.holds.push(claim.name.clone());
            shared.claims.insert(
                claim.name.clone(),
                SharedAllocation {
                    allocation,
                    users: 1,
                },
            );
        } else {
            own.push(allocation);
        }
    }
    devices.reserved.push((needs.clone(), own));
}

/// Gives back the devices the latest pod like `pod` put on the place took, and its use of shared claims:
/// the last pod using one takes its allocation with it.
pub fn release(pod: &Pod, mut devices: Option<&mut PlaceDevices>, shared: &mut SharedClaims) {
    let Some(needs) = pod.needs() else {
        return;
    };
    for claim in needs.unallocated.iter().filter(|c| c.shared) {
        let Some(made) = shared.claims.get_mut(&claim.name) else {
            continue;
        };
        made.users -= 1;
        if made.users > 0 {
            continue;
        }
        let Some(made) = shared.claims.remove(&claim.name) else {
            continue;
        };
        // Its devices are on the place that allocated it; a pod pinned elsewhere (devices every node
        // reaches) was the last to go: those stay counted there, on the safe side.
        if let Some(devices) = devices.as_deref_mut()
            && let Some(at) = devices.holds.iter().position(|n| *n == claim.name)
        {
            devices.holds.swap_remove(at);
            devices.in_use.remove(&made.allocation);
        }
    }
    let Some(devices) = devices else {
        return;
    };
    let Some(at) = (devices.reserved.iter()).rposition(|(n, _)| Arc::ptr_eq(n, needs)) else {
        return;
    };
    let (_, allocations) = devices.reserved.remove(at);
    for allocation in &allocations {
        devices.in_use.remove(allocation);
    }
}

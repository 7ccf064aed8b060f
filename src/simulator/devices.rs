//! Devices on the places of the simulation (kube-scheduler's DRA plugin, over cluster-autoscaler's
//! snapshot): the pools a node reaches and which of their devices are allocated; whether a pod's claims can
//! be allocated there (the plugin's Filter: claims already allocated must be usable on the node, the others
//! are allocated by the structured allocator); and the allocation taken when the pod is put there (its
//! Reserve), given back when it is taken off. Each loop's state takes from the last loop's what did not
//! change: the classes (their selectors compiled), each pool (its devices' CEL values and verdicts), the
//! allocations by pool, the templates' pools.

use super::dra::{DeviceClasses, InUse, NodePools, Pools, allocate, allocation_usable_on};
use super::predicates::Unfit;
use crate::model::{
    Allocation, ClaimNeeds, ClaimSpec, DraObjects, FastMap, Name, Node, Pod, ResourceClaim,
    ResourceSlice,
};
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
    pub fn utilization(&self) -> Option<f64> {
        let local = self.pools.pools.iter().any(|p| p.pool.node_local());
        local.then(|| super::dra::utilization(&self.pools, &self.in_use))
    }
}

/// The claims `pod` needs allocated on `node`: those not allocated yet, and its own allocated claims whose
/// devices are elsewhere (it is moving); `Err` when an allocation it cannot take along pins it elsewhere.
fn to_allocate<'a>(needs: &'a ClaimNeeds, node: &Node) -> Result<Vec<&'a ClaimSpec>, Unfit> {
    let mut specs: Vec<&ClaimSpec> = needs.unallocated.iter().map(|c| &*c.spec).collect();
    for claim in &needs.allocated {
        if allocation_usable_on(&claim.allocation, node) {
            continue;
        }
        match &claim.own {
            Some(spec) => specs.push(spec),
            None => {
                return Err(Unfit::Claims(format!(
                    "resourceclaim {} is allocated on another node",
                    claim.name
                )));
            }
        }
    }
    Ok(specs)
}

/// Whether `pod`'s claims can be allocated on `node` with its `devices`: the allocations they would get,
/// or why not in the scheduler's words.
pub fn claims_fit(
    pod: &Pod,
    node: &Node,
    devices: Option<&PlaceDevices>,
) -> Result<Vec<Allocation>, Unfit> {
    let Some(needs) = pod.needs.as_deref() else {
        return Ok(Vec::new());
    };
    if let Some(missing) = &needs.missing {
        return Err(Unfit::Claims(missing.to_string()));
    }
    let specs = to_allocate(needs, node)?;
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    let Some(devices) = devices else {
        return Err(Unfit::Claims(format!(
            "{NO_ALLOCATION}: the node has no devices"
        )));
    };
    let (classes, pools, in_use) = (&devices.classes, &devices.pools, &devices.in_use);
    allocate(classes, pools, in_use, node, &specs).map_err(|why| {
        // The scheduler's words first, whatever the allocator found.
        let why = why.to_string();
        Unfit::Claims(match why.starts_with(NO_ALLOCATION) {
            true => why,
            false => format!("{NO_ALLOCATION}: {why}"),
        })
    })
}

/// Takes the devices `pod`'s claims get on the place (after [`claims_fit`] said they fit).
pub fn reserve(pod: &Pod, node: &Node, devices: Option<&mut PlaceDevices>) {
    let (Some(needs), Some(devices)) = (pod.needs.as_ref(), devices) else {
        return;
    };
    let Ok(specs) = to_allocate(needs, node) else {
        return;
    };
    if specs.is_empty() {
        return;
    }
    let classes = devices.classes.clone();
    if let Ok(allocations) = allocate(&classes, &devices.pools, &devices.in_use, node, &specs) {
        for allocation in &allocations {
            devices.in_use.add(allocation);
        }
        devices.reserved.push((needs.clone(), allocations));
    }
}

/// Gives back the devices the latest pod like `pod` put on the place took.
pub fn release(pod: &Pod, devices: Option<&mut PlaceDevices>) {
    let (Some(needs), Some(devices)) = (pod.needs.as_ref(), devices) else {
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

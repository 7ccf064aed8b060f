//! The devices already allocated (the scheduler's allocated state, `foreachAllocatedDevice`): every
//! non-admin result of every claim that has an allocation. Admin access does not take a device from
//! others, so its results are not counted. The counters in-use devices consume are read from their pools
//! when a node's pools are allocated from.

use crate::model::{Allocation, DeviceId, FastMap, ResourceClaim};
use std::sync::Arc;

/// Devices allocated to claims, each with how many allocations hold it (so removing one of two keeps it).
#[derive(Clone, Debug, Default)]
pub struct InUse {
    devices: FastMap<DeviceId, u32>,
}

impl InUse {
    pub fn new() -> InUse {
        InUse::default()
    }

    /// The devices of the claims that are allocated.
    pub fn from_claims(claims: &[Arc<ResourceClaim>]) -> InUse {
        let mut in_use = InUse::new();
        for allocation in claims.iter().filter_map(|c| c.allocation.as_ref()) {
            in_use.add(allocation);
        }
        in_use
    }

    pub fn add(&mut self, allocation: &Allocation) {
        for device in allocation.devices.iter().filter(|d| !d.admin_access) {
            *self.devices.entry(device.device.clone()).or_default() += 1;
        }
    }

    pub fn remove(&mut self, allocation: &Allocation) {
        for device in allocation.devices.iter().filter(|d| !d.admin_access) {
            if let Some(count) = self.devices.get_mut(&device.device) {
                *count -= 1;
                if *count == 0 {
                    self.devices.remove(&device.device);
                }
            }
        }
    }

    pub fn contains(&self, id: &DeviceId) -> bool {
        self.devices.contains_key(id)
    }

    /// How many distinct devices are in use.
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }
}

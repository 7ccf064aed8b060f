//! Counters of partitionable devices during one allocation (`checkAvailableCounters`): what each counter
//! set of a pool has left after the devices already allocated from the pool (whichever node they target),
//! and what the devices picked so far take. A device fits when every counter it consumes still covers it.

use crate::model::{Device, Name};
use crate::simulator::dra::in_use::InUse;
use crate::simulator::dra::pools::Pool;
use std::collections::BTreeMap;

/// Thousandths of a counter's unit left, by counter set and counter.
#[derive(Debug)]
pub(crate) struct Counters {
    left: BTreeMap<Name, BTreeMap<Name, i128>>,
}

impl Counters {
    /// What the pool has left after the devices in use. `None` when the pool has no shared counters.
    pub(crate) fn available(pool: &Pool, in_use: &InUse) -> Option<Counters> {
        if pool.counters.is_empty() {
            return None;
        }
        let mut left: BTreeMap<Name, BTreeMap<Name, i128>> = (pool.counters.iter())
            .map(|(set, counters)| {
                let counters = counters
                    .iter()
                    .map(|(c, q)| (c.clone(), q.millis()))
                    .collect();
                (set.clone(), counters)
            })
            .collect();
        if !in_use.is_empty() {
            for pooled in pool.devices.iter().filter(|d| in_use.contains(&d.id)) {
                take(&mut left, pooled.device(), 1);
            }
        }
        Some(Counters { left })
    }

    /// Whether every counter the device consumes still covers it.
    pub(crate) fn fits(&self, device: &Device) -> bool {
        device.consumes.iter().all(|consumption| {
            self.left.get(&consumption.counter_set).is_some_and(|set| {
                (consumption.counters.iter())
                    .all(|(c, q)| set.get(c).is_some_and(|left| *left >= q.millis()))
            })
        })
    }

    /// Takes the device's consumption if it fits.
    pub(crate) fn try_take(&mut self, device: &Device) -> bool {
        let fits = self.fits(device);
        if fits {
            take(&mut self.left, device, 1);
        }
        fits
    }

    /// Gives back what `try_take` took.
    pub(crate) fn give_back(&mut self, device: &Device) {
        take(&mut self.left, device, -1);
    }
}

fn take(left: &mut BTreeMap<Name, BTreeMap<Name, i128>>, device: &Device, sign: i128) {
    for consumption in &device.consumes {
        if let Some(set) = left.get_mut(&consumption.counter_set) {
            for (c, q) in &consumption.counters {
                if let Some(left) = set.get_mut(c) {
                    *left -= sign * q.millis();
                }
            }
        }
    }
}

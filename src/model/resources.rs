//! Resources as integers: millicores, bytes, pod slots, GPUs.

/// The resource name of NVIDIA GPUs.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// An amount of each resource a node offers or a pod asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Resources {
    pub cpu_millis: u64,
    pub memory_bytes: u64,
    pub ephemeral_storage_bytes: u64,
    pub pods: u64,
    pub gpus: u64,
}

impl Resources {
    /// Each resource as a share of `full`'s (an empty node's): cpu, memory, ephemeral storage, pod slots,
    /// GPUs; 0 for a resource `full` has none of. What vector bin packing weighs pods and room by.
    pub fn shares_of(&self, full: &Resources) -> [f64; 5] {
        let share = |have: u64, of: u64| {
            if of == 0 {
                0.0
            } else {
                have as f64 / of as f64
            }
        };
        [
            share(self.cpu_millis, full.cpu_millis),
            share(self.memory_bytes, full.memory_bytes),
            share(self.ephemeral_storage_bytes, full.ephemeral_storage_bytes),
            share(self.pods, full.pods),
            share(self.gpus, full.gpus),
        ]
    }

    /// The larger of each resource.
    pub fn max(self, other: Resources) -> Resources {
        Resources {
            cpu_millis: self.cpu_millis.max(other.cpu_millis),
            memory_bytes: self.memory_bytes.max(other.memory_bytes),
            ephemeral_storage_bytes: self
                .ephemeral_storage_bytes
                .max(other.ephemeral_storage_bytes),
            pods: self.pods.max(other.pods),
            gpus: self.gpus.max(other.gpus),
        }
    }

    /// The sum of each resource, saturating rather than wrapping.
    pub fn plus(self, other: Resources) -> Resources {
        Resources {
            cpu_millis: self.cpu_millis.saturating_add(other.cpu_millis),
            memory_bytes: self.memory_bytes.saturating_add(other.memory_bytes),
            ephemeral_storage_bytes: self
                .ephemeral_storage_bytes
                .saturating_add(other.ephemeral_storage_bytes),
            pods: self.pods.saturating_add(other.pods),
            gpus: self.gpus.saturating_add(other.gpus),
        }
    }

    /// `n` times these resources, saturating.
    /// Each resource less `used`'s, never below zero: the room left (a node can be overcommitted by pods
    /// bound before a resize).
    pub fn minus(self, used: &Resources) -> Resources {
        Resources {
            cpu_millis: self.cpu_millis.saturating_sub(used.cpu_millis),
            memory_bytes: self.memory_bytes.saturating_sub(used.memory_bytes),
            ephemeral_storage_bytes: self
                .ephemeral_storage_bytes
                .saturating_sub(used.ephemeral_storage_bytes),
            pods: self.pods.saturating_sub(used.pods),
            gpus: self.gpus.saturating_sub(used.gpus),
        }
    }

    pub fn times(self, n: u64) -> Resources {
        Resources {
            cpu_millis: self.cpu_millis.saturating_mul(n),
            memory_bytes: self.memory_bytes.saturating_mul(n),
            ephemeral_storage_bytes: self.ephemeral_storage_bytes.saturating_mul(n),
            pods: self.pods.saturating_mul(n),
            gpus: self.gpus.saturating_mul(n),
        }
    }

    /// Whether `demand` fits in these resources.
    pub fn fits(&self, demand: &Resources) -> bool {
        demand.cpu_millis <= self.cpu_millis
            && demand.memory_bytes <= self.memory_bytes
            && demand.ephemeral_storage_bytes <= self.ephemeral_storage_bytes
            && demand.pods <= self.pods
            && demand.gpus <= self.gpus
    }

    /// The largest fraction of these resources that `demand` takes (cpu, memory, GPUs), in 0..=1 when it fits.
    pub fn largest_share(&self, demand: &Resources) -> f64 {
        let share = |want: u64, have: u64| {
            if have == 0 {
                0.0
            } else {
                want as f64 / have as f64
            }
        };
        share(demand.cpu_millis, self.cpu_millis)
            .max(share(demand.memory_bytes, self.memory_bytes))
            .max(share(demand.gpus, self.gpus))
    }
}

/// One container's requests, and whether it is a sidecar (an init container with `restartPolicy: Always`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ContainerDemand {
    pub requests: Resources,
    pub sidecar: bool,
}

/// What a pod needs from a node, as the scheduler computes it: the larger of the app containers (plus all
/// sidecars) and the peak during init (each init container plus the sidecars started before it), plus the
/// pod's overhead and one pod slot.
pub fn pod_demand(
    init: &[ContainerDemand],
    containers: &[Resources],
    overhead: Resources,
) -> Resources {
    let mut sidecars = Resources::default();
    let mut init_peak = Resources::default();
    for container in init {
        if container.sidecar {
            sidecars = sidecars.plus(container.requests);
            init_peak = init_peak.max(sidecars);
        } else {
            init_peak = init_peak.max(sidecars.plus(container.requests));
        }
    }
    let running = containers.iter().fold(sidecars, |sum, c| sum.plus(*c));
    let one_pod = Resources {
        pods: 1,
        ..Default::default()
    };
    running.max(init_peak).plus(overhead).plus(one_pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu_mem(cpu_millis: u64, memory_mib: u64) -> Resources {
        Resources {
            cpu_millis,
            memory_bytes: memory_mib << 20,
            ..Default::default()
        }
    }

    #[test]
    fn init_containers_take_the_max_app_containers_the_sum() {
        let init = [ContainerDemand {
            requests: cpu_mem(2000, 100),
            sidecar: false,
        }];
        let demand = pod_demand(
            &init,
            &[cpu_mem(500, 300), cpu_mem(500, 300)],
            Resources::default(),
        );
        assert_eq!(
            demand,
            Resources {
                pods: 1,
                ..cpu_mem(2000, 600)
            }
        );
    }

    #[test]
    fn sidecars_run_beside_later_init_containers_and_the_app() {
        let init = [
            ContainerDemand {
                requests: cpu_mem(100, 100),
                sidecar: true,
            },
            ContainerDemand {
                requests: cpu_mem(1000, 50),
                sidecar: false,
            },
        ];
        let demand = pod_demand(&init, &[cpu_mem(200, 200)], cpu_mem(10, 10));
        // Init peak: sidecar + second init = 1100m / 150Mi; running: 300m / 300Mi; plus overhead.
        assert_eq!(
            demand,
            Resources {
                pods: 1,
                ..cpu_mem(1110, 310)
            }
        );
    }

    #[test]
    fn fit_and_share() {
        let node = Resources {
            pods: 10,
            ..cpu_mem(2000, 4096)
        };
        let pod = Resources {
            pods: 1,
            ..cpu_mem(500, 3072)
        };
        assert!(node.fits(&pod));
        assert_eq!(node.largest_share(&pod), 0.75);
        assert!(!node.fits(&Resources { gpus: 1, ..pod }));
    }
}

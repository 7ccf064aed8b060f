//! Conversions at the edge between Kubernetes' wire formats and our own types.

pub mod capacity_buffer; // CapacityBuffers (autoscaling.x-k8s.io) and the PodTemplates and scalable objects they name
pub mod conditions; // status conditions as SetStatusCondition keeps them
pub mod object_error; // why an object could not be read
pub mod objects; // k8s-openapi nodes, pods, PDBs and k8s-pb template nodes -> the model
pub mod pod; // the facts of one pod (demand, Fargate traits) from protobuf bytes or kubectl JSON/YAML
pub mod provisioning_request; // ProvisioningRequests (autoscaling.x-k8s.io): check-capacity and best-effort-atomic
pub mod quantity; // Kubernetes quantities: parse and print canonically
pub mod scheduling; // a pod's scheduling constraints from its spec
pub mod snapshot;
pub mod snapshot_pod; // a snapshot's pod, its status read only for what is used // `kubectl get nodes,pods,pdb -A -o json` files, read item by item

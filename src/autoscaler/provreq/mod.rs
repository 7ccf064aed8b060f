//! ProvisioningRequests (`autoscaling.x-k8s.io`), the two classes cluster-autoscaler serves: check-capacity
//! places a request's pods on the cluster as it is and books the room; best-effort-atomic scales up for all
//! of them in one all-or-nothing increase, or not at all. Booked room is held as virtual pods, as headroom's
//! is, until the consuming pods run or the booking time is over.

pub(crate) mod outcome; // this loop's requests, their virtual pods and consuming pods, and the statuses they end with
pub(crate) mod provision; // the requests not provisioned yet, tried oldest first, an atomic one's increase asked for
pub(crate) mod requests; // each request read: its pods from its PodTemplates, what this loop does, upstream's conditions
pub(crate) mod trial; // a request's pods tried on a fork of the snapshot, all or nothing, with one group's scale-up

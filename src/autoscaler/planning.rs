//! Planning (the world, estimates, removal simulations) is CPU work: it runs without holding a Tokio worker,
//! so that the Lease renewal, the HTTP endpoints and the watches keep running during a long plan.

/// Runs planning (CPU work: the world, estimates, removal simulations) without holding a Tokio worker: on a
/// multi-thread runtime (the binaries') the worker hands its other tasks to another first; a current-thread
/// runtime has no other worker to keep free, so the work runs in place.
pub fn planning<R>(work: impl FnOnce() -> R) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

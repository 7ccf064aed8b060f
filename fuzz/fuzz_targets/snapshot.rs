//! `kubectl get nodes,pods,pdb -A -o json` snapshots given to `simulate` and `run --snapshot`, and the
//! ProvisioningRequests in them read as the loop reads them (their pods made from their PodTemplates).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(snapshot) = ekscale::k8s::parse_snapshot(text)
    {
        let now = std::time::SystemTime::UNIX_EPOCH;
        let requests = &snapshot.requests;
        let templates = &snapshot.buffers.templates;
        for r in ekscale::autoscaler::read_provisioning_requests(requests, templates, |_| 1, now) {
            let _ = r.virtual_pods();
        }
    }
});

//! `kubectl get nodes,pods,pdb -A -o json` snapshots given to `simulate` and `run --snapshot`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ekscale::k8s::snapshot::parse(text);
    }
});

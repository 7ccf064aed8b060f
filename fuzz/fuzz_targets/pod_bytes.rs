//! `Pod.Marshal()` bytes as cluster-autoscaler sends them in PricingPodPrice and MatchPod: any bytes are
//! read or refused, never a panic; and a pod that reads the same way from its kubectl JSON form.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ekscale::k8s::PodFacts::from_bytes(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ekscale::k8s::PodFacts::from_text(text);
    }
});

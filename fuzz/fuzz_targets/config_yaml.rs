//! The files users write: the simulated EKS scenario, demo scripts, headroom policies, the priority
//! expander's ConfigMap and the disruption configuration (read, then its schedules evaluated). The first
//! byte picks the reader; the rest is the text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which % 5 {
        0 => {
            let _ = ekscale::cloud::Scenario::parse(text);
        }
        1 => {
            let _ = ekscale::demo::Script::parse(text, std::path::Path::new("/nonexistent"));
        }
        2 => {
            let _ = ekscale::autoscaler::headroom::parse(text);
        }
        3 => {
            let _ = ekscale::autoscaler::scaleup::parse_priorities(text);
        }
        _ => {
            let Ok(config) = ekscale::autoscaler::DisruptionConfig::parse(text) else {
                return;
            };
            // Each matching entry's schedules evaluated at instants around daylight-saving changes, and
            // its expiry computed for a node of an extreme age.
            let at = |secs: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
            for group in ["general", "team-1", "gpu", ""] {
                let Some(policy) = config.policy_for(group) else {
                    continue;
                };
                for secs in [
                    0,
                    1_711_846_800,
                    1_730_000_000,
                    4_102_444_800,
                    253_402_300_000,
                ] {
                    let _ = policy.evaluate(at(secs));
                    let _ = policy.expired(at(0), at(secs));
                }
            }
        }
    }
});

//! The files users write: the simulated EKS scenario, demo scripts, headroom policies and the priority
//! expander's ConfigMap. The first byte picks the reader; the rest is the text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which % 4 {
        0 => {
            let _ = ekscale::cloud::Scenario::parse(text);
        }
        1 => {
            let _ =
                ekscale::demo::Script::parse(text, std::path::Path::new("/nonexistent"));
        }
        2 => {
            let _ = ekscale::autoscaler::headroom::parse(text);
        }
        _ => {
            let _ = ekscale::autoscaler::scaleup::parse_priorities(text);
        }
    }
});

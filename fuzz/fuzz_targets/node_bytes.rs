//! Template node bytes (NodeGroupTemplateNodeInfo's `nodeBytes`), as the companion reads them from a
//! provider it does not control: decoded and converted, or refused, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    if let Ok(node) = k8s_pb::api::core::v1::Node::decode(data) {
        let _ = ekscale::k8s::node_from_pb(&node);
    }
});

//! CEL for device selectors (dynamic-resource-allocation `cel/`): expressions compiled once and evaluated
//! against a device, with Kubernetes' library functions and the `device` variable they read.

pub(crate) mod cel_library; // Kubernetes' quantity() and semver() in CEL
mod cel_regex; // CEL's matches(), each pattern compiled once
pub(crate) mod device_value; // the `device` variable selectors read
pub(crate) mod selector; // CEL expressions compiled once and evaluated against a device

pub use selector::{SelectorError, SelectorErrorKind};

//! The allocator's tests: hand-built NVIDIA-like nodes for each rule, and a property comparing the search
//! with a plain exhaustive one over small random nodes.

mod allocation; // each rule of the allocator on hand-built nodes
mod exhaustive; // the search against a plain exhaustive search
mod fixtures; // devices, slices, classes and claims made plainly
mod pools; // generations, completeness, validity, which nodes reach which pools
mod selectors; // CEL selectors: strings, quantities, versions, errors

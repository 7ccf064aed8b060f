//! The disruption module's tests, by what they read.

mod document; // the document read, each mistake refused with its entry and field
mod in_use; // the module as the loop uses it: the document read once, allowances used up loop after loop

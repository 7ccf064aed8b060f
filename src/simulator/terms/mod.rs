//! What the topology keeps per registered term, below it: which terms a pod's labels may match, and the
//! pods each term counts per topology domain.

pub(crate) mod counts; // pods per domain of one term, sparse while few domains hold any
pub(crate) mod index; // the terms a pod's labels may match, found without checking every term

pub use counts::PerDomain;
pub use index::TermIndex;

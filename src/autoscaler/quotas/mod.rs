//! CapacityQuotas (SIG Autoscaling's, as cluster-autoscaler 1.36+ keeps them), the whole feature in one
//! place: enforced as nodes are planned, their status written back as upstream's controller writes it, what
//! their nodes hold summed once, and their part of the loop and of the report.

pub(crate) mod ledger; // enforced: a loop's book of valid quotas and the ledger of what each quota's nodes use
pub(crate) mod report; // in the report: limits, use before and after this loop's scale-ups, the groups held to each
pub(crate) mod stage; // the loop's two quota stages: statuses written first, figures before and after scale-up
pub(crate) mod status; // the status as upstream's controller writes it, written where it changed
pub(crate) mod usage; // what each quota's nodes hold, summed once per set of label values

pub use ledger::{QuotaBook, QuotaLedger, QuotaLimit};
pub use report::QuotaReport;
pub use stage::{QuotaBefore, QuotaStage};
pub use status::reported;
pub use usage::usage_by_quota;

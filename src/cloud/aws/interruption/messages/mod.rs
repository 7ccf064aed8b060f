//! The messages on the interruption queue: EventBridge's envelope, and in it the four kinds Karpenter
//! consumes, each read into one [`Notice`] or refused with why ([`Unreadable`]).

mod envelope; // EventBridge's event: detail-type, source, time, resources, detail
mod notice; // what a message says once read, and why one cannot be read
mod parse; // a message's body -> its notice, by source and detail-type
mod rebalance; // EC2 Instance Rebalance Recommendation
mod scheduled_change; // AWS Health Event, EC2 scheduledChange
mod spot_interruption; // EC2 Spot Instance Interruption Warning
mod state_change; // EC2 Instance State-change Notification

pub use notice::{Notice, Says};
pub use parse::parse;

//! The interruption queue: the SQS queue EventBridge fills with what EC2 and AWS Health say about instances
//! (a Spot interruption warning, a rebalance recommendation, a scheduled change, a state change), read as
//! Karpenter reads it, kept per instance of a served node group, and served as the leaving instances.

mod messages; // the four kinds of message, each read from EventBridge's envelope into one notice
mod poller; // the task that long-polls the queue, records what each message says and deletes it
mod record; // the leaving instances by providerID, a stronger reason replacing a weaker

pub use poller::Poller;
pub use record::{Membership, Record};

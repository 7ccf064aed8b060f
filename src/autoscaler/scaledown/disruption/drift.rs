//! Drift: a node whose `eks.amazonaws.com/nodegroup-image` is not the image its group's new nodes get.
//! Unknown either way (a provider that does not say, a node without the label), it is not drifted; nor while
//! its group is updating, as EKS is then replacing it (the nodes the update left on the old image are
//! drifted once it is over).

use crate::autoscaler::disruption::Reason;
use crate::autoscaler::scaledown::disruption::method::{GroupSight, Method};
use crate::model::{NODE_GROUP_IMAGE_LABEL, Node};

pub(in crate::autoscaler::scaledown) struct Drift;

impl Method for Drift {
    fn reason(&self) -> Reason {
        Reason::Drifted
    }

    fn disrupts(&self, node: &Node, group: &GroupSight<'_>) -> bool {
        let label = node.labels.get(NODE_GROUP_IMAGE_LABEL);
        !group.updating && label.zip(group.image).is_some_and(|(l, i)| l != i)
    }

    /// `runs ami-1; general's new nodes get ami-2`.
    fn describe(&self, node: &Node, group: &GroupSight<'_>) -> String {
        let runs = node
            .labels
            .get(NODE_GROUP_IMAGE_LABEL)
            .map_or("", String::as_str);
        format!(
            "runs {runs}; {}'s new nodes get {}",
            group.id,
            group.image.unwrap_or("")
        )
    }
}

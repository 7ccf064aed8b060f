//! Whether a view can be trusted to say which nodes are empty, before scale-down acts on it.

use std::time::{Duration, SystemTime};

/// Whether a view can be trusted to say which nodes are empty. A watch that restarts and relists, an API
/// server that answers an empty pod list for a moment, a cache not yet synced after a leader change: each
/// shows nodes without their pods. A view that lost more than half of the pods on nodes the last trusted
/// view held is not believed until the drop has lasted the unneeded time (a real drop, such as a finished
/// batch, still scales down, that much later).
#[derive(Default)]
pub(super) struct ViewCheck {
    /// Pods on nodes in the last trusted view.
    trusted: Option<usize>,
    /// Since when views have held far fewer.
    short_since: Option<SystemTime>,
}

/// Fewer pods on nodes than this in the last trusted view: a drop proves nothing (small clusters, tests).
const VIEW_CHECK_MIN_PODS: usize = 10;

impl ViewCheck {
    /// Why scale-down may not trust a view of `on_nodes` pods on nodes this loop, if it may not.
    pub(super) fn doubt(
        &mut self,
        on_nodes: usize,
        settle: Duration,
        now: SystemTime,
    ) -> Option<String> {
        if let Some(trusted) = self.trusted
            && trusted >= VIEW_CHECK_MIN_PODS
            && on_nodes * 2 < trusted
        {
            let since = *self.short_since.get_or_insert(now);
            let lasted = now.duration_since(since).unwrap_or_default();
            if lasted < settle {
                return Some(format!(
                    "the cluster view holds {on_nodes} pods on nodes where the last trusted one held \
                     {trusted}; scale-down waits until the view recovers or the drop has lasted {} ({} so far)",
                    humantime::format_duration(settle),
                    humantime::format_duration(Duration::from_secs(lasted.as_secs()))
                ));
            }
        }
        self.trusted = Some(on_nodes);
        self.short_since = None;
        None
    }
}

//! Which disruption configuration a loop keeps: the cluster's (the ConfigMap `ekscale-disruption`, read
//! again whenever its text changes) over the file's (`--disruption-config`). A document that does not read
//! is refused whole: the last good one stays, and the loop says the configuration is stale until a good one
//! comes.

use crate::autoscaler::disruption::DisruptionConfig;
use std::sync::Arc;

#[derive(Default)]
pub struct DisruptionSource {
    /// `--disruption-config`, read and checked at start.
    file: Option<Arc<DisruptionConfig>>,
    /// The cluster's text as last seen, and the configuration last read from it that was good.
    seen: Option<Arc<str>>,
    from_cluster: Option<Arc<DisruptionConfig>>,
    /// Why the cluster's text was refused, while it is.
    refused: Option<String>,
}

/// The configuration a loop keeps, and why the cluster's was refused, if it was.
pub struct Kept {
    pub config: Option<Arc<DisruptionConfig>>,
    pub stale: Option<String>,
}

impl DisruptionSource {
    pub fn new(file: Option<Arc<DisruptionConfig>>) -> DisruptionSource {
        DisruptionSource {
            file,
            ..DisruptionSource::default()
        }
    }

    /// The configuration for a loop whose view holds `text` (the ConfigMap's, if there is one). Without a
    /// ConfigMap the file's applies; a ConfigMap that does not read leaves the last good one (the
    /// ConfigMap's, else the file's) in force.
    pub fn keep(&mut self, text: Option<&Arc<str>>) -> Kept {
        let changed = self.seen.as_deref() != text.map(|t| &**t);
        if changed {
            self.seen = text.cloned();
            match text.map(|t| DisruptionConfig::parse(t)) {
                None => {
                    self.from_cluster = None;
                    self.refused = None;
                }
                Some(Ok(config)) => {
                    tracing::info!("disruption configuration read from the cluster's ConfigMap");
                    self.from_cluster = Some(Arc::new(config));
                    self.refused = None;
                }
                Some(Err(e)) => {
                    let why = e.to_string();
                    tracing::warn!(%why, "the disruption ConfigMap is refused; the last good configuration stays");
                    self.refused = Some(why);
                }
            }
        }
        Kept {
            config: self.from_cluster.clone().or_else(|| self.file.clone()),
            stale: self.refused.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "nodeGroups:\n  - match: general\n    budgets:\n      - nodes: \"1\"\n";
    const OTHER: &str = "nodeGroups:\n  - match: batch\n    expireAfter: 24h\n";
    const BAD: &str = "nodeGroups:\n  - match: general\n    budgets:\n      - nodes: \"150%\"\n";

    fn applies_to(kept: &Kept, group: &str) -> bool {
        (kept.config.as_ref()).is_some_and(|c| c.policy_for(group).is_some())
    }

    #[test]
    fn the_cluster_overrides_the_file_and_a_bad_document_keeps_the_last_good_one() {
        let file = DisruptionConfig::parse(OTHER).unwrap();
        let mut source = DisruptionSource::new(Some(Arc::new(file)));
        let kept = source.keep(None);
        assert!(applies_to(&kept, "batch") && !applies_to(&kept, "general"));
        assert_eq!(kept.stale, None);

        let good: Arc<str> = Arc::from(GOOD);
        let kept = source.keep(Some(&good));
        assert!(applies_to(&kept, "general") && !applies_to(&kept, "batch"));

        let bad: Arc<str> = Arc::from(BAD);
        let kept = source.keep(Some(&bad));
        assert!(applies_to(&kept, "general"), "the last good one stays");
        let stale = kept.stale.expect("refused");
        assert!(stale.contains("150%"), "{stale}");
        // The same bad text again: still stale, the last good one still in force.
        let kept = source.keep(Some(&bad));
        assert!(kept.stale.is_some() && applies_to(&kept, "general"));

        // The ConfigMap gone: the file's applies again.
        let kept = source.keep(None);
        assert!(applies_to(&kept, "batch") && kept.stale.is_none());
    }

    #[test]
    fn a_bad_first_document_leaves_the_file_in_force() {
        let mut source = DisruptionSource::new(None);
        let bad: Arc<str> = Arc::from(BAD);
        let kept = source.keep(Some(&bad));
        assert!(kept.config.is_none() && kept.stale.is_some());
    }
}

//! Which Fargate profile takes a pod, by EKS's rules: the one implementation both the provider (MatchPod,
//! the pricing of Fargate pods) and the companion (setting Fargate pods aside without asking) apply.
//! Profiles are not node groups (docs/eks.md, "Fargate").

use super::fast_map::FastMap;
use super::labels::Labels;
use super::pod::Pod;
use globset::{Glob, GlobMatcher};
use std::collections::{BTreeMap, BTreeSet};

/// The label that names the profile when several match.
pub const PROFILE_LABEL: &str = "eks.amazonaws.com/fargate-profile";
/// The scheduler EKS's webhook gives pods a profile takes.
pub const SCHEDULER_NAME: &str = "fargate-scheduler";

/// What the provider says of one pod on Fargate (`ekscale.v1.Fargate` MatchPod): the profile that takes it,
/// the size it is rounded up to and that size's price, or why none takes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodMatch {
    /// Empty, with a `reason`, when no profile matches.
    pub profile: String,
    pub candidates: Vec<String>,
    pub capacity_provisioned: String,
    pub vcpu: f64,
    pub memory_gb: f64,
    pub hourly_price: f64,
    pub incompatibilities: Vec<String>,
    pub reason: String,
}

/// A Fargate profile: which pods EKS runs on Fargate instead of a node group.
#[derive(Clone, Debug, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FargateProfile {
    pub name: String,
    #[serde(default = "active")]
    pub status: String,
    pub selectors: Vec<FargateSelector>,
    #[serde(default)]
    pub subnets: Vec<String>,
}

fn active() -> String {
    "ACTIVE".into()
}

#[derive(Clone, Debug, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FargateSelector {
    pub namespace: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// Which profiles would take a pod.
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    /// One profile takes it (the only match, or the one its label names).
    Profile(String),
    /// Several match and no label decides: EKS picks one of them at random.
    Candidates(Vec<String>),
    /// None matches, with why.
    NoMatch(String),
}

/// Matching as EKS does: namespace and every selector label, `*` and `?` allowed; ACTIVE profiles only. For
/// one pod; a loop over many pods keeps a [`Matcher`].
pub fn select(profiles: &[FargateProfile], namespace: &str, labels: &Labels) -> Selection {
    Matcher::new(profiles).select(namespace, labels)
}

/// The profiles, ready for many pods: each selector's patterns compiled once (compiling one was most of a
/// pod's matching), pods matched by namespace first, and each answer kept by namespace and the values of the
/// labels the selectors read ([`label_keys`]; a pod's other labels cannot change it). A loop over 10,000 pods
/// with labels of their own matches each namespace once.
pub struct Matcher<'p> {
    profiles: &'p [FargateProfile],
    /// The selectors of ACTIVE profiles.
    selectors: Vec<Compiled>,
    keys: Vec<String>,
    namespaces: FastMap<String, Namespace>,
}

/// One selector: its profile (an index into the profiles), its patterns; `None` for a pattern that is not a
/// valid glob, which matches nothing.
struct Compiled {
    profile: usize,
    namespace: Option<GlobMatcher>,
    labels: Vec<(String, Option<GlobMatcher>)>,
}

/// What is known of one namespace: the selectors whose namespace pattern takes it, the answer when none does
/// (written once, not for every pod of the namespace), and the answers by the values of the matcher's keys.
struct Namespace {
    selectors: Vec<usize>,
    refused: Option<Selection>,
    answers: FastMap<Vec<Option<String>>, Selection>,
}

impl<'p> Matcher<'p> {
    pub fn new(profiles: &'p [FargateProfile]) -> Matcher<'p> {
        let selectors = (profiles.iter().enumerate())
            .filter(|(_, p)| p.status == "ACTIVE")
            .flat_map(|(i, p)| p.selectors.iter().map(move |s| (i, s)))
            .map(|(profile, s)| Compiled {
                profile,
                namespace: wildcard(&s.namespace),
                labels: (s.labels.iter())
                    .map(|(key, value)| (key.clone(), wildcard(value)))
                    .collect(),
            })
            .collect();
        Matcher {
            profiles,
            selectors,
            keys: label_keys(profiles).into_iter().collect(),
            namespaces: FastMap::default(),
        }
    }

    /// Which profiles would take a pod of `namespace` with `labels`.
    pub fn select(&mut self, namespace: &str, labels: &Labels) -> Selection {
        if !self.namespaces.contains_key(namespace) {
            let selectors: Vec<usize> = (0..self.selectors.len())
                .filter(|&s| matches(&self.selectors[s].namespace, namespace))
                .collect();
            let known = Namespace {
                refused: selectors
                    .is_empty()
                    .then(|| no_match(self.profiles, namespace)),
                selectors,
                answers: FastMap::default(),
            };
            self.namespaces.insert(namespace.to_string(), known);
        }
        let known = &self.namespaces[namespace];
        if let Some(refused) = &known.refused {
            return refused.clone();
        }
        let values: Vec<Option<String>> =
            (self.keys.iter()).map(|k| labels.get(k).cloned()).collect();
        if let Some(answer) = known.answers.get(&values) {
            return answer.clone();
        }
        let mut matching: Vec<&str> = (known.selectors.iter())
            .map(|&s| &self.selectors[s])
            .filter(|s| {
                (s.labels.iter())
                    .all(|(key, value)| labels.get(key).is_some_and(|v| matches(value, v)))
            })
            .map(|s| self.profiles[s.profile].name.as_str())
            .collect();
        matching.sort_unstable();
        matching.dedup();
        let answer = match matching.as_slice() {
            [] => no_match(self.profiles, namespace),
            [one] => Selection::Profile(one.to_string()),
            many => match labels
                .get(PROFILE_LABEL)
                .filter(|named| many.contains(&named.as_str()))
            {
                Some(named) => Selection::Profile(named.clone()),
                None => Selection::Candidates(many.iter().map(|s| s.to_string()).collect()),
            },
        };
        let known = self.namespaces.get_mut(namespace).expect("inserted above");
        known.answers.insert(values, answer.clone());
        answer
    }
}

fn matches(pattern: &Option<GlobMatcher>, text: &str) -> bool {
    pattern.as_ref().is_some_and(|m| m.is_match(text))
}

fn no_match(profiles: &[FargateProfile], namespace: &str) -> Selection {
    let inactive = profiles.iter().filter(|p| p.status != "ACTIVE").count();
    let mut reason =
        format!("no ACTIVE Fargate profile selects namespace {namespace:?} with the pod's labels");
    if inactive > 0 {
        reason.push_str(&format!(
            " ({inactive} profile(s) not ACTIVE were not considered)"
        ));
    }
    Selection::NoMatch(reason)
}

/// `*` and `?` as Fargate selectors use them; nothing else is special.
fn wildcard(pattern: &str) -> Option<GlobMatcher> {
    let escaped: String = pattern
        .chars()
        .map(|c| match c {
            '[' | ']' | '{' | '}' | '\\' | '!' => format!("\\{c}"),
            c => c.to_string(),
        })
        .collect();
    Glob::new(&escaped).ok().map(|g| g.compile_matcher())
}

/// The namespaces of `pods` some ACTIVE profile's selector takes: only there can the labels the profiles read
/// ([`label_keys`]) send a pod to Fargate. Pods of a namespace share its name, so a run of them is one look.
pub fn namespaces_taken<'a>(
    profiles: &[FargateProfile],
    pods: impl IntoIterator<Item = &'a Pod>,
) -> BTreeSet<String> {
    let matcher = Matcher::new(profiles);
    if matcher.selectors.is_empty() {
        return BTreeSet::new();
    }
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut last: *const u8 = std::ptr::null();
    for pod in pods {
        let namespace: &str = &pod.namespace;
        if namespace.as_ptr() != last {
            last = namespace.as_ptr();
            seen.insert(namespace);
        }
    }
    (seen.into_iter())
        .filter(|namespace| (matcher.selectors.iter()).any(|s| matches(&s.namespace, namespace)))
        .map(str::to_string)
        .collect()
}

/// The pod label keys the profiles read: a pod's Fargate profile depends on these labels and no others.
pub fn label_keys(profiles: &[FargateProfile]) -> BTreeSet<String> {
    let mut keys: BTreeSet<String> = profiles
        .iter()
        .flat_map(|p| &p.selectors)
        .flat_map(|s| s.labels.keys().cloned())
        .collect();
    if profiles.len() > 1 {
        keys.insert(PROFILE_LABEL.to_string());
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(name: &str, status: &str, selectors: &[(&str, &[(&str, &str)])]) -> FargateProfile {
        FargateProfile {
            name: name.into(),
            status: status.into(),
            selectors: selectors
                .iter()
                .map(|(ns, labels)| FargateSelector {
                    namespace: ns.to_string(),
                    labels: labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                })
                .collect(),
            subnets: vec![],
        }
    }

    fn pod(namespace: &str, labels: &[(&str, &str)]) -> (String, Labels) {
        let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        (namespace.into(), labels.collect())
    }

    #[test]
    fn namespaces_taken_are_those_an_active_selector_matches() {
        let profiles = [
            profile(
                "serverless",
                "ACTIVE",
                &[("serverless", &[("compute", "fargate")])],
            ),
            profile("teams", "ACTIVE", &[("team-*", &[])]),
            profile("old", "DELETING", &[("legacy", &[])]),
        ];
        let pods: Vec<Pod> = [
            "default",
            "serverless",
            "team-a",
            "team-a",
            "legacy",
            "team-b",
        ]
        .iter()
        .map(|ns| Pod::pending(ns, "p", crate::model::Resources::default()))
        .collect();
        let taken = namespaces_taken(&profiles, &pods);
        let taken: Vec<&str> = taken.iter().map(String::as_str).collect();
        assert_eq!(taken, ["serverless", "team-a", "team-b"]);
    }

    fn select_pod(profiles: &[FargateProfile], (namespace, labels): (String, Labels)) -> Selection {
        select(profiles, &namespace, &labels)
    }

    #[test]
    fn selectors_match_namespace_and_every_label() {
        let profiles = [profile(
            "serverless",
            "ACTIVE",
            &[("serverless", &[("compute", "fargate")])],
        )];
        assert_eq!(
            select_pod(
                &profiles,
                pod("serverless", &[("compute", "fargate"), ("app", "x")])
            ),
            Selection::Profile("serverless".into())
        );
        assert!(matches!(
            select_pod(&profiles, pod("serverless", &[])),
            Selection::NoMatch(_)
        ));
        assert!(matches!(
            select_pod(&profiles, pod("other", &[("compute", "fargate")])),
            Selection::NoMatch(_)
        ));
    }

    #[test]
    fn wildcards_in_namespaces_and_label_values() {
        let profiles = [profile(
            "teams",
            "ACTIVE",
            &[("team-*", &[("tier", "web-?")])],
        )];
        assert_eq!(
            select_pod(&profiles, pod("team-a", &[("tier", "web-1")])),
            Selection::Profile("teams".into())
        );
        assert!(matches!(
            select_pod(&profiles, pod("team-a", &[("tier", "web-10")])),
            Selection::NoMatch(_)
        ));
        assert!(matches!(
            select_pod(&profiles, pod("teams", &[("tier", "web-1")])),
            Selection::NoMatch(_)
        ));
        let literal = [profile("odd", "ACTIVE", &[("a[b]", &[])])];
        assert_eq!(
            select_pod(&literal, pod("a[b]", &[])),
            Selection::Profile("odd".into()),
            "[ is not special"
        );
    }

    #[test]
    fn several_profiles_the_label_decides_or_all_are_candidates() {
        let profiles = [
            profile("b", "ACTIVE", &[("apps", &[])]),
            profile("a", "ACTIVE", &[("apps", &[])]),
            profile("c", "CREATING", &[("apps", &[])]),
        ];
        assert_eq!(
            select_pod(&profiles, pod("apps", &[])),
            Selection::Candidates(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            select_pod(&profiles, pod("apps", &[(PROFILE_LABEL, "b")])),
            Selection::Profile("b".into())
        );
        // A label naming a profile that does not match changes nothing.
        assert_eq!(
            select_pod(&profiles, pod("apps", &[(PROFILE_LABEL, "c")])),
            Selection::Candidates(vec!["a".into(), "b".into()])
        );
        let Selection::NoMatch(why) = select_pod(&profiles[2..], pod("apps", &[])) else {
            panic!()
        };
        assert!(why.contains("not ACTIVE"), "{why}");
    }

    #[test]
    fn one_matcher_over_many_pods_answers_as_each_pod_alone() {
        let profiles = [
            profile("web", "ACTIVE", &[("team-*", &[("tier", "web-?")])]),
            profile("all", "ACTIVE", &[("team-a", &[])]),
            profile("named", "ACTIVE", &[("team-a", &[])]),
            profile("old", "DELETING", &[("team-b", &[])]),
        ];
        let pods = [
            pod("team-a", &[("tier", "web-1"), ("app", "x")]),
            pod("team-a", &[("tier", "web-1"), ("app", "y")]),
            pod("team-a", &[("tier", "db"), ("app", "x")]),
            pod("team-a", &[(PROFILE_LABEL, "named")]),
            pod("team-a", &[]),
            pod("team-b", &[("tier", "web-2")]),
            pod("team-b", &[("tier", "web-22")]),
            pod("team-b", &[]),
            pod("other", &[("tier", "web-1")]),
        ];
        let mut matcher = Matcher::new(&profiles);
        // Twice over, so that the second round is answered from what the first kept.
        for (namespace, labels) in pods.iter().chain(&pods) {
            assert_eq!(
                matcher.select(namespace, labels),
                select(&profiles, namespace, labels),
                "{namespace} {labels:?}"
            );
        }
        assert_eq!(
            matcher.select("team-a", &pods[2].1),
            Selection::Candidates(vec!["all".into(), "named".into()])
        );
        assert_eq!(
            matcher.select("team-a", &pods[0].1),
            Selection::Candidates(vec!["all".into(), "named".into(), "web".into()])
        );
        assert_eq!(
            matcher.select("team-b", &pods[5].1),
            Selection::Profile("web".into())
        );
    }

    #[test]
    fn label_keys_are_the_selectors_and_the_naming_label_when_several() {
        let one = [profile("a", "ACTIVE", &[("apps", &[("tier", "web")])])];
        assert_eq!(label_keys(&one), BTreeSet::from(["tier".to_string()]));
        let two = [one[0].clone(), profile("b", "ACTIVE", &[("jobs", &[])])];
        assert_eq!(
            label_keys(&two),
            BTreeSet::from(["tier".to_string(), PROFILE_LABEL.to_string()])
        );
    }
}

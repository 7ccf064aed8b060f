//! Pod names (`namespace/name`) packed into one string where the view is read: a scale-up names every pod it
//! is for, tens of thousands in a big one, and reading each name from its own allocation was a third of such
//! a loop.

use super::pod::Pod;
use super::pods::PodList;
use serde::{Serialize, Serializer};

/// Pod names (`namespace/name`), written one after another into one string: a scale-up names every pod it
/// is for, tens of thousands in a big one, and one allocation per name was most of such a loop.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodNames {
    text: String,
    /// Where each name ends in `text`.
    ends: Vec<usize>,
}

impl PodNames {
    pub fn with_capacity(pods: usize) -> PodNames {
        PodNames {
            text: String::with_capacity(pods * 24),
            ends: Vec::with_capacity(pods),
        }
    }

    /// The names of `pods`, in order.
    pub fn of<P: std::borrow::Borrow<Pod>>(pods: &[P]) -> PodNames {
        let mut names = PodNames::with_capacity(pods.len());
        for pod in pods {
            names.push(pod.borrow());
        }
        names
    }

    pub fn push(&mut self, pod: &Pod) {
        self.text.push_str(&pod.namespace);
        self.text.push('/');
        self.text.push_str(&pod.name);
        self.ends.push(self.text.len());
    }

    /// Names pod `i` of `pods`: from `keys` (the names of the first pods of `pods`, packed when they were read:
    /// one string read in order instead of each pod's own allocation) while `i` is within them, else from the
    /// pod itself.
    pub fn push_pod(&mut self, keys: &PodNames, pods: PodList<'_>, i: usize) {
        match keys.get(i) {
            Some(key) => {
                self.text.push_str(key);
                self.ends.push(self.text.len());
            }
            None => self.push(&pods[i]),
        }
    }

    /// Names pods `indices` of `pods`, each as [`PodNames::push_pod`] would: a run of pods next to each
    /// other within `keys` (a workload's pods, read in a row) is copied at once, not name by name.
    pub fn push_pods(&mut self, keys: &PodNames, pods: PodList<'_>, indices: &[usize]) {
        let mut rest = indices;
        while let Some(&first) = rest.first() {
            let run = (rest.iter().enumerate())
                .take_while(|&(k, &i)| i == first + k && i < keys.len())
                .count();
            if run == 0 {
                self.push(&pods[first]);
                rest = &rest[1..];
                continue;
            }
            let start = if first == 0 { 0 } else { keys.ends[first - 1] };
            let base = self.text.len();
            let ends = &keys.ends[first..first + run];
            self.text.push_str(&keys.text[start..ends[run - 1]]);
            self.ends.extend(ends.iter().map(|&end| end - start + base));
            rest = &rest[run..];
        }
    }

    /// The `i`th name.
    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.text[start..end])
    }

    /// `other`'s names after these.
    pub fn append(&mut self, other: PodNames) {
        if self.is_empty() {
            *self = other;
            return;
        }
        let offset = self.text.len();
        self.text.push_str(&other.text);
        self.ends.extend(other.ends.iter().map(|end| end + offset));
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + Clone {
        (0..self.ends.len()).map(|i| self.get(i).expect("within ends"))
    }
}

impl<'a> FromIterator<&'a str> for PodNames {
    fn from_iter<I: IntoIterator<Item = &'a str>>(names: I) -> PodNames {
        let mut list = PodNames::default();
        for name in names {
            list.text.push_str(name);
            list.ends.push(list.text.len());
        }
        list
    }
}

impl Serialize for PodNames {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::resources::Resources;

    #[test]
    fn runs_of_pods_are_named_as_one_by_one() {
        let pods: Vec<Pod> = (0..8)
            .map(|i| Pod::pending("ns", &format!("p{i}"), Resources::default()))
            .collect();
        // Keys for the first six pods only, marked so that a name from them is told from one from a pod.
        let keys: PodNames = (0..6)
            .map(|i| format!("ns/p{i}*"))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect();
        // Runs, a gap, a run starting at 0, a step back, and pods past the keys.
        let indices = [2, 3, 4, 0, 1, 5, 3, 6, 7, 5];
        let mut one_by_one = PodNames::default();
        for &i in &indices {
            one_by_one.push_pod(&keys, (&pods).into(), i);
        }
        let mut runs: PodNames = ["before"].into_iter().collect();
        runs.push_pods(&keys, (&pods).into(), &indices);
        let runs: Vec<&str> = runs.iter().skip(1).collect();
        assert_eq!(runs, one_by_one.iter().collect::<Vec<_>>());
        assert_eq!(
            runs,
            [
                "ns/p2*", "ns/p3*", "ns/p4*", "ns/p0*", "ns/p1*", "ns/p5*", "ns/p3*", "ns/p6",
                "ns/p7", "ns/p5*"
            ]
        );
    }

    #[test]
    fn pods_are_named_from_the_packed_keys_and_from_the_pods_past_them() {
        let pods = [
            Pod::pending("default", "web-0", Resources::default()),
            Pod::pending("batch", "job-1", Resources::default()),
        ];
        // Keys packed for the first pod only, as when virtual pods follow the view's own.
        let keys: PodNames = ["default/web-0 (packed)"].into_iter().collect();
        let mut names = PodNames::default();
        names.push_pod(&keys, (&pods).into(), 0);
        names.push_pod(&keys, (&pods).into(), 1);
        assert_eq!(
            names.iter().collect::<Vec<_>>(),
            ["default/web-0 (packed)", "batch/job-1"]
        );
        assert_eq!(PodNames::of(&pods).get(1), Some("batch/job-1"));
        assert_eq!(PodNames::of(&pods).get(2), None);
    }
}

//! The pods a loop works on, as one list: the view's, then the loop's own virtual ones (headroom policies and
//! CapacityBuffers), indexed together without copying the view's. Cloning every pod of a large cluster to
//! append a handful of virtual ones cost more than the rest of the loop.

use super::pod::Pod;
use std::sync::Arc;

#[derive(Clone, Copy, Debug)]
pub struct PodList<'a> {
    /// The view's pods, shared with the source that read them.
    first: &'a [Arc<Pod>],
    then: &'a [Pod],
}

impl<'a> PodList<'a> {
    /// `first`'s pods keep their indices; `then`'s follow them.
    pub fn new(first: &'a [Arc<Pod>], then: &'a [Pod]) -> PodList<'a> {
        PodList { first, then }
    }

    pub fn len(&self) -> usize {
        self.first.len() + self.then.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> Iter<'a> {
        self.into_iter()
    }

    /// Pod `i`, with the list's own lifetime (indexing borrows the list).
    pub fn get(&self, i: usize) -> &'a Pod {
        match i.checked_sub(self.first.len()) {
            None => &self.first[i],
            Some(j) => &self.then[j],
        }
    }
}

impl<'a> From<&'a [Pod]> for PodList<'a> {
    fn from(pods: &'a [Pod]) -> PodList<'a> {
        PodList::new(&[], pods)
    }
}

impl<'a> From<&'a Vec<Pod>> for PodList<'a> {
    fn from(pods: &'a Vec<Pod>) -> PodList<'a> {
        PodList::new(&[], pods)
    }
}

impl<'a, const N: usize> From<&'a [Pod; N]> for PodList<'a> {
    fn from(pods: &'a [Pod; N]) -> PodList<'a> {
        PodList::new(&[], pods)
    }
}

impl<'a> From<&'a Vec<Arc<Pod>>> for PodList<'a> {
    fn from(pods: &'a Vec<Arc<Pod>>) -> PodList<'a> {
        PodList::new(pods, &[])
    }
}

impl std::ops::Index<usize> for PodList<'_> {
    type Output = Pod;

    fn index(&self, i: usize) -> &Pod {
        self.get(i)
    }
}

/// The pods of a [`PodList`], the view's first.
pub type Iter<'a> = std::iter::Chain<
    std::iter::Map<std::slice::Iter<'a, Arc<Pod>>, fn(&'a Arc<Pod>) -> &'a Pod>,
    std::slice::Iter<'a, Pod>,
>;

impl<'a> IntoIterator for PodList<'a> {
    type Item = &'a Pod;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        let shared: fn(&'a Arc<Pod>) -> &'a Pod = |pod| pod;
        self.first.iter().map(shared).chain(self.then)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Resources;

    #[test]
    fn pods_are_indexed_across_both_parts_in_order() {
        let pod = |name: &str| Pod::pending("default", name, Resources::default());
        let view = [Arc::new(pod("a")), Arc::new(pod("b"))];
        let extra = [pod("virtual")];
        let list = PodList::new(&view, &extra);
        assert_eq!(list.len(), 3);
        let names: Vec<&str> = list.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "virtual"]);
        assert_eq!(list[1].name, "b");
        assert_eq!(list.get(2).name, "virtual");
        assert_eq!(PodList::from(&extra[..])[0].name, "virtual");
        assert!(PodList::new(&[], &[]).is_empty());
    }
}

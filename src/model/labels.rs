//! Labels by key, kept as one sorted allocation: a million pods each carry a few labels, and a `BTreeMap`
//! gives each map a node of eleven slots (over 500 bytes for one label); this holds exactly what is there.
//! Read as a map is read: `get`, `iter` in key order, `insert`, `from` an array.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::fmt;

/// Keys and values sorted by key, each key once.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Labels(Box<[(String, String)]>);

/// The pairs of [`Labels::iter`], as a map's iterator yields them.
pub type LabelsIter<'a> = std::iter::Map<
    std::slice::Iter<'a, (String, String)>,
    fn(&'a (String, String)) -> (&'a String, &'a String),
>;

impl Labels {
    pub fn new() -> Labels {
        Labels::default()
    }

    /// Labels from string pairs, for tests (later pairs of a key win, as a map's inserts).
    #[cfg(test)]
    pub(crate) fn of(pairs: &[(&str, &str)]) -> Labels {
        (pairs.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn find<Q: ?Sized + Ord>(&self, key: &Q) -> Result<usize, usize>
    where
        String: Borrow<Q>,
    {
        self.0.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    pub fn get<Q: ?Sized + Ord>(&self, key: &Q) -> Option<&String>
    where
        String: Borrow<Q>,
    {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    pub fn get_key_value<Q: ?Sized + Ord>(&self, key: &Q) -> Option<(&String, &String)>
    where
        String: Borrow<Q>,
    {
        self.find(key).ok().map(|i| (&self.0[i].0, &self.0[i].1))
    }

    pub fn contains_key<Q: ?Sized + Ord>(&self, key: &Q) -> bool
    where
        String: Borrow<Q>,
    {
        self.find(key).is_ok()
    }

    /// Sets `key` to `value`, returning the value it replaces.
    pub fn insert(&mut self, key: String, value: String) -> Option<String> {
        match self.find(key.as_str()) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                let mut pairs = std::mem::take(&mut self.0).into_vec();
                pairs.insert(i, (key, value));
                self.0 = pairs.into_boxed_slice();
                None
            }
        }
    }

    pub fn remove<Q: ?Sized + Ord>(&mut self, key: &Q) -> Option<String>
    where
        String: Borrow<Q>,
    {
        let i = self.find(key).ok()?;
        let mut pairs = std::mem::take(&mut self.0).into_vec();
        let (_, value) = pairs.remove(i);
        self.0 = pairs.into_boxed_slice();
        Some(value)
    }

    /// Keeps the pairs `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut String) -> bool) {
        let mut pairs = std::mem::take(&mut self.0).into_vec();
        pairs.retain_mut(|(k, v)| keep(k, v));
        self.0 = pairs.into_boxed_slice();
    }

    /// The pairs in key order.
    pub fn iter(&self) -> LabelsIter<'_> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator + Clone {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator + Clone {
        self.0.iter().map(|(_, v)| v)
    }

    /// The pairs sorted by key, the last of equal keys kept (as inserting them in order into a map).
    fn sorted(mut pairs: Vec<(String, String)>) -> Labels {
        // Stable: of equal keys, the last stays last.
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut kept: Vec<(String, String)> = Vec::with_capacity(pairs.len());
        for pair in pairs {
            match kept.last_mut() {
                Some(last) if last.0 == pair.0 => *last = pair,
                _ => kept.push(pair),
            }
        }
        Labels(kept.into_boxed_slice())
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Written as the map it is (`metadata.labels` in JSON).
impl serde::Serialize for Labels {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl FromIterator<(String, String)> for Labels {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Labels {
        Labels::sorted(pairs.into_iter().collect())
    }
}

impl<'a> FromIterator<(&'a String, &'a String)> for Labels {
    fn from_iter<I: IntoIterator<Item = (&'a String, &'a String)>>(pairs: I) -> Labels {
        (pairs.into_iter())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

impl Extend<(String, String)> for Labels {
    fn extend<I: IntoIterator<Item = (String, String)>>(&mut self, pairs: I) {
        let mut all = std::mem::take(&mut self.0).into_vec();
        all.extend(pairs);
        *self = Labels::sorted(all);
    }
}

impl<'a> Extend<(&'a String, &'a String)> for Labels {
    fn extend<I: IntoIterator<Item = (&'a String, &'a String)>>(&mut self, pairs: I) {
        self.extend(pairs.into_iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

impl<const N: usize> From<[(String, String); N]> for Labels {
    fn from(pairs: [(String, String); N]) -> Labels {
        pairs.into_iter().collect()
    }
}

impl From<BTreeMap<String, String>> for Labels {
    fn from(map: BTreeMap<String, String>) -> Labels {
        // Already sorted, each key once.
        Labels(map.into_iter().collect())
    }
}

impl From<Labels> for BTreeMap<String, String> {
    fn from(labels: Labels) -> BTreeMap<String, String> {
        labels.into_iter().collect()
    }
}

impl IntoIterator for Labels {
    type Item = (String, String);
    type IntoIter = std::vec::IntoIter<(String, String)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_vec().into_iter()
    }
}

impl<'a> IntoIterator for &'a Labels {
    type Item = (&'a String, &'a String);
    type IntoIter = LabelsIter<'a>;
    fn into_iter(self) -> LabelsIter<'a> {
        self.iter()
    }
}

impl<Q: ?Sized + Ord> std::ops::Index<&Q> for Labels
where
    String: Borrow<Q>,
{
    type Output = String;
    fn index(&self, key: &Q) -> &String {
        self.get(key).expect("no label of that key")
    }
}

#[cfg(test)]
mod tests {
    use super::Labels;

    #[test]
    fn reads_as_a_map_built_in_the_same_order() {
        let mut map = Labels::of(&[("b", "1"), ("a", "2"), ("b", "3")]);
        assert_eq!(map.len(), 2);
        assert_eq!(map.get("b").map(String::as_str), Some("3"));
        let keys: Vec<&String> = map.keys().collect();
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(map.insert("c".into(), "4".into()), None);
        assert_eq!(map.insert("a".into(), "5".into()).as_deref(), Some("2"));
        assert_eq!(map, Labels::of(&[("a", "5"), ("b", "3"), ("c", "4")]));
        assert_eq!(map.remove("b").as_deref(), Some("3"));
        assert!(!map.contains_key("b"));
        map.extend([("0".to_string(), "x".to_string())]);
        assert_eq!(format!("{map:?}"), r#"{"0": "x", "a": "5", "c": "4"}"#);
    }
}

//! A watch's objects kept converted into the model as its events arrive, so that a loop's view costs a
//! pointer per object and converting costs in proportion to what changed. Copying and converting every
//! cached pod on every loop cost over a second at 1,000,000 pods; the API objects themselves are not kept
//! (the model's pod is a fraction of their size).

use crate::model::FastMap;
use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::{Arc, Mutex};

/// Objects by `namespace/name`, converted; filled by [`Mirror::follow`].
pub struct Mirror<T> {
    state: Mutex<MirrorState<T>>,
    /// Whether the first full list has arrived.
    ready: tokio::sync::watch::Sender<bool>,
}

struct MirrorState<T> {
    current: Objects<T>,
    /// A full list in progress: it replaces `current` when it ends.
    relist: Option<Objects<T>>,
}

/// Objects in a vector (handed out as it is) with where each one is.
///
/// Each key is one allocation the index and the vector share, not a copy each: at a million pods, two
/// `String`s a key were some 110 bytes a pod, one `Arc<str>` held twice about 80.
struct Objects<T> {
    at: FastMap<Arc<str>, usize>,
    keys: Vec<Arc<str>>,
    items: Vec<Arc<T>>,
}

impl<T> Default for Objects<T> {
    fn default() -> Objects<T> {
        Objects {
            at: FastMap::default(),
            keys: Vec::new(),
            items: Vec::new(),
        }
    }
}

impl<T> Objects<T> {
    fn put(&mut self, key: String, item: T) {
        match self.at.get(key.as_str()) {
            Some(&i) => self.items[i] = Arc::new(item),
            None => {
                let key: Arc<str> = key.into();
                self.at.insert(key.clone(), self.items.len());
                self.keys.push(key);
                self.items.push(Arc::new(item));
            }
        }
    }

    fn remove(&mut self, key: &str) {
        let Some(i) = self.at.remove(key) else { return };
        self.items.swap_remove(i);
        self.keys.swap_remove(i);
        if let Some(moved) = self.keys.get(i) {
            self.at.insert(moved.clone(), i);
        }
    }
}

/// What a watch event does to a mirror, once its object is converted.
pub enum Change<T> {
    Put(String, Option<T>),
    Remove(String),
    /// A new full list begins: the objects that follow replace all others when it ends.
    Relist,
    Listed(String, Option<T>),
    ListDone,
}

impl<T> Default for Mirror<T> {
    fn default() -> Mirror<T> {
        Mirror {
            state: Mutex::new(MirrorState {
                current: Objects::default(),
                relist: None,
            }),
            ready: tokio::sync::watch::channel(false).0,
        }
    }
}

impl<T> Mirror<T> {
    /// Every object, in no particular order.
    pub fn items(&self) -> Vec<Arc<T>> {
        self.lock().current.items.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MirrorState<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Completes once the first full list is in.
    pub async fn wait_until_ready(&self) {
        let mut ready = self.ready.subscribe();
        // The sender lives as long as the mirror, so this cannot fail while it is awaited.
        let _ = ready.wait_for(|ready| *ready).await;
    }

    /// Applies a run of changes (the events a watch delivered so far) under one lock. An object that could
    /// not be converted (`None`) is left out, and a version of it converted before goes too: a loop must
    /// not plan on what the object no longer says.
    pub fn apply(&self, changes: impl IntoIterator<Item = Change<T>>) {
        let mut guard = self.lock();
        let state = &mut *guard;
        for change in changes {
            match change {
                Change::Put(key, Some(item)) => state.current.put(key, item),
                Change::Put(key, None) | Change::Remove(key) => state.current.remove(&key),
                Change::Relist => state.relist = Some(Objects::default()),
                Change::Listed(key, item) => {
                    let listed = state.relist.get_or_insert_with(Objects::default);
                    match item {
                        Some(item) => listed.put(key, item),
                        None => listed.remove(&key),
                    }
                }
                Change::ListDone => {
                    state.current = state.relist.take().unwrap_or_default();
                    self.ready.send_replace(true);
                }
            }
        }
    }

    /// Keeps the mirror current from `watcher`'s events for as long as the stream runs (the watcher retries
    /// failed watches with its backoff): each object is converted by `convert` (`None` leaves it out, the
    /// conversion having said why), and shown to `seen` once the mirror holds it, so that a loop `seen`
    /// wakes finds what woke it.
    pub async fn follow<K>(
        &self,
        watcher: impl futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
        mut convert: impl FnMut(&K) -> Option<T> + Send,
        mut seen: impl FnMut(&K) + Send,
    ) where
        K: kube::Resource + Send,
    {
        let stream = watcher.default_backoff().ready_chunks(1024);
        futures::pin_mut!(stream);
        while let Some(events) = stream.next().await {
            let mut changes = Vec::with_capacity(events.len());
            for event in &events {
                changes.push(match event {
                    Ok(watcher::Event::Apply(object)) => Change::Put(key(object), convert(object)),
                    Ok(watcher::Event::Delete(object)) => Change::Remove(key(object)),
                    Ok(watcher::Event::Init) => Change::Relist,
                    Ok(watcher::Event::InitApply(object)) => {
                        Change::Listed(key(object), convert(object))
                    }
                    Ok(watcher::Event::InitDone) => Change::ListDone,
                    Err(e) => {
                        tracing::warn!(error = %e, "watch failed; retrying");
                        continue;
                    }
                });
            }
            self.apply(changes);
            for event in &events {
                if let Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) = event
                {
                    seen(object);
                }
            }
        }
    }
}

/// `namespace/name` (`name` for an object outside namespaces).
fn key<K: kube::Resource>(object: &K) -> String {
    let meta = object.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A small deterministic generator (xorshift), so a failing stream can be replayed.
    struct Random(u64);

    impl Random {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Whatever the stream of events (adds, changes, deletes, objects that cannot be read, relists that
    /// start and end), the mirror holds exactly what a list taken now would give.
    #[test]
    fn the_mirror_after_any_stream_of_events_equals_one_built_from_scratch() {
        for seed in 1..200u64 {
            let mut random = Random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mirror = Mirror::<u64>::default();
            // What the API server holds, and what a relist in progress has delivered of it.
            let mut server: BTreeMap<String, Option<u64>> = BTreeMap::new();
            let mut listing: Option<Vec<String>> = None;
            for step in 0..300u64 {
                let key = format!("ns/p{}", random.below(40));
                // Readable objects get a value; a few cannot be converted (None).
                let item = (random.below(10) > 0).then_some(step);
                // A list delivers the objects as they were when it was taken, with no events meanwhile.
                let change = match (random.below(12), listing.as_mut()) {
                    (_, Some(left)) if !left.is_empty() => {
                        let key = left.remove(0);
                        Change::Listed(key.clone(), server[&key])
                    }
                    (_, Some(_)) => {
                        listing = None;
                        Change::ListDone
                    }
                    (0..=5, None) => {
                        server.insert(key.clone(), item);
                        Change::Put(key, item)
                    }
                    (6..=8, None) => {
                        server.remove(&key);
                        Change::Remove(key)
                    }
                    (_, None) => {
                        listing = Some(server.keys().cloned().collect());
                        Change::Relist
                    }
                };
                mirror.apply([change]);
                if listing.is_none() {
                    let mut held: Vec<u64> = mirror.items().iter().map(|i| **i).collect();
                    held.sort_unstable();
                    let mut want: Vec<u64> = server.values().flatten().copied().collect();
                    want.sort_unstable();
                    assert_eq!(held, want, "seed {seed}, step {step}");
                }
            }
        }
    }
}

//! First fit in logarithmic time. The estimator asks, for each equivalence group, "the first node added so
//! far with room for this pod". Scanning every node makes that O(groups x nodes), which is what makes
//! upstream's estimator slow on many distinct pods. This tree keeps, over the nodes in the order they were
//! added, the per-resource maximum of what is free in each subtree, so a search skips whole runs of nodes
//! that cannot hold the pod and still returns the same node a scan would. For best fit it can also keep the
//! least room left in each subtree, so that "the node with the least room that holds this pod" passes over
//! the subtrees that cannot beat the best node found so far.

use crate::model::Resources;

type Key = [u64; 5];

fn key(free: &Resources) -> Key {
    [
        free.cpu_millis,
        free.memory_bytes,
        free.pods,
        free.ephemeral_storage_bytes,
        free.gpus,
    ]
}

fn holds(have: &Key, want: &Key) -> bool {
    have.iter().zip(want).all(|(h, w)| h >= w)
}

#[derive(Clone, Debug, Default)]
pub struct FreeTree {
    /// Leaves: a power of two at least `len`.
    width: usize,
    len: usize,
    /// Heap layout: node 1 is the root, leaves start at `width`.
    max: Vec<Key>,
    /// How room is weighed, when the tree keeps it ([`FreeTree::with_rooms`]).
    rooms: Option<Weights>,
    /// The least room in each subtree, laid out as `max` (`u128::MAX` where no node is); empty unless kept.
    least: Vec<u128>,
}

/// Room as cpu and memory shares of an empty node, summed: cpu/C + memory/M, multiplied out by C*M so
/// that it compares exactly.
#[derive(Clone, Copy, Debug)]
struct Weights {
    cpu: u128,
    memory: u128,
}

impl Weights {
    fn room(&self, free: &Resources) -> u128 {
        u128::from(free.cpu_millis) * self.cpu + u128::from(free.memory_bytes) * self.memory
    }
}

impl FreeTree {
    /// A tree that takes `nodes` nodes before it grows (growing copies every leaf into a new tree).
    pub fn with_capacity(nodes: usize) -> FreeTree {
        if nodes == 0 {
            return FreeTree::default();
        }
        let width = nodes.next_power_of_two();
        FreeTree {
            width,
            len: 0,
            max: vec![[0; 5]; 2 * width],
            ..FreeTree::default()
        }
    }

    /// A tree over nodes with `free` left, in that order: what pushing each would make, built in one pass.
    pub fn of(free: &[Resources]) -> FreeTree {
        let mut tree = FreeTree::with_capacity(free.len());
        for (i, f) in free.iter().enumerate() {
            tree.max[tree.width + i] = key(f);
        }
        tree.len = free.len();
        for n in (1..tree.width).rev() {
            tree.max[n] = merge(&tree.max[2 * n], &tree.max[2 * n + 1]);
        }
        tree
    }

    /// A tree that also keeps each node's room (its cpu and memory as shares of `full`, an empty node's),
    /// for [`FreeTree::least_room`].
    pub fn with_rooms(nodes: usize, full: &Resources) -> FreeTree {
        let mut tree = FreeTree::with_capacity(nodes);
        tree.rooms = Some(Weights {
            cpu: u128::from(full.memory_bytes),
            memory: u128::from(full.cpu_millis),
        });
        tree.least = vec![u128::MAX; tree.max.len()];
        tree
    }

    /// Adds a node at the end.
    pub fn push(&mut self, free: &Resources) {
        if self.len == self.width {
            let width = (self.width * 2).max(1);
            let mut max = vec![[0; 5]; 2 * width];
            max[width..width + self.len]
                .copy_from_slice(&self.max[self.width..self.width + self.len]);
            for n in (1..width).rev() {
                max[n] = merge(&max[2 * n], &max[2 * n + 1]);
            }
            if self.rooms.is_some() {
                let mut least = vec![u128::MAX; 2 * width];
                least[width..width + self.len]
                    .copy_from_slice(&self.least[self.width..self.width + self.len]);
                for n in (1..width).rev() {
                    least[n] = least[2 * n].min(least[2 * n + 1]);
                }
                self.least = least;
            }
            self.width = width;
            self.max = max;
        }
        self.len += 1;
        self.set(self.len - 1, free);
    }

    /// Removes the node added last.
    pub fn pop(&mut self) {
        if self.len > 0 {
            // No node there: no room to count either.
            self.set_leaf(self.len - 1, &Resources::default(), u128::MAX);
            self.len -= 1;
        }
    }

    /// Node `i` now has `free` left.
    pub fn set(&mut self, i: usize, free: &Resources) {
        let room = self.rooms.map_or(u128::MAX, |weights| weights.room(free));
        self.set_leaf(i, free, room);
    }

    fn set_leaf(&mut self, i: usize, free: &Resources, room: u128) {
        let keeps_rooms = self.rooms.is_some();
        let mut n = self.width + i;
        self.max[n] = key(free);
        if keeps_rooms {
            self.least[n] = room;
        }
        // Up to the first parent that keeps what it had: every node above it keeps it too. Removal
        // simulations change a leaf at every pod they put, and most changes stop a level or two up.
        while n > 1 {
            n /= 2;
            let max = merge(&self.max[2 * n], &self.max[2 * n + 1]);
            let least = match keeps_rooms {
                true => self.least[2 * n].min(self.least[2 * n + 1]),
                false => u128::MAX,
            };
            if self.max[n] == max && (!keeps_rooms || self.least[n] == least) {
                break;
            }
            self.max[n] = max;
            if keeps_rooms {
                self.least[n] = least;
            }
        }
    }

    /// Best fit: the node with the least room (as [`FreeTree::with_rooms`] weighs it) among those whose free
    /// resources hold `demand` and that `takes` accepts; of equals, the first. Subtrees without room for the
    /// pod, or whose least room is no less than the best found so far, are passed over.
    pub fn least_room(&self, demand: &Resources, takes: impl Fn(usize) -> bool) -> Option<usize> {
        assert!(self.rooms.is_some(), "a tree made with_rooms");
        let mut best = None;
        if self.len > 0 {
            self.least_under(1, &key(demand), &takes, &mut best);
        }
        best.map(|(_, i)| i)
    }

    /// Left subtrees first: whatever a later subtree holds comes after every node found before it, so one
    /// that only equals the best cannot replace it.
    fn least_under(
        &self,
        n: usize,
        want: &Key,
        takes: &impl Fn(usize) -> bool,
        best: &mut Option<(u128, usize)>,
    ) {
        if !holds(&self.max[n], want) || best.is_some_and(|(room, _)| self.least[n] >= room) {
            return;
        }
        if n >= self.width {
            let i = n - self.width;
            if i < self.len && takes(i) {
                *best = Some((self.least[n], i));
            }
            return;
        }
        self.least_under(2 * n, want, takes, best);
        self.least_under(2 * n + 1, want, takes, best);
    }

    /// The first node whose free resources hold `demand`.
    pub fn first(&self, demand: &Resources) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        self.find(1, &key(demand))
    }

    /// The first node at or after `start` whose free resources hold `demand`, wrapping around to the front:
    /// cluster-autoscaler's rotating search (`lastIndex`).
    pub fn first_from(&self, start: usize, demand: &Resources) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let want = key(demand);
        self.find_at_or_after(1, self.width, start, &want)
            .or_else(|| self.find(1, &want))
    }

    /// The first node at or after `start` whose free resources hold `demand`, without wrapping around.
    pub fn first_at_or_after(&self, start: usize, demand: &Resources) -> Option<usize> {
        if start >= self.len {
            return None;
        }
        // Leaves past `len` are empty, but an empty demand would take them.
        let want = key(demand);
        // From the leaf up: the place at `start` itself (where a search's hint points, and most often the
        // answer), then each subtree to the right of the way up, nearest first. A search costs the log of
        // how far it goes, not of the whole tree.
        let mut n = self.width + start;
        if holds(&self.max[n], &want) {
            return Some(start);
        }
        while n > 1 {
            if n.is_multiple_of(2)
                && let Some(i) = self.find(n + 1, &want)
            {
                return Some(i).filter(|&i| i < self.len);
            }
            n /= 2;
        }
        None
    }

    /// The first leaf at or after `start` under node `n`, which covers `width` leaves.
    fn find_at_or_after(&self, n: usize, width: usize, start: usize, want: &Key) -> Option<usize> {
        let first_leaf = n * width - self.width;
        if first_leaf + width <= start || !holds(&self.max[n], want) {
            return None;
        }
        if first_leaf >= start {
            return self.find(n, want);
        }
        let half = width / 2;
        self.find_at_or_after(2 * n, half, start, want)
            .or_else(|| self.find_at_or_after(2 * n + 1, half, start, want))
    }

    fn find(&self, n: usize, want: &Key) -> Option<usize> {
        if !holds(&self.max[n], want) {
            return None;
        }
        if n >= self.width {
            return Some(n - self.width);
        }
        self.find(2 * n, want)
            .or_else(|| self.find(2 * n + 1, want))
    }
}

fn merge(a: &Key, b: &Key) -> Key {
    std::array::from_fn(|i| a[i].max(b[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free(cpu: u64, mem: u64) -> Resources {
        Resources {
            cpu_millis: cpu,
            memory_bytes: mem,
            pods: 10,
            ..Default::default()
        }
    }

    #[test]
    fn finds_what_a_scan_finds() {
        let mut tree = FreeTree::default();
        let nodes = [
            free(100, 900),
            free(900, 100),
            free(500, 500),
            free(1000, 1000),
        ];
        for n in &nodes {
            tree.push(n);
        }
        // Each resource's maximum is in a different node: the search must not stop at the subtree max.
        assert_eq!(tree.first(&free(600, 600)), Some(3));
        assert_eq!(tree.first(&free(400, 400)), Some(2));
        assert_eq!(tree.first(&free(50, 50)), Some(0));
        assert_eq!(tree.first(&free(2000, 1)), None);
        tree.set(3, &free(0, 0));
        assert_eq!(tree.first(&free(600, 600)), None);
        assert_eq!(FreeTree::default().first(&free(1, 1)), None);
        // Against a scan, over a few hundred nodes and demands; grown from nothing, sized for more than it
        // holds, and sized for fewer (grown past that).
        let nodes: Vec<Resources> = (0..300u64)
            .map(|i| free(i * 37 % 1000, i * 91 % 1000))
            .collect();
        for capacity in [0, 1000, 5] {
            let mut tree = FreeTree::with_capacity(capacity);
            for n in &nodes {
                tree.push(n);
            }
            agrees_with_a_scan(&tree, &nodes);
        }
        // Built in one pass.
        agrees_with_a_scan(&FreeTree::of(&nodes), &nodes);
        assert_eq!(FreeTree::of(&[]).first(&free(1, 1)), None);
    }

    #[test]
    fn least_room_finds_what_a_scan_finds() {
        let full = free(1000, 1000);
        let room = |f: &Resources| f.cpu_millis + f.memory_bytes;
        let nodes: Vec<Resources> = (0..300u64)
            .map(|i| free(i * 37 % 1000, i * 91 % 1000))
            .collect();
        // Grown from nothing and sized for more; then nodes filled, and the last ones taken out again.
        for capacity in [0, 1000] {
            let mut tree = FreeTree::with_rooms(capacity, &full);
            let mut nodes = nodes.clone();
            for n in &nodes {
                tree.push(n);
            }
            for round in 0..3 {
                for d in 0..100u64 {
                    let want = free(d * 13 % 1000, d * 29 % 1000);
                    // Every third node refused, as a zone would refuse it.
                    let takes = |i: usize| i % 3 != d as usize % 3;
                    let scan = (0..nodes.len())
                        .filter(|&i| nodes[i].fits(&want) && takes(i))
                        .min_by_key(|&i| room(&nodes[i]));
                    assert_eq!(
                        tree.least_room(&want, takes),
                        scan,
                        "round {round}, {want:?}"
                    );
                }
                for (i, n) in nodes.iter_mut().enumerate().step_by(5 + round) {
                    *n = free(n.cpu_millis / 2, n.memory_bytes * 3 / 4);
                    tree.set(i, n);
                }
                for _ in 0..40 {
                    nodes.pop();
                    tree.pop();
                }
            }
        }
        // Ties go to the first node.
        let mut tree = FreeTree::with_rooms(4, &full);
        for n in [
            free(100, 900),
            free(500, 500),
            free(900, 100),
            free(500, 500),
        ] {
            tree.push(&n);
        }
        assert_eq!(tree.least_room(&free(100, 100), |_| true), Some(0));
        assert_eq!(tree.least_room(&free(200, 100), |_| true), Some(1));
        assert_eq!(tree.least_room(&free(200, 100), |i| i != 1), Some(2));
        assert_eq!(tree.least_room(&free(600, 600), |_| true), None);
    }

    #[test]
    fn finds_what_a_scan_finds_after_changes() {
        // Nodes filled and emptied one at a time, as removal simulations do: an update that stops where a
        // parent keeps its value must leave every search as a scan finds.
        let mut nodes: Vec<Resources> = (0..200u64)
            .map(|i| free(i * 37 % 1000, i * 91 % 1000))
            .collect();
        let mut tree = FreeTree::with_capacity(nodes.len());
        for n in &nodes {
            tree.push(n);
        }
        for step in 0..400u64 {
            let i = (step * 53 % 200) as usize;
            nodes[i] = free(step * 71 % 1000, step * 17 % 1000);
            tree.set(i, &nodes[i]);
            if step % 40 == 0 {
                agrees_with_a_scan(&tree, &nodes);
            }
        }
        agrees_with_a_scan(&tree, &nodes);
    }

    fn agrees_with_a_scan(tree: &FreeTree, nodes: &[Resources]) {
        for d in 0..100u64 {
            let want = free(d * 13 % 1000, d * 29 % 1000);
            let scan = nodes.iter().position(|n| n.fits(&want));
            assert_eq!(tree.first(&want), scan, "{want:?}");
            // And the rotating search from every 7th node, against a scan that wraps.
            for start in (0..nodes.len()).step_by(7) {
                let wrapped = (start..nodes.len())
                    .chain(0..start)
                    .find(|&i| nodes[i].fits(&want));
                assert_eq!(
                    tree.first_from(start, &want),
                    wrapped,
                    "{want:?} from {start}"
                );
                let after = (start..nodes.len()).find(|&i| nodes[i].fits(&want));
                assert_eq!(
                    tree.first_at_or_after(start, &want),
                    after,
                    "{want:?} at or after {start}"
                );
            }
        }
    }
}

//! A round's estimates on every core: each thread takes the next job until none is left (node groups differ a
//! lot in cost), and the results come back in the order of the jobs.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Below this many pods in all, one thread: threads cost tens of microseconds to start.
const MIN_PODS: usize = 2000;

/// `run` over every job, on as many threads as there are cores and jobs when `pods` (the jobs' pods in all)
/// make it worth it.
pub fn each<J: Sync, R: Send>(jobs: &[J], pods: usize, run: impl Fn(&J) -> R + Sync) -> Vec<R> {
    static CORES: OnceLock<usize> = OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let threads = if pods < MIN_PODS {
        1
    } else {
        cores.min(jobs.len())
    };
    if threads <= 1 {
        return jobs.iter().map(run).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break mine };
                        mine.push((i, run(job)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("an estimate does not panic"))
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

//! The estimator's tests: hand-computed mixes for each search, and properties over random ones.

mod completeness; // whatever is left unplaced fits nowhere in the plan; what is placed, the predicates allow
mod exact; // the exhaustive search after the repair: what it places, when it does not run
mod helpers; // nodes, pods and terms made plainly; estimates run a few ways
mod improvement; // the improvement phase: no node more, no pod fewer, no filter broken; a node taken off
mod oracle; // held to an exhaustive search over small mixes, with the scheduler's rules written plainly
mod oracle_cases; // named mixes held to that search: earlier bugs', the repair's, the exact search's
mod properties; // no predicate broken, no node without a pod
mod searches; // hand-computed mixes for each search

//! Named mixes held to the exhaustive search of `oracle.rs`: the smallest on which an earlier fix of the
//! estimator taken out made it fail, and those the repair of pods their pod affinity left out places.

use super::oracle::{Constraint, Group, Mix, Optimum, check};

fn plain_group(count: u64, label: usize, constraint: Constraint, pin: Option<usize>) -> Group {
    Group {
        cpu: 100,
        mem_mi: 128,
        count,
        label,
        constraint,
        tolerates: false,
        host_port: false,
        pin,
    }
}

/// The smallest mixes on which this test failed with an earlier fix of the estimator taken out, kept so
/// that it fails on them whatever the random mixes.
#[test]
fn the_mixes_that_caught_earlier_bugs() {
    let one = |groups: Vec<Group>, shape, zones| Mix {
        shape,
        zones,
        tainted: false,
        groups,
        beside: vec![],
    };
    let cases = [
        // A pod wanting a partner in its zone, packed before the partners that then filled the node: a
        // new node in that zone holds it ("pods wanting a partner placed after them get new nodes").
        one(
            vec![
                plain_group(1, 2, Constraint::None, None),
                plain_group(1, 1, Constraint::None, None),
                Group {
                    mem_mi: 238,
                    ..plain_group(
                        1,
                        0,
                        Constraint::Affinity {
                            value: 1,
                            zone: true,
                        },
                        None,
                    )
                },
            ],
            (1722, 4, 2),
            1,
        ),
        // Pods pinned to zone a beside pods that spread the group's nodes over three zones: none may go on
        // a planned node of another zone ("pods pinned to a zone kept off other zones' planned nodes").
        one(
            vec![
                plain_group(3, 0, Constraint::None, Some(0)),
                Group {
                    mem_mi: 129,
                    ..plain_group(2, 0, Constraint::AntiAffinity { zone: false }, None)
                },
            ],
            (1000, 11, 2),
            3,
        ),
    ];
    for mix in &cases {
        let (ours, best) = check(mix).unwrap_or_else(|e| panic!("{e}: {mix:?}"));
        assert_eq!(ours, best, "{mix:?}");
    }
}

/// The exhaustive search's optimum on `mix` is `expected`, and the estimate reaches it.
fn reaches(mix: &Mix, expected: Optimum) {
    let (ours, best) = check(mix).unwrap_or_else(|e| panic!("{e}: {mix:?}"));
    assert_eq!(best, expected);
    assert_eq!(ours, best);
}

/// A mix of plain-sized pods in one group's `zones` zones of 2000m nodes (no other limit binds).
fn small_mix(groups: Vec<Group>, zones: usize) -> Mix {
    Mix {
        shape: (2000, 8, 8),
        zones,
        tainted: false,
        groups,
        beside: vec![],
    }
}

/// The smallest mix the searches left a pod out of: a plain pod, bigger so packed first, goes to zone a
/// (the group's first zone, no node yet), then a pod pinned to zone b that wants it on its node finds no
/// partner there. The repair moves the plain pod to a new node in zone b and puts the pinned one with it.
#[test]
fn a_partner_moved_to_the_zone_of_a_pinned_pod() {
    let mix = small_mix(
        vec![
            Group {
                cpu: 1000,
                ..plain_group(1, 1, Constraint::None, None)
            },
            plain_group(
                1,
                0,
                Constraint::Affinity {
                    value: 1,
                    zone: false,
                },
                Some(1),
            ),
        ],
        2,
    );
    reaches(&mix, Optimum { pods: 2, nodes: 1 });
}

/// A pod that wants its own kind on its node may go anywhere while none of its kind is placed: packed after
/// a bigger pod of its label, it must join that one, which leaves it no room. Packed first, it goes alone.
#[test]
fn a_pod_wanting_its_own_kind_packed_before_a_partner_too_big_to_join() {
    let mix = small_mix(
        vec![
            Group {
                cpu: 1500,
                ..plain_group(1, 1, Constraint::None, None)
            },
            Group {
                cpu: 1000,
                ..plain_group(
                    1,
                    1,
                    Constraint::Affinity {
                        value: 1,
                        zone: false,
                    },
                    None,
                )
            },
        ],
        1,
    );
    reaches(&mix, Optimum { pods: 2, nodes: 2 });
}

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

/// A group of `count` pods of `cpu` and `mem_mi`, tolerating the taint, without a host port.
fn sized(
    (cpu, mem_mi, count): (u64, u64, u64),
    label: usize,
    constraint: Constraint,
    pin: Option<usize>,
) -> Group {
    Group {
        cpu,
        mem_mi,
        tolerates: true,
        ..plain_group(count, label, constraint, pin)
    }
}

/// Three pods under without the exhaustive search (`estimator/exact.rs`): four pods pinned to zone b,
/// labelled b, wanting label b in their zone, and three smaller ones labelled b wanting label b on their
/// node, never sharing a node with the four. The searches put the four first, and the three then find no
/// node of theirs; packed first by the repair, the three go to zone a, where the four may not follow. The
/// optimum puts the three alone on a node of zone b, then the four.
#[test]
fn partners_packed_first_alone_in_the_zone_of_pinned_pods() {
    let wants_b = |zone| Constraint::Affinity { value: 1, zone };
    let mix = Mix {
        shape: (2352, 8, 3),
        zones: 2,
        tainted: false,
        groups: vec![
            sized((1569, 128, 4), 1, wants_b(true), Some(1)),
            sized((784, 128, 3), 1, wants_b(false), None),
        ],
        beside: vec![],
    };
    reaches(&mix, Optimum { pods: 7, nodes: 5 });
}

/// Two pods under without the exhaustive search: a chain of zonal affinity, pods pinned to zone b wanting
/// label b in their zone, the label-b pod wanting label c in its zone, the label-c pod plain. Both partners
/// must move to zone b at once; the repair moves one at a time.
#[test]
fn a_chain_of_zonal_partners_moved_at_once() {
    let mix = Mix {
        shape: (2625, 8, 4),
        zones: 3,
        tainted: false,
        groups: vec![
            sized((1195, 5377, 1), 2, Constraint::None, None),
            sized(
                (1060, 1369, 2),
                0,
                Constraint::Spread {
                    zone: false,
                    max_skew: 1,
                },
                None,
            ),
            sized(
                (494, 4911, 2),
                0,
                Constraint::Affinity {
                    value: 1,
                    zone: true,
                },
                Some(1),
            ),
            sized(
                (708, 5220, 1),
                1,
                Constraint::Affinity {
                    value: 2,
                    zone: true,
                },
                None,
            ),
        ],
        beside: vec![(0, 1)],
    };
    reaches(&mix, Optimum { pods: 6, nodes: 4 });
}

/// One pod under without the exhaustive search, no spread: big pods pinned to zone a with a host port
/// wanting label c in their zone, pods labelled c wanting their own kind on their node, and small plain
/// pods labelled c.
#[test]
fn pinned_pods_with_a_host_port_and_partners_that_want_their_own_kind() {
    let host_port = Group {
        host_port: true,
        ..sized(
            (2275, 4060, 4),
            0,
            Constraint::Affinity {
                value: 2,
                zone: true,
            },
            Some(0),
        )
    };
    let mix = Mix {
        shape: (3666, 8, 2),
        zones: 2,
        tainted: false,
        groups: vec![
            host_port,
            sized(
                (2162, 880, 4),
                2,
                Constraint::Affinity {
                    value: 2,
                    zone: false,
                },
                None,
            ),
            sized((453, 5251, 2), 2, Constraint::None, None),
        ],
        beside: vec![(0, 0)],
    };
    reaches(&mix, Optimum { pods: 9, nodes: 7 });
}

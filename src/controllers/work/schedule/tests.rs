use std::collections::BTreeMap;

use crate::api::work::WorkloadGroupSelector;
use crate::controllers::work::schedule::*;

const ROOT_ID: &str = "5058f1af8388633f609cadb75a75dc9d";

fn dest(name: &str, pairs: &[(&str, &str)]) -> DestinationInfo {
    DestinationInfo {
        name: name.into(),
        labels: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        strict_match_labels: false,
        deleting: false,
        refused: false,
    }
}

fn deleting(mut d: DestinationInfo) -> DestinationInfo {
    d.deleting = true;
    d
}

fn refused(mut d: DestinationInfo) -> DestinationInfo {
    d.refused = true;
    d
}

fn group(id: &str, selectors: &[(&str, &str)]) -> WorkloadGroup {
    let match_labels: BTreeMap<String, String> = selectors
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    WorkloadGroup {
        id: id.into(),
        directory: ".".into(),
        workloads: vec![],
        destination_selectors: if match_labels.is_empty() {
            vec![]
        } else {
            vec![WorkloadGroupSelector {
                match_labels,
                source: "promise".into(),
            }]
        },
    }
}

fn placed(name: &str, group_id: &str, destination: &str) -> ExistingPlacement {
    ExistingPlacement {
        name: name.into(),
        group_id: group_id.into(),
        destination: destination.into(),
    }
}

fn decision(targets: &[&str], misplaced: &[&str]) -> GroupDecision {
    GroupDecision {
        group_id: ROOT_ID.into(),
        targets: targets
            .iter()
            .map(std::string::ToString::to_string)
            .collect(),
        misplaced: misplaced
            .iter()
            .map(std::string::ToString::to_string)
            .collect(),
        unscheduled: targets.is_empty(),
    }
}

/// The destination rendezvous hashing picks among `names` for the root group of work `w`.
fn chosen(names: &[&str]) -> String {
    let destinations: Vec<DestinationInfo> = names.iter().map(|n| dest(n, &[])).collect();
    let candidates: Vec<&DestinationInfo> = destinations.iter().collect();
    choose_one("w", ROOT_ID, &candidates)
        .map(|d| d.name.clone())
        .unwrap_or_default()
}

#[test]
fn groups_are_scheduled_by_kratix_rules() {
    let dev1 = dest("dev-1", &[("env", "dev")]);
    let dev2 = dest("dev-2", &[("env", "dev")]);
    let prod = dest("prod", &[("env", "prod")]);
    let winner = chosen(&["dev-1", "dev-2"]);
    let loser = if winner == "dev-1" { "dev-2" } else { "dev-1" };

    struct Case<'a> {
        name: &'a str,
        kind: WorkKind,
        selectors: &'a [(&'a str, &'a str)],
        destinations: Vec<DestinationInfo>,
        existing: Vec<ExistingPlacement>,
        expected: GroupDecision,
    }
    let cases = vec![
        Case {
            name: "dependency goes to every matching destination",
            kind: WorkKind::Dependency,
            selectors: &[("env", "dev")],
            destinations: vec![prod.clone(), dev2.clone(), dev1.clone()],
            existing: vec![],
            expected: decision(&["dev-1", "dev-2"], &[]),
        },
        Case {
            name: "dependency without selectors goes everywhere",
            kind: WorkKind::Dependency,
            selectors: &[],
            destinations: vec![prod.clone(), dev1.clone()],
            existing: vec![],
            expected: decision(&["dev-1", "prod"], &[]),
        },
        Case {
            name: "dependency placement on a no longer matching destination is kept, updated and flagged",
            kind: WorkKind::Dependency,
            selectors: &[("env", "dev")],
            destinations: vec![dev1.clone(), prod.clone()],
            existing: vec![placed("w.prod-5058f", ROOT_ID, "prod")],
            expected: decision(&["dev-1", "prod"], &["w.prod-5058f"]),
        },
        Case {
            name: "dependency with only misplaced placements is not unscheduled",
            kind: WorkKind::Dependency,
            selectors: &[("env", "test")],
            destinations: vec![dev1.clone()],
            existing: vec![placed("w.dev-1-5058f", ROOT_ID, "dev-1")],
            expected: decision(&["dev-1"], &["w.dev-1-5058f"]),
        },
        Case {
            name: "dependency placement on a deleting destination is misplaced",
            kind: WorkKind::Dependency,
            selectors: &[("env", "dev")],
            destinations: vec![deleting(dev1.clone()), dev2.clone()],
            existing: vec![placed("w.dev-1-5058f", ROOT_ID, "dev-1")],
            expected: decision(&["dev-1", "dev-2"], &["w.dev-1-5058f"]),
        },
        Case {
            name: "dependency with nothing matching and nothing placed is unscheduled",
            kind: WorkKind::Dependency,
            selectors: &[("env", "test")],
            destinations: vec![dev1.clone(), prod.clone()],
            existing: vec![],
            expected: decision(&[], &[]),
        },
        Case {
            name: "resource goes to exactly one matching destination, chosen by hash",
            kind: WorkKind::Resource,
            selectors: &[("env", "dev")],
            destinations: vec![prod.clone(), dev1.clone(), dev2.clone()],
            existing: vec![],
            expected: decision(&[winner.as_str()], &[]),
        },
        Case {
            name: "resource is sticky even where the hash would choose elsewhere",
            kind: WorkKind::Resource,
            selectors: &[("env", "dev")],
            destinations: vec![dev1.clone(), dev2.clone()],
            existing: vec![placed("w.loser-5058f", ROOT_ID, loser)],
            expected: decision(&[loser], &[]),
        },
        Case {
            name: "sticky resource on a no longer matching destination stays, flagged",
            kind: WorkKind::Resource,
            selectors: &[("env", "dev")],
            destinations: vec![dev1.clone(), prod.clone()],
            existing: vec![placed("w.prod-5058f", ROOT_ID, "prod")],
            expected: decision(&["prod"], &["w.prod-5058f"]),
        },
        Case {
            name: "sticky resource whose destination is gone stays, flagged",
            kind: WorkKind::Resource,
            selectors: &[],
            destinations: vec![dev1.clone()],
            existing: vec![placed("w.old-5058f", ROOT_ID, "old")],
            expected: decision(&["old"], &["w.old-5058f"]),
        },
        Case {
            name: "resource with nothing matching is unscheduled",
            kind: WorkKind::Resource,
            selectors: &[("env", "test")],
            destinations: vec![dev1.clone()],
            existing: vec![],
            expected: decision(&[], &[]),
        },
        Case {
            name: "resource never lands on a deleting destination",
            kind: WorkKind::Resource,
            selectors: &[("env", "dev")],
            destinations: vec![deleting(dev1.clone()), deleting(dev2.clone()), prod.clone()],
            existing: vec![],
            expected: decision(&[], &[]),
        },
        Case {
            name: "resource never lands on a refused destination (no path, or another's)",
            kind: WorkKind::Resource,
            selectors: &[("env", "dev")],
            destinations: vec![refused(dev1.clone()), refused(dev2.clone()), prod.clone()],
            existing: vec![],
            expected: decision(&[], &[]),
        },
        Case {
            name: "dependency goes to every matching destination but a refused one",
            kind: WorkKind::Dependency,
            selectors: &[("env", "dev")],
            destinations: vec![refused(dev1.clone()), dev2.clone()],
            existing: vec![],
            expected: decision(&["dev-2"], &[]),
        },
    ];
    for case in cases {
        let groups = vec![group(ROOT_ID, case.selectors)];
        let got = schedule("w", case.kind, &groups, &case.destinations, &case.existing);
        assert_eq!(got.groups, vec![case.expected], "{}", case.name);
        assert!(got.delete.is_empty(), "{}", case.name);
    }
}

#[test]
fn placements_of_groups_gone_from_the_work_are_deleted() {
    let destinations = vec![dest("d1", &[]), dest("d2", &[])];
    let existing = vec![
        placed("w.d1-5058f", ROOT_ID, "d1"),
        placed("w.d2-ba6cb", "ba6cb0f1", "d2"),
        placed("w.d1-76355", "763551ab", "d1"),
    ];
    let cases: Vec<(&str, Vec<WorkloadGroup>, Vec<&str>)> = vec![
        (
            "all groups kept",
            vec![
                group(ROOT_ID, &[]),
                group("ba6cb0f1", &[]),
                group("763551ab", &[]),
            ],
            vec![],
        ),
        (
            "one group dropped",
            vec![group(ROOT_ID, &[]), group("763551ab", &[])],
            vec!["w.d2-ba6cb"],
        ),
        (
            "no groups left",
            vec![],
            vec!["w.d1-5058f", "w.d1-76355", "w.d2-ba6cb"],
        ),
    ];
    for (name, groups, expected) in cases {
        for kind in [WorkKind::Dependency, WorkKind::Resource] {
            let got = schedule("w", kind, &groups, &destinations, &existing);
            assert_eq!(got.delete, expected, "{name} ({kind:?})");
            assert_eq!(got.groups.len(), groups.len(), "{name} ({kind:?})");
        }
    }
}

#[test]
fn schedule_reports_unscheduled_and_misplaced_groups() {
    let destinations = vec![dest("dev", &[("env", "dev")])];
    let groups = vec![
        group(ROOT_ID, &[("env", "dev")]),
        group("abc", &[("env", "prod")]),
    ];
    let got = schedule("w", WorkKind::Resource, &groups, &destinations, &[]);
    assert_eq!(got.unscheduled_group_ids(), vec!["abc"]);
    assert!(!got.has_misplaced());

    let existing = vec![placed("w.dev-abc", "abc", "dev")];
    let got = schedule("w", WorkKind::Resource, &groups, &destinations, &existing);
    assert!(got.unscheduled_group_ids().is_empty());
    assert!(got.has_misplaced());
}

/// The single destination a resource group of work `w` gets, over `names`.
fn resource_choice(group_id: &str, names: &[&str]) -> String {
    let destinations: Vec<DestinationInfo> = names.iter().map(|n| dest(n, &[])).collect();
    let got = schedule(
        "w",
        WorkKind::Resource,
        &[group(group_id, &[])],
        &destinations,
        &[],
    );
    assert_eq!(got.groups[0].targets.len(), 1);
    got.groups[0].targets[0].clone()
}

#[test]
fn resource_choice_is_stable_when_destinations_come_and_go() {
    let group_ids: Vec<String> = (0..200).map(|i| format!("group-{i}")).collect();
    let before: Vec<String> = group_ids
        .iter()
        .map(|g| resource_choice(g, &["a", "b", "c", "d"]))
        .collect();

    // Spread: every destination wins some groups.
    for name in ["a", "b", "c", "d"] {
        assert!(before.iter().any(|c| c == name), "{name} never chosen");
    }
    // Input order doesn't matter.
    for (g, was) in group_ids.iter().zip(&before) {
        assert_eq!(&resource_choice(g, &["d", "c", "b", "a"]), was);
    }
    // Removing `b` moves only the groups that were on `b`.
    for (g, was) in group_ids.iter().zip(&before) {
        let now = resource_choice(g, &["a", "c", "d"]);
        if was != "b" {
            assert_eq!(&now, was, "{g} moved although its destination stayed");
        }
    }
    // Adding `e` moves groups only onto `e`.
    let mut moved = 0;
    for (g, was) in group_ids.iter().zip(&before) {
        let now = resource_choice(g, &["a", "b", "c", "d", "e"]);
        if &now != was {
            assert_eq!(now, "e", "{g} moved to an old destination");
            moved += 1;
        }
    }
    assert!(moved > 0, "a new destination should win some groups");
}

#[test]
fn placement_names_follow_kratix() {
    let cases = [
        (
            "redis-example-instance-abcde",
            "worker-1",
            ROOT_ID,
            "redis-example-instance-abcde.worker-1-5058f",
        ),
        ("w", "d", "ba6cb0f1", "w.d-ba6cb"),
        ("w", "d", "abc", "w.d-abc"),
        ("w", "d", "", "w.d-"),
    ];
    for (work, destination, id, expected) in cases {
        assert_eq!(placement_name(work, destination, id), expected);
    }
}

//! Which Destinations a workload group may go to (Kratix scheduler.go:521-599).

use std::collections::BTreeMap;

use kube::core::{Selector, SelectorExt};

use crate::api::work::{WorkloadGroup, WorkloadGroupSelector};

use crate::controllers::work::schedule::DestinationInfo;

/// The group's selectors squashed into one map. Sources are applied from lowest to highest
/// priority, `resource-workflow` < `promise-workflow` < `promise`, so on a key both set the
/// Promise's own label wins. Within one source, later entries overwrite earlier ones; an unknown
/// source ranks with `resource-workflow` (Kratix's comparator treats it the same way).
pub(crate) fn merged_selectors(group: &WorkloadGroup) -> BTreeMap<String, String> {
    let mut by_priority: Vec<&WorkloadGroupSelector> = group.destination_selectors.iter().collect();
    // Stable, so entries of one source keep their order.
    by_priority.sort_by_key(|selector| source_priority(&selector.source));
    let mut merged = BTreeMap::new();
    for selector in by_priority {
        for (key, value) in &selector.match_labels {
            merged.insert(key.clone(), value.clone());
        }
    }
    merged
}

fn source_priority(source: &str) -> u8 {
    match source {
        "promise" => 2,
        "promise-workflow" => 1,
        _ => 0,
    }
}

/// The Destinations whose labels contain every selector exactly, sorted by name (the order the
/// Kubernetes API lists them in). Deleting Destinations never match. With no selectors at all,
/// Destinations that ask for `strictMatchLabels` and carry labels are left out: they only take
/// work that explicitly selects them.
pub(crate) fn matching_destinations<'a>(
    selectors: &BTreeMap<String, String>,
    destinations: &'a [DestinationInfo],
) -> Vec<&'a DestinationInfo> {
    // Every selector is an equality requirement, as in a `matchLabels`.
    let selector: Selector = selectors.clone().into_iter().collect();
    let mut matching: Vec<&DestinationInfo> = destinations
        .iter()
        .filter(|destination| !destination.deleting && !destination.refused)
        .filter(|destination| {
            if selector.selects_all() {
                !destination.strict_match_labels || destination.labels.is_empty()
            } else {
                selector.matches(&destination.labels)
            }
        })
        .collect();
    matching.sort_by(|a, b| a.name.cmp(&b.name));
    matching
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn selector(source: &str, pairs: &[(&str, &str)]) -> WorkloadGroupSelector {
        WorkloadGroupSelector {
            match_labels: labels(pairs),
            source: source.to_string(),
        }
    }

    #[test]
    fn selectors_merge_with_promise_labels_winning() {
        let cases: Vec<(&str, Vec<WorkloadGroupSelector>, BTreeMap<String, String>)> = vec![
            ("no selectors", vec![], labels(&[])),
            (
                "promise beats promise-workflow beats resource-workflow, whatever the order",
                vec![
                    selector("promise", &[("env", "prod")]),
                    selector("promise-workflow", &[("env", "staging"), ("zone", "a")]),
                    selector(
                        "resource-workflow",
                        &[("env", "dev"), ("zone", "b"), ("team", "x")],
                    ),
                ],
                labels(&[("env", "prod"), ("zone", "a"), ("team", "x")]),
            ),
            (
                "resource-workflow listed last still loses",
                vec![
                    selector("promise-workflow", &[("env", "staging")]),
                    selector("resource-workflow", &[("env", "dev")]),
                ],
                labels(&[("env", "staging")]),
            ),
            (
                "same source: the later entry wins",
                vec![
                    selector("promise", &[("env", "a")]),
                    selector("promise", &[("env", "b")]),
                ],
                labels(&[("env", "b")]),
            ),
            (
                "unknown source ranks lowest",
                vec![
                    selector("promise-workflow", &[("env", "staging")]),
                    selector("", &[("env", "dev"), ("extra", "y")]),
                ],
                labels(&[("env", "staging"), ("extra", "y")]),
            ),
        ];
        for (name, selectors, expected) in cases {
            let group = WorkloadGroup {
                id: "id".into(),
                destination_selectors: selectors,
                ..Default::default()
            };
            assert_eq!(merged_selectors(&group), expected, "{name}");
        }
    }

    fn destination(
        name: &str,
        pairs: &[(&str, &str)],
        strict: bool,
        deleting: bool,
    ) -> DestinationInfo {
        DestinationInfo {
            name: name.into(),
            labels: labels(pairs),
            strict_match_labels: strict,
            deleting,
            refused: false,
        }
    }

    #[test]
    fn destinations_match_by_exact_label_subset() {
        let destinations = vec![
            destination("zeta", &[("env", "dev")], false, false),
            destination("alpha", &[("env", "dev"), ("zone", "a")], false, false),
            destination("strict", &[("env", "dev")], true, false),
            destination("strict-unlabelled", &[], true, false),
            destination("plain", &[], false, false),
            destination("going", &[("env", "dev")], false, true),
            destination("empty-value", &[("env", "")], false, false),
        ];
        let cases: Vec<(&str, BTreeMap<String, String>, Vec<&str>)> = vec![
            (
                "empty selectors skip strict labelled and deleting destinations; sorted by name",
                labels(&[]),
                vec!["alpha", "empty-value", "plain", "strict-unlabelled", "zeta"],
            ),
            (
                "a selector matches strict destinations too",
                labels(&[("env", "dev")]),
                vec!["alpha", "strict", "zeta"],
            ),
            (
                "every selector must match",
                labels(&[("env", "dev"), ("zone", "a")]),
                vec!["alpha"],
            ),
            ("values compare exactly", labels(&[("env", "DEV")]), vec![]),
            (
                "an empty value needs the label present and empty",
                labels(&[("env", "")]),
                vec!["empty-value"],
            ),
            (
                "a missing key never matches",
                labels(&[("region", "eu")]),
                vec![],
            ),
        ];
        for (name, selectors, expected) in cases {
            let names: Vec<&str> = matching_destinations(&selectors, &destinations)
                .iter()
                .map(|d| d.name.as_str())
                .collect();
            assert_eq!(names, expected, "{name}");
        }
    }
}

use super::*;

fn entry(kind: &str, name: &str) -> Entry {
    Entry {
        api_version: "example.com/v1".into(),
        kind: kind.into(),
        namespace: Some("default".into()),
        name: name.into(),
    }
}

fn seen(name: &str, served: Served, live: Live) -> Seen {
    Seen {
        document: format!("p/resources/{name}.yaml document 1"),
        entry: entry("Child", name),
        served,
        live,
    }
}

fn observed(documents: Vec<Seen>, inventory: Vec<Entry>) -> Observed {
    Observed {
        documents,
        unreadable: vec![],
        inventory,
        max_objects: 3,
        budget: crate::controllers::platform_sync::budget::Budget {
            changes: 2,
            window_ms: 60_000,
        },
        churn: vec![],
        now_ms: 1_000_000,
    }
}

#[test]
fn each_document_gets_its_verdict() {
    let waiting = || Served::Waiting("Promise child is not Available".into());
    let cases: Vec<(&str, Vec<Seen>, Vec<&str>)> = vec![
        (
            "absent and ours apply",
            vec![
                seen("a", Served::Yes, Live::Absent),
                seen("b", Served::Yes, Live::Ours),
            ],
            vec!["apply", "apply"],
        ),
        (
            "a kind not served yet waits without holding back the next",
            vec![
                seen("a", waiting(), Live::Absent),
                seen("b", Served::Yes, Live::Absent),
            ],
            vec!["wait", "apply"],
        ),
        (
            "someone else's object is a conflict",
            vec![
                seen("a", Served::Yes, Live::Foreign(None)),
                seen("b", Served::Yes, Live::Foreign(Some("other".into()))),
            ],
            vec!["Conflict", "Conflict"],
        ),
        (
            "a kind that needs a cluster is reported",
            vec![seen("a", Served::NotHere, Live::Absent)],
            vec!["NotServedHere"],
        ),
        (
            "the second document of one object is refused",
            vec![
                seen("a", Served::Yes, Live::Absent),
                seen("a", Served::Yes, Live::Absent),
            ],
            vec!["apply", "Duplicate"],
        ),
        (
            "no more than max_objects are applied",
            vec![
                seen("a", Served::Yes, Live::Absent),
                seen("b", Served::Yes, Live::Absent),
                seen("c", waiting(), Live::Absent),
                seen("d", Served::Yes, Live::Absent),
                seen("e", Served::Yes, Live::Absent),
            ],
            vec!["apply", "apply", "wait", "apply", "TooManyObjects"],
        ),
    ];
    for (name, documents, want) in cases {
        let got: Vec<String> = plan(&observed(documents, vec![]))
            .verdicts
            .into_iter()
            .map(|v| match v {
                Verdict::Apply => "apply".to_string(),
                Verdict::Wait(_) => "wait".to_string(),
                Verdict::Refuse(r, _) => r.as_str().to_string(),
            })
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn what_left_the_store_is_pruned_unless_a_file_does_not_parse() {
    let inventory = vec![entry("Child", "a"), entry("Child", "gone")];
    let documents = vec![seen("a", Served::Yes, Live::Ours)];
    let p = plan(&observed(documents.clone(), inventory.clone()));
    assert_eq!(p.prune, vec![entry("Child", "gone")]);
    assert_eq!(p.prune_held, None);

    // A waiting document keeps its object: it is still in the store.
    let waiting = vec![
        seen("a", Served::Yes, Live::Ours),
        seen("gone", Served::Waiting("x".into()), Live::Ours),
    ];
    assert!(plan(&observed(waiting, inventory.clone())).prune.is_empty());

    let mut broken = observed(documents, inventory);
    broken.unreadable.push(Unreadable {
        file: "p/resources/bad.yaml".into(),
        reason: "p/resources/bad.yaml document 1: invalid YAML".into(),
    });
    let p = plan(&broken);
    assert!(p.prune.is_empty());
    assert!(p
        .prune_held
        .is_some_and(|why| why.contains("p/resources/bad.yaml")));
}

#[test]
fn the_condition_names_the_first_document_not_in_place() {
    let counts = Counts {
        applied: 2,
        pruned: 1,
        waiting: 1,
        failed: 1,
    };
    let docs = vec![
        ("f/a.yaml document 1".to_string(), Outcome::Applied),
        (
            "f/b.yaml document 1".to_string(),
            Outcome::Waiting("no Promise defines kind Child yet".into()),
        ),
        (
            "f/c.yaml document 2".to_string(),
            Outcome::Failed(Refusal::Invalid, "spec.size: must be a number".into()),
        ),
    ];
    let cases = [
        (
            docs.clone(),
            vec![],
            "False",
            "Invalid",
            "revision 0123456789ab: f/c.yaml document 2: spec.size: must be a number (2 applied, 1 pruned, 1 waiting, 1 failed)",
        ),
        (
            docs[..2].to_vec(),
            vec![],
            "False",
            "KindNotServed",
            "revision 0123456789ab: f/b.yaml document 1: no Promise defines kind Child yet (2 applied, 1 pruned, 1 waiting, 1 failed)",
        ),
        (
            docs[..1].to_vec(),
            vec!["Child default/x: control plane".to_string()],
            "False",
            "PruneFailed",
            "revision 0123456789ab: Child default/x: control plane (2 applied, 1 pruned, 1 waiting, 1 failed)",
        ),
        (
            docs[..1].to_vec(),
            vec![],
            "True",
            "Applied",
            "revision 0123456789ab: every document applied (2 applied, 1 pruned, 1 waiting, 1 failed)",
        ),
    ];
    for (documents, prune_failures, status, reason, message) in cases {
        let c = condition("0123456789abcdef", &documents, &[], &prune_failures, counts);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (status, reason, message)
        );
    }
    let unreadable = [Unreadable {
        file: "f/bad.yaml".into(),
        reason: "f/bad.yaml document 1: invalid YAML: x".into(),
    }];
    let c = condition("abc", &docs, &unreadable, &[], counts);
    assert_eq!(c.reason, "Unparseable");
    assert!(c
        .message
        .starts_with("revision abc: f/bad.yaml document 1: invalid YAML"));
    // A bucket store's revision is any text: it is cut between characters, never inside one.
    let c = condition("ééééééééééééé-etag", &docs[..1], &[], &[], counts);
    assert!(
        c.message.starts_with("revision éééééééééééé: "),
        "{}",
        c.message
    );
}

#[test]
fn kubernetes_groups_need_a_cluster() {
    for (group, want) in [
        ("", true),
        ("apps", true),
        ("networking.k8s.io", true),
        ("batch", true),
        ("marketplace.kratix.io", false),
        ("example.com", false),
    ] {
        assert_eq!(is_cluster_group(group), want, "{group:?}");
    }
}

#[test]
fn an_object_changed_too_often_is_held_and_named() {
    use crate::controllers::platform_sync::budget::Churn;
    let inventory = vec![entry("Child", "a"), entry("Child", "b")];
    let mut o = observed(
        vec![
            seen("a", Served::Yes, Live::Ours),
            seen("b", Served::Yes, Live::Ours),
        ],
        inventory,
    );
    o.churn = vec![
        Churn {
            entry: entry("Child", "a"),
            since_ms: 990_000,
            changes: 2,
        },
        Churn {
            entry: entry("Child", "b"),
            since_ms: 990_000,
            changes: 1,
        },
    ];
    let p = plan(&o);
    assert_eq!(
        p.verdicts,
        vec![
            Verdict::Refuse(
                Refusal::TooManyChanges,
                "Child default/a was changed 2 times within 60s (a loop between Promises?): \
                 its document is held until 1970-01-01T00:17:30Z"
                    .into()
            ),
            Verdict::Apply,
        ]
    );
    // A held document is still in the store: its object stays.
    assert!(p.prune.is_empty());
}

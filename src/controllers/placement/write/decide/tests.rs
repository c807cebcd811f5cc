use super::*;

fn member(name: &str, owned: &[&str], desired: &[&str]) -> Member {
    Member {
        name: name.into(),
        owned: owned.iter().map(std::string::ToString::to_string).collect(),
        desired: desired
            .iter()
            .map(|p| (p.to_string(), p.as_bytes().to_vec()))
            .collect(),
    }
}

fn put(path: &str) -> Change {
    Change::Put(
        Key::parse(path).expect("a key"),
        Bytes::from(path.as_bytes().to_vec()),
    )
}

fn delete(path: &str) -> Change {
    Change::Delete(Key::parse(path).expect("a key"))
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(std::string::ToString::to_string).collect()
}

#[test]
fn a_write_records_new_paths_first_and_deletes_only_what_it_owned() {
    type Want = Result<(Vec<Option<Vec<String>>>, Vec<Change>, bool), String>;
    type Aggregated = Option<(String, Option<Vec<u8>>)>;
    type Others = Vec<(String, Vec<String>)>;
    let cases: Vec<(&str, Vec<Member>, Aggregated, Others, Want)> = vec![
        (
            "a first write records its paths before putting them",
            vec![member("wp", &[], &["d/a.yaml"])],
            None,
            vec![],
            Ok((
                vec![Some(strings(&["d/a.yaml"]))],
                vec![put("d/a.yaml")],
                true,
            )),
        ),
        (
            "paths it owns already need no record",
            vec![member("wp", &["d/a.yaml"], &["d/a.yaml"])],
            None,
            vec![],
            Ok((vec![None], vec![put("d/a.yaml")], true)),
        ),
        (
            "a file it wants no more is deleted; a new one is recorded with the old",
            vec![member("wp", &["d/a.yaml"], &["d/b.yaml"])],
            None,
            vec![],
            Ok((
                vec![Some(strings(&["d/a.yaml", "d/b.yaml"]))],
                vec![put("d/b.yaml"), delete("d/a.yaml")],
                true,
            )),
        ),
        (
            "a placement being deleted only deletes",
            vec![member("wp", &["d/a.yaml"], &[])],
            None,
            vec![],
            Ok((vec![None], vec![delete("d/a.yaml")], false)),
        ),
        (
            "the aggregated file is put with the placements'",
            vec![member("wp", &[], &[])],
            Some(("d/all.yaml".into(), Some(b"d/all.yaml".to_vec()))),
            vec![],
            Ok((vec![None], vec![put("d/all.yaml")], true)),
        ),
        (
            "the aggregated file of no placement goes",
            vec![member("wp", &[], &[])],
            Some(("d/all.yaml".into(), None)),
            vec![],
            Ok((vec![None], vec![delete("d/all.yaml")], false)),
        ),
        (
            "two placements of the batch never claim one path",
            vec![
                member("a", &[], &["d/x.yaml"]),
                member("b", &[], &["d/x.yaml"]),
            ],
            None,
            vec![],
            Err("placements \"a\" and \"b\" both write \"d/x.yaml\" on one destination".into()),
        ),
        (
            "nor one of the batch and another on the Destination",
            vec![member("a", &[], &["d/x.yaml"])],
            None,
            vec![("c".into(), strings(&["d/x.yaml"]))],
            Err("placements \"a\" and \"c\" both write \"d/x.yaml\" on one destination".into()),
        ),
        (
            "the batch's own placements, listed again, are not others",
            vec![member("a", &["d/x.yaml"], &["d/x.yaml"])],
            None,
            vec![("a".into(), strings(&["d/x.yaml"]))],
            Ok((vec![None], vec![put("d/x.yaml")], true)),
        ),
        (
            "a path that makes no key is refused",
            vec![member("a", &[], &["../x.yaml"])],
            None,
            vec![],
            Err("x".into()),
        ),
    ];
    for (name, members, aggregated, others, want) in cases {
        let got = plan_write(&Observed {
            members: &members,
            aggregated,
            others: &others,
        })
        .map(|p| (p.pending, p.changes, p.puts))
        .map_err(|e| e.reason());
        match (&got, &want) {
            // A refused key names the path; its exact words are the store's.
            (Err(reason), Err(w)) if w == "x" => {
                assert!(reason.contains("../x.yaml"), "{name}: {reason}");
            }
            _ => assert_eq!(got, want, "{name}"),
        }
    }
}

#[test]
fn after_the_commit_a_placement_records_what_it_did_or_lets_go() {
    let written = Written {
        written: ["d/a.yaml".to_string()].into(),
        deleted: ["d/old.yaml".to_string()].into(),
        version: Some("557ce7f2cef3a1b2".into()),
    };
    let wp = member("wp", &[], &["d/a.yaml"]);
    assert_eq!(
        after_write(&wp, true, &strings(&["d/a.yaml"]), Some(2), false, &written),
        After::Release,
        "a placement being deleted lets go once its files are gone"
    );
    let After::Record(record) = after_write(
        &wp,
        false,
        &strings(&["d/old.yaml"]),
        Some(2),
        true,
        &written,
    ) else {
        panic!("a live placement records its write");
    };
    assert_eq!(record.files, strings(&["d/a.yaml"]));
    assert_eq!(record.last.added, strings(&["d/a.yaml"]));
    assert_eq!(record.last.deleted, strings(&["d/old.yaml"]));
    assert_eq!(
        record.event("dest").as_deref(),
        Some("written to Destination dest at 557ce7f2cef3: 1 added, 0 changed, 1 deleted")
    );
    let mut s = WorkPlacementStatus {
        pending_files: Some(strings(&["d/a.yaml", "d/old.yaml"])),
        ..WorkPlacementStatus::default()
    };
    record.apply(&mut s);
    assert_eq!(s.files, Some(strings(&["d/a.yaml"])));
    assert_eq!(s.pending_files, None);
    assert_eq!(s.version_id.as_deref(), Some("557ce7f2cef3a1b2"));
    assert_eq!(s.observed_generation, Some(2));
    assert!(s.extra.contains_key("lastWrite"));
    let ready = crate::api::condition::find(&s.conditions, "Ready").expect("Ready");
    assert_eq!(
        ready.reason,
        crate::api::reasons::DESTINATION_SELECTOR_MISMATCH
    );

    let unchanged = Written::default();
    let After::Record(quiet) = after_write(
        &wp,
        false,
        &strings(&["d/a.yaml"]),
        Some(3),
        false,
        &unchanged,
    ) else {
        panic!("a live placement records its write");
    };
    assert_eq!(quiet.event("dest"), None, "nothing changed: no event");
    let mut s = WorkPlacementStatus::default();
    quiet.apply(&mut s);
    assert!(!s.extra.contains_key("lastWrite"));
    assert_eq!(s.version_id, None);
}

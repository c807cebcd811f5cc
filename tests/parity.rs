//! Features Kratix acts on, through the binary: `label` and `annotate`, required Promises,
//! pausing.

mod support;

use support::{fixtures, Kratix};

/// The quickstart applied and settled: a Git store, a Destination, the webapp Promise and two
/// requests.
fn quickstart() -> Kratix {
    let k = Kratix::new();
    let quickstart = fixtures().join("quickstart");
    k.run(&["apply", "-f", quickstart.to_str().expect("utf-8 path")])
        .assert_ok();
    k
}

fn setup_runs(k: &Kratix) -> usize {
    k.list_json("pipelineruns", &["-A"]).len()
}

#[test]
fn label_and_annotate_change_metadata_only() {
    let k = quickstart();
    let runs = setup_runs(&k);
    let app = |k: &Kratix| k.get_json("webapp", "shop", None).expect("shop");
    let before = app(&k);
    let generation = before["metadata"]["generation"].clone();

    let out = k.run(&["label", "wa", "shop", "team=blue", "tier=web"]);
    out.assert_ok();
    assert_eq!(out.stdout.trim(), "webapp/shop labeled");
    let after = app(&k);
    assert_eq!(after["metadata"]["labels"]["team"], "blue");
    assert_eq!(after["metadata"]["labels"]["tier"], "web");
    assert_eq!(
        after["metadata"]["generation"], generation,
        "labels are not spec"
    );

    // Changing a value needs --overwrite, with kubectl's message; nothing is written.
    let refused = k.run(&["label", "webapp", "shop", "team=red"]);
    refused.assert_failed();
    assert!(
        refused
            .stderr
            .contains("'team' already has a value (blue), and --overwrite is false"),
        "{}",
        refused.stderr
    );
    assert_eq!(app(&k)["metadata"]["labels"]["team"], "blue");
    k.run(&["label", "webapp", "shop", "team=red", "--overwrite"])
        .assert_ok();
    assert_eq!(app(&k)["metadata"]["labels"]["team"], "red");

    let removed = k.run(&["label", "webapp", "shop", "team-", "tier-"]);
    removed.assert_ok();
    assert_eq!(removed.stdout.trim(), "webapp/shop unlabeled");
    let labels = app(&k)["metadata"]["labels"].clone();
    assert!(labels.get("team").is_none() && labels.get("tier").is_none());
    assert_eq!(
        labels["kratix.io/promise-name"], "webapp",
        "other labels stay"
    );
    let again = k.run(&["label", "webapp", "shop", "team-"]);
    again.assert_ok();
    assert_eq!(again.stdout.trim(), "webapp/shop not labeled");

    let out = k.run(&["annotate", "promise", "webapp", "owner=platform team: a/b"]);
    out.assert_ok();
    assert_eq!(out.stdout.trim(), "promise/webapp annotated");
    let promise = k.get_json("promise", "webapp", None).expect("promise");
    assert_eq!(
        promise["metadata"]["annotations"]["owner"],
        "platform team: a/b"
    );
    assert_eq!(promise["metadata"]["generation"], 1);
    let refused = k.run(&["annotate", "promise", "webapp", "owner=x"]);
    refused.assert_failed();
    assert!(
        refused.stderr.contains(
            "--overwrite is false but found the following declared annotation(s): 'owner' already has a value (platform team: a/b)"
        ),
        "{}",
        refused.stderr
    );
    k.run(&["annotate", "promise", "webapp", "owner-"])
        .assert_ok();
    let promise = k.get_json("promise", "webapp", None).expect("promise");
    assert!(promise["metadata"]["annotations"].get("owner").is_none());

    // Metadata changes run no workflow.
    k.run(&[
        "wait",
        "webapp",
        "shop",
        "--for",
        "condition=Reconciled",
        "--timeout",
        "60",
    ])
    .assert_ok();
    assert_eq!(setup_runs(&k), runs);
}

#[test]
fn label_refuses_bad_input_naming_it() {
    let k = quickstart();
    let cases: &[(&[&str], &str)] = &[
        (&["label", "webapp", "shop", "a=b c"], "invalid label value"),
        (
            &["label", "webapp", "shop", "Bad/x=1"],
            "invalid label spec",
        ),
        (
            &["label", "webapp", "shop", "novalue"],
            "unknown label spec",
        ),
        (
            &["label", "webapp", "shop", "a=1", "a-"],
            "can not both modify and remove",
        ),
        (&["label", "webapp", "missing", "a=1"], "not found"),
        (&["label", "nosuchkind", "x", "a=1"], "nosuchkind"),
        (
            &["annotate", "webapp", "shop", "_x=1"],
            "invalid annotation spec",
        ),
    ];
    for (args, want) in cases {
        let run = k.run(args);
        run.assert_failed();
        assert!(run.stderr.contains(want), "{args:?}: {}", run.stderr);
    }
    let todo = k.get_json("webapp", "shop", None).expect("shop");
    assert!(todo["metadata"]["labels"].get("a").is_none());
}

//! The core kinds the embedded home holds as data, beside Secrets: Namespaces and ConfigMaps
//! are applied, listed, refused when malformed and deleted like any object.

mod support;

use support::Kratix;

#[test]
fn configmaps_and_namespaces_are_applied_listed_and_deleted() {
    let k = Kratix::new();
    k.apply_yaml(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: team-a}\ndata: {colour: blue}\n",
        &[],
    )
    .assert_ok();
    let cm = k
        .get_json("cm", "settings", Some("team-a"))
        .expect("the ConfigMap");
    assert_eq!(cm["data"]["colour"], "blue");
    assert_eq!(k.list_json("namespaces", &[]).len(), 1);
    let refused = k.apply_yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: {n: 1}\n",
        &[],
    );
    refused.assert_failed();
    assert!(
        refused
            .stderr
            .contains("<stdin> document 1 (ConfigMap bad): data.n: must be a string"),
        "{}",
        refused.stderr
    );
    k.run(&["delete", "configmap", "settings", "-n", "team-a"])
        .assert_ok();
    assert!(k
        .get_json("configmap", "settings", Some("team-a"))
        .is_none());
}

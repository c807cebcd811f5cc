//! Hostile input is refused before anything is stored: YAML bombs, oversized documents, names that
//! are not Kubernetes names or look like paths, paths that climb out of their folder. Every
//! refusal exits non-zero and names the document and the field.

mod support;

use support::Kratix;

/// A valid first document: a refused batch must not store it either.
const INNOCENT: &str =
    "apiVersion: v1\nkind: Secret\nmetadata: {name: innocent}\nstringData: {a: b}\n---\n";

const SETUP: &str = "apiVersion: platform.kratix.io/v1alpha1
kind: GitStateStore
metadata: {name: default}
spec: {url: state.git}
---
apiVersion: platform.kratix.io/v1alpha1
kind: Promise
metadata: {name: app}
spec:
  api:
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: apps.example.kratix.io}
    spec:
      group: example.kratix.io
      names: {kind: App, plural: apps, singular: app}
      scope: Namespaced
      versions: [{name: v1alpha1, served: true, storage: true}]
";

fn promise_named(name: &str) -> String {
    format!("apiVersion: platform.kratix.io/v1alpha1\nkind: Promise\nmetadata: {{name: {name:?}}}\nspec: {{}}\n")
}

fn promise_with_pipeline(promise: &str, pipeline: &str, containers: &str) -> String {
    format!(
        "apiVersion: platform.kratix.io/v1alpha1
kind: Promise
metadata: {{name: {promise}}}
spec:
  workflows:
    resource:
      configure:
        - apiVersion: platform.kratix.io/v1alpha1
          kind: Pipeline
          metadata: {{name: {pipeline:?}}}
          spec:
            containers: {containers}
"
    )
}

fn destination(name: &str, path: &str, extra: &str) -> String {
    format!(
        "apiVersion: platform.kratix.io/v1alpha1\nkind: Destination\nmetadata: {{name: {name:?}}}\nspec:\n  path: {path:?}\n  stateStoreRef: {{kind: GitStateStore, name: default}}\n{extra}"
    )
}

fn app(name: &str, namespace: &str) -> String {
    format!("apiVersion: example.kratix.io/v1alpha1\nkind: App\nmetadata: {{name: {name:?}, namespace: {namespace:?}}}\nspec: {{}}\n")
}

/// What is stored, kind by kind, to compare before and after a refused apply.
fn inventory(k: &Kratix) -> Vec<(String, usize)> {
    [
        "secrets",
        "promises",
        "destinations",
        "gitstatestores",
        "bucketstatestores",
        "apps",
    ]
    .into_iter()
    .map(|kind| (kind.to_string(), k.list_json(kind, &["-A"]).len()))
    .collect()
}

fn nested_flow(levels: usize) -> String {
    format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
}

fn billion_laughs() -> String {
    let mut text = String::from(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: lol}\nx0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for i in 1..=9 {
        let refs = vec![format!("*x{}", i - 1); 9].join(", ");
        text.push_str(&format!("x{i}: &x{i} [{refs}]\n"));
    }
    text
}

/// 40 KiB of YAML that expands to a hundred million values: serde_yaml's limit on aliases
/// followed does not catch it.
fn wide_anchor() -> String {
    let wide: Vec<String> = (0..10_000).map(|i| format!("v{i}")).collect();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: wide}}\nw: &w [{}]\nmany: [{}]\n",
        wide.join(", "),
        vec!["*w"; 10_000].join(", ")
    )
}

#[test]
fn hostile_documents_are_refused_and_nothing_is_stored() {
    let k = Kratix::new();
    k.apply_yaml(SETUP, &["--no-wait"]).assert_ok();
    let before = inventory(&k);
    let long_label = "a".repeat(64);
    let long_subdomain = format!("{}.{}", "a".repeat(63), "b".repeat(190));
    let big_value = "x".repeat(3 * 1024 * 1024);

    // (case, second document, what stderr must contain besides "<stdin> document 2")
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "10,000 levels of nesting",
            format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: deep}}\ndata: {}\n", nested_flow(10_000)),
            vec!["more than 100 levels deep"],
        ),
        (
            "nesting just over the limit names the field",
            format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: deep}}\ndata: {{k: {}}}\n", nested_flow(99)),
            vec!["data.k[0][0]", "more than 100 levels deep"],
        ),
        (
            "billion laughs",
            billion_laughs(),
            vec!["invalid YAML", "billion laughs"],
        ),
        (
            "one wide anchor named ten thousand times",
            wide_anchor(),
            vec!["many[", "aliases expand the document beyond its size limit"],
        ),
        (
            "a key given twice",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nmetadata: {name: t}\n".to_string(),
            vec!["duplicate key \"metadata\""],
        ),
        (
            "a document over 3 MiB",
            format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: big}}\nstringData: {{a: {big_value}}}\n"),
            vec!["bytes per document", "KRATIX_MAX_DOCUMENT_BYTES"],
        ),
        ("promise name with a slash", promise_named("a/b"), vec!["metadata.name", "\"a/b\"", "RFC 1123 subdomain"]),
        ("promise name climbing up", promise_named("../x"), vec!["metadata.name", "\"../x\""]),
        ("promise name in upper case", promise_named("Redis"), vec!["metadata.name", "\"Redis\""]),
        ("promise name empty", promise_named(""), vec!["metadata.name: required"]),
        ("promise name with empty labels", promise_named("a..b"), vec!["metadata.name", "\"a..b\""]),
        ("promise name too long for a label", promise_named(&long_label), vec!["metadata.name", "63 characters"]),
        (
            "secret name over 253 characters",
            format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: {long_subdomain}x}}\n"),
            vec!["metadata.name", "253 characters"],
        ),
        (
            "pipeline name with a slash",
            promise_with_pipeline("p", "a/b", "[{name: c, image: i}]"),
            vec!["spec.workflows.resource.configure[0].metadata.name", "\"a/b\"", "RFC 1123 label"],
        ),
        (
            "pipeline name climbing up",
            promise_with_pipeline("p", "../x", "[{name: c, image: i}]"),
            vec!["spec.workflows.resource.configure[0].metadata.name", "\"../x\""],
        ),
        (
            "pipeline name in upper case",
            promise_with_pipeline("p", "Setup", "[{name: c, image: i}]"),
            vec!["spec.workflows.resource.configure[0].metadata.name", "\"Setup\""],
        ),
        (
            "pipeline objects' name too long",
            promise_with_pipeline("a-long-promise-name", "a-long-pipeline-name-too", "[{name: c, image: i}]"),
            vec!["spec.workflows.resource.configure[0].metadata.name", "a-long-promise-name-resource-configure-a-long-pipeline-name-too", "60 characters"],
        ),
        (
            "container name with a slash",
            promise_with_pipeline("p", "setup", "[{name: a/b, image: i}]"),
            vec!["spec.workflows.resource.configure[0].spec.containers[0].name", "\"a/b\""],
        ),
        (
            "container names twice",
            promise_with_pipeline("p", "setup", "[{name: c, image: i}, {name: c, image: j}]"),
            vec!["spec.workflows.resource.configure[0].spec.containers[1].name", "duplicate"],
        ),
        (
            "pipeline label value with a space",
            promise_with_pipeline("p", "setup", "[{name: c, image: i}]")
                .replace("metadata: {name: \"setup\"}", "metadata: {name: setup, labels: {team: \"a b\"}}"),
            vec!["spec.workflows.resource.configure[0].metadata.labels.team", "\"a b\""],
        ),
        (
            "request kind's plural like a path",
            SETUP.split("---\n").nth(1).expect("the Promise").replace("plural: apps", "plural: ../apps").replace("apps.example", "../apps.example"),
            vec!["spec.api.spec.names.plural", "\"../apps\""],
        ),
        ("destination name with a slash", destination("a/b", "a", ""), vec!["metadata.name", "\"a/b\""]),
        ("destination path climbing up", destination("d", "../other-team", ""), vec!["spec.path", "\"../other-team\"", ".."]),
        ("destination path climbing up midway", destination("d", "a/../../x", ""), vec!["spec.path", "\"a/../../x\""]),
        ("destination cleanup not in the enum", destination("d", "d", "  cleanup: al\n"), vec!["spec.cleanup", "\"al\"", "none, all"]),
        (
            "state store path climbing up",
            "apiVersion: platform.kratix.io/v1alpha1\nkind: GitStateStore\nmetadata: {name: s}\nspec: {url: s.git, path: ../x}\n".to_string(),
            vec!["spec.path", "\"../x\""],
        ),
        (
            "state store auth method not in the enum",
            "apiVersion: platform.kratix.io/v1alpha1\nkind: BucketStateStore\nmetadata: {name: s}\nspec: {bucketName: b, endpoint: e, authMethod: token}\n".to_string(),
            vec!["spec.authMethod", "\"token\"", "accessKey, IAM"],
        ),
        ("request name over 63 characters", app(&long_label, "default"), vec!["metadata.name", "63"]),
        ("request name with a slash", app("a/b", "default"), vec!["metadata.name", "\"a/b\""]),
        ("request namespace with a dot", app("a", "team.a"), vec!["metadata.namespace", "\"team.a\"", "RFC 1123 label"]),
        ("request namespace climbing up", app("a", ".."), vec!["metadata.namespace", "\"..\""]),
        (
            "label key with two slashes",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s, labels: {a/b/c: x}}\n".to_string(),
            vec!["metadata.labels", "\"a/b/c\""],
        ),
        (
            "label value too long",
            format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: s, labels: {{a: {long_label}}}}}\n"),
            vec!["metadata.labels.a", "63 characters"],
        ),
    ];
    let mut failures = Vec::new();
    for (case, bad, expected) in &cases {
        let run = k.apply_yaml(&format!("{INNOCENT}{bad}"), &["--no-wait"]);
        if run.ok() {
            failures.push(format!("{case}: accepted"));
            continue;
        }
        for e in std::iter::once(&"<stdin> document 2").chain(expected) {
            if !run.stderr.contains(e) {
                failures.push(format!("{case}: expected {e:?} in: {}", run.stderr));
            }
        }
        assert!(
            run.stderr.len() < 2000,
            "{case}: the message stays short: {} bytes",
            run.stderr.len()
        );
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(inventory(&k), before, "nothing was stored");
}

#[test]
fn names_and_paths_within_the_rules_are_accepted() {
    let k = Kratix::new();
    k.apply_yaml(SETUP, &["--no-wait"]).assert_ok();
    let yaml = [
        promise_named("a.b-c"),
        promise_with_pipeline("p", "setup-1", "[{name: c-1, image: i}, {name: c-2, image: i}]"),
        destination(&"d".repeat(63), "/", ""),
        // The store's root too: on another store, as no two Destinations of one store may
        // share a folder.
        "apiVersion: platform.kratix.io/v1alpha1\nkind: GitStateStore\nmetadata: {name: second}\nspec: {url: second.git}\n".to_string(),
        destination("dot", ".", "").replace("name: default}", "name: second}"),
        destination("nested", "clusters/dev", ""),
        // Kratix reads a leading `/` as the store's root.
        destination("rooted", "/clusters/prod/", ""),
        app(&"a".repeat(63), "team-a"),
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: {}, labels: {{kratix.io/x: A_b.c}}}}\n",
            ["a".repeat(63), "b".repeat(189)].join(".")
        ),
    ]
    .join("---\n");
    k.apply_yaml(&yaml, &["--no-wait"]).assert_ok();
    assert_eq!(k.list_json("destinations", &[]).len(), 4);
}

#[test]
fn size_limits_follow_their_environment_variables() {
    let secret = |size: usize| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: s{size}}}\nstringData: {{a: {}}}\n",
            "x".repeat(size)
        )
    };
    let k = Kratix::new().with_env("KRATIX_MAX_DOCUMENT_BYTES", "1000");
    k.apply_yaml(&secret(500), &["--no-wait"]).assert_ok();
    let run = k.apply_yaml(
        &format!("{}---\n{}", secret(600), secret(1500)),
        &["--no-wait"],
    );
    run.assert_failed();
    assert!(
        run.stderr.contains("<stdin> document 2: ")
            && run.stderr.contains("limit of 1000 bytes per document"),
        "{}",
        run.stderr
    );
    assert_eq!(k.list_json("secrets", &[]).len(), 1, "nothing more stored");

    let k = Kratix::new().with_env("KRATIX_MAX_INPUT_BYTES", "2000");
    let dir = tempfile::tempdir().expect("temporary folder");
    std::fs::write(dir.path().join("a.yaml"), secret(1200)).expect("write");
    std::fs::write(dir.path().join("b.yaml"), secret(1300)).expect("write");
    let run = k.run(&[
        "apply",
        "--no-wait",
        "-f",
        dir.path().to_str().expect("utf-8"),
    ]);
    run.assert_failed();
    assert!(
        run.stderr
            .contains("b.yaml: the input is more than the limit of")
            && run.stderr.contains("KRATIX_MAX_INPUT_BYTES"),
        "{}",
        run.stderr
    );
    assert!(k.list_json("secrets", &[]).is_empty(), "nothing stored");

    let k = Kratix::new().with_env("KRATIX_MAX_DOCUMENT_BYTES", "lots");
    let run = k.apply_yaml(&secret(1), &["--no-wait"]);
    run.assert_failed();
    assert!(
        run.stderr.contains("KRATIX_MAX_DOCUMENT_BYTES=\"lots\""),
        "{}",
        run.stderr
    );
}

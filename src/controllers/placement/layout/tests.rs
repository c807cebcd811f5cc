use std::io::Write;

use base64::Engine;

use crate::api::hash::md5_hex;
use crate::controllers::placement::layout::*;

const ROOT_ID: &str = "5058f1af8388633f609cadb75a75dc9d";

/// Resource request `example` in `default`, Promise `redis`, pipeline `instance`, root group, on
/// Destination `worker-1` (nested mode); each case changes what it tests.
fn redis_example() -> PlacementContext {
    PlacementContext {
        store_path: None,
        destination_path: "worker-1".into(),
        mode: FilepathMode::NestedByMetadata,
        aggregated_filename: None,
        namespace: "default".into(),
        promise: "redis".into(),
        resource: Some("example".into()),
        pipeline: Some("instance".into()),
        group_id: ROOT_ID.into(),
    }
}

fn files(pairs: &[(&str, &str)]) -> PlacementFiles {
    PlacementFiles {
        workloads: pairs
            .iter()
            .map(|(path, content)| (path.to_string(), content.as_bytes().to_vec()))
            .collect(),
    }
}

fn only_path(ctx: &PlacementContext, filepath: &str) -> String {
    let got = file_paths(ctx, &files(&[(filepath, "x")]));
    assert_eq!(got.len(), 1, "{ctx:?}");
    got[0].0.clone()
}

#[test]
fn workload_paths_are_kratix_paths() {
    type Tweak = fn(&mut PlacementContext);
    let cases: Vec<(&str, Tweak, &str, &str)> = vec![
        ("resource request, root group", |_| {}, "redis.yaml",
            "worker-1/resources/default/redis/example/instance/5058f/redis.yaml"),
        ("nested file in the root group keeps its folders", |_| {}, "foo/example.json",
            "worker-1/resources/default/redis/example/instance/5058f/foo/example.json"),
        ("directory group: id5 of md5(dir), filepath keeps the dir",
            |c| c.group_id = md5_hex(b"foo"), "foo/file.yaml",
            "worker-1/resources/default/redis/example/instance/acbd1/foo/file.yaml"),
        ("a directory group for dest1", |c| {
                c.promise = "testbundle".into();
                c.resource = Some("kratix-test".into());
                c.pipeline = Some("resource-pipeline0".into());
                c.group_id = md5_hex(b"dest1");
            }, "dest1/configmap.yaml",
            "worker-1/resources/default/testbundle/kratix-test/resource-pipeline0/ba6cb/dest1/configmap.yaml"),
        ("a directory group for dest2", |c| {
                c.destination_path = "worker-2".into();
                c.promise = "testbundle".into();
                c.resource = Some("kratix-test".into());
                c.pipeline = Some("resource-pipeline0".into());
                c.group_id = md5_hex(b"dest2");
            }, "dest2/configmap.yaml",
            "worker-2/resources/default/testbundle/kratix-test/resource-pipeline0/76355/dest2/configmap.yaml"),
        ("store path with a trailing slash prefixes everything",
            |c| c.store_path = Some("clusters/".into()), "redis.yaml",
            "clusters/worker-1/resources/default/redis/example/instance/5058f/redis.yaml"),
        ("store path with a leading slash is trimmed like the git writer",
            |c| c.store_path = Some("/clusters".into()), "redis.yaml",
            "clusters/worker-1/resources/default/redis/example/instance/5058f/redis.yaml"),
        ("store path `.` is the root", |c| c.store_path = Some(".".into()), "redis.yaml",
            "worker-1/resources/default/redis/example/instance/5058f/redis.yaml"),
        ("destination path `.` is the root", |c| c.destination_path = ".".into(), "redis.yaml",
            "resources/default/redis/example/instance/5058f/redis.yaml"),
        ("destination path `/` is the root", |c| c.destination_path = "/".into(), "redis.yaml",
            "resources/default/redis/example/instance/5058f/redis.yaml"),
        ("empty destination path is dropped", |c| c.destination_path = String::new(), "redis.yaml",
            "resources/default/redis/example/instance/5058f/redis.yaml"),
        ("destination path is cleaned", |c| c.destination_path = "./envs//dev/".into(), "redis.yaml",
            "envs/dev/resources/default/redis/example/instance/5058f/redis.yaml"),
        ("destination path `/` under a store path", |c| {
                c.destination_path = "/".into();
                c.store_path = Some("clusters".into());
            }, "redis.yaml",
            "clusters/resources/default/redis/example/instance/5058f/redis.yaml"),
        ("promise workflow: dependencies, no namespace or request", |c| {
                c.namespace = "kratix-platform-system".into();
                c.resource = None;
                c.pipeline = Some("promise-configure".into());
            }, "namespace.yaml",
            "worker-1/dependencies/redis/promise-configure/5058f/namespace.yaml"),
        ("empty request name is a dependency", |c| c.resource = Some(String::new()), "ns.yaml",
            "worker-1/dependencies/redis/instance/5058f/ns.yaml"),
        ("static dependencies: no pipeline segment", |c| {
                c.resource = None;
                c.pipeline = None;
            }, "static/redis-dependencies.yaml",
            "worker-1/dependencies/redis/5058f/static/redis-dependencies.yaml"),
        ("mode none: flat under the destination", |c| c.mode = FilepathMode::None, "foo/fruit.yaml",
            "worker-1/foo/fruit.yaml"),
        ("mode none at the root", |c| {
                c.mode = FilepathMode::None;
                c.destination_path = ".".into();
            }, "fruit.yaml", "fruit.yaml"),
        ("mode none under a store path", |c| {
                c.mode = FilepathMode::None;
                c.store_path = Some("clusters/".into());
            }, "fruit.yaml", "clusters/worker-1/fruit.yaml"),
        ("mode none, static dependencies", |c| {
                c.mode = FilepathMode::None;
                c.resource = None;
                c.pipeline = None;
            }, "static/redis-dependencies.yaml", "worker-1/static/redis-dependencies.yaml"),
    ];
    for (name, tweak, filepath, expected) in cases {
        let mut ctx = redis_example();
        tweak(&mut ctx);
        assert_eq!(only_path(&ctx, filepath), expected, "{name}");
    }
}

#[test]
fn file_paths_keep_order_and_bytes() {
    let workloads = files(&[("b.yaml", "second: 2\n"), ("a.yaml", "first: 1\n")]);
    let got = file_paths(&redis_example(), &workloads);
    let dir = "worker-1/resources/default/redis/example/instance/5058f";
    assert_eq!(
        got,
        vec![
            (format!("{dir}/b.yaml"), b"second: 2\n".to_vec()),
            (format!("{dir}/a.yaml"), b"first: 1\n".to_vec()),
        ]
    );
}

#[test]
fn aggregated_mode_has_no_files_per_placement() {
    let mut ctx = redis_example();
    ctx.mode = FilepathMode::AggregatedYaml;
    assert!(file_paths(&ctx, &files(&[("a.yaml", "a: 1")])).is_empty());
}

#[test]
fn placement_dir_exists_only_in_nested_mode() {
    type Tweak = fn(&mut PlacementContext);
    let cases: Vec<(&str, Tweak, Option<&str>)> = vec![
        (
            "resource",
            |_| {},
            Some("worker-1/resources/default/redis/example/instance/5058f"),
        ),
        (
            "static dependency (workplacement_controller_test.go:425)",
            |c| {
                c.destination_path = "test-path".into();
                c.promise = "test-promise".into();
                c.resource = None;
                c.pipeline = None;
            },
            Some("test-path/dependencies/test-promise/5058f"),
        ),
        (
            "store path",
            |c| c.store_path = Some("a/b".into()),
            Some("a/b/worker-1/resources/default/redis/example/instance/5058f"),
        ),
        ("mode none", |c| c.mode = FilepathMode::None, None),
        (
            "mode aggregatedYAML",
            |c| c.mode = FilepathMode::AggregatedYaml,
            None,
        ),
    ];
    for (name, tweak, expected) in cases {
        let mut ctx = redis_example();
        tweak(&mut ctx);
        assert_eq!(placement_dir(&ctx).as_deref(), expected, "{name}");
    }
}

#[test]
fn canary_files_per_mode() {
    let ns = CANARY_NAMESPACE_YAML.as_bytes().to_vec();
    let cm = CANARY_CONFIGMAP_YAML.as_bytes().to_vec();
    type Case<'a> = (
        &'a str,
        &'a str,
        Option<&'a str>,
        FilepathMode,
        [&'a str; 2],
    );
    let cases: Vec<Case> = vec![
        (
            "nested",
            "worker-1",
            None,
            FilepathMode::NestedByMetadata,
            [
                "worker-1/dependencies/kratix-canary-namespace.yaml",
                "worker-1/resources/kratix-canary-configmap.yaml",
            ],
        ),
        (
            "none",
            "flat",
            None,
            FilepathMode::None,
            [
                "flat/kratix-canary-namespace.yaml",
                "flat/kratix-canary-configmap.yaml",
            ],
        ),
        (
            "aggregated",
            "flat",
            None,
            FilepathMode::AggregatedYaml,
            [
                "flat/kratix-canary-namespace.yaml",
                "flat/kratix-canary-configmap.yaml",
            ],
        ),
        (
            "nested at the root",
            ".",
            None,
            FilepathMode::NestedByMetadata,
            [
                "dependencies/kratix-canary-namespace.yaml",
                "resources/kratix-canary-configmap.yaml",
            ],
        ),
        (
            "none at the root",
            "/",
            None,
            FilepathMode::None,
            [
                "kratix-canary-namespace.yaml",
                "kratix-canary-configmap.yaml",
            ],
        ),
        (
            "nested under a store path",
            "worker-1",
            Some("clusters/"),
            FilepathMode::NestedByMetadata,
            [
                "clusters/worker-1/dependencies/kratix-canary-namespace.yaml",
                "clusters/worker-1/resources/kratix-canary-configmap.yaml",
            ],
        ),
    ];
    for (name, destination, store, mode, [ns_path, cm_path]) in cases {
        assert_eq!(
            canary_files(destination, store, mode),
            vec![
                (ns_path.to_string(), ns.clone()),
                (cm_path.to_string(), cm.clone())
            ],
            "{name}"
        );
    }
}

#[test]
fn canary_content_is_kratix_bytes() {
    // destination_controller_test.go:447-461.
    assert_eq!(
        CANARY_NAMESPACE_YAML,
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kratix-worker-system\nspec: {}\nstatus: {}\n"
    );
    assert_eq!(
        CANARY_CONFIGMAP_YAML,
        "apiVersion: v1\ndata:\n  canary: this confirms your infrastructure is reading from Kratix state stores\nkind: ConfigMap\nmetadata:\n  name: kratix-info\n  namespace: kratix-worker-system\n"
    );
    // And each is one valid YAML document.
    for yaml in [CANARY_NAMESPACE_YAML, CANARY_CONFIGMAP_YAML] {
        let parsed: serde_yaml::Value = serde_yaml::from_str(yaml).expect("canary is YAML");
        assert!(parsed["metadata"]["name"].is_string());
    }
}

#[test]
fn none_mode_state_files_match_kratix() {
    type Tweak = fn(&mut PlacementContext);
    type Case<'a> = (
        &'a str,
        Tweak,
        &'a str,
        &'a str,
        Vec<&'a str>,
        &'a str,
        &'a str,
    );
    let cases: Vec<Case> = vec![
        ("workplacement_controller_test.go:190", |c| c.destination_path = "test-path".into(),
            "default", "test-work-placement", vec!["fruit.yaml", "file2.yaml"],
            "test-path/.kratix/default-test-work-placement.yaml",
            "files:\n- test-path/fruit.yaml\n- test-path/file2.yaml\n"),
        ("no files", |c| c.destination_path = "test-path".into(),
            "default", "wp", vec![],
            "test-path/.kratix/default-wp.yaml", "files: []\n"),
        ("promise placement in mode none", |c| c.destination_path = "filepathmode-none".into(),
            "kratix-platform-system", "filepathmode-none-promise-R.test-worker-git-filepathmode-none-5058f",
            vec!["filepathmode-none-ns.yaml"],
            "filepathmode-none/.kratix/kratix-platform-system-filepathmode-none-promise-R.test-worker-git-filepathmode-none-5058f.yaml",
            "files:\n- filepathmode-none/filepathmode-none-ns.yaml\n"),
        ("store path prefixes the key, not the listed files", |c| {
                c.destination_path = "test-path".into();
                c.store_path = Some("clusters".into());
            }, "default", "wp", vec!["dir/a.yaml"],
            "clusters/test-path/.kratix/default-wp.yaml", "files:\n- test-path/dir/a.yaml\n"),
        ("destination at the root", |c| c.destination_path = ".".into(),
            "default", "wp", vec!["a.yaml"],
            ".kratix/default-wp.yaml", "files:\n- a.yaml\n"),
    ];
    for (name, tweak, namespace, placement, filepaths, path, content) in cases {
        let mut ctx = redis_example();
        ctx.mode = FilepathMode::None;
        tweak(&mut ctx);
        let filepaths: Vec<String> = filepaths.into_iter().map(String::from).collect();
        let (got_path, got_content) =
            none_mode_state_file(&ctx, namespace, placement, &filepaths).expect("serialises");
        assert_eq!(got_path, path, "{name}");
        assert_eq!(String::from_utf8_lossy(&got_content), content, "{name}");
    }
}

#[test]
fn aggregated_yaml_sorts_placements_and_joins_documents() {
    let placement = |name: &str, docs: &[&str]| {
        (
            name.to_string(),
            docs.iter()
                .enumerate()
                .map(|(i, d)| (format!("f{i}.yaml"), d.as_bytes().to_vec()))
                .collect::<Vec<_>>(),
        )
    };
    let cases = vec![
        ("workplacement_controller_test.go:582, placements given out of order", vec![
            placement("wp-b", &["{kratix: is-good}"]),
            placement("wp-a", &["{someApi: foo, someValue: bar}", "{someOtherApi: fooz, someOtherValue: barz}"]),
        ], "{someApi: foo, someValue: bar}\n---\n{someOtherApi: fooz, someOtherValue: barz}\n---\n{kratix: is-good}"),
        ("documents keep their order", vec![
            placement("aggregate-promise-req-2-resource-R.d-5058f", &["cm: req-2\n"]),
            placement("aggregate-promise-promise-R.d-5058f", &["ns: x\n"]),
            placement("aggregate-promise-req-1-resource-R.d-5058f", &["cm: req-1\n"]),
        ], "ns: x\n\n---\ncm: req-1\n\n---\ncm: req-2\n"),
        ("a placement without workloads adds nothing", vec![
            placement("a", &[]),
            placement("b", &["b: 1"]),
        ], "b: 1"),
        ("nothing", vec![], ""),
    ];
    for (name, placements, expected) in cases {
        assert_eq!(
            String::from_utf8_lossy(&aggregated_yaml(&placements)),
            expected,
            "{name}"
        );
    }
}

#[test]
fn aggregated_file_path_defaults_to_aggregated_yaml() {
    let cases = [
        (
            None,
            "test-path",
            Some("workloads.yaml"),
            "test-path/workloads.yaml",
        ),
        (None, "test-path", None, "test-path/aggregated.yaml"),
        (None, "test-path", Some(""), "test-path/aggregated.yaml"),
        (
            Some("clusters"),
            ".",
            Some("catalog.yaml"),
            "clusters/catalog.yaml",
        ),
    ];
    for (store, destination, filename, expected) in cases {
        assert_eq!(aggregated_file_path(store, destination, filename), expected);
    }
}

fn encode(bytes: &[u8]) -> String {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).expect("writes to memory");
    base64::engine::general_purpose::STANDARD.encode(gz.finish().expect("finishes in memory"))
}

#[test]
fn workloads_decode_from_base64_gzip() {
    let workloads = vec![
        Workload {
            filepath: "a.yaml".into(),
            content: encode(b"a: 1\n"),
        },
        Workload {
            filepath: "dir/empty".into(),
            content: encode(b""),
        },
    ];
    let decoded = PlacementFiles::decode(&workloads).expect("valid content");
    assert_eq!(
        decoded.workloads,
        vec![
            ("a.yaml".to_string(), b"a: 1\n".to_vec()),
            ("dir/empty".to_string(), vec![])
        ]
    );

    let not_base64 = Workload {
        filepath: "x.yaml".into(),
        content: "%%%".into(),
    };
    let err = PlacementFiles::decode(&[not_base64]).expect_err("not base64");
    assert!(
        matches!(err, Error::Content { ref filepath, source: crate::api::work::ContentError::Base64(_) } if filepath == "x.yaml"),
        "{err:?}"
    );

    let not_gzip = Workload {
        filepath: "y.yaml".into(),
        content: base64::engine::general_purpose::STANDARD.encode(b"plain"),
    };
    let err = PlacementFiles::decode(&[not_gzip]).expect_err("not gzip");
    assert!(
        matches!(err, Error::Content { ref filepath, source: crate::api::work::ContentError::Gunzip(_) } if filepath == "y.yaml"),
        "{err:?}"
    );
}

#[test]
fn paths_clean_like_go() {
    // Expected values are Go's path.Clean / filepath.Join outputs.
    let clean_cases = [
        ("", "."),
        (".", "."),
        ("/", "/"),
        ("a/./b/", "a/b"),
        ("//a//b", "/a/b"),
        ("a/../..", ".."),
        ("../../x", "../../x"),
        ("/../a", "/a"),
        ("a/b/../c", "a/c"),
        ("a/b/../../..", ".."),
    ];
    for (input, expected) in clean_cases {
        assert_eq!(go_clean(input), expected, "clean {input:?}");
    }
    let join_cases: [(&[&str], &str); 5] = [
        (&[], ""),
        (&["", ""], ""),
        (&["a", "", "b"], "a/b"),
        (&["/", "x"], "/x"),
        (&["a/", "/b"], "a/b"),
    ];
    for (parts, expected) in join_cases {
        assert_eq!(go_join(parts), expected, "join {parts:?}");
    }
}

#[test]
fn destination_roots_join_store_and_destination_paths() {
    let cases = [
        (None, "worker-1", "worker-1"),
        (Some("clusters"), "worker-1", "clusters/worker-1"),
        (Some("/clusters/"), "/worker-1/", "clusters/worker-1"),
        (None, ".", ""),
        (None, "/", ""),
        (Some("a"), "", "a"),
        (Some("a"), "b/../c", "a/c"),
    ];
    for (store, destination, want) in cases {
        assert_eq!(
            destination_root(store, destination),
            want,
            "{store:?} + {destination:?}"
        );
    }
}

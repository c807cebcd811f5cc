//! Metadata files: parsing each one and reading a real metadata folder.

use super::*;
use serde_json::json;

#[test]
fn status_files() {
    let cases: Vec<(&str, Result<Option<Value>, &str>)> = vec![
        ("", Ok(None)),
        ("# nothing\n", Ok(None)),
        (
            "message: hi\nurl: x\n",
            Ok(Some(json!({"message": "hi", "url": "x"}))),
        ),
        (
            "conditions:\n- type: Ready\n  status: \"True\"\n",
            Ok(Some(
                json!({"conditions": [{"type": "Ready", "status": "True"}]}),
            )),
        ),
        (
            "kratix:\n  workflows: {}\n",
            Err("reserved top-level key \"kratix\""),
        ),
        ("- a\n", Err("metadata/status.yaml must be a mapping")),
        (
            "message: [unclosed\n",
            Err("metadata/status.yaml is not valid"),
        ),
    ];
    for (text, want) in cases {
        match (parse_status(text), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{text:?}"),
            (Err(got), Err(want)) => assert!(got.to_string().contains(want), "{text:?}: {got}"),
            (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
        }
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn destination_selector_files() {
    let entry = |dir: Option<&str>, l: &[(&str, &str)]| DestinationSelectorEntry {
        match_labels: labels(l),
        directory: dir.map(String::from),
    };
    let cases: Vec<(&str, Result<Vec<DestinationSelectorEntry>, &str>)> = vec![
        ("", Ok(vec![])),
        ("[]", Ok(vec![])),
        (
            "- matchLabels: {env: dev}\n",
            Ok(vec![entry(None, &[("env", "dev")])]),
        ),
        (
            "- matchLabels: {env: dev}\n  directory: .\n- matchLabels: {a: b}\n  directory: ./db/\n",
            Ok(vec![entry(None, &[("env", "dev")]), entry(Some("db"), &[("a", "b")])]),
        ),
        ("- directory: db\n", Err("entry 0 has no matchLabels")),
        ("- matchLabels: {}\n", Err("entry 0 has no matchLabels")),
        (
            "- matchLabels: {a: b}\n  directory: a/b\n",
            Err("directory \"a/b\" must be a single folder name"),
        ),
        (
            "- matchLabels: {a: b}\n  directory: ..\n",
            Err("directory \"..\" must be a single folder name"),
        ),
        (
            "- matchLabels: {a: b}\n  directory: \"a\\nb\"\n",
            Err("directory \"a\\nb\" must be a single folder name"),
        ),
        (
            "- matchLabels: {a: b}\n  directory: /etc\n",
            Err("directory \"/etc\" must be a single folder name"),
        ),
        (
            "- matchLabels: {a: b}\n  directory: db\n- matchLabels: {c: d}\n  directory: db/\n",
            Err("entry 1: directory \"db\" is listed twice"),
        ),
        (
            "- matchLabels: {a: b}\n- matchLabels: {c: d}\n  directory: .\n",
            Err("entry 1: directory \".\" is listed twice"),
        ),
        ("matchLabels: {a: b}\n", Err("destination-selectors.yaml is not valid")),
    ];
    for (text, want) in cases {
        match (parse_destination_selectors(text), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{text:?}"),
            (Err(got), Err(want)) => assert!(got.to_string().contains(want), "{text:?}: {got}"),
            (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn workflow_control_files() {
    let cases: Vec<(&str, Result<WorkflowControl, &str>)> = vec![
        ("", Ok(WorkflowControl::default())),
        (
            "suspend: true\nmessage: waiting for approval\n",
            Ok(WorkflowControl {
                suspend: true,
                retry_after: None,
                message: Some("waiting for approval".into()),
            }),
        ),
        (
            "retryAfter: 5m\n",
            Ok(WorkflowControl {
                retry_after: Some(Duration::from_secs(300)),
                ..WorkflowControl::default()
            }),
        ),
        (
            "retryAfter: soon\n",
            Err("retryAfter \"soon\" is not a duration"),
        ),
        (
            "suspend: maybe\n",
            Err("workflow-control.yaml is not valid"),
        ),
    ];
    for (text, want) in cases {
        match (parse_workflow_control(text), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{text:?}"),
            (Err(got), Err(want)) => assert!(got.to_string().contains(want), "{text:?}: {got}"),
            (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn a_suspension_or_a_retry_stops_the_workflow() {
    let cases = [
        ("", false),
        ("message: hello\n", false),
        ("suspend: false\n", false),
        ("suspend: true\n", true),
        ("retryAfter: 5m\n", true),
        ("suspend: false\nretryAfter: 1s\n", true),
        ("retryAfter: \"\"\n", false),
    ];
    for (text, want) in cases {
        let control = parse_workflow_control(text).expect("valid");
        assert_eq!(control.suspends(), want, "{text:?}");
    }
}

#[test]
fn go_durations() {
    let cases = [
        ("0", Some(Duration::ZERO)),
        ("30s", Some(Duration::from_secs(30))),
        ("5m", Some(Duration::from_secs(300))),
        ("1h", Some(Duration::from_secs(3600))),
        ("1h30m", Some(Duration::from_secs(5400))),
        ("1.5h", Some(Duration::from_secs(5400))),
        ("300ms", Some(Duration::from_millis(300))),
        ("2us", Some(Duration::from_micros(2))),
        ("10ns", Some(Duration::from_nanos(10))),
        ("+10s", Some(Duration::from_secs(10))),
        ("", None),
        ("5", None),
        ("-5m", None),
        ("5 m", None),
        ("m", None),
        ("5d", None),
        (".s", None),
        (".5s", Some(Duration::from_millis(500))),
        ("5.s", Some(Duration::from_secs(5))),
        ("1.2.3s", None),
        ("µs", None),
        ("3µs2μs", Some(Duration::from_micros(5))),
        ("+-5s", None),
        ("++5s", None),
        ("+0", None),
        ("5s0", None),
        ("5s ", None),
        ("1e3s", None),
        ("2562047h", Some(Duration::from_secs(2_562_047 * 3600))),
        ("2562048h", None),
        ("9223372036s", Some(Duration::from_secs(9_223_372_036))),
        ("9223372037s", None),
        ("00000000000000000000000030s", Some(Duration::from_secs(30))),
        // Numbers that would overflow kube's arithmetic are refused, not a panic.
        ("99999999999999999999999999h", None),
        ("18446744073709551616s", None),
    ];
    for (text, want) in cases {
        assert_eq!(parse_duration(text), want, "{text:?}");
    }
}

#[test]
fn refuses_links_fifos_folders_and_large_files_without_reading_them() {
    type Setup = fn(&Path);
    let cases: [(&str, Setup, &str); 7] = [
        (
            "link to a host file",
            |d| std::os::unix::fs::symlink("/etc/hostname", d.join(STATUS_FILE)).expect("ln"),
            "metadata/status.yaml is a symbolic link, not a regular file",
        ),
        (
            "dangling link",
            |d| {
                std::os::unix::fs::symlink("nowhere", d.join(DESTINATION_SELECTORS_FILE))
                    .expect("ln");
            },
            "metadata/destination-selectors.yaml is a symbolic link",
        ),
        (
            "fifo nobody writes to",
            |d| {
                nix::unistd::mkfifo(
                    &d.join(WORKFLOW_CONTROL_FILE),
                    nix::sys::stat::Mode::S_IRWXU,
                )
                .expect("mkfifo");
            },
            "metadata/workflow-control.yaml is a fifo, not a regular file",
        ),
        (
            "folder",
            |d| std::fs::create_dir(d.join(STATUS_FILE)).expect("mkdir"),
            "metadata/status.yaml is a folder, not a regular file",
        ),
        (
            "sparse 1 GiB file",
            |d| {
                std::fs::File::create(d.join(STATUS_FILE))
                    .and_then(|f| f.set_len(1 << 30))
                    .expect("sparse");
            },
            "metadata/status.yaml is larger than 1048576 bytes",
        ),
        (
            "not UTF-8",
            |d| std::fs::write(d.join(WORKFLOW_CONTROL_FILE), b"message: \xff\n").expect("write"),
            "cannot read metadata/workflow-control.yaml",
        ),
        (
            "folder replaced by a link",
            |d| {
                std::fs::remove_dir_all(d).expect("rm");
                std::os::unix::fs::symlink("/etc", d).expect("ln");
            },
            "the metadata folder is a symbolic link, not a folder",
        ),
    ];
    for (case, setup, want) in cases {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("metadata");
        std::fs::create_dir(&dir).expect("mkdir");
        setup(&dir);
        let err = read_metadata(&dir).expect_err(case);
        assert!(err.to_string().contains(want), "{case}: {err}");
    }
    // Exactly at the cap is still read.
    let tmp = tempfile::tempdir().expect("tempdir");
    let padded = format!("message: x\n{}", "#".repeat(1024 * 1024 - 12) + "\n");
    assert_eq!(padded.len() as u64, MAX_FILE_BYTES);
    std::fs::write(tmp.path().join(STATUS_FILE), &padded).expect("write");
    let meta = read_metadata(tmp.path()).expect("at the cap");
    assert_eq!(meta.status, Some(json!({"message": "x"})));
}

#[test]
fn errors_name_their_file() {
    let cases = [
        (Error::StatusNotMapping, Some(STATUS_FILE)),
        (
            Error::SelectorDuplicate {
                index: 1,
                directory: "a".into(),
            },
            Some(DESTINATION_SELECTORS_FILE),
        ),
        (
            Error::RetryAfter { value: "x".into() },
            Some(WORKFLOW_CONTROL_FILE),
        ),
        (Error::FolderNotFolder { kind: "fifo" }, None),
    ];
    for (err, want) in cases {
        assert_eq!(err.file(), want, "{err}");
        if let Some(file) = want {
            assert!(err.to_string().contains(file), "{err}");
        }
    }
}

#[test]
fn reads_the_folder_and_names_the_broken_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(
        read_metadata(dir.path()).expect("empty"),
        Metadata::default()
    );
    std::fs::write(dir.path().join(STATUS_FILE), "message: done\n").expect("write");
    std::fs::write(
        dir.path().join(DESTINATION_SELECTORS_FILE),
        "- matchLabels: {env: prod}\n",
    )
    .expect("write");
    std::fs::write(dir.path().join(WORKFLOW_CONTROL_FILE), "retryAfter: 30s\n").expect("write");
    let meta = read_metadata(dir.path()).expect("valid");
    assert_eq!(meta.status, Some(json!({"message": "done"})));
    assert_eq!(meta.destination_selectors.len(), 1);
    assert_eq!(
        meta.workflow_control.retry_after,
        Some(Duration::from_secs(30))
    );

    std::fs::write(dir.path().join(WORKFLOW_CONTROL_FILE), "suspend: [\n").expect("write");
    let err = read_metadata(dir.path()).expect_err("broken");
    assert!(
        err.to_string().contains("metadata/workflow-control.yaml"),
        "{err}"
    );
}

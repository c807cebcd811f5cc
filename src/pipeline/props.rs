//! Property tests of what pipelines leave behind: output paths and limits, and the three
//! metadata files. Whatever a pipeline writes, checking it never panics, and whatever is
//! accepted has the invariants the rest of the code relies on.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::metadata::{
    parse_destination_selectors, parse_duration, parse_status, parse_workflow_control,
};
use super::output::{admit, check_entry, relative_name, EntryKind, Error, Limits, Tally};

/// One path element as a pipeline could name it: anything but `/` and NUL, including `.`,
/// `..`, control characters and bytes that are not UTF-8.
fn element() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b".".to_vec()),
        Just(b"..".to_vec()),
        Just(b"".to_vec()),
        Just(b".gIt".to_vec()),
        "[a-z.]{1,6}".prop_map(String::into_bytes),
        "[a-z]{200,255}".prop_map(String::into_bytes),
        "[a-z\n\t\u{1b}\u{7f}\u{85}é ]{1,6}".prop_map(String::into_bytes),
        proptest::collection::vec(1u8..=255, 1..6)
            .prop_map(|b| b.into_iter().filter(|c| *c != b'/').collect()),
    ]
}

/// A path of such elements, sometimes absolute.
fn hostile_path() -> impl Strategy<Value = PathBuf> {
    (any::<bool>(), proptest::collection::vec(element(), 1..6)).prop_map(|(absolute, parts)| {
        let mut bytes = Vec::new();
        if absolute {
            bytes.push(b'/');
        }
        bytes.extend(parts.join(&b'/'));
        PathBuf::from(OsStr::from_bytes(&bytes))
    })
}

fn kind() -> impl Strategy<Value = EntryKind> {
    prop_oneof![
        Just(EntryKind::File),
        Just(EntryKind::Dir),
        Just(EntryKind::Symlink),
        Just(EntryKind::Fifo),
        Just(EntryKind::Socket),
        Just(EntryKind::BlockDevice),
        Just(EntryKind::CharDevice),
        Just(EntryKind::Unknown),
    ]
}

/// Text built from YAML's punctuation and the metadata files' keys, so that the parsers see
/// far more near-miss documents than random characters would give.
fn yamlish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("- ".to_string()),
        Just("\n".to_string()),
        Just("  ".to_string()),
        Just(": ".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just(", ".to_string()),
        Just("matchLabels".to_string()),
        Just("directory".to_string()),
        Just("suspend".to_string()),
        Just("retryAfter".to_string()),
        Just("message".to_string()),
        Just("kratix".to_string()),
        Just("conditions".to_string()),
        Just("&a ".to_string()),
        Just("*a".to_string()),
        Just("!!binary ".to_string()),
        Just("\"".to_string()),
        Just("..".to_string()),
        Just("/".to_string()),
        Just("true".to_string()),
        Just("~".to_string()),
        "[a-z0-9.µ]{1,5}".prop_map(String::from),
        any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(token, 0..40).prop_map(|t| t.concat())
}

/// Proptest's default number of cases, or many more with `KRATIX_LONG_TESTS=1`.
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("KRATIX_LONG_TESTS").is_some_and(|v| v == "1") {
        config.cases = config.cases.max(20_000);
    }
    config
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn no_accepted_output_name_escapes_and_every_one_round_trips(path in hostile_path()) {
        let climbs = path
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::RootDir));
        match relative_name(&path) {
            Ok(name) => {
                prop_assert!(!climbs, "{path:?} climbs out but was accepted as {name:?}");
                prop_assert!(!name.is_empty() && !name.starts_with('/'), "{name:?}");
                prop_assert!(!name.chars().any(char::is_control), "{name:?}");
                prop_assert!(name.len() <= super::output::MAX_PATH_BYTES, "{name:?}");
                for part in name.split('/') {
                    prop_assert!(!matches!(part, "" | "." | ".."), "{name:?}");
                    prop_assert!(!part.eq_ignore_ascii_case(".git"), "{name:?}");
                }
                let root = Path::new("/srv/output");
                let joined = root.join(&name);
                prop_assert!(joined.starts_with(root), "{name:?}");
                prop_assert!(
                    joined.components().skip(root.components().count())
                        .all(|c| matches!(c, Component::Normal(_))),
                    "{name:?}"
                );
                prop_assert_eq!(relative_name(Path::new(&name)).ok(), Some(name));
            }
            Err(e) => {
                let text = e.to_string();
                prop_assert!(text.starts_with("output "), "{text}");
            }
        }
    }

    #[test]
    fn only_files_and_folders_are_accepted(name in "[a-z/]{1,10}", kind in kind()) {
        let accepted = check_entry(&name, kind).is_ok();
        prop_assert_eq!(accepted, matches!(kind, EntryKind::File | EntryKind::Dir));
        if let Err(e) = check_entry(&name, kind) {
            prop_assert!(e.to_string().contains(&name), "{e}");
        }
    }

    #[test]
    fn a_walk_never_takes_in_more_than_the_limits(
        max_files in 1u64..20,
        max_bytes in 1u64..1000,
        sizes in proptest::collection::vec(prop_oneof![0u64..300, Just(u64::MAX)], 0..40),
    ) {
        let limits = Limits { max_files, max_bytes };
        let mut tally = Tally::default();
        for (i, size) in sizes.iter().enumerate() {
            let name = format!("f{i}");
            match admit(tally, &name, *size, limits) {
                Ok(next) => {
                    prop_assert_eq!(next.files, tally.files + 1);
                    prop_assert_eq!(next.bytes, tally.bytes + size);
                    prop_assert!(next.files <= max_files && next.bytes <= max_bytes);
                    tally = next;
                }
                Err(e) => {
                    let over_files = tally.files + 1 > max_files;
                    let over_bytes = tally.bytes.saturating_add(*size) > max_bytes;
                    prop_assert!(over_files || over_bytes, "refused within limits: {e}");
                    prop_assert_eq!(matches!(e, Error::TooManyFiles { .. }), over_files);
                    let text = e.to_string();
                    prop_assert!(text.contains(&name), "{text}");
                    prop_assert!(text.contains("KRATIX_OUTPUT_MAX_"), "{text}");
                    break;
                }
            }
        }
    }

    #[test]
    fn limit_variables_are_positive_numbers(files in ".{0,8}", bytes in ".{0,8}", n in 1u64..) {
        if let Ok(limits) = Limits::parse(Some(&files), Some(&bytes)) {
            prop_assert!(limits.max_files > 0 && limits.max_bytes > 0);
        }
        let parsed = Limits::parse(Some(&n.to_string()), Some(&n.to_string()));
        prop_assert_eq!(parsed.ok(), Some(Limits { max_files: n, max_bytes: n }));
    }

    #[test]
    fn destination_selectors_never_panic_and_accepted_entries_hold(text in yamlish()) {
        if let Ok(entries) = parse_destination_selectors(&text) {
            let mut seen = std::collections::BTreeSet::new();
            for entry in &entries {
                prop_assert!(!entry.match_labels.is_empty(), "{text:?}");
                if let Some(dir) = &entry.directory {
                    prop_assert!(!dir.is_empty() && !dir.contains('/'), "{text:?}: {dir:?}");
                    prop_assert!(dir != "." && dir != "..", "{text:?}");
                    prop_assert!(!dir.chars().any(char::is_control), "{text:?}");
                }
                prop_assert!(seen.insert(entry.directory.clone()), "duplicate in {text:?}");
            }
        }
    }

    #[test]
    fn destination_selectors_are_read_back_as_written(
        entries in proptest::collection::vec(
            (
                proptest::collection::btree_map("[a-z./-]{1,6}", "[a-z0-9 ]{0,6}", 0..3),
                proptest::option::of(prop_oneof![
                    Just(".".to_string()),
                    Just("..".to_string()),
                    Just("/etc".to_string()),
                    "[a-z]{1,4}",
                    "\\./[a-z]{1,2}/?",
                    "[a-z]{1,2}/[a-z]{1,2}",
                    "[a-z]\n[a-z]",
                ]),
            ),
            0..4,
        )
    ) {
        let doc: Vec<Value> = entries
            .iter()
            .map(|(labels, dir)| match dir {
                Some(d) => json!({"matchLabels": labels, "directory": d}),
                None => json!({"matchLabels": labels}),
            })
            .collect();
        let text = serde_yaml::to_string(&doc).expect("YAML");
        let cleaned = |dir: &Option<String>| -> Result<Option<String>, ()> {
            let Some(d) = dir else { return Ok(None) };
            if d.starts_with('/') || d.contains('\n') {
                return Err(());
            }
            let parts: Vec<&str> = d.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
            match parts.as_slice() {
                [] => Ok(None),
                [".."] => Err(()),
                [one] => Ok(Some(one.to_string())),
                _ => Err(()),
            }
        };
        let mut want = Ok(Vec::new());
        let mut dirs = Vec::new();
        for (labels, dir) in &entries {
            let Ok(list) = &mut want else { break };
            match cleaned(dir) {
                _ if labels.is_empty() => want = Err("no matchLabels"),
                Err(()) => want = Err("must be a single folder name"),
                Ok(d) if dirs.contains(&d) => want = Err("is listed twice"),
                Ok(d) => {
                    dirs.push(d.clone());
                    list.push((labels.clone(), d));
                }
            }
        }
        match (parse_destination_selectors(&text), want) {
            (Ok(got), Ok(want)) => {
                let got: Vec<(BTreeMap<String, String>, Option<String>)> = got
                    .into_iter()
                    .map(|e| (e.match_labels, e.directory))
                    .collect();
                prop_assert_eq!(got, want);
            }
            (Err(got), Err(want)) => prop_assert!(got.to_string().contains(want), "{got}"),
            (got, want) => prop_assert!(false, "{text}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn status_never_panics_and_is_a_mapping_without_kratix(text in yamlish()) {
        if let Ok(Some(value)) = parse_status(&text) {
            let map = value.as_object();
            prop_assert!(map.is_some(), "{text:?}");
            prop_assert!(map.is_some_and(|m| !m.contains_key("kratix")), "{text:?}");
        }
    }

    #[test]
    fn status_mappings_are_read_back_as_written(
        fields in proptest::collection::btree_map(
            prop_oneof![Just("kratix".to_string()), "[a-zA-Z]{1,8}"],
            prop_oneof![
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                ".{0,12}".prop_map(Value::from),
                proptest::collection::vec("[a-z]{0,4}", 0..3).prop_map(Value::from),
            ],
            0..5,
        )
    ) {
        let value = Value::Object(fields.clone().into_iter().collect());
        let text = serde_yaml::to_string(&value).expect("YAML");
        match parse_status(&text) {
            Ok(got) => {
                prop_assert!(!fields.contains_key("kratix"));
                prop_assert_eq!(got, Some(value));
            }
            Err(e) => {
                prop_assert!(fields.contains_key("kratix"), "{text}: {e}");
                prop_assert!(e.to_string().contains("kratix"), "{e}");
            }
        }
    }

    #[test]
    fn workflow_control_never_panics_and_has_no_empty_message(text in yamlish()) {
        if let Ok(control) = parse_workflow_control(&text) {
            prop_assert!(control.message.as_deref() != Some(""), "{text:?}");
        }
    }

    #[test]
    fn workflow_control_is_read_back_as_written(
        suspend in any::<bool>(),
        hours in 0u64..100,
        minutes in 0u64..60,
        seconds in 0u64..60,
        millis in 0u64..1000,
        message in proptest::option::of("[a-z ]{0,10}"),
    ) {
        let retry = format!("{hours}h{minutes}m{seconds}s{millis}ms");
        let mut doc = json!({"suspend": suspend, "retryAfter": retry});
        if let Some(m) = &message {
            doc["message"] = json!(m);
        }
        let text = serde_yaml::to_string(&doc).expect("YAML");
        let control = parse_workflow_control(&text).expect("valid");
        prop_assert_eq!(control.suspend, suspend);
        let want = Duration::from_secs(hours * 3600 + minutes * 60 + seconds)
            + Duration::from_millis(millis);
        prop_assert_eq!(control.retry_after, Some(want));
        prop_assert_eq!(control.message, message.filter(|m| !m.is_empty()));
    }

    #[test]
    fn durations_never_panic_and_are_bounded(text in "[0-9.+\\-hmsuµn]{0,12}") {
        if let Some(d) = parse_duration(&text) {
            prop_assert!(d.as_nanos() <= i64::MAX as u128, "{text:?}");
        }
    }
}

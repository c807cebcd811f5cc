//! Output checks: paths, entry kinds, limits, and reading a real output folder.

use super::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

#[test]
fn relative_names() {
    let bad_utf8 = Path::new(OsStr::from_bytes(b"dir/caf\xe9.yaml"));
    let long_ok = "dd/".repeat(341) + "d";
    let too_long = long_ok.clone() + "d";
    let cases: Vec<(&Path, Result<&str, &str>)> = vec![
        (Path::new("a.yaml"), Ok("a.yaml")),
        (Path::new("dir/sub/a.yaml"), Ok("dir/sub/a.yaml")),
        (Path::new("./dir/.hidden"), Ok("dir/.hidden")),
        (
            Path::new("dir/caf\u{e9} \\ x.yaml"),
            Ok("dir/caf\u{e9} \\ x.yaml"),
        ),
        (Path::new("../etc/passwd"), Err("leaves the output folder")),
        (Path::new("dir/../../x"), Err("leaves the output folder")),
        (Path::new("/etc/passwd"), Err("leaves the output folder")),
        (Path::new("."), Err("leaves the output folder")),
        (
            bad_utf8,
            Err("dir/caf\u{fffd}.yaml has a name that is not UTF-8"),
        ),
        (
            Path::new("dir/two\nlines.yaml"),
            Err(r#"output file "dir/two\nlines.yaml" has a control character in its name"#),
        ),
        (
            Path::new("\u{1b}[31mred.yaml"),
            Err(r#""\u{1b}[31mred.yaml" has a control character"#),
        ),
        (Path::new("tab\there"), Err("control character")),
        (
            Path::new("app/.git/config"),
            Err("output path app/.git/config has a .git element"),
        ),
        (
            Path::new(".Git"),
            Err("output path .Git has a .git element"),
        ),
        (Path::new("a/.gitignore"), Ok("a/.gitignore")),
        (Path::new(&long_ok), Ok(long_ok.as_str())),
        (
            Path::new(&too_long),
            Err("output path dd/dd/dd/dd/dd/dd/dd/dd/dd/dd/dd/dd/dd/dd/dd/dd/dd/dd/dd/dd/dd/d... is 1025 bytes long, more than the 1024 allowed"),
        ),
        (Path::new("a/x.git"), Ok("a/x.git")),
        (Path::new("del\u{7f}"), Err("control character")),
        (Path::new("c1\u{85}"), Err("control character")),
    ];
    for (path, want) in cases {
        match (relative_name(path), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{path:?}"),
            (Err(got), Err(want)) => {
                assert!(got.to_string().contains(want), "{path:?}: {got}");
            }
            (got, want) => panic!("{path:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn entry_kinds() {
    let cases = [
        (EntryKind::File, None),
        (EntryKind::Dir, None),
        (EntryKind::Symlink, Some("x/f is a symbolic link")),
        (EntryKind::Fifo, Some("x/f is a fifo, not a regular file")),
        (EntryKind::Socket, Some("x/f is a socket")),
        (EntryKind::BlockDevice, Some("x/f is a block device")),
        (EntryKind::CharDevice, Some("x/f is a character device")),
        (EntryKind::Unknown, Some("x/f is a special file")),
    ];
    for (kind, want) in cases {
        let got = check_entry("x/f", kind).err().map(|e| e.to_string());
        match want {
            None => assert_eq!(got, None, "{kind:?}"),
            Some(want) => {
                let got = got.unwrap_or_default();
                assert!(got.contains(want), "{kind:?}: {got}");
            }
        }
    }
}

#[test]
fn limits_from_variables() {
    let default = Limits::default();
    type Case = (
        Option<&'static str>,
        Option<&'static str>,
        Result<Limits, &'static str>,
    );
    let cases: Vec<Case> = vec![
        (None, None, Ok(default)),
        (Some(""), Some("  "), Ok(default)),
        (
            Some("5"),
            Some(" 1024 "),
            Ok(Limits {
                max_files: 5,
                max_bytes: 1024,
            }),
        ),
        (
            Some("0"),
            None,
            Err(r#"KRATIX_OUTPUT_MAX_FILES="0" is not a positive whole number"#),
        ),
        (
            None,
            Some("64MiB"),
            Err(r#"KRATIX_OUTPUT_MAX_BYTES="64MiB" is not a positive whole number"#),
        ),
        (Some("-1"), None, Err("KRATIX_OUTPUT_MAX_FILES")),
        (
            None,
            Some("99999999999999999999999"),
            Err("KRATIX_OUTPUT_MAX_BYTES"),
        ),
    ];
    for (files, bytes, want) in cases {
        match (Limits::parse(files, bytes), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{files:?} {bytes:?}"),
            (Err(got), Err(want)) => {
                assert!(got.to_string().contains(want), "{files:?} {bytes:?}: {got}");
            }
            (got, want) => panic!("{files:?} {bytes:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn admitting_entries_against_the_limits() {
    let limits = Limits {
        max_files: 3,
        max_bytes: 100,
    };
    let t = |files, bytes| Tally { files, bytes };
    type Case = (Tally, u64, Result<Tally, &'static str>);
    let cases: Vec<Case> = vec![
        (t(0, 0), 0, Ok(t(1, 0))),
        (t(0, 0), 100, Ok(t(1, 100))),
        (t(2, 99), 1, Ok(t(3, 100))),
        (
            t(3, 0),
            0,
            Err("output has more than 3 files and folders (KRATIX_OUTPUT_MAX_FILES=3); the limit was exceeded at a/f"),
        ),
        (
            t(0, 0),
            101,
            Err("output holds more than 100 bytes (KRATIX_OUTPUT_MAX_BYTES=100); the limit was exceeded at a/f (101 bytes)"),
        ),
        (t(1, 60), 41, Err("exceeded at a/f (41 bytes)")),
        (t(1, u64::MAX), u64::MAX, Err("KRATIX_OUTPUT_MAX_BYTES")),
        (t(u64::MAX, 0), 0, Err("KRATIX_OUTPUT_MAX_FILES")),
    ];
    for (tally, size, want) in cases {
        match (admit(tally, "a/f", size, limits), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{tally:?} + {size}"),
            (Err(got), Err(want)) => {
                assert!(got.to_string().contains(want), "{tally:?} + {size}: {got}");
            }
            (got, want) => panic!("{tally:?} + {size}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn reads_files_and_folders_sorted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("b/deep")).expect("mkdir");
    std::fs::create_dir_all(root.join("empty")).expect("mkdir");
    std::fs::write(root.join("z.yaml"), "z").expect("write");
    std::fs::write(root.join("b/deep/x.yaml"), "x").expect("write");
    std::fs::write(root.join(".hidden"), "h").expect("write");
    let out = read_output(root, Limits::default()).expect("valid output");
    let files: Vec<(&str, &[u8])> = out
        .files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    assert_eq!(
        files,
        vec![
            (".hidden", &b"h"[..]),
            ("b/deep/x.yaml", &b"x"[..]),
            ("z.yaml", &b"z"[..])
        ]
    );
    assert_eq!(out.dirs, vec!["b", "b/deep", "empty"]);
    let exact = Limits {
        max_files: 6,
        max_bytes: 3,
    };
    assert_eq!(
        read_output(root, exact).expect("exactly at the limits"),
        out
    );
}

#[test]
fn refuses_links_fifos_and_bad_names() {
    type Setup = fn(&Path);
    let cases: [(&str, Setup, &str); 6] = [
        (
            "symlink to a host file",
            |root| {
                std::os::unix::fs::symlink("/etc/passwd", root.join("d/passwd")).expect("symlink");
            },
            "output file d/passwd is a symbolic link",
        ),
        (
            "symlinked folder",
            |root| std::os::unix::fs::symlink("/etc", root.join("d/etc")).expect("symlink"),
            "output file d/etc is a symbolic link",
        ),
        (
            "fifo",
            |root| {
                nix::unistd::mkfifo(&root.join("d/pipe"), nix::sys::stat::Mode::S_IRWXU)
                    .expect("mkfifo");
            },
            "output file d/pipe is a fifo",
        ),
        (
            "non-UTF-8 name",
            |root| std::fs::write(root.join(OsStr::from_bytes(b"d/caf\xe9")), "x").expect("write"),
            "output file d/caf\u{fffd} has a name that is not UTF-8",
        ),
        (
            "newline in a name",
            |root| std::fs::write(root.join("d/a\nb"), "x").expect("write"),
            r#"output file "d/a\nb" has a control character"#,
        ),
        (
            "output folder replaced by a link",
            |root| {
                std::fs::remove_dir_all(root).expect("rm");
                std::os::unix::fs::symlink("/etc", root).expect("symlink");
            },
            "the output folder is a symbolic link, not a folder",
        ),
    ];
    for (case, setup, want) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("out");
        std::fs::create_dir_all(root.join("d")).expect("mkdir");
        std::fs::write(root.join("d/ok.yaml"), "ok").expect("write");
        setup(&root);
        let err = read_output(&root, Limits::default()).expect_err(case);
        assert!(err.to_string().contains(want), "{case}: {err}");
    }
}

#[test]
fn stops_at_the_limits_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for i in 0..50 {
        std::fs::write(root.join(format!("{i:02}.yaml")), "x").expect("write");
    }
    let few = Limits {
        max_files: 10,
        ..Limits::default()
    };
    let err = read_output(root, few).expect_err("too many files");
    let text = err.to_string();
    assert!(
        matches!(&err, Error::TooManyFiles { path, limit: 10 } if path.ends_with(".yaml")),
        "{text}"
    );
    assert!(text.contains("KRATIX_OUTPUT_MAX_FILES=10"), "{text}");

    // A sparse 1 GiB file is refused from its size alone: the error reports the size the
    // file claims, not the few bytes a read would have been cut to.
    let big = root.join("big.yaml");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(1 << 30))
        .expect("sparse file");
    let small = Limits {
        max_bytes: 1 << 20,
        ..Limits::default()
    };
    let err = read_output(root, small).expect_err("too many bytes");
    assert_eq!(
        err.to_string(),
        "output holds more than 1048576 bytes (KRATIX_OUTPUT_MAX_BYTES=1048576); the limit was exceeded at big.yaml (1073741824 bytes)"
    );
}

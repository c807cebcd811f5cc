//! The house's rules of direction, read from the sources: decision files do no I/O (they name
//! neither the controllers' `Runtime`, nor the `ControlPlane`, nor tokio, nor a store backend),
//! they use nothing of the controllers but other decision files, and the Kubernetes backend
//! never imports the controllers it serves.

use std::path::{Path, PathBuf};

/// What a decision file must not name: the I/O of the controllers, the control plane and its
/// backends, the async runtime, and the state stores' and clients' backends.
const FORBIDDEN_IN_DECISIONS: &[&str] = &[
    "Runtime",
    "ControlPlane",
    "tokio",
    "async",
    "await",
    "EmbeddedStore",
    "store::embedded",
    "crate::kube",
    "rusqlite",
    "statestores::git",
    "statestores::bucket",
    "reqwest",
    "bollard",
];

/// The pure modules that do not follow the `decide` naming: the scheduler, the turning of a
/// pipeline's output into workload groups, the writer's layout, plan, summaries and conditions,
/// a run's outcome and `status.yaml` check, a Promise's summary and requirements, the state of
/// Works, the shapes of statuses, times, and what a reconcile answers. Checked as decision
/// files are.
const PURE_MODULES: &[&str] = &[
    "src/controllers/work/schedule",
    "src/controllers/work/from_output",
    "src/controllers/work/state.rs",
    "src/controllers/placement/layout",
    "src/controllers/placement/plan.rs",
    "src/controllers/placement/summary.rs",
    "src/controllers/placement/conditions.rs",
    "src/controllers/placement/invalid.rs",
    "src/controllers/subject.rs",
    "src/controllers/run/outcome.rs",
    "src/controllers/run/status_yaml.rs",
    "src/controllers/promise/summary.rs",
    "src/controllers/promise/requirements.rs",
    "src/controllers/status_value.rs",
    "src/controllers/kube_time.rs",
    "src/controllers/next.rs",
    "src/controllers/platform_sync/budget.rs",
    "src/controllers/platform_sync/entry.rs",
    "src/controllers/platform_sync/deletion.rs",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// A decision file: named `decide.rs`, inside a `decide` folder, or one of [`PURE_MODULES`].
fn is_decision(relative: &str) -> bool {
    relative.ends_with("/decide.rs")
        || relative.contains("/decide/")
        || PURE_MODULES.iter().any(|m| relative.starts_with(m))
}

/// The forbidden names `source` uses outside comments, with their line numbers.
fn forbidden_uses(source: &str, forbidden: &[&str]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        for name in forbidden {
            let mut from = 0;
            while let Some(at) = code[from..].find(name) {
                let start = from + at;
                let end = start + name.len();
                let before = code[..start].chars().next_back();
                let after = code[end..].chars().next();
                let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                if !ident(before) && !ident(after) {
                    out.push((n + 1, (*name).to_string()));
                }
                from = end;
            }
        }
    }
    out
}

#[test]
fn the_scanner_finds_what_it_looks_for() {
    let cases = [
        ("use crate::controllers::Runtime;", vec!["Runtime"]),
        (
            "async fn f(cp: &dyn ControlPlane) {}",
            vec!["ControlPlane", "async"],
        ),
        ("let x = tokio::spawn(f);", vec!["tokio"]),
        ("// the Runtime acts on this", vec![]),
        ("fn runtime_free(shortcut: u8) {}", vec![]),
        ("let d = RuntimeSettings::default();", vec![]),
        ("use crate::kube::leader;", vec!["crate::kube"]),
    ];
    for (source, want) in cases {
        let got: Vec<String> = forbidden_uses(source, FORBIDDEN_IN_DECISIONS)
            .into_iter()
            .map(|(_, name)| name)
            .collect();
        assert_eq!(got, want, "{source}");
    }
}

#[test]
fn decision_files_do_no_io() {
    let root = root();
    let files: Vec<(String, PathBuf)> = rust_files(&root.join("src/controllers"))
        .into_iter()
        .filter_map(|p| {
            let relative = p.strip_prefix(&root).ok()?.to_string_lossy().into_owned();
            is_decision(&relative).then_some((relative, p))
        })
        .collect();
    // The rule holds over something: every kind folder that decides has its decision files.
    for expected in [
        "src/controllers/request/decide.rs",
        "src/controllers/promise/decide.rs",
        "src/controllers/workflow/decide/next_step.rs",
        "src/controllers/work/schedule/mod.rs",
        "src/controllers/placement/plan.rs",
    ] {
        assert!(
            files.iter().any(|(r, _)| r == expected),
            "{expected} is a decision file"
        );
    }
    let mut offences = Vec::new();
    for (relative, path) in &files {
        let source = std::fs::read_to_string(path).expect("a readable source file");
        for (line, name) in forbidden_uses(&source, FORBIDDEN_IN_DECISIONS) {
            offences.push(format!("{relative}:{line}: names {name}"));
        }
    }
    assert!(
        offences.is_empty(),
        "decision files must not do I/O:\n{}",
        offences.join("\n")
    );
}

/// Every path into the controllers that `source` names outside comments (`use` or inline),
/// as the segments after `crate::controllers::`, with its line number.
fn controller_paths(source: &str) -> Vec<(usize, Vec<String>)> {
    const PREFIX: &str = "crate::controllers";
    let mut out = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let mut from = 0;
        while let Some(at) = code[from..].find(PREFIX) {
            let rest = &code[from + at + PREFIX.len()..];
            let mut segments = Vec::new();
            let mut tail = rest;
            while let Some(next) = tail.strip_prefix("::") {
                let ident: String = next
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if ident.is_empty() {
                    break;
                }
                tail = &next[ident.len()..];
                segments.push(ident);
            }
            out.push((n + 1, segments));
            from += at + PREFIX.len();
        }
    }
    out
}

/// The file of the module a path into the controllers names: its longest prefix that is a
/// module file, relative to the repository (`src/controllers/mod.rs` for the floor itself).
fn module_file(root: &Path, segments: &[String]) -> String {
    for len in (1..=segments.len()).rev() {
        let dir = format!("src/controllers/{}", segments[..len].join("/"));
        for candidate in [format!("{dir}.rs"), format!("{dir}/mod.rs")] {
            if root.join(&candidate).is_file() {
                return candidate;
            }
        }
    }
    "src/controllers/mod.rs".to_string()
}

#[test]
fn the_path_scanner_finds_the_module_named() {
    let root = root();
    let cases = [
        (
            "use crate::controllers::workflow::decide::Step;",
            "src/controllers/workflow/decide/mod.rs",
        ),
        (
            "use crate::controllers::workflow::decide::history::read_history;",
            "src/controllers/workflow/decide/history.rs",
        ),
        ("use crate::controllers::Next;", "src/controllers/mod.rs"),
        (
            "let c = crate::controllers::work::state::works_succeeded_condition(s);",
            "src/controllers/work/state.rs",
        ),
        (
            "use crate::controllers::{status, Runtime};",
            "src/controllers/mod.rs",
        ),
    ];
    for (source, want) in cases {
        let found: Vec<String> = controller_paths(source)
            .into_iter()
            .map(|(_, segments)| module_file(&root, &segments))
            .collect();
        assert_eq!(found, vec![want.to_string()], "{source}");
    }
    assert!(controller_paths("// crate::controllers::Runtime acts").is_empty());
}

#[test]
fn decision_files_use_only_pure_modules_of_the_controllers() {
    let root = root();
    let mut offences = Vec::new();
    for path in rust_files(&root.join("src/controllers")) {
        let relative = path
            .strip_prefix(&root)
            .expect("under the root")
            .to_string_lossy()
            .into_owned();
        if !is_decision(&relative) {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("a readable source file");
        for (line, segments) in controller_paths(&source) {
            let target = module_file(&root, &segments);
            if !is_decision(&target) {
                offences.push(format!(
                    "{relative}:{line}: uses crate::controllers::{} (in {target}, which does I/O)",
                    segments.join("::")
                ));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "decision files must use only pure modules:\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_kubernetes_backend_does_not_import_the_controllers() {
    let root = root();
    let mut offences = Vec::new();
    for path in rust_files(&root.join("src/kube")) {
        let source = std::fs::read_to_string(&path).expect("a readable source file");
        for (line, _) in forbidden_uses(&source, &["crate::controllers"]) {
            offences.push(format!("{}:{line}", path.display()));
        }
    }
    assert!(offences.is_empty(), "{}", offences.join("\n"));
}

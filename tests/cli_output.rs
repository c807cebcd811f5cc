//! What `get` prints through the binary (golden tables of stable fields: no ages, times, hashes
//! or numbered names), `-o name`, `--show-labels`, shell completions and every command's
//! `--help` examples.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use support::{fixtures, Kratix};

/// The quickstart applied and settled: a Git store, a Destination, a Promise and two requests.
fn quickstart() -> Kratix {
    let k = Kratix::new();
    let dir = fixtures().join("quickstart");
    k.run(&["apply", "-f", dir.to_str().expect("utf-8 path")])
        .assert_ok();
    k
}

/// `get ARGS` with the columns named in `drop` removed (cells are found under their header,
/// as the table left-aligns them) and the rows sorted, so that only stable fields remain.
fn table(k: &Kratix, args: &[&str], drop: &[&str]) -> String {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    let run = k.run(&full);
    run.assert_ok();
    let mut lines = run.stdout.lines();
    let header = lines.next().expect("a header line");
    // Headers are separated by three spaces; one header ("API VERSION") holds a single space.
    let mut starts = Vec::new();
    let mut names = Vec::new();
    let mut at = 0;
    for name in header.split("   ").filter(|s| !s.is_empty()) {
        let start = header[at..].find(name).expect("header found") + at;
        starts.push(start);
        names.push(name.trim());
        at = start + name.len();
    }
    let keep = |line: &str| -> String {
        let cells: Vec<String> = starts
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop.contains(&names[*i]))
            .map(|(i, &s)| {
                let end = starts.get(i + 1).copied().unwrap_or(usize::MAX);
                line.get(s..end.min(line.len()))
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            })
            .collect();
        cells.join(" | ").trim_end().to_string()
    };
    let mut rows: Vec<String> = lines.map(keep).collect();
    rows.sort();
    let mut out = keep(header);
    for row in rows {
        out.push('\n');
        out.push_str(&row);
    }
    out
}

#[test]
fn get_prints_kratix_printer_columns_for_every_kind() {
    let k = quickstart();
    let cases: &[(&[&str], &[&str], &str)] = &[
        (
            &["promises"],
            &[],
            "NAME | STATUS | KIND | API VERSION | VERSION | MESSAGE
webapp | Available | WebApp | example.kratix.io/v1alpha1 | v0.1.0 | Promise configured",
        ),
        (
            &["promises", "-o", "wide"],
            &[],
            "NAME | STATUS | KIND | API VERSION | VERSION | MESSAGE | GENERATION | OBSERVED | LABELS
webapp | Available | WebApp | example.kratix.io/v1alpha1 | v0.1.0 | Promise configured | 1 | 1 | kratix.io/promise-version=v0.1.0",
        ),
        (
            &["webapps"],
            &[],
            "NAME | STATUS | MESSAGE
blog | Reconciled | Resource requested
shop | Reconciled | Resource requested",
        ),
        (
            &["destinations", "-o", "wide"],
            &[],
            "NAME | STATESTOREKIND | STATESTORENAME | READY | PATH | MESSAGE | GENERATION | OBSERVED | LABELS
worker-1 | GitStateStore | default | True | worker-1 | Test documents written to State Store | 1 | 1 | environment=dev",
        ),
        (
            &["gitstatestores"],
            &[],
            "NAME | URL | BRANCH | READY
default | state-store.git | main | True",
        ),
        (
            &["works", "-A"],
            &[],
            "NAMESPACE | NAME | STATUS
default | webapp-blog-deployment | Ready
default | webapp-blog-service | Ready
default | webapp-blog-validate | Ready
default | webapp-shop-deployment | Ready
default | webapp-shop-service | Ready
default | webapp-shop-validate | Ready
kratix-platform-system | webapp-setup | Ready
kratix-platform-system | webapp-static-deps | Ready",
        ),
        (
            &["workplacements", "-n", "default", "-o", "wide"],
            &["VERSION", "LABELS"],
            "NAME | DESTINATION | STATUS | PROMISE | REQUEST | GENERATION | OBSERVED
webapp-blog-deployment.worker-1-5058f | worker-1 | Ready | webapp | blog | 1 | 1
webapp-blog-service.worker-1-5058f | worker-1 | Ready | webapp | blog | 1 | 1
webapp-shop-deployment.worker-1-5058f | worker-1 | Ready | webapp | shop | 1 | 1
webapp-shop-service.worker-1-5058f | worker-1 | Ready | webapp | shop | 1 | 1",
        ),
        (
            &["pipelineruns", "-A"],
            &["NAME", "START", "COMPLETION", "DURATION"],
            "NAMESPACE | PIPELINE | ACTION | PHASE
default | deployment | configure | Succeeded
default | deployment | configure | Succeeded
default | service | configure | Succeeded
default | service | configure | Succeeded
default | validate | configure | Succeeded
default | validate | configure | Succeeded
kratix-platform-system | setup | configure | Succeeded",
        ),
    ];
    for (args, drop, want) in cases {
        assert_eq!(table(&k, args, drop), *want, "get {}", args.join(" "));
    }
    // A finished run shows how long it took.
    let runs = k.run(&["get", "pipelineruns", "-A"]);
    for line in runs.stdout.lines().skip(1) {
        let last = line.split_whitespace().last().unwrap_or_default();
        assert!(last.ends_with('s'), "a duration ends the row: {line}");
    }
}

#[test]
fn get_prints_the_printer_columns_a_promise_declares() {
    let k = Kratix::new();
    // A Promise without workflows whose API declares its own columns, one of them wide, one a
    // condition found by a filter, one whose path finds nothing.
    let promise = r#"
apiVersion: platform.kratix.io/v1alpha1
kind: Promise
metadata: {name: db}
spec:
  api:
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: databases.example.kratix.io}
    spec:
      group: example.kratix.io
      names: {kind: Database, plural: databases, singular: database}
      scope: Namespaced
      versions:
      - name: v1
        served: true
        storage: true
        schema:
          openAPIV3Schema:
            type: object
            properties:
              spec:
                type: object
                properties:
                  size: {type: integer}
                  tier: {type: string}
        additionalPrinterColumns:
        - {name: Size, type: integer, jsonPath: .spec.size}
        - {name: Tier, type: string, jsonPath: .spec.tier, priority: 1}
        - {name: Reconciled, type: string, jsonPath: '.status.conditions[?(@.type=="Reconciled")].status'}
        - {name: Owner, type: string, jsonPath: .spec.owner}
"#;
    // A column Kubernetes would refuse is refused here too, naming it, and nothing is stored.
    let broken = promise.replace(".spec.owner", "'not a [ path'");
    let refused = k.apply_yaml(&broken, &[]);
    assert_ne!(refused.status, 0, "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("spec.api.spec.versions[0].additionalPrinterColumns[3].jsonPath"),
        "{}",
        refused.stderr
    );
    assert!(k.get_json("promise", "db", None).is_none());
    k.apply_yaml(promise, &[]).assert_ok();
    k.apply_yaml(
        "apiVersion: example.kratix.io/v1\nkind: Database\nmetadata: {name: orders, namespace: default}\nspec: {size: 3, tier: gold}\n",
        &[],
    )
    .assert_ok();
    let cases: &[(&[&str], &str)] = &[
        (
            &["databases"],
            "NAME | SIZE | RECONCILED | OWNER
orders | 3 | True |",
        ),
        (
            &["databases", "-o", "wide"],
            "NAME | SIZE | TIER | RECONCILED | OWNER | GENERATION | OBSERVED | LABELS
orders | 3 | gold | True |  | 1 | 1 | kratix.io/promise-name=db",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(table(&k, args, &[]), *want, "get {}", args.join(" "));
    }
}

#[test]
fn get_names_and_labels_like_kubectl() {
    let k = quickstart();
    let names = k.run(&["get", "promises", "-o", "name"]);
    names.assert_ok();
    assert_eq!(names.stdout, "promise.platform.kratix.io/webapp\n");
    let one = k.run(&["get", "webapp", "shop", "-o", "name"]);
    assert_eq!(one.stdout, "webapp.example.kratix.io/shop\n");
    let works = k.run(&["get", "works", "-A", "-o", "name"]);
    assert_eq!(works.stdout.lines().count(), 8, "{}", works.stdout);
    assert!(works
        .stdout
        .lines()
        .all(|l| l.starts_with("work.platform.kratix.io/webapp-")));
    assert_eq!(
        table(&k, &["destinations", "--show-labels"], &[]),
        "NAME | STATESTOREKIND | STATESTORENAME | READY | LABELS
worker-1 | GitStateStore | default | True | environment=dev"
    );
    // Without the flag, no LABELS column.
    assert!(!k.run(&["get", "destinations"]).stdout.contains("LABELS"));
}

fn kratix_rs(args: &[&str]) -> support::Run {
    Command::new(support::binary())
        .args(args)
        .output()
        .expect("kratix-rs runs")
        .into()
}

#[test]
fn completion_scripts_are_generated_for_each_shell_and_offer_kinds() {
    for shell in ["bash", "zsh", "fish"] {
        let run = kratix_rs(&["completion", shell]);
        run.assert_ok();
        for word in ["kratix-rs", "apply", "get", "completion"] {
            assert!(run.stdout.contains(word), "{shell} lacks {word}");
        }
        if shell != "fish" {
            assert!(
                run.stdout.contains("promises") && run.stdout.contains("workplacements"),
                "{shell} offers the kinds"
            );
        }
    }
    let script = kratix_rs(&["completion", "bash"]).stdout;
    let mut bash = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash runs");
    bash.stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("script written");
    let checked = bash.wait_with_output().expect("bash ends");
    assert!(
        checked.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&checked.stderr)
    );
    kratix_rs(&["completion", "tcsh"]).assert_failed();
}

/// What bash's completion offers for the command line `line` (the word being typed last,
/// possibly empty), with the scripts `kratix-rs completion bash` prints, on the home of `k`.
fn bash_completes(k: &Kratix, line: &str) -> Vec<String> {
    let bin_dir = support::binary()
        .parent()
        .expect("the binary's folder")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = r#"
        source <(kratix-rs completion bash)
        read -r -a COMP_WORDS <<< "kratix-rs $LINE"
        [[ "$LINE" == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        COMP_LINE="kratix-rs $LINE"
        COMP_POINT=${#COMP_LINE}
        _kratix_rs_dynamic kratix-rs "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("PATH", path)
        .env("KRATIX_HOME", k.home())
        .env("LINE", line)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.trim().to_string())
        .collect();
    got.sort();
    got
}

#[test]
fn shells_complete_kinds_and_object_names_of_the_home() {
    let k = quickstart();
    let cases: &[(&str, &[&str])] = &[
        ("get web", &["webapps"]),
        ("get webapps ", &["blog", "shop"]),
        ("get webapps s", &["shop"]),
        ("logs webapps -n default b", &["blog"]),
        ("get webapps -n elsewhere ", &[]),
        ("get -A webapps ", &["blog", "shop"]),
        ("delete destination ", &["worker-1"]),
        ("wait promise ", &["webapp"]),
        ("--home elsewhere get promises ", &[]),
        // Not a kind or a name: clap's completion of the command definitions.
        ("get webapps -o ya", &["yaml"]),
        ("completion f", &["fish"]),
        ("get webapps --sh", &["--show-labels"]),
    ];
    for (line, want) in cases {
        assert_eq!(bash_completes(&k, line), *want, "{line:?}");
    }
    let kinds = bash_completes(&k, "get ");
    for kind in [
        "promises",
        "destinations",
        "gitstatestores",
        "webapps",
        "works",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} not in {kinds:?}");
    }
    // The same through zsh's and fish's scripts, where those shells are installed
    // (scripts/test-deps.sh installs them; a developer's machine may lack them).
    for (shell, line, want) in [
        ("zsh", "get webapps ", vec!["blog", "shop"]),
        ("zsh", "logs webapps -n default s", vec!["shop"]),
        ("fish", "get webapps ", vec!["blog", "shop"]),
        ("fish", "delete destination w", vec!["worker-1"]),
    ] {
        match other_shell_completes(&k, shell, line) {
            Some(got) => assert_eq!(got, want, "{shell}: {line:?}"),
            None => eprintln!("{shell} is not installed: its completion is not exercised"),
        }
    }
}

/// What zsh or fish completes for `line`, or `None` when the shell is not installed. zsh:
/// the wrapper called as the completion system would, `compadd` printing what it is given
/// (the real one then filters by the typed prefix, as done here).
fn other_shell_completes(k: &Kratix, shell: &str, line: &str) -> Option<Vec<String>> {
    let script_dir = tempfile::tempdir().expect("folder");
    let script = script_dir.path().join("_kratix-rs");
    std::fs::write(&script, kratix_rs(&["completion", shell]).stdout).expect("script written");
    let code = match shell {
        "zsh" => format!(
            r#"autoload -U compinit; compinit -u -d {dir}/zcompdump
               source {script}
               compadd() {{ [[ $1 == -a ]] && print -l -- ${{(P)2}} }}
               words=(kratix-rs ${{(z)LINE}}); [[ "$LINE" == *" " ]] && words+=("")
               CURRENT=${{#words}}
               _kratix-rs-dynamic | grep -- "^${{words[CURRENT]}}""#,
            dir = script_dir.path().display(),
            script = script.display()
        ),
        _ => format!(
            r#"source {script}; complete -C "kratix-rs $LINE""#,
            script = script.display()
        ),
    };
    let bin_dir = support::binary().parent()?.to_path_buf();
    let out = Command::new(shell)
        .arg("-c")
        .arg(code)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("KRATIX_HOME", k.home())
        .env("LINE", line)
        .output()
        .ok()?;
    let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    got.sort();
    Some(got)
}

#[test]
fn zsh_and_fish_scripts_ask_for_kinds_and_names() {
    let zsh = kratix_rs(&["completion", "zsh"]).stdout;
    assert!(zsh.starts_with("#compdef kratix-rs"), "{zsh}");
    assert!(zsh.contains("kratix-rs __complete -- \"${(@)words[2,CURRENT]}\""));
    assert!(zsh
        .trim_end()
        .ends_with("compdef _kratix-rs-dynamic kratix-rs\nfi"));
    let fish = kratix_rs(&["completion", "fish"]).stdout;
    assert!(fish.contains("kratix-rs __complete -- (commandline -opc)[2..-1] (commandline -ct)"));
    // The helper itself never shows among the commands.
    for script in [&zsh, &fish, &kratix_rs(&["completion", "bash"]).stdout] {
        assert_eq!(script.matches("__complete").count(), 1, "{script}");
    }
    assert!(!kratix_rs(&["--help"]).stdout.contains("__complete"));
}

#[test]
fn every_command_help_has_examples() {
    let top = kratix_rs(&["--help"]);
    top.assert_ok();
    assert!(top.stdout.contains("Examples:"), "{}", top.stdout);
    let commands: Vec<String> = top
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect();
    assert!(commands.len() >= 13, "{commands:?}");
    for command in &commands {
        let help = kratix_rs(&[command, "--help"]);
        help.assert_ok();
        let examples = help.stdout.split_once("Examples").map_or_else(
            || panic!("{command} --help has no Examples: {}", help.stdout),
            |(_, rest)| rest,
        );
        assert!(
            examples.contains(&format!("kratix-rs {command}")),
            "{command}'s examples run it: {examples}"
        );
    }
}

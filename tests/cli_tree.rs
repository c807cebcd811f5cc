//! `tree KIND NAME` through the binary, on the quick start: golden trees (commits and run
//! sequence numbers masked, the rest is stable), and DOT and Mermaid checked for structure.

mod support;

use std::collections::BTreeSet;

use support::{fixtures, Kratix};

fn quickstart() -> Kratix {
    let k = Kratix::new();
    k.run(&[
        "apply",
        "-f",
        &fixtures().join("quickstart").display().to_string(),
    ])
    .assert_ok();
    k
}

/// Commits and the sequence numbers in run names differ from run to run.
fn masked(text: &str) -> String {
    let commit = regex::Regex::new("commit [0-9a-f]{12}").expect("valid regex");
    let run = regex::Regex::new(r"(PipelineRun/\S+)-\d+ ").expect("valid regex");
    let text = commit.replace_all(text, "commit <sha>");
    run.replace_all(&text, "$1-N ").into_owned()
}

#[track_caller]
fn tree(k: &Kratix, args: &[&str]) -> String {
    let mut all = vec!["tree"];
    all.extend_from_slice(args);
    let run = k.run(&all);
    run.assert_ok();
    run.stdout
}

const SHOP: &str = "\
WebApp/default/shop  Reconciled
|-- PipelineRun/webapp-shop-validate-N  validate configure Succeeded
|   `-- Work/webapp-shop-validate  Ready
|-- PipelineRun/webapp-shop-deployment-N  deployment configure Succeeded
|   `-- Work/webapp-shop-deployment  Ready
|       `-- WorkPlacement/webapp-shop-deployment.worker-1-5058f  destination worker-1, WriteSucceeded
|           `-- GitStateStore/default  commit <sha>
|               `-- worker-1/resources/default/webapp/shop/deployment/5058f/deployment.yaml
`-- PipelineRun/webapp-shop-service-N  service configure Succeeded
    `-- Work/webapp-shop-service  Ready
        `-- WorkPlacement/webapp-shop-service.worker-1-5058f  destination worker-1, WriteSucceeded
            `-- GitStateStore/default  commit <sha>
                `-- worker-1/resources/default/webapp/shop/service/5058f/service.yaml
";

#[test]
fn trees_of_a_request_a_promise_and_a_destination() {
    let k = quickstart();
    assert_eq!(masked(&tree(&k, &["webapp", "shop"])), SHOP);
    assert_eq!(
        masked(&tree(&k, &["wa", "shop", "-n", "default", "-o", "text"])),
        SHOP,
        "short names and -o text"
    );

    let promise = masked(&tree(&k, &["promise", "webapp"]));
    let head = "\
Promise/webapp  Available
|-- PipelineRun/webapp-setup-N  setup configure Succeeded
|   `-- Work/webapp-setup  Ready
|       `-- WorkPlacement/webapp-setup.worker-1-5058f  destination worker-1, WriteSucceeded
|           `-- GitStateStore/default  commit <sha>
|               `-- worker-1/dependencies/webapp/setup/5058f/quota.yaml
|-- Work/webapp-static-deps  Ready
|   `-- WorkPlacement/webapp-static-deps.worker-1-5058f  destination worker-1, WriteSucceeded
|       `-- GitStateStore/default  commit <sha>
|           `-- worker-1/dependencies/webapp/5058f/static/webapp-dependencies.yaml
|-- WebApp/default/blog  Reconciled
";
    assert!(promise.starts_with(head), "{promise}");
    let indented: String = SHOP
        .lines()
        .enumerate()
        .map(|(i, l)| match i {
            0 => format!("`-- {l}\n"),
            _ => format!("    {l}\n"),
        })
        .collect();
    assert!(promise.ends_with(&indented), "{promise}");

    let destination = masked(&tree(&k, &["destination", "worker-1"]));
    assert!(
        destination.starts_with("Destination/worker-1  GitStateStore default, Ready\n"),
        "{destination}"
    );
    assert_eq!(
        destination.matches("|-- WorkPlacement/").count()
            + destination.matches("`-- WorkPlacement/").count(),
        6,
        "every placement on the Destination: {destination}"
    );
}

/// Node ids and edges of a DOT or Mermaid graph, by the patterns each uses.
fn graph(text: &str, node: &str, edge: &str) -> (BTreeSet<String>, Vec<(String, String)>) {
    let node = regex::Regex::new(node).expect("valid regex");
    let edge = regex::Regex::new(edge).expect("valid regex");
    let mut nodes = BTreeSet::new();
    let mut edges = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(c) = edge.captures(line) {
            edges.push((c[1].to_string(), c[2].to_string()));
        } else if let Some(c) = node.captures(line) {
            nodes.insert(c[1].to_string());
        }
    }
    (nodes, edges)
}

/// A tree: every edge joins declared nodes, every node but the root has one parent.
#[track_caller]
fn assert_tree(nodes: &BTreeSet<String>, edges: &[(String, String)], count: usize) {
    assert_eq!(nodes.len(), count);
    assert_eq!(edges.len(), count - 1);
    let children: BTreeSet<&String> = edges.iter().map(|(_, c)| c).collect();
    assert_eq!(children.len(), edges.len(), "one parent each");
    for (parent, child) in edges {
        assert!(nodes.contains(parent) && nodes.contains(child));
    }
}

#[test]
fn dot_and_mermaid_pictures_are_well_formed() {
    let k = quickstart();
    let text_lines = tree(&k, &["webapp", "shop"]).lines().count();

    let dot = tree(&k, &["webapp", "shop", "-o", "dot"]);
    assert!(
        dot.starts_with("digraph kratix {\n") && dot.ends_with("}\n"),
        "{dot}"
    );
    let (nodes, edges) = graph(
        &dot,
        r#"^(n\d+) \[label="(?:[^"\\]|\\.)*"\];$"#,
        r"^(n\d+) -> (n\d+);$",
    );
    assert_tree(&nodes, &edges, text_lines);
    assert!(
        dot.contains("[label=\"WebApp/default/shop\\nReconciled\"];"),
        "{dot}"
    );

    let mermaid = tree(&k, &["webapp", "shop", "-o", "mermaid"]);
    assert!(mermaid.starts_with("flowchart LR\n"), "{mermaid}");
    let (nodes, edges) = graph(&mermaid, r#"^(n\d+)\["[^"]*"\]$"#, r"^(n\d+) --> (n\d+)$");
    assert_tree(&nodes, &edges, text_lines);

    if std::process::Command::new("dot").arg("-V").output().is_ok() {
        let mut svg = std::process::Command::new("dot")
            .arg("-Tsvg")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("dot runs");
        use std::io::Write;
        svg.stdin
            .take()
            .expect("piped")
            .write_all(dot.as_bytes())
            .expect("dot reads");
        let out = svg.wait_with_output().expect("dot ends");
        assert!(out.status.success(), "dot accepts the graph");
    }
}

#[test]
fn tree_refuses_kinds_it_cannot_show_and_names_missing_objects() {
    let k = quickstart();
    let work = k.run(&["tree", "works", "webapp-setup"]);
    work.assert_failed();
    assert!(
        work.stderr.contains(
            "tree shows Promises, requests (kinds Promises define) and Destinations, not Work"
        ),
        "{}",
        work.stderr
    );
    let missing = k.run(&["tree", "webapp", "nope"]);
    missing.assert_failed();
    assert!(
        missing.stderr.contains("WebApp default/nope not found"),
        "{}",
        missing.stderr
    );
    let unknown = k.run(&["tree", "gadgets", "x"]);
    unknown.assert_failed();
    assert!(
        unknown.stderr.contains("unknown kind \"gadgets\""),
        "{}",
        unknown.stderr
    );
}

#[test]
fn on_a_terminal_branches_are_box_drawing() {
    let k = quickstart();
    let command = format!(
        "{} --home {} tree webapp shop",
        support::binary().display(),
        k.home().display()
    );
    // `script` gives the command a pseudo-terminal as its standard output.
    let out = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env_remove("KRATIX_HOME")
        .output()
        .expect("script (util-linux) runs");
    assert!(out.status.success(), "{out:?}");
    let shown = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    let want = SHOP
        .replace("|-- ", "├── ")
        .replace("`-- ", "└── ")
        .replace("|   ", "│   ");
    assert_eq!(masked(&shown), want);
}

#[test]
fn tree_and_diff_complete_in_every_shell() {
    let k = Kratix::new();
    for shell in ["bash", "zsh", "fish"] {
        let script = k.run(&["completion", shell]);
        script.assert_ok();
        for command in ["tree", "diff", "mermaid"] {
            assert!(script.stdout.contains(command), "{shell} lacks {command}");
        }
    }
}

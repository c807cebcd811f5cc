//! Progress of the waiting commands through the binary — plain lines on standard error when it
//! is not a terminal, lines redrawn in place under a pseudo-terminal, JSON events with `-o
//! json`, nothing with `--quiet` — with standard output kept as scripts read it; and `get -w`.

mod support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::Value;
use support::{fixtures, Kratix};

fn quickstart_dir() -> String {
    fixtures()
        .join("quickstart")
        .to_str()
        .expect("utf-8 path")
        .to_string()
}

/// The lines of `text` that start with `prefix`, in order.
fn lines_of<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(prefix)).collect()
}

#[test]
fn plain_progress_goes_to_stderr_and_stdout_stays_as_scripts_read_it() {
    let k = Kratix::new();
    let run = k.run(&["apply", "-f", &quickstart_dir()]);
    run.assert_ok();
    let stdout: Vec<&str> = run.stdout.lines().take(6).collect();
    assert_eq!(
        stdout,
        [
            "gitstatestore/default created",
            "destination/worker-1 created",
            "promise/webapp created",
            "webapp/shop created",
            "webapp/blog created",
            "all 5 objects settled",
        ],
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains(": settled"), "{}", run.stdout);
    for label in [
        "gitstatestore/default",
        "destination/worker-1",
        "promise/webapp",
        "webapp/shop",
    ] {
        let lines = lines_of(&run.stderr, &format!("{label}: "));
        assert_eq!(
            lines.last().copied(),
            Some(format!("{label}: settled").as_str()),
            "{label} ends settled:\n{}",
            run.stderr
        );
    }
    // The request's files: both pipelines that write, each to the Destination, before it settled.
    let shop = lines_of(&run.stderr, "webapp/shop: ");
    let written = shop
        .iter()
        .filter(|l| l.starts_with("webapp/shop: written to worker-1 at "))
        .count();
    assert_eq!(written, 2, "{}", run.stderr);
    assert!(
        shop.iter().any(|l| l.contains("pipeline service (3 of 3)")),
        "{}",
        run.stderr
    );

    let deleted = k.run(&["delete", "webapp", "blog"]);
    deleted.assert_ok();
    assert_eq!(deleted.stdout, "webapp/blog deleted\n");
    assert_eq!(
        lines_of(&deleted.stderr, "webapp/blog: ").last().copied(),
        Some("webapp/blog: deleted"),
        "{}",
        deleted.stderr
    );

    let quiet = k.run(&["reconcile", "webapp", "shop", "--quiet"]);
    quiet.assert_ok();
    assert_eq!(
        quiet.stdout,
        "webapp shop reconciliation requested\nreconciled\n"
    );
    assert!(
        lines_of(&quiet.stderr, "webapp/shop").is_empty(),
        "{}",
        quiet.stderr
    );
}

#[test]
fn json_progress_is_one_event_per_line_on_stdout() {
    let k = Kratix::new();
    let run = k.run(&["apply", "-f", &quickstart_dir(), "-o", "json"]);
    run.assert_ok();
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?} is not JSON: {e}")))
        .collect();
    let of = |event: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["event"] == event)
            .map(|e| {
                format!(
                    "{}/{}",
                    e["kind"].as_str().unwrap_or(""),
                    e["name"].as_str().unwrap_or("")
                )
            })
            .collect()
    };
    let everything = [
        "GitStateStore/default",
        "Destination/worker-1",
        "Promise/webapp",
        "WebApp/shop",
        "WebApp/blog",
    ];
    assert_eq!(of("Applied"), everything, "{}", run.stdout);
    let mut settled = of("Settled");
    settled.sort();
    let mut want = everything.to_vec();
    want.sort_unstable();
    assert_eq!(settled, want, "{}", run.stdout);
    assert!(
        events.iter().any(|e| e["event"] == "Written"
            && e["name"] == "shop"
            && e["destination"] == "worker-1"
            && e["commit"].as_str().is_some_and(|c| c.len() == 40)),
        "{}",
        run.stdout
    );
    assert_eq!(
        events.last().map(|e| e["event"].clone()),
        Some(Value::from("AllSettled"))
    );
    assert!(!run.stderr.contains(": settled"), "{}", run.stderr);

    let waited = k.run(&[
        "wait",
        "webapp",
        "shop",
        "--for",
        "condition=Reconciled",
        "-o",
        "json",
    ]);
    waited.assert_ok();
    let last: Value = serde_json::from_str(waited.stdout.lines().last().unwrap_or_default())
        .expect("a JSON event");
    assert_eq!(last["event"], "ConditionMet");
    assert_eq!(last["condition"], "Reconciled");
}

#[test]
fn on_a_terminal_each_object_has_one_line_redrawn_in_place() {
    let k = Kratix::new();
    let binary = support::binary();
    let command = format!(
        "{} --home {} apply -f {}",
        binary.display(),
        k.home().display(),
        quickstart_dir()
    );
    // `script` (util-linux / bsdutils) gives the command a pseudo-terminal for both streams.
    let out = std::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env_remove("KRATIX_HOME")
        .stdin(Stdio::null())
        .output()
        .expect("script(1) from util-linux runs");
    let text = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    assert!(out.status.success(), "{text}");
    assert!(text.contains("webapp/shop created\n"), "{text}");
    assert!(text.contains("all 5 objects settled\n"), "{text}");
    // Redrawn: the cursor goes back up over the block, and each line is cleared first.
    assert!(text.contains("\x1b[5A"), "{text:?}");
    let last_block: Vec<&str> = text
        .rsplit("\x1b[5A")
        .next()
        .unwrap_or_default()
        .split('\n')
        .filter(|l| l.contains("\x1b[2K"))
        .map(|l| l.trim_start_matches('\r').trim_start_matches("\x1b[2K"))
        .collect();
    assert_eq!(last_block.len(), 5, "{text:?}");
    for line in &last_block {
        assert!(line.contains("  settled"), "{line:?} in {text:?}");
    }
    assert!(
        last_block.iter().any(
            |l| l.starts_with("webapp/shop ") && l.contains("settled, written to worker-1 at ")
        ),
        "{last_block:?}"
    );
    // Not the plain lines.
    assert!(!text.contains("webapp/shop: "), "{text}");
}

const BROKEN: &str = r#"
apiVersion: platform.kratix.io/v1alpha1
kind: Promise
metadata:
  name: broken
spec:
  api:
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: brokens.example.com
    spec:
      group: example.com
      names: {kind: Broken, plural: brokens, singular: broken}
      scope: Namespaced
      versions:
        - name: v1
          served: true
          storage: true
          schema:
            openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  workflows:
    resource:
      configure:
        - apiVersion: platform.kratix.io/v1alpha1
          kind: Pipeline
          metadata: {name: fail}
          spec:
            containers:
              - name: fail
                image: local/sh
                command: [sh, -c, 'echo "no luck" >&2; exit 3']
---
apiVersion: example.com/v1
kind: Broken
metadata:
  name: b
  namespace: default
spec: {}
"#;

#[test]
fn a_failure_is_shown_with_its_reason_and_recorded_as_a_warning_event() {
    let k = Kratix::new();
    let run = k.apply_yaml(BROKEN, &["--timeout", "60"]);
    run.assert_failed();
    let failed = lines_of(&run.stderr, "broken/b: failed: ");
    assert_eq!(failed.len(), 1, "{}", run.stderr);

    let warning = support::event_of(&k, "broken", "b", "PipelineFailed");
    assert_eq!(warning["type"], "Warning");
    assert_eq!(warning["involvedObject"]["name"], "b");
    assert!(
        warning["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("configure pipeline fail failed")),
        "{warning}"
    );
}

#[test]
fn events_are_recorded_counted_and_listed_like_kubectls() {
    let k = Kratix::new();
    k.run(&["apply", "-f", &quickstart_dir(), "-q"]).assert_ok();
    for _ in 0..2 {
        k.run(&["reconcile", "webapp", "shop", "-q"]).assert_ok();
    }
    let listed = k.run(&["events", "webapp", "shop", "-o", "json"]);
    listed.assert_ok();
    let list: Value = serde_json::from_str(&listed.stdout).expect("a JSON list");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    assert!(items.iter().all(|e| e["involvedObject"]["name"] == "shop"
        && e["kind"] == "Event"
        && e["apiVersion"] == "v1"));
    // The same (object, reason, message) is one event whose count grows.
    let started: Vec<&Value> = items
        .iter()
        .filter(|e| e["message"] == "configure pipeline validate (1 of 3) started")
        .collect();
    assert_eq!(started.len(), 1, "{}", listed.stdout);
    assert_eq!(started[0]["count"], 3, "{}", started[0]);
    assert_eq!(started[0]["reason"], "PipelineStarted");
    assert!(started[0]["firstTimestamp"].as_str() <= started[0]["lastTimestamp"].as_str());

    let all = k.run(&["events", "-A"]);
    all.assert_ok();
    let header = all.stdout.lines().next().unwrap_or_default();
    let columns: Vec<&str> = header
        .split("   ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        columns,
        [
            "NAMESPACE",
            "LAST SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "MESSAGE"
        ]
    );
    for (reason, object) in [
        ("PromiseAvailable", "promise/webapp"),
        ("WorkWritten", "workplacement/webapp-shop-deployment"),
        ("PipelineSucceeded", "webapp/blog"),
    ] {
        assert!(
            all.stdout
                .lines()
                .any(|l| l.contains(&format!(" {reason} ")) && l.contains(object)),
            "{reason} of {object}:\n{}",
            all.stdout
        );
    }
    let promises = k.run(&["events", "promise"]);
    promises.assert_ok();
    assert!(
        promises
            .stdout
            .lines()
            .skip(1)
            .all(|l| l.contains("promise/webapp")),
        "{}",
        promises.stdout
    );
    assert!(promises.stdout.lines().count() > 1, "{}", promises.stdout);
}

/// Ages, times, commits, numbered run names and hashes replaced, and columns joined by ` | `, so
/// that only stable fields remain.
fn stable(text: &str) -> String {
    let replacements = [
        (r"\d{4}-\d\d-\d\dT[0-9:.]+Z", "TIME"),
        (r"\b[0-9a-f]{12}\b", "COMMIT"),
        (r"\b(\d+[hms])+\b", "AGE"),
        (r"(?m)-\d+$", "-N"),
        (r"/[0-9a-f]{5}/", "/HASH/"),
        (r"-[0-9a-f]{5}\b", "-HASH"),
    ];
    let mut out = text.to_string();
    for (pattern, with) in replacements {
        out = regex::Regex::new(pattern)
            .expect("a pattern")
            .replace_all(&out, with)
            .into_owned();
    }
    let spaces = regex::Regex::new(r"\S {2,}").expect("a pattern");
    out.lines()
        .map(|l| {
            let body = l.trim_start();
            let indent = &l[..l.len() - body.len()];
            let joined =
                spaces.replace_all(body, |c: &regex::Captures| format!("{} | ", &c[0][..1]));
            format!("{indent}{joined}\n")
        })
        .collect()
}

#[test]
fn describe_shows_conditions_pipelines_destinations_and_events() {
    let k = Kratix::new();
    k.run(&["apply", "-f", &quickstart_dir(), "-q"]).assert_ok();
    let run = k.run(&["describe", "webapp", "shop"]);
    run.assert_ok();
    let text = stable(&run.stdout);
    let (head, events) = text.split_once("Events:\n").expect("an Events section");
    assert_eq!(
        head,
        "\
Name: | shop
Namespace: | default
Kind: | WebApp
API Version: | example.kratix.io/v1alpha1
Labels: | kratix.io/promise-name=webapp
Annotations: | <none>
Created: | TIME (AGE ago)
Generation: | 1 (observed 1)
Promise: | webapp
Status: | Resource requested
Conditions:
  TYPE | STATUS | REASON | AGE | MESSAGE
  PromiseAvailable | True | PromiseAvailable | AGE | Promise is available
  Reconciled | True | Reconciled | AGE | Reconciled
  ConfigureWorkflowCompleted | True | PipelinesExecutedSuccessfully | AGE | Pipelines completed
  WorksSucceeded | True | WorksSucceeded | AGE | All works associated with this resource are ready
Pipelines:
  PIPELINE | ACTION | PHASE | ATTEMPTS | DURATION | EXIT CODE | LAST RUN
  validate | configure | Succeeded | 1 | AGE | 0 | webapp-shop-validate-N
  deployment | configure | Succeeded | 1 | AGE | 0 | webapp-shop-deployment-N
  service | configure | Succeeded | 1 | AGE | 0 | webapp-shop-service-N
Destinations:
  worker-1: commit COMMIT, 1 files, Ready=True (pipeline deployment)
    added | worker-1/resources/default/webapp/shop/deployment/HASH/deployment.yaml
  worker-1: commit COMMIT, 1 files, Ready=True (pipeline service)
    added | worker-1/resources/default/webapp/shop/service/HASH/service.yaml
"
    );
    let mut rows: Vec<&str> = events.lines().skip(1).collect();
    rows.sort_unstable();
    assert_eq!(
        events.lines().next(),
        Some("  LAST SEEN | TYPE | REASON | OBJECT | MESSAGE")
    );
    assert_eq!(
        rows,
        [
            "  AGE | Normal | PipelineStarted | webapp/shop | configure pipeline deployment (2 of 3) started",
            "  AGE | Normal | PipelineStarted | webapp/shop | configure pipeline service (3 of 3) started",
            "  AGE | Normal | PipelineStarted | webapp/shop | configure pipeline validate (1 of 3) started",
            "  AGE | Normal | PipelineSucceeded | webapp/shop | configure pipeline deployment succeeded",
            "  AGE | Normal | PipelineSucceeded | webapp/shop | configure pipeline service succeeded",
            "  AGE | Normal | PipelineSucceeded | webapp/shop | configure pipeline validate succeeded",
            "  AGE | Normal | WorkWritten | workplacement/webapp-shop-deployment.worker-1-HASH | written to Destination worker-1 at COMMIT: 1 added, 0 changed, 0 deleted",
            "  AGE | Normal | WorkWritten | workplacement/webapp-shop-service.worker-1-HASH | written to Destination worker-1 at COMMIT: 1 added, 0 changed, 0 deleted",
        ],
        "{}",
        run.stdout
    );

    // Every kind describes, credentials never shown.
    for (kind, name) in [
        ("promise", "webapp"),
        ("destination", "worker-1"),
        ("gitstatestore", "default"),
    ] {
        let run = k.run(&["describe", kind, name]);
        run.assert_ok();
        assert!(
            run.stdout.starts_with(&format!("Name:           {name}\n")),
            "{}",
            run.stdout
        );
        assert!(run.stdout.contains("\nConditions:\n"), "{}", run.stdout);
    }
    k.run(&["describe", "webapp", "nothing"]).assert_failed();
}

#[test]
fn get_watch_prints_the_rows_then_one_per_change() {
    let k = Kratix::new();
    k.run(&["apply", "-f", &quickstart_dir(), "-q"]).assert_ok();
    let mut child = k
        .command(&["get", "webapps", "-w", "--timeout", "20"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("get -w starts");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut next = || lines.next().and_then(Result::ok).unwrap_or_default();
    let first: Vec<String> = (0..3).map(|_| next()).collect();
    assert!(first[0].starts_with("NAME "), "{first:?}");
    assert!(
        first[1].starts_with("blog ") && first[2].starts_with("shop "),
        "{first:?}"
    );
    // Listed: changes from now on are watched.
    k.run(&["delete", "webapp", "blog", "-q"]).assert_ok();
    let change = next();
    assert!(change.starts_with("blog "), "{change:?}");
    let _ = child.kill();
    let _ = child.wait();
}

/// The controllers remove events nobody saw for a day as they start, not only once they record
/// one: a home whose objects are all settled gets rid of old events too.
#[test]
fn old_events_go_when_the_controllers_start() {
    let mut k = Kratix::new();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let platform = kratix::platform::Platform::open(k.home()).expect("open the home");
        let secret: kratix::api::Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "default"},
        }))
        .expect("an object");
        let involved = kratix::events::Involved::of(&secret);
        let old = kratix::events::new_event(
            &involved,
            kratix::events::Reason::Deleted,
            "long ago",
            "2000-01-01T00:00:00Z",
        );
        let old: kratix::api::Object = serde_json::from_value(old).expect("an event");
        platform
            .store
            .create(&kratix::events::kind(), &old)
            .await
            .expect("stored");
    });
    let listed = || k.run(&["events", "-A"]);
    assert!(listed().stdout.contains("long ago"), "{}", listed().stdout);
    k.start_serve();
    support::eventually(
        "the old event to go",
        std::time::Duration::from_secs(60),
        || (!k.run(&["events", "-A"]).stdout.contains("long ago")).then_some(()),
    );
}

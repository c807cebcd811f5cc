//! `events [KIND [NAME]]`: what the controllers recorded about objects, oldest first, with
//! kubectl's columns.

use serde_json::Value;

use crate::api::{KindInfo, Object, ObjectKey};
use crate::platform::Platform;

use super::{output, OutputFormat};
use crate::api::columns::text;
use crate::api::durations::duration;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
    #[error("reading events")]
    Store(#[source] crate::store::Error),
    #[error("printing")]
    Print(#[source] serde_json::Error),
    #[error("printing")]
    PrintYaml(#[source] serde_yaml::Error),
}

pub(crate) struct EventsArgs<'a> {
    pub kind: Option<&'a str>,
    pub name: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub all_namespaces: bool,
    pub output: OutputFormat,
}

pub(crate) async fn run(platform: &Platform, args: EventsArgs<'_>) -> Result<String, Error> {
    let cp = platform.store.as_ref();
    let kind = match args.kind {
        Some(k) => Some(platform.resolve_kind(k).await?),
        None => None,
    };
    let events = if let (Some(kind), Some(name)) = (&kind, args.name) {
        let ns = kind
            .namespaced
            .then(|| args.namespace.unwrap_or("default").to_string());
        let key = ObjectKey::new(&kind.group, &kind.kind, ns.as_deref(), name);
        crate::events::of_object(cp, &key)
            .await
            .map_err(Error::Store)?
    } else {
        // Events of cluster-scoped objects live in `default`, as on Kubernetes.
        let namespace = match (&kind, args.all_namespaces) {
            (_, true) => None,
            (Some(k), false) if !k.namespaced => Some("default"),
            _ => Some(args.namespace.unwrap_or("default")),
        };
        let mut events = crate::events::all(cp, namespace)
            .await
            .map_err(Error::Store)?;
        if let Some(kind) = &kind {
            events.retain(|e| involved_is(e, kind));
        }
        events
    };
    let kind_info = crate::events::kind();
    match args.output {
        OutputFormat::Json => serde_json::to_string_pretty(&output::list_json(&kind_info, &events))
            .map(|s| s + "\n")
            .map_err(Error::Print),
        OutputFormat::Yaml => {
            serde_yaml::to_string(&output::list_json(&kind_info, &events)).map_err(Error::PrintYaml)
        }
        OutputFormat::Name => Ok(output::names(&kind_info, &events)),
        OutputFormat::Table | OutputFormat::Wide => Ok(if events.is_empty() {
            String::new()
        } else {
            table(&events, &now(), args.all_namespaces, true)
        }),
    }
}

/// Now, as the times of objects are written.
pub(crate) fn now() -> String {
    format!("{:.0}", jiff::Timestamp::now())
}

fn involved_is(event: &Object, kind: &KindInfo) -> bool {
    let field = |f: &str| text(event.data.pointer(&format!("/involvedObject/{f}")));
    let group = field("apiVersion")
        .rsplit_once('/')
        .map(|(g, _)| g.to_string())
        .unwrap_or_default();
    field("kind") == kind.kind && group == kind.group
}

/// kubectl's events table: LAST SEEN (with `(xN over AGE)` for repeats), TYPE, REASON, OBJECT
/// (when `with_object`), MESSAGE; NAMESPACE first with `-A`.
pub(crate) fn table(
    events: &[Object],
    now: &str,
    all_namespaces: bool,
    with_object: bool,
) -> String {
    let mut header = Vec::new();
    if all_namespaces {
        header.push("NAMESPACE");
    }
    header.extend(["LAST SEEN", "TYPE", "REASON"]);
    if with_object {
        header.push("OBJECT");
    }
    header.push("MESSAGE");
    let mut rows = vec![header.into_iter().map(String::from).collect::<Vec<_>>()];
    for event in events {
        let field = |f: &str| text(event.data.get(f));
        let mut row = Vec::new();
        if all_namespaces {
            row.push(event.metadata.namespace.clone().unwrap_or_default());
        }
        row.push(last_seen(event, now));
        row.push(field("type"));
        row.push(field("reason"));
        if with_object {
            row.push(format!(
                "{}/{}",
                text(event.data.pointer("/involvedObject/kind")).to_ascii_lowercase(),
                text(event.data.pointer("/involvedObject/name"))
            ));
        }
        row.push(one_line(&field("message")));
        rows.push(row);
    }
    output::render(&rows)
}

/// `5s`, or `5s (x3 over 2m10s)` for an event seen more than once.
pub(crate) fn last_seen(event: &Object, now: &str) -> String {
    let at = |f: &str| text(event.data.get(f));
    let age = |since: &str| {
        let d = duration(since, now);
        if d.is_empty() {
            "0s".to_string()
        } else {
            d
        }
    };
    let last = age(&at("lastTimestamp"));
    match event.data.get("count").and_then(Value::as_i64) {
        Some(n) if n > 1 => format!("{last} (x{n} over {})", age(&at("firstTimestamp"))),
        _ => last,
    }
}

/// Messages stay on their row.
pub(crate) fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(name: &str, count: i64, first: &str, last: &str, message: &str) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"apiVersion": "example.com/v1", "kind": "Redis", "name": "r"},
            "type": "Normal", "reason": "PipelineStarted", "message": message,
            "count": count, "firstTimestamp": first, "lastTimestamp": last,
        }))
        .expect("an event")
    }

    #[test]
    fn rows_read_like_kubectl_events() {
        let now = "2026-01-01T10:05:00Z";
        let cases = [
            (
                "seen once",
                event("a", 1, "2026-01-01T10:04:55Z", "2026-01-01T10:04:55Z", "m"),
                "5s          Normal   PipelineStarted   redis/r   m",
            ),
            (
                "repeated",
                event(
                    "b",
                    3,
                    "2026-01-01T10:00:00Z",
                    "2026-01-01T10:04:00Z",
                    "two\nlines",
                ),
                "1m0s (x3 over 5m0s)   Normal   PipelineStarted   redis/r   two lines",
            ),
        ];
        for (name, e, want) in cases {
            let out = table(std::slice::from_ref(&e), now, false, true);
            let row = out.lines().nth(1).unwrap_or_default();
            assert_eq!(row, want, "{name}:\n{out}");
            assert!(out.starts_with("LAST SEEN"), "{name}");
        }
    }
}

//! Commit messages of the writes to state stores, with Kratix's trailers (`Kratix-Promise`,
//! `Kratix-Destination`, ...), so that a store's history says what each change was for.

mod object;

use std::collections::BTreeMap;

use crate::api::WorkType;

pub(crate) use crate::controllers::state_store::commit_template::Template;
pub(crate) use object::{generation_and_annotations, ObjectMeta};

/// What one write of a Work's placements on a Destination is about.
#[derive(Debug, Clone, Default)]
pub(crate) struct PlacementWrite<'a> {
    pub(crate) work: &'a str,
    pub(crate) promise: &'a str,
    /// The request's namespace and name; none for a promise workflow's Work.
    pub(crate) resource: Option<(&'a str, &'a str)>,
    /// The pipeline that made the Work; none for static dependencies.
    pub(crate) pipeline: Option<&'a str>,
    pub(crate) destination: &'a str,
    /// The Work's `kratix.io/work-type`, when the Work still exists.
    pub(crate) work_type: Option<WorkType>,
    /// Why the placement goes ([`crate::api::labels::REMOVAL_REASON`]), if it does.
    pub(crate) removal: Option<&'a str>,
    /// Whether anything is written (else only deleted).
    pub(crate) puts: bool,
    /// The store's template for the text above the trailers, if it has one.
    pub(crate) template: Option<&'a Template>,
    /// The request's (or, for a promise workflow, the Promise's) generation and annotations,
    /// when the template uses them.
    pub(crate) generation: Option<i64>,
    pub(crate) annotations: Option<&'a BTreeMap<String, String>>,
}

/// `Update from: <work>` (or `Delete from:` when nothing is written), then the trailers.
pub(crate) fn placement_message(w: &PlacementWrite) -> String {
    // Kratix names a static dependency's writes after the promise workflow.
    let work_type = match w.work_type {
        Some(WorkType::Resource) => "resource",
        Some(_) => "promise",
        None if w.resource.is_some() => "resource",
        None => "promise",
    };
    let action = if w.removal == Some("delete") {
        "delete"
    } else {
        "configure"
    };
    let workflow = format!("{work_type}/{action}");
    let custom = w.template.map(|t| {
        let (namespace, request) = w.resource.unwrap_or_default();
        t.render(&crate::controllers::state_store::commit_template::Values {
            promise: w.promise,
            request,
            namespace,
            pipeline: w.pipeline.unwrap_or_default(),
            destination: w.destination,
            generation: w.generation,
            work: w.work,
            workflow: &workflow,
            annotations: w.annotations,
        })
    });
    let mut message = match custom.as_deref().map(str::trim) {
        // NB: a template whose values all came out empty says nothing; the default does.
        Some(text) if !text.trim().is_empty() => format!("{text}\n"),
        _ => format!(
            "{} from: {}\n",
            if w.puts { "Update" } else { "Delete" },
            w.work
        ),
    };
    message.push_str(&format!("\nKratix-Promise: {}\n", w.promise));
    if let Some((namespace, name)) = w.resource {
        message.push_str(&format!("Kratix-Resource: {namespace}/{name}\n"));
    }
    if let Some(pipeline) = w.pipeline.filter(|p| !p.is_empty()) {
        message.push_str(&format!("Kratix-Pipeline: {pipeline}\n"));
    }
    message.push_str(&format!(
        "Kratix-Destination: {}\nKratix-Workflow: {workflow}\n",
        w.destination
    ));
    message
}

/// The message of a Destination's canary write (`subject` says what was done to it).
pub(crate) fn canary_message(destination: &str, subject: &str) -> String {
    format!("{subject}: kratix-canary\n\nKratix-Destination: {destination}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_messages_carry_the_trailers() {
        let base = PlacementWrite {
            work: "redis-dev-main",
            promise: "redis",
            destination: "dev",
            puts: true,
            ..PlacementWrite::default()
        };
        let cases: Vec<(&str, PlacementWrite, &str)> = vec![
            (
                "promise work, nothing else known",
                base.clone(),
                "Update from: redis-dev-main\n\nKratix-Promise: redis\nKratix-Destination: dev\nKratix-Workflow: promise/configure\n",
            ),
            (
                "request work being deleted",
                PlacementWrite {
                    resource: Some(("default", "dev")),
                    pipeline: Some("main"),
                    work_type: Some(WorkType::Resource),
                    removal: Some("delete"),
                    puts: false,
                    ..base.clone()
                },
                "Delete from: redis-dev-main\n\nKratix-Promise: redis\nKratix-Resource: default/dev\nKratix-Pipeline: main\nKratix-Destination: dev\nKratix-Workflow: resource/delete\n",
            ),
            (
                "work gone: the resource decides the type",
                PlacementWrite {
                    resource: Some(("team", "db")),
                    ..base.clone()
                },
                "Update from: redis-dev-main\n\nKratix-Promise: redis\nKratix-Resource: team/db\nKratix-Destination: dev\nKratix-Workflow: resource/configure\n",
            ),
            (
                "static dependency, removed with its pipeline",
                PlacementWrite {
                    pipeline: Some(""),
                    work_type: Some(WorkType::StaticDependency),
                    removal: Some("configure"),
                    ..base.clone()
                },
                "Update from: redis-dev-main\n\nKratix-Promise: redis\nKratix-Destination: dev\nKratix-Workflow: promise/configure\n",
            ),
        ];
        for (name, write, want) in cases {
            assert_eq!(placement_message(&write), want, "{name}");
        }
    }

    #[test]
    fn a_template_replaces_the_subject_and_the_trailers_stay() {
        let annotations = BTreeMap::from([("ticket".to_string(), "OPS-7".to_string())]);
        let with_ticket =
            Template::parse("[{annotation:ticket}] {request} ({generation})\n\nBy {pipeline}.")
                .expect("valid");
        let empty_values = Template::parse("{annotation:ticket}").expect("valid");
        let base = PlacementWrite {
            work: "redis-cache-main",
            promise: "redis",
            resource: Some(("team", "cache")),
            pipeline: Some("main"),
            destination: "dev",
            work_type: Some(WorkType::Resource),
            puts: true,
            generation: Some(2),
            annotations: Some(&annotations),
            ..PlacementWrite::default()
        };
        let trailers =
            "Kratix-Promise: redis\nKratix-Resource: team/cache\nKratix-Pipeline: main\n\
                        Kratix-Destination: dev\nKratix-Workflow: resource/configure\n";
        let cases = [
            (
                "template",
                PlacementWrite {
                    template: Some(&with_ticket),
                    ..base.clone()
                },
                format!("[OPS-7] cache (2)\n\nBy main.\n\n{trailers}"),
            ),
            (
                "a template that renders nothing falls back to the default subject",
                PlacementWrite {
                    template: Some(&empty_values),
                    annotations: None,
                    ..base.clone()
                },
                format!("Update from: redis-cache-main\n\n{trailers}"),
            ),
            (
                "no template",
                base.clone(),
                format!("Update from: redis-cache-main\n\n{trailers}"),
            ),
        ];
        for (name, write, want) in cases {
            assert_eq!(placement_message(&write), want, "{name}");
        }
    }

    #[test]
    fn canary_messages_name_the_destination() {
        let cases = [
            (
                "dev",
                "Add",
                "Add: kratix-canary\n\nKratix-Destination: dev\n",
            ),
            (
                "prod",
                "Remove",
                "Remove: kratix-canary\n\nKratix-Destination: prod\n",
            ),
        ];
        for (destination, subject, want) in cases {
            assert_eq!(canary_message(destination, subject), want);
        }
    }
}

//! Commit message templates: the text of a GitStateStore's `kratix.io/commit-message-template`
//! annotation, with variables in braces (`{promise}`, `{annotation:ticket}`) and `{{` / `}}`
//! for literal braces. Checked once when the store is opened, so that a store with a bad
//! template writes nothing rather than commits with a wrong message.

use std::collections::BTreeMap;

/// The longest template accepted: a commit message, not a document.
pub(crate) const MAX_LEN: usize = 4096;

/// The variables a template may use, as documented.
pub(crate) const VARIABLES: &[&str] = &[
    "promise",
    "request",
    "namespace",
    "pipeline",
    "destination",
    "generation",
    "work",
    "workflow",
    "annotation:KEY",
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Error {
    #[error("the template is empty")]
    Empty,
    #[error("the template is longer than {MAX_LEN} characters")]
    TooLong,
    #[error("'{{' at character {at} is not closed (write '{{{{' for a literal brace)")]
    Unclosed { at: usize },
    #[error("'}}' at character {at} closes nothing (write '}}}}' for a literal brace)")]
    Stray { at: usize },
    #[error("unknown variable {{{name}}} at character {at} (known: {known})", known = VARIABLES.join(", "))]
    Unknown { name: String, at: usize },
    #[error("{{annotation:}} at character {at} names no annotation key")]
    NoAnnotationKey { at: usize },
}

/// A checked template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Var(Var),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Var {
    Promise,
    Request,
    Namespace,
    Pipeline,
    Destination,
    Generation,
    Work,
    Workflow,
    Annotation(String),
}

/// What a commit is about, for a template. Request, namespace, generation and annotations
/// are the request's, or the Promise's (request and namespace empty) for a promise workflow.
#[derive(Debug, Clone, Default)]
pub(crate) struct Values<'a> {
    pub(crate) promise: &'a str,
    pub(crate) request: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) pipeline: &'a str,
    pub(crate) destination: &'a str,
    pub(crate) generation: Option<i64>,
    pub(crate) work: &'a str,
    /// As in the `Kratix-Workflow` trailer: `resource/configure`, `promise/delete`, ...
    pub(crate) workflow: &'a str,
    pub(crate) annotations: Option<&'a BTreeMap<String, String>>,
}

fn variable(name: &str, at: usize) -> Result<Var, Error> {
    Ok(match name.trim() {
        "promise" => Var::Promise,
        "request" => Var::Request,
        "namespace" => Var::Namespace,
        "pipeline" => Var::Pipeline,
        "destination" => Var::Destination,
        "generation" => Var::Generation,
        "work" => Var::Work,
        "workflow" => Var::Workflow,
        other => match other.strip_prefix("annotation:") {
            Some(key) if key.trim().is_empty() => return Err(Error::NoAnnotationKey { at }),
            Some(key) => Var::Annotation(key.trim().to_string()),
            None => {
                return Err(Error::Unknown {
                    name: other.to_string(),
                    at,
                })
            }
        },
    })
}

impl Template {
    pub(crate) fn parse(text: &str) -> Result<Template, Error> {
        if text.trim().is_empty() {
            return Err(Error::Empty);
        }
        if text.chars().count() > MAX_LEN {
            return Err(Error::TooLong);
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().enumerate().peekable();
        while let Some((i, c)) = chars.next() {
            let at = i + 1;
            match c {
                '{' if chars.peek().map(|(_, n)| *n) == Some('{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek().map(|(_, n)| *n) == Some('}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => return Err(Error::Stray { at }),
                '{' => {
                    let mut name = String::new();
                    loop {
                        match chars.next() {
                            Some((_, '}')) => break,
                            Some((_, '{')) | None => return Err(Error::Unclosed { at }),
                            Some((_, n)) => name.push(n),
                        }
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Var(variable(&name, at)?));
                }
                other => literal.push(other),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Template { parts })
    }

    /// Whether the template uses the object's generation or annotations, which the writer
    /// must then read.
    pub(crate) fn needs_object(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Var(Var::Generation | Var::Annotation(_))))
    }

    /// The text; a missing value (an annotation the object lacks) renders empty.
    pub(crate) fn render(&self, v: &Values) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Var(var) => out.push_str(match var {
                    Var::Promise => v.promise,
                    Var::Request => v.request,
                    Var::Namespace => v.namespace,
                    Var::Pipeline => v.pipeline,
                    Var::Destination => v.destination,
                    Var::Work => v.work,
                    Var::Workflow => v.workflow,
                    Var::Generation => {
                        out.push_str(&v.generation.map(|g| g.to_string()).unwrap_or_default());
                        continue;
                    }
                    Var::Annotation(key) => v
                        .annotations
                        .and_then(|a| a.get(key))
                        .map(String::as_str)
                        .unwrap_or_default(),
                }),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_render_their_variables() {
        let annotations = BTreeMap::from([
            ("ticket".to_string(), "OPS-42".to_string()),
            ("example.com/team".to_string(), "data".to_string()),
        ]);
        let values = Values {
            promise: "redis",
            request: "cache",
            namespace: "team-a",
            pipeline: "main",
            destination: "dev",
            generation: Some(3),
            work: "redis-cache-main",
            workflow: "resource/configure",
            annotations: Some(&annotations),
        };
        let cases = [
            ("plain text", "plain text"),
            (
                "{promise}/{request} in {namespace} by {pipeline} to {destination}",
                "redis/cache in team-a by main to dev",
            ),
            (
                "[{annotation:ticket}] {request} generation {generation}",
                "[OPS-42] cache generation 3",
            ),
            ("{ annotation:example.com/team }", "data"),
            (
                "{annotation:missing}|{work}|{workflow}",
                "|redis-cache-main|resource/configure",
            ),
            ("{{literal}} {{{promise}}}", "{literal} {redis}"),
            ("multi\nline {promise}\n", "multi\nline redis\n"),
            ("ünïcode {promise}", "ünïcode redis"),
        ];
        for (text, want) in cases {
            let template = Template::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(template.render(&values), want, "{text}");
        }
        let promise_workflow = Values {
            promise: "redis",
            ..Values::default()
        };
        assert_eq!(
            Template::parse("{promise}:{request}:{generation}:{annotation:ticket}")
                .expect("valid")
                .render(&promise_workflow),
            "redis:::"
        );
    }

    #[test]
    fn bad_templates_say_what_and_where() {
        let long = "x".repeat(MAX_LEN + 1);
        let cases = [
            ("", Error::Empty),
            ("  \n", Error::Empty),
            (long.as_str(), Error::TooLong),
            ("deploy {promise", Error::Unclosed { at: 8 }),
            ("a {b{c}", Error::Unclosed { at: 3 }),
            ("done }", Error::Stray { at: 6 }),
            (
                "{.Promise}",
                Error::Unknown {
                    name: ".Promise".into(),
                    at: 1,
                },
            ),
            (
                "x {}",
                Error::Unknown {
                    name: String::new(),
                    at: 3,
                },
            ),
            ("{annotation: }", Error::NoAnnotationKey { at: 1 }),
        ];
        for (text, want) in cases {
            assert_eq!(Template::parse(text), Err(want), "{text:?}");
        }
        assert_eq!(
            Error::Unknown {
                name: "ticket".into(),
                at: 4
            }
            .to_string(),
            "unknown variable {ticket} at character 4 (known: promise, request, namespace, \
             pipeline, destination, generation, work, workflow, annotation:KEY)"
        );
        assert_eq!(
            Error::Unclosed { at: 2 }.to_string(),
            "'{' at character 2 is not closed (write '{{' for a literal brace)"
        );
    }

    #[test]
    fn only_generation_and_annotations_need_the_object() {
        let cases = [
            ("{promise} {request} {work}", false),
            ("{generation}", true),
            ("{annotation:ticket}", true),
            ("{{generation}}", false),
        ];
        for (text, want) in cases {
            assert_eq!(
                Template::parse(text).expect("valid").needs_object(),
                want,
                "{text}"
            );
        }
    }
}

//! One way to show an error with its causes, shared by every crate of the workspace.

use std::error::Error;
use std::fmt;

/// Displays an error with its chain of causes on one line, `: `-separated, saying each cause
/// once: some errors (`object_store`'s, [`crate::Error::Config`]) already print their source in
/// their own message, and a cause whose text the previous link already showed is left out.
pub struct ErrorChain<'a>(pub &'a dyn Error);

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut previous = self.0.to_string();
        f.write_str(&previous)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            if !previous.contains(&text) {
                write!(f, ": {text}")?;
            }
            previous = text;
            source = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorChain;

    #[derive(Debug, thiserror::Error)]
    enum Link {
        #[error("{0}")]
        Leaf(&'static str),
        #[error("{text}")]
        Node {
            text: &'static str,
            #[source]
            source: Box<Link>,
        },
    }

    fn chain(texts: &[&'static str]) -> Link {
        let (last, rest) = texts.split_last().expect("at least one link");
        rest.iter()
            .rev()
            .fold(Link::Leaf(last), |source, text| Link::Node {
                text,
                source: Box::new(source),
            })
    }

    #[test]
    fn each_cause_is_said_once() {
        let cases: &[(&[&'static str], &str)] = &[
            (&["a"], "a"),
            (&["a", "b", "c"], "a: b: c"),
            (
                &["put failed: 403 body", "403 body"],
                "put failed: 403 body",
            ),
            (
                &[
                    "store: access denied",
                    "denied: 403 body",
                    "403 body",
                    "refused",
                ],
                "store: access denied: denied: 403 body: refused",
            ),
            // A cause is compared with the link just before it, not with the whole line.
            (&["a: b", "c", "b"], "a: b: c: b"),
            (&["same", "same", "same"], "same"),
        ];
        for (links, want) in cases {
            assert_eq!(ErrorChain(&chain(links)).to_string(), *want, "{links:?}");
        }
    }
}

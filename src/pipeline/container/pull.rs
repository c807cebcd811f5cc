//! `imagePullPolicy`, as Kubernetes reads it: given, or `Always` for `:latest` and untagged
//! images and `IfNotPresent` otherwise.

use super::reference;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PullPolicy {
    Always,
    IfNotPresent,
    Never,
}

/// What to do before creating the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PullDecision {
    Pull,
    UseLocal,
    /// `Never`, and the image is not in the engine.
    Missing,
}

/// The policy of a container; `Err` holds a value that is none of the three.
pub(crate) fn policy(given: Option<&str>, image: &str) -> Result<PullPolicy, String> {
    match given {
        Some("Always") => Ok(PullPolicy::Always),
        Some("IfNotPresent") => Ok(PullPolicy::IfNotPresent),
        Some("Never") => Ok(PullPolicy::Never),
        Some(other) => Err(other.to_string()),
        None => Ok(match reference::tag(image) {
            None | Some("latest") => PullPolicy::Always,
            Some(_) => PullPolicy::IfNotPresent,
        }),
    }
}

pub(crate) fn decide(policy: PullPolicy, present: bool) -> PullDecision {
    match (policy, present) {
        (PullPolicy::Always, _) | (PullPolicy::IfNotPresent, false) => PullDecision::Pull,
        (_, true) => PullDecision::UseLocal,
        (PullPolicy::Never, false) => PullDecision::Missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_and_decisions() {
        use PullDecision::*;
        use PullPolicy::*;
        let cases = [
            (None, "x/y:v1", false, Ok(IfNotPresent), Pull),
            (None, "x/y:v1", true, Ok(IfNotPresent), UseLocal),
            (None, "x/y:latest", true, Ok(Always), Pull),
            (None, "x/y", true, Ok(Always), Pull),
            (None, "localhost:5000/y", true, Ok(Always), Pull),
            (None, "x/y@sha256:1", true, Ok(IfNotPresent), UseLocal),
            (Some("Never"), "x/y:latest", true, Ok(Never), UseLocal),
            (Some("Never"), "x/y:v1", false, Ok(Never), Missing),
            (Some("Always"), "x/y:v1", true, Ok(Always), Pull),
            (
                Some("IfNotPresent"),
                "x/y",
                true,
                Ok(IfNotPresent),
                UseLocal,
            ),
        ];
        for (given, image, present, want_policy, want) in cases {
            let got = policy(given, image);
            assert_eq!(got, want_policy, "{given:?} {image}");
            if let Ok(p) = got {
                assert_eq!(decide(p, present), want, "{given:?} {image} {present}");
            }
        }
        assert_eq!(policy(Some("Sometimes"), "x"), Err("Sometimes".into()));
    }
}

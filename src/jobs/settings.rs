//! What every pipeline Job of the executor shares, read from the controller's environment.

use crate::pipeline::output;

/// What every Job of this executor shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Where Promise workflows and cluster-scoped requests' workflows run.
    pub system_namespace: String,
    /// The `kratix-rs` image the adapter containers run.
    pub adapter_image: String,
    /// Pull secret for the adapter image, listed first as Kratix does.
    pub adapter_pull_secret: Option<String>,
    /// The output limits the work-writer applies, the controller's own.
    pub limits: output::Limits,
    /// Finished Jobs kept per pipeline of an object (Kratix's `numberOfJobsToKeep`).
    pub jobs_to_keep: usize,
    /// Which containers besides the pipeline's own a Job runs.
    pub pod_shape: PodShape,
}

/// Which containers a pipeline's pod runs besides the pipeline's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PodShape {
    /// One adapter after the pipeline's containers, which checks and hands back the output and
    /// the metadata; `object.yaml` is given to the pod as a ConfigMap volume at
    /// `/kratix/input`. Every container start costs the node seconds under load: this makes
    /// the fewest the contract allows.
    #[default]
    Lean,
    /// Kratix's own: init containers `reader`, the pipeline's, `work-writer` (configure
    /// workflows), and container `status-writer`.
    Kratix,
}

impl PodShape {
    fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "lean" => Some(PodShape::Lean),
            "kratix" => Some(PodShape::Kratix),
            _ => None,
        }
    }
}

/// Finished Jobs kept per pipeline of an object when [`JOBS_TO_KEEP_ENV`] is unset: Kratix's
/// default.
pub(crate) const DEFAULT_JOBS_TO_KEEP: usize = 5;

/// The variable naming the adapter image (the controller's own image, normally).
pub const ADAPTER_IMAGE_ENV: &str = "KRATIX_PIPELINE_ADAPTER_IMAGE";
/// The variable naming a pull secret for the adapter image.
pub const ADAPTER_PULL_SECRET_ENV: &str = "KRATIX_PIPELINE_ADAPTER_PULL_SECRET";
/// The variable naming the system namespace (the controller's own, normally).
pub const SYSTEM_NAMESPACE_ENV: &str = "KRATIX_SYSTEM_NAMESPACE";
/// The variable naming how many finished Jobs stay per pipeline of an object.
pub const JOBS_TO_KEEP_ENV: &str = "KRATIX_JOBS_TO_KEEP";
/// The variable naming the pod shape: `lean` (the default) or `kratix`.
pub const POD_SHAPE_ENV: &str = "KRATIX_PIPELINE_POD_SHAPE";
/// Kratix's system namespace, when [`SYSTEM_NAMESPACE_ENV`] is unset.
pub const DEFAULT_SYSTEM_NAMESPACE: &str = "kratix-platform-system";

/// [`Settings::from_vars`] found no adapter image, or a bad output limit.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{ADAPTER_IMAGE_ENV} is not set: pipeline Jobs need the kratix-rs image for their adapter containers")]
    NoAdapterImage,
    #[error("invalid output limit")]
    Limits(#[source] output::Error),
    #[error("{JOBS_TO_KEEP_ENV}={0:?} is not a whole number of at least 1")]
    JobsToKeep(String),
    #[error("{POD_SHAPE_ENV}={0:?} is not one of lean, kratix")]
    PodShape(String),
}

impl Settings {
    /// From the controller's environment (see the constants above and the output limits).
    pub fn from_env() -> Result<Self, SettingsError> {
        let vars: Vec<(String, String)> = std::env::vars().collect();
        let limits = output::Limits::from_env().map_err(SettingsError::Limits)?;
        Self::from_vars(&vars, limits)
    }

    pub(crate) fn from_vars(
        vars: &[(String, String)],
        limits: output::Limits,
    ) -> Result<Self, SettingsError> {
        let get = |name: &str| {
            vars.iter()
                .rev()
                .find(|(k, v)| k == name && !v.is_empty())
                .map(|(_, v)| v.clone())
        };
        Ok(Settings {
            system_namespace: get(SYSTEM_NAMESPACE_ENV)
                .unwrap_or_else(|| DEFAULT_SYSTEM_NAMESPACE.into()),
            adapter_image: get(ADAPTER_IMAGE_ENV).ok_or(SettingsError::NoAdapterImage)?,
            adapter_pull_secret: get(ADAPTER_PULL_SECRET_ENV),
            limits,
            jobs_to_keep: match get(JOBS_TO_KEEP_ENV) {
                None => DEFAULT_JOBS_TO_KEEP,
                Some(text) => text
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or(SettingsError::JobsToKeep(text))?,
            },
            pod_shape: match get(POD_SHAPE_ENV) {
                None => PodShape::default(),
                Some(text) => PodShape::parse(&text).ok_or(SettingsError::PodShape(text))?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_come_from_the_controller_environment() {
        let vars = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let limits = output::Limits::default();
        let got = Settings::from_vars(
            &vars(&[
                (ADAPTER_IMAGE_ENV, "kratix-rs:1"),
                (SYSTEM_NAMESPACE_ENV, "ops"),
            ]),
            limits,
        )
        .expect("settings");
        assert_eq!(
            got,
            Settings {
                system_namespace: "ops".into(),
                adapter_image: "kratix-rs:1".into(),
                adapter_pull_secret: None,
                limits,
                jobs_to_keep: 5,
                pod_shape: PodShape::Lean,
            }
        );
        let got = Settings::from_vars(
            &vars(&[(ADAPTER_IMAGE_ENV, "i"), (POD_SHAPE_ENV, "kratix")]),
            limits,
        )
        .expect("settings");
        assert_eq!(got.pod_shape, PodShape::Kratix);
        let err = Settings::from_vars(
            &vars(&[(ADAPTER_IMAGE_ENV, "i"), (POD_SHAPE_ENV, "slim")]),
            limits,
        )
        .expect_err("unknown shape");
        assert_eq!(
            err.to_string(),
            "KRATIX_PIPELINE_POD_SHAPE=\"slim\" is not one of lean, kratix"
        );
        let err = Settings::from_vars(
            &vars(&[(ADAPTER_IMAGE_ENV, "i"), (JOBS_TO_KEEP_ENV, "0")]),
            limits,
        )
        .expect_err("zero jobs");
        assert!(matches!(err, SettingsError::JobsToKeep(_)));
        let got =
            Settings::from_vars(&vars(&[(ADAPTER_IMAGE_ENV, "i")]), limits).expect("settings");
        assert_eq!(got.system_namespace, DEFAULT_SYSTEM_NAMESPACE);
        let err =
            Settings::from_vars(&vars(&[(ADAPTER_IMAGE_ENV, "")]), limits).expect_err("no image");
        assert!(matches!(err, SettingsError::NoAdapterImage));
    }
}

//! A real `helm` for the chart's tests: `KRATIX_HELM`, else what `scripts/helm.sh` installs
//! (cached) and prints. `None` (with a NOTE) when neither gives one; with `KRATIX_REQUIRE_REAL=1`
//! a missing helm fails the test instead.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The chart, in the repository.
pub(crate) fn chart_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("charts/kratix-rs")
}

pub(crate) fn helm() -> Option<&'static PathBuf> {
    static HELM: OnceLock<Option<PathBuf>> = OnceLock::new();
    HELM.get_or_init(|| {
        if let Some(path) = std::env::var_os("KRATIX_HELM") {
            return Some(PathBuf::from(path));
        }
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/helm.sh");
        let found = Command::new(&script)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        if found.is_none() {
            assert!(
                std::env::var("KRATIX_REQUIRE_REAL").as_deref() != Ok("1"),
                "KRATIX_REQUIRE_REAL=1 but scripts/helm.sh gives no helm"
            );
            eprintln!("NOTE: no helm (KRATIX_HELM, scripts/helm.sh): skipping the chart's tests");
        }
        found
    })
    .as_ref()
}

/// Runs helm; its stdout, or its stderr as the error.
pub(crate) fn run(args: &[&str]) -> Result<String, String> {
    let helm = helm().ok_or("no helm")?;
    let out = Command::new(helm)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", helm.display()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "helm {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

//! A real `kubectl` against the platform's API: `KRATIX_TEST_KUBECTL`, else the static one of
//! the machine image, else the one on `PATH` (it is also copied into a test image, so it must
//! be a static binary, as Go builds kubectl). Tests that need it skip with a NOTE when there is none, and fail instead
//! when `KRATIX_REQUIRE_REAL=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where a static kubectl is found when `KRATIX_TEST_KUBECTL` is not set.
const STATIC_KUBECTL: &str = "/usr/lib/google-cloud-sdk/bin/kubectl";

/// The kubectl binary, or `None` (with a NOTE).
pub(crate) fn binary() -> Option<PathBuf> {
    let on_path = || {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("kubectl"))
                .find(|p| p.is_file())
                .and_then(|p| p.canonicalize().ok())
        })
    };
    let path = std::env::var_os("KRATIX_TEST_KUBECTL")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from(STATIC_KUBECTL)).filter(|p| p.is_file()))
        .or_else(on_path)
        .unwrap_or_else(|| PathBuf::from(STATIC_KUBECTL));
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var("KRATIX_REQUIRE_REAL").as_deref() != Ok("1"),
        "KRATIX_REQUIRE_REAL=1 but there is no kubectl at {}",
        path.display()
    );
    eprintln!(
        "NOTE: no kubectl at {} (set KRATIX_TEST_KUBECTL): skipping",
        path.display()
    );
    None
}

/// kubectl with `kubeconfig`; exit status, standard output and standard error.
pub(crate) fn run(kubectl: &Path, kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .expect("kubectl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

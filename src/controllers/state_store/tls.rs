//! How a GitStateStore's HTTPS server is trusted: `spec.insecure` and the `caFile` of its
//! credentials Secret, turned into the plain option the Git backend takes, and what a store says
//! when its server is not trusted or not verified.
//!
//! Kratix skips verification unless `spec.insecure` is `false`
//! (<https://github.com/syntasso/kratix/pull/943>); here it is skipped only when `true`.

use statestores::TlsTrust;

/// The credentials Secret's key that holds PEM CA certificates to trust besides the system's
/// (the key Kratix's own scripts put a Git server's certificate under).
pub(crate) const CA_KEY: &str = "caFile";

/// What the `Ready` condition and the Warning event say of a store that does not verify.
pub(crate) const NOT_VERIFIED: &str =
    "the server's TLS certificate is not verified (spec.insecure: true)";

/// The trust a store's options carry: none with `insecure: true` (the CA certificates are then
/// not needed); else the system's and the Secret's `caFile`, when it has one.
pub(crate) fn trust(insecure: Option<bool>, ca: Option<String>) -> TlsTrust {
    match (insecure, ca) {
        (Some(true), _) => TlsTrust::Insecure,
        (_, Some(pem)) if !pem.trim().is_empty() => TlsTrust::AlsoTrust(pem),
        _ => TlsTrust::System,
    }
}

/// What to do about a server whose certificate is not trusted, after the error itself.
pub(crate) fn untrusted_hint(trust: &TlsTrust) -> String {
    let given = match trust {
        TlsTrust::AlsoTrust(_) => "the caFile given did not issue it; ",
        _ => "",
    };
    format!(
        "{given}to trust the server, put the PEM certificate of the CA that issued its \
         certificate in the credentials Secret (spec.secretRef) under the key {CA_KEY}, \
         or set spec.insecure: true to skip verification"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_insecure_true_skips_verification() {
        let pem = "-----BEGIN CERTIFICATE-----\n…".to_string();
        let cases = [
            (None, None, TlsTrust::System),
            (Some(false), None, TlsTrust::System),
            (None, Some(pem.clone()), TlsTrust::AlsoTrust(pem.clone())),
            (
                Some(false),
                Some(pem.clone()),
                TlsTrust::AlsoTrust(pem.clone()),
            ),
            (None, Some("  \n".to_string()), TlsTrust::System),
            (Some(true), None, TlsTrust::Insecure),
            (Some(true), Some(pem.clone()), TlsTrust::Insecure),
        ];
        for (insecure, ca, want) in cases {
            assert_eq!(trust(insecure, ca.clone()), want, "{insecure:?} {ca:?}");
        }
    }

    #[test]
    fn the_hint_names_the_secret_key_and_the_field() {
        for trust in [TlsTrust::System, TlsTrust::AlsoTrust("x".into())] {
            let hint = untrusted_hint(&trust);
            assert!(hint.contains("under the key caFile"), "{hint}");
            assert!(hint.contains("spec.insecure: true"), "{hint}");
        }
        assert!(untrusted_hint(&TlsTrust::AlsoTrust("x".into())).starts_with("the caFile given"));
    }
}

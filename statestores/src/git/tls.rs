//! How an `https://` server's certificate is trusted: the system's CA certificates (libgit2's
//! own check), those and the CA certificates a store was given, or none at all.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

/// How an `https://` server's certificate is checked. `Debug` shows no certificate text.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum TlsTrust {
    /// Against the system's CA certificates.
    #[default]
    System,
    /// Against the system's CA certificates and these (PEM text: the CA that signed the server's
    /// certificate, with any intermediates the server does not send).
    AlsoTrust(String),
    /// Not at all: any certificate is accepted.
    Insecure,
}

impl std::fmt::Debug for TlsTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsTrust::System => f.write_str("System"),
            TlsTrust::AlsoTrust(_) => f.write_str("AlsoTrust(<certificates>)"),
            TlsTrust::Insecure => f.write_str("Insecure"),
        }
    }
}

/// Why the CA certificates given cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    #[error("the CA certificates are not PEM text")]
    Pem(#[source] rustls_pki_types::pem::Error),
    #[error("the CA certificates hold no certificate")]
    Empty,
    #[error("a CA certificate cannot be used as one")]
    Anchor(#[source] webpki::Error),
}

/// The certificates of a PEM bundle, checked to be usable as trust anchors.
pub(crate) fn parse_bundle(pem: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(TlsError::Pem)?;
    if certs.is_empty() {
        return Err(TlsError::Empty);
    }
    for cert in &certs {
        webpki::anchor_from_trusted_cert(cert).map_err(TlsError::Anchor)?;
    }
    Ok(certs)
}

/// Whether the server certificate `leaf` (DER) was issued, for `host`, by one of `bundle`, and
/// is valid now. The bundle's certificates also serve as intermediates.
pub(crate) fn trusted_by(bundle: &[CertificateDer<'static>], leaf: &[u8], host: &str) -> bool {
    let Ok(name) = ServerName::try_from(host) else {
        return false;
    };
    let der = CertificateDer::from(leaf);
    let Ok(cert) = webpki::EndEntityCert::try_from(&der) else {
        return false;
    };
    let anchors: Vec<_> = bundle
        .iter()
        .filter_map(|c| webpki::anchor_from_trusted_cert(c).ok())
        .collect();
    cert.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &anchors,
        bundle,
        UnixTime::now(),
        webpki::KeyUsage::server_auth(),
        None,
        None,
    )
    .is_ok()
        && cert.verify_is_valid_for_subject_name(&name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_that_hold_no_usable_certificate_are_refused() {
        let cases = [
            ("", "no certificate"),
            ("not pem at all", "no certificate"),
            (
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                "cannot be used",
            ),
        ];
        for (pem, want) in cases {
            let got = parse_bundle(pem).map(|c| c.len());
            let message = match got {
                Err(e) => e.to_string(),
                Ok(n) => panic!("{pem:?}: {n} certificates"),
            };
            assert!(message.contains(want), "{pem:?}: {message}");
        }
        assert!(!trusted_by(&[], b"not a certificate", "localhost"));
    }
}

//! The API's certificates: a CA made once per home (`<home>/api/ca.crt` and its key, readable by
//! the home's owner only) and, at each start, serving certificates it signs for the addresses
//! the API listens on, so that pipelines and kubeconfigs trust the API by that one CA.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::pipeline::platform_api::write_private;

const CA_CERT: &str = "ca.crt";
const CA_KEY: &str = "ca.key";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read or write {path}")]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot make or read a certificate of the API ({what})")]
    Certificate {
        what: &'static str,
        #[source]
        source: rcgen::Error,
    },
    #[error("cannot set up TLS for the API")]
    Tls(#[source] rustls::Error),
}

fn cert_error(what: &'static str) -> impl FnOnce(rcgen::Error) -> Error {
    move |source| Error::Certificate { what, source }
}

/// The home's CA.
pub(crate) struct Ca {
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca").finish_non_exhaustive()
    }
}

/// The CA's own settings; the same each time, so that an issuer rebuilt from them and the
/// stored key signs as the stored certificate names it.
fn ca_params() -> Result<CertificateParams, Error> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(cert_error("CA"))?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "kratix-rs platform API CA");
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(params)
}

impl Ca {
    /// The CA of the home whose API folder is `dir`, made there the first time.
    pub(crate) fn load_or_create(dir: &Path) -> Result<Self, Error> {
        let (cert_path, key_path) = (dir.join(CA_CERT), dir.join(CA_KEY));
        let file = |path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::File { path, source }
        };
        if cert_path.exists() && key_path.exists() {
            let cert_pem = std::fs::read_to_string(&cert_path).map_err(file(&cert_path))?;
            let key_pem = std::fs::read_to_string(&key_path).map_err(file(&key_path))?;
            let key = KeyPair::from_pem(&key_pem).map_err(cert_error("CA key"))?;
            return Ok(Self {
                cert_pem,
                issuer: Issuer::new(ca_params()?, key),
            });
        }
        std::fs::create_dir_all(dir).map_err(file(dir))?;
        let key = KeyPair::generate().map_err(cert_error("CA key"))?;
        let params = ca_params()?;
        let cert = params.self_signed(&key).map_err(cert_error("CA"))?;
        write_private(&key_path, &key.serialize_pem()).map_err(file(&key_path))?;
        std::fs::write(&cert_path, cert.pem()).map_err(file(&cert_path))?;
        Ok(Self {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    pub(crate) fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A TLS configuration serving a fresh certificate for `ip` (and the names in-cluster
    /// clients use), signed by this CA.
    pub(crate) fn serving(&self, ip: IpAddr) -> Result<Arc<rustls::ServerConfig>, Error> {
        let names = [
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
        ];
        let mut params = CertificateParams::new(names.map(String::from).to_vec())
            .map_err(cert_error("serving"))?;
        params.subject_alt_names.push(SanType::IpAddress(ip));
        params
            .distinguished_name
            .push(DnType::CommonName, "kratix-rs platform API");
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().map_err(cert_error("serving key"))?;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(cert_error("serving"))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(Error::Tls)?
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(cert.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .map_err(Error::Tls)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_is_made_once_and_signs_serving_certificates() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let first = Ca::load_or_create(dir.path()).expect("made");
        let again = Ca::load_or_create(dir.path()).expect("read");
        assert_eq!(first.cert_pem(), again.cert_pem());
        let mode = std::fs::metadata(dir.path().join(CA_KEY))
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        again
            .serving("127.0.0.1".parse().expect("ip"))
            .expect("serving certificate");
    }
}

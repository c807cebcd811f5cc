//! TLS for servers on loopback: a CA made for one server, and a certificate it issues for
//! `127.0.0.1` and `localhost`, so that a client trusts the server only when given the CA.

use std::io::Error;
use std::sync::Arc;

use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

fn other(what: &str) -> impl Fn(rcgen::Error) -> Error + '_ {
    move |e| Error::other(format!("{what}: {e}"))
}

/// A TLS acceptor serving a fresh certificate, and the PEM certificate of the CA that issued it.
pub(crate) fn acceptor() -> std::io::Result<(tokio_rustls::TlsAcceptor, String)> {
    let ca_key = rcgen::KeyPair::generate().map_err(other("CA key"))?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(other("CA"))?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "testkit CA");
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).map_err(other("CA"))?;
    let key = rcgen::KeyPair::generate().map_err(other("server key"))?;
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
        .map_err(other("server certificate"))?;
    let cert = params
        .signed_by(&key, &ca)
        .map_err(other("server certificate"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Error::other)?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .map_err(Error::other)?;
    Ok((tokio_rustls::TlsAcceptor::from(Arc::new(config)), ca.pem()))
}

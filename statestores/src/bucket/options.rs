//! How to reach a bucket: endpoint, name, credentials. Pure: nothing here does I/O.

use std::fmt;

/// The region signed into requests until the server names its own, when neither the options nor
/// the environment name one: the one AWS itself assumes.
pub(crate) const DEFAULT_REGION: &str = "us-east-1";

/// Where a [`Bucket`](super::Bucket) lives and how to sign in. `Debug` never shows secrets.
#[derive(Clone, PartialEq, Eq)]
pub struct BucketOptions {
    /// `host[:port]` as Kratix takes it (`minio.example.svc:9000`); a full `http(s)://` URL is
    /// accepted too.
    pub endpoint: String,
    pub bucket_name: String,
    /// A folder inside the bucket under which every key lives.
    pub path_prefix: Option<String>,
    /// Plain HTTP is allowed (Kratix's `insecure`): a bare endpoint gets `http://`, not `https://`.
    pub insecure: bool,
    pub auth: BucketAuth,
    /// The region requests are signed for. `None`: `AWS_REGION`, then `AWS_DEFAULT_REGION`, else
    /// the region the server names when it refuses `us-east-1` (Garage checks it against its own
    /// `s3_region`).
    pub region: Option<String>,
}

/// How requests are signed.
#[derive(Clone, PartialEq, Eq)]
pub enum BucketAuth {
    /// A static key pair (Kratix `authMethod: accessKey`).
    AccessKey {
        access_key_id: String,
        secret_access_key: String,
    },
    /// The default AWS credential chain of the environment: `AWS_*` variables, web identity,
    /// container or instance metadata (Kratix `authMethod: IAM`).
    Iam,
}

impl fmt::Debug for BucketOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketOptions")
            .field("endpoint", &crate::git::redact_url(&self.endpoint))
            .field("bucket_name", &self.bucket_name)
            .field("path_prefix", &self.path_prefix)
            .field("insecure", &self.insecure)
            .field("auth", &self.auth)
            .field("region", &self.region)
            .finish()
    }
}

impl fmt::Debug for BucketAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BucketAuth::AccessKey { access_key_id, .. } => f
                .debug_struct("AccessKey")
                .field("access_key_id", access_key_id)
                .field("secret_access_key", &"<redacted>")
                .finish(),
            BucketAuth::Iam => f.write_str("Iam"),
        }
    }
}

/// Why options cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum Error {
    #[error("the endpoint is empty")]
    EmptyEndpoint,
    #[error("endpoint {endpoint:?} has scheme {scheme:?}; only http and https are supported")]
    UnsupportedScheme { endpoint: String, scheme: String },
    #[error("endpoint {endpoint:?} uses plain http but the store is not marked insecure")]
    HttpNotAllowed { endpoint: String },
    #[error("the bucket name is empty")]
    EmptyBucketName,
    #[error("the access key id or the secret access key is empty")]
    EmptyAccessKey,
}

impl BucketOptions {
    /// The endpoint as a URL: Kratix's bare `host[:port]` gets `http://` when insecure and
    /// `https://` otherwise.
    pub(crate) fn endpoint_url(&self) -> Result<String, Error> {
        let endpoint = self.endpoint.trim().trim_end_matches('/');
        if endpoint.is_empty() {
            return Err(Error::EmptyEndpoint);
        }
        match endpoint.split_once("://") {
            None => {
                let scheme = if self.insecure { "http" } else { "https" };
                Ok(format!("{scheme}://{endpoint}"))
            }
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => Ok(endpoint.to_string()),
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("http") => {
                if self.insecure {
                    Ok(endpoint.to_string())
                } else {
                    Err(Error::HttpNotAllowed {
                        endpoint: crate::git::redact_url(endpoint),
                    })
                }
            }
            Some((scheme, _)) => Err(Error::UnsupportedScheme {
                endpoint: crate::git::redact_url(endpoint),
                scheme: scheme.to_string(),
            }),
        }
    }

    /// The region the options or the environment name; `None` when nobody said, and the
    /// bucket's own region must be found out (as Kratix's client does: its spec has no region).
    pub(crate) fn configured_region(
        &self,
        aws_region: Option<&str>,
        aws_default_region: Option<&str>,
    ) -> Option<String> {
        [self.region.as_deref(), aws_region, aws_default_region]
            .into_iter()
            .flatten()
            .map(str::trim)
            .find(|r| !r.is_empty())
            .map(str::to_string)
    }

    /// Checks what the S3 client would only notice at the first request.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if self.bucket_name.trim().is_empty() {
            return Err(Error::EmptyBucketName);
        }
        if let BucketAuth::AccessKey {
            access_key_id,
            secret_access_key,
        } = &self.auth
        {
            if access_key_id.is_empty() || secret_access_key.is_empty() {
                return Err(Error::EmptyAccessKey);
            }
        }
        self.endpoint_url().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_chain::ErrorChain;
    use std::fmt::Write as _;

    fn options(endpoint: &str, insecure: bool) -> BucketOptions {
        BucketOptions {
            endpoint: endpoint.to_string(),
            bucket_name: "kratix".to_string(),
            path_prefix: None,
            insecure,
            auth: BucketAuth::AccessKey {
                access_key_id: "GK123".to_string(),
                secret_access_key: "very-secret".to_string(),
            },
            region: None,
        }
    }

    #[test]
    fn endpoint_gets_a_scheme_from_insecure() {
        let cases: &[(&str, bool, Result<&str, &str>)] = &[
            ("127.0.0.1:3900", true, Ok("http://127.0.0.1:3900")),
            ("127.0.0.1:3900", false, Ok("https://127.0.0.1:3900")),
            ("s3.example.com/", false, Ok("https://s3.example.com")),
            ("http://127.0.0.1:3900", true, Ok("http://127.0.0.1:3900")),
            ("HTTP://127.0.0.1:3900", true, Ok("HTTP://127.0.0.1:3900")),
            ("https://s3.example.com", true, Ok("https://s3.example.com")),
            (
                "https://s3.example.com",
                false,
                Ok("https://s3.example.com"),
            ),
            ("http://127.0.0.1:3900", false, Err("plain http")),
            ("ftp://example.com", true, Err("only http and https")),
            ("  ", true, Err("empty")),
        ];
        for (endpoint, insecure, want) in cases {
            let got = options(endpoint, *insecure).endpoint_url();
            match (want, &got) {
                (Ok(want), Ok(got)) => assert_eq!(got, want, "{endpoint} insecure={insecure}"),
                (Err(want), Err(got)) => {
                    assert!(got.to_string().contains(want), "{endpoint}: {got}");
                }
                _ => panic!("{endpoint} insecure={insecure}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn region_comes_from_options_then_environment_else_nobody_said() {
        /// (option, `AWS_REGION`, `AWS_DEFAULT_REGION`, wanted)
        type Case<'a> = (
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
        );
        let cases: &[Case] = &[
            (
                Some("garage"),
                Some("eu-west-1"),
                Some("eu-west-2"),
                Some("garage"),
            ),
            (
                None,
                Some("eu-west-1"),
                Some("eu-west-2"),
                Some("eu-west-1"),
            ),
            (None, None, Some("eu-west-2"), Some("eu-west-2")),
            (None, Some(""), None, None),
            (Some(" "), None, None, None),
            (None, None, None, None),
        ];
        for (option, env, default_env, want) in cases {
            let mut o = options("h", true);
            o.region = option.map(str::to_string);
            assert_eq!(
                o.configured_region(*env, *default_env).as_deref(),
                *want,
                "{option:?} {env:?} {default_env:?}"
            );
        }
    }

    #[test]
    fn validation_refuses_what_cannot_work() {
        let mut empty_bucket = options("h:1", true);
        empty_bucket.bucket_name = String::new();
        let mut empty_secret = options("h:1", true);
        empty_secret.auth = BucketAuth::AccessKey {
            access_key_id: "GK1".to_string(),
            secret_access_key: String::new(),
        };
        let mut iam = options("h:1", true);
        iam.auth = BucketAuth::Iam;
        let cases = [
            (options("h:1", true), None),
            (iam, None),
            (empty_bucket, Some(Error::EmptyBucketName)),
            (empty_secret, Some(Error::EmptyAccessKey)),
            (options("", true), Some(Error::EmptyEndpoint)),
        ];
        for (o, want) in cases {
            assert_eq!(o.validate().err(), want, "{o:?}");
        }
    }

    #[test]
    fn unusable_options_say_why_once() {
        let cases = [
            (
                options("http://h:9000", false),
                "bucket kratix at http://h:9000: invalid bucket options: endpoint \"http://h:9000\" \
                 uses plain http but the store is not marked insecure",
            ),
            (
                options("", true),
                "bucket kratix at : invalid bucket options: the endpoint is empty",
            ),
        ];
        for (o, want) in cases {
            let err = crate::Bucket::open(o).expect_err(want);
            assert!(matches!(err, crate::Error::Config { .. }), "{err:?}");
            assert_eq!(ErrorChain(&err).to_string(), want);
        }
    }

    #[test]
    fn debug_redacts_the_secret() {
        let shown = format!("{:?}", options("h", true));
        assert!(!shown.contains("very-secret"), "{shown}");
        assert!(shown.contains("GK123"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn a_password_in_the_endpoint_is_never_shown() {
        let cases = [
            ("http://u:pw-in-url@h:9000", false),
            ("ftp://u:pw-in-url@h", true),
            ("https://u:pw-in-url@h", true),
        ];
        for (endpoint, insecure) in cases {
            let options = options(endpoint, insecure);
            let mut shown = format!("{options:?}");
            if let Err(e) = options.endpoint_url() {
                shown.push_str(&e.to_string());
            }
            if let Err(e) = crate::Bucket::open(options) {
                write!(shown, "{} {e:?}", ErrorChain(&e)).expect("a String takes any text");
            }
            assert!(!shown.contains("pw-in-url"), "{shown}");
            assert!(shown.contains("u:<redacted>@h"), "{shown}");
        }
    }
}

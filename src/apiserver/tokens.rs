//! The tokens the API accepts, held in memory only, by their SHA-256: the administrator's of
//! this process, and one per pipeline run while the run runs. A run's token is revoked when its
//! run ends, whichever way (its guard is dropped with the run's task, also when the process
//! stops it); a token of an executor that is gone dies with that process, since only the
//! process that runs the controllers serves the API and no token is ever written to the
//! control plane.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::rights::Principal;

type Digest32 = [u8; 32];

#[derive(Debug, Default)]
pub(crate) struct Tokens {
    by_digest: Mutex<HashMap<Digest32, Principal>>,
}

fn digest(token: &str) -> Digest32 {
    Sha256::digest(token.as_bytes()).into()
}

/// A new random token: 32 bytes from the OS's generator (two v4 UUIDs), URL-safe base64.
pub(crate) fn new_token() -> String {
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Revokes its token when dropped.
pub(crate) struct Revoke {
    tokens: Arc<Tokens>,
    digest: Digest32,
}

impl Drop for Revoke {
    fn drop(&mut self) {
        self.tokens
            .by_digest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.digest);
    }
}

impl Tokens {
    /// A new token standing for `who` until the guard is dropped.
    pub(crate) fn issue(self: &Arc<Self>, who: Principal) -> (String, Revoke) {
        let token = new_token();
        let digest = digest(&token);
        self.by_digest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(digest, who);
        (
            token,
            Revoke {
                tokens: self.clone(),
                digest,
            },
        )
    }

    /// Who `authorization` (the request's `Authorization` header) stands for, if anyone.
    pub(crate) fn who(&self, authorization: Option<&str>) -> Option<Principal> {
        let token = authorization?.strip_prefix("Bearer ")?.trim();
        self.by_digest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&digest(token))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_stands_for_its_principal_until_revoked() {
        let tokens = Arc::new(Tokens::default());
        let (token, revoke) = tokens.issue(Principal::Admin);
        let (other, _keep) = tokens.issue(Principal::Admin);
        assert_ne!(token, other);
        assert!(token.len() >= 40, "{token}");
        let header = format!("Bearer {token}");
        assert_eq!(tokens.who(Some(&header)), Some(Principal::Admin));
        assert_eq!(tokens.who(Some(&token)), None, "no Bearer scheme");
        assert_eq!(tokens.who(Some("Bearer nope")), None);
        assert_eq!(tokens.who(None), None);
        drop(revoke);
        assert_eq!(tokens.who(Some(&header)), None, "revoked");
        assert!(tokens.who(Some(&format!("Bearer {other}"))).is_some());
    }
}

//! What a write must do, given what the bucket holds: pure decisions, no I/O.
//!
//! NB: "unchanged" is decided from a HEAD per key, never from a LIST, so a write costs in
//! proportion to the number of changes, not to the size of the bucket.

use md5::Md5;
use sha2::{Digest, Sha256};

use crate::{Change, Key, Version};

/// The user metadata entry (`x-amz-meta-<name>`) holding the hex sha256 of an object we uploaded.
pub(crate) const SHA256_METADATA: &str = "kratix-sha256";

/// What a HEAD told us about an object that exists.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Remote {
    /// As the server sent it, quotes included.
    pub e_tag: Option<String>,
    /// The [`SHA256_METADATA`] entry, when the object has one.
    pub sha256: Option<String>,
}

/// The digests of content we may upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Digests {
    pub md5: String,
    pub sha256: String,
}

impl Digests {
    pub(crate) fn of(content: &[u8]) -> Self {
        Self {
            md5: hex::encode(Md5::digest(content)),
            sha256: hex::encode(Sha256::digest(content)),
        }
    }
}

/// Does the object already hold `content`?
///
/// Two signals, either is enough:
/// - The ETag. Garage, S3 (without `SSE-KMS` or `SSE-C`) and MinIO return the hex MD5 of the content as
///   the ETag of a single-part PUT, and Kratix's own S3 writer relies on exactly this, so objects
///   Kratix wrote are recognised as unchanged after switching to this writer. Multipart ETags
///   (`<md5 of md5s>-<parts>`) and encrypted ones never equal an MD5, so they fall through.
/// - The SHA-256 we store in object metadata on every upload, which still works where the ETag is
///   not an MD5 (`SSE-KMS`, a server that computes ETags differently).
///
/// Neither can say "same" for different content short of a hash collision, so the worst a
/// foreign ETag scheme costs is one needless upload.
pub(crate) fn unchanged(remote: &Remote, wanted: &Digests) -> bool {
    let etag_matches = remote
        .e_tag
        .as_deref()
        .map(unquote)
        .is_some_and(|etag| etag.eq_ignore_ascii_case(&wanted.md5));
    let sha256_matches = remote
        .sha256
        .as_deref()
        .is_some_and(|sha| sha.trim().eq_ignore_ascii_case(&wanted.sha256));
    etag_matches || sha256_matches
}

/// An ETag without its quotes (and without a weak `W/` marker).
pub(crate) fn unquote(etag: &str) -> &str {
    let etag = etag.strip_prefix("W/").unwrap_or(etag);
    etag.trim_matches('"')
}

/// One request a write will make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Upload the `Put` at this index of the changes.
    Upload(usize),
    /// Delete the key of the `Delete` at this index of the changes.
    Delete(usize),
}

/// Decides, for each change and what the bucket holds under its key (`None`: absent), whether it
/// needs a request. Actions are in the order of `changes`.
pub(crate) fn plan(changes: &[Change], remote: &[Option<Remote>]) -> Vec<Action> {
    changes
        .iter()
        .zip(remote)
        .enumerate()
        .filter_map(|(index, (change, remote))| match (change, remote) {
            (Change::Put(_, content), Some(remote)) if unchanged(remote, &Digests::of(content)) => {
                None
            }
            (Change::Put(..), _) => Some(Action::Upload(index)),
            (Change::Delete(_), Some(_)) => Some(Action::Delete(index)),
            (Change::Delete(_), None) => None,
        })
        .collect()
}

/// What a write did to one key, for the version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Applied<'a> {
    Uploaded { key: &'a Key, e_tag: &'a str },
    Deleted { key: &'a Key },
}

/// The version of a write: a SHA-256 chain over what it uploaded (key and new ETag) and deleted
/// (key), in order; `None` when it did nothing.
///
/// Like Kratix's chain over version ids, but over ETags, which every S3 server returns, so the
/// version differs whenever the bucket's content does, even on unversioned buckets where
/// Kratix's chain is always the hash of the empty string.
pub(crate) fn version(applied: &[Applied<'_>]) -> Option<Version> {
    if applied.is_empty() {
        return None;
    }
    let chain = applied.iter().fold(String::new(), |previous, step| {
        let mut hasher = Sha256::new();
        hasher.update(previous.as_bytes());
        match step {
            Applied::Uploaded { key, e_tag } => {
                hasher.update(b"\0put\0");
                hasher.update(key.as_str().as_bytes());
                hasher.update(b"\0");
                hasher.update(unquote(e_tag).as_bytes());
            }
            Applied::Deleted { key } => {
                hasher.update(b"\0delete\0");
                hasher.update(key.as_str().as_bytes());
            }
        }
        hex::encode(hasher.finalize())
    });
    Some(Version(chain))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn key(s: &str) -> Key {
        Key::parse(s).expect("valid test key")
    }

    const HELLO_MD5: &str = "5d41402abc4b2a76b9719d911017c592";
    const HELLO_SHA256: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

    #[test]
    fn digests_are_hex_md5_and_sha256() {
        let d = Digests::of(b"hello");
        assert_eq!(d.md5, HELLO_MD5);
        assert_eq!(d.sha256, HELLO_SHA256);
    }

    #[test]
    fn unchanged_when_etag_or_stored_sha256_match() {
        let hello = Digests::of(b"hello");
        let remote = |e_tag: Option<&str>, sha256: Option<&str>| Remote {
            e_tag: e_tag.map(str::to_string),
            sha256: sha256.map(str::to_string),
        };
        let quoted = format!("\"{HELLO_MD5}\"");
        let weak = format!("W/\"{HELLO_MD5}\"");
        let upper = HELLO_MD5.to_uppercase();
        let multipart = format!("\"{HELLO_MD5}-2\"");
        let cases: &[(Remote, bool)] = &[
            (remote(Some(&quoted), None), true),
            (remote(Some(HELLO_MD5), None), true),
            (remote(Some(&weak), None), true),
            (remote(Some(&upper), None), true),
            (remote(Some(&multipart), None), false),
            (remote(Some("\"0123\""), Some(HELLO_SHA256)), true),
            (remote(Some("\"0123\""), Some("abcd")), false),
            (remote(None, None), false),
            (remote(None, Some(HELLO_SHA256)), true),
        ];
        for (r, want) in cases {
            assert_eq!(unchanged(r, &hello), *want, "{r:?}");
        }
    }

    /// (changes, what the bucket holds for each, wanted actions)
    type Case = (Vec<Change>, Vec<Option<Remote>>, Vec<Action>);

    #[test]
    fn plan_skips_identical_puts_and_absent_deletes() {
        let same = Remote {
            e_tag: Some(format!("\"{HELLO_MD5}\"")),
            sha256: None,
        };
        let other = Remote {
            e_tag: Some("\"ffff\"".to_string()),
            sha256: None,
        };
        let put = |k: &str| Change::Put(key(k), Bytes::from_static(b"hello"));
        let del = |k: &str| Change::Delete(key(k));
        let cases: Vec<Case> = vec![
            (vec![], vec![], vec![]),
            (vec![put("a")], vec![None], vec![Action::Upload(0)]),
            (vec![put("a")], vec![Some(same.clone())], vec![]),
            (
                vec![put("a")],
                vec![Some(other.clone())],
                vec![Action::Upload(0)],
            ),
            (vec![del("a")], vec![None], vec![]),
            (
                vec![del("a")],
                vec![Some(other.clone())],
                vec![Action::Delete(0)],
            ),
            (
                vec![put("a"), del("b"), put("c"), del("d")],
                vec![Some(same), None, Some(other.clone()), Some(other)],
                vec![Action::Upload(2), Action::Delete(3)],
            ),
        ];
        for (changes, remote, want) in cases {
            assert_eq!(plan(&changes, &remote), want, "{changes:?} {remote:?}");
        }
    }

    #[test]
    fn version_chains_what_was_applied() {
        let (a, b) = (key("a"), key("b"));
        let up_a = Applied::Uploaded {
            key: &a,
            e_tag: "\"1\"",
        };
        let up_a_unquoted = Applied::Uploaded {
            key: &a,
            e_tag: "1",
        };
        let up_a_other = Applied::Uploaded {
            key: &a,
            e_tag: "\"2\"",
        };
        let del_b = Applied::Deleted { key: &b };
        let del_a = Applied::Deleted { key: &a };

        assert_eq!(version(&[]), None);
        let one = version(std::slice::from_ref(&up_a)).expect("something applied");
        assert_eq!(one.0.len(), 64);
        assert!(one.0.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(
            Some(one.clone()),
            version(&[up_a_unquoted]),
            "quotes do not matter"
        );
        assert_ne!(
            Some(one.clone()),
            version(&[up_a_other]),
            "new content, new version"
        );
        assert_ne!(
            Some(one.clone()),
            version(&[del_a]),
            "delete differs from put"
        );
        let two = version(&[up_a.clone(), del_b.clone()]);
        assert_ne!(Some(one), two);
        assert_ne!(two, version(&[del_b, up_a]), "order matters");
    }
}

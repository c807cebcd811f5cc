//! Deciding whether an SSH server's host key is the one `known_hosts` names.

use super::url::HostPort;
use base64::Engine as _;

/// What `known_hosts` says about a presented host key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A line for this host lists exactly this key.
    Trusted,
    /// No line lists this key for this host (or a line marks it `@revoked`).
    Untrusted,
}

/// Checks `key` (the SSH wire-format key blob the server presented) for `at` against the text
/// of a `known_hosts` file. Plain and hashed (`|1|salt|hash`) host names are understood; host
/// patterns with wildcards and `@cert-authority` lines are not, and so never trust a key.
pub(crate) fn verify(known_hosts: &str, at: &HostPort, key: &[u8]) -> Verdict {
    let name = if at.port == 22 {
        at.host.clone()
    } else {
        format!("[{}]:{}", at.host, at.port)
    };
    let mut trusted = false;
    for line in known_hosts.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let (marker, hosts) = match fields.next() {
            Some(m) if m.starts_with('@') => (Some(m), fields.next()),
            hosts => (None, hosts),
        };
        let (Some(hosts), Some(_key_type), Some(encoded)) = (hosts, fields.next(), fields.next())
        else {
            continue;
        };
        if !hosts.split(',').any(|pattern| host_matches(pattern, &name)) {
            continue;
        }
        let Ok(listed) = base64::engine::general_purpose::STANDARD.decode(encoded) else {
            continue;
        };
        if listed != key {
            continue;
        }
        match marker {
            None => trusted = true,
            Some("@revoked") => return Verdict::Untrusted,
            Some(_) => {}
        }
    }
    if trusted {
        Verdict::Trusted
    } else {
        Verdict::Untrusted
    }
}

fn host_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_prefix("|1|") {
        Some(hashed) => hashed_matches(hashed, name),
        None => pattern == name,
    }
}

/// `|1|base64(salt)|base64(hmac-sha1(salt, name))`, as `ssh-keygen -H` writes.
fn hashed_matches(hashed: &str, name: &str) -> bool {
    let engine = base64::engine::general_purpose::STANDARD;
    let Some((salt, digest)) = hashed.split_once('|') else {
        return false;
    };
    let (Ok(salt), Ok(digest)) = (engine.decode(salt), engine.decode(digest)) else {
        return false;
    };
    hmac_sha1(&salt, name.as_bytes()).is_some_and(|mac| mac.as_slice() == digest.as_slice())
}

/// HMAC (RFC 2104) over SHA-1, built on gix's SHA-1 so no extra crate is needed.
fn hmac_sha1(key: &[u8], message: &[u8]) -> Option<Vec<u8>> {
    const BLOCK: usize = 64;
    let sha1 = |parts: &[&[u8]]| -> Option<Vec<u8>> {
        let mut hasher = gix::hash::hasher(gix::hash::Kind::Sha1);
        for part in parts {
            hasher.update(part);
        }
        hasher.try_finalize().ok().map(|id| id.as_bytes().to_vec())
    };
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        let digest = sha1(&[key])?;
        block[..digest.len()].copy_from_slice(&digest);
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let inner_pad: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
    let outer_pad: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
    let inner = sha1(&[&inner_pad, message])?;
    sha1(&[&outer_pad, &inner])
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
    const KEY_B: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIBxqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

    fn at(host: &str, port: u16) -> HostPort {
        HostPort {
            host: host.to_string(),
            port,
        }
    }

    fn blob(encoded: &str) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .expect("test key is base64")
    }

    #[test]
    fn hmac_sha1_matches_rfc_2202() {
        let mac = hmac_sha1(b"Jefe", b"what do ya want for nothing?").expect("sha1");
        assert_eq!(hex::encode(mac), "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    }

    #[test]
    fn host_keys_are_checked_against_known_hosts() {
        // `|1|...` is `ssh-keygen -H` of "[127.0.0.1]:2222" with the salt below.
        let salt = [7u8; 20];
        let engine = base64::engine::general_purpose::STANDARD;
        let hashed = format!(
            "|1|{}|{}",
            engine.encode(salt),
            engine.encode(hmac_sha1(&salt, b"[127.0.0.1]:2222").expect("sha1"))
        );
        let cases: Vec<(String, HostPort, &str, Verdict)> = vec![
            (
                format!("host ssh-ed25519 {KEY_A}"),
                at("host", 22),
                KEY_A,
                Verdict::Trusted,
            ),
            (
                format!("other,host ssh-ed25519 {KEY_A}"),
                at("host", 22),
                KEY_A,
                Verdict::Trusted,
            ),
            (
                format!("host ssh-ed25519 {KEY_A}"),
                at("host", 22),
                KEY_B,
                Verdict::Untrusted,
            ),
            (
                format!("host ssh-ed25519 {KEY_A}"),
                at("host", 2222),
                KEY_A,
                Verdict::Untrusted,
            ),
            (
                format!("[host]:2222 ssh-ed25519 {KEY_A}"),
                at("host", 2222),
                KEY_A,
                Verdict::Trusted,
            ),
            (
                format!("{hashed} ssh-ed25519 {KEY_A}"),
                at("127.0.0.1", 2222),
                KEY_A,
                Verdict::Trusted,
            ),
            (
                format!("{hashed} ssh-ed25519 {KEY_A}"),
                at("127.0.0.2", 2222),
                KEY_A,
                Verdict::Untrusted,
            ),
            (
                format!("# comment\n\nhost ssh-ed25519 {KEY_B}\nhost ssh-ed25519 {KEY_A} c"),
                at("host", 22),
                KEY_A,
                Verdict::Trusted,
            ),
            (
                format!("host ssh-ed25519 {KEY_A}\n@revoked host ssh-ed25519 {KEY_A}"),
                at("host", 22),
                KEY_A,
                Verdict::Untrusted,
            ),
            (
                format!("@cert-authority host ssh-ed25519 {KEY_A}"),
                at("host", 22),
                KEY_A,
                Verdict::Untrusted,
            ),
            (
                "garbage".to_string(),
                at("host", 22),
                KEY_A,
                Verdict::Untrusted,
            ),
        ];
        for (known_hosts, host, key, want) in cases {
            assert_eq!(
                verify(&known_hosts, &host, &blob(key)),
                want,
                "{known_hosts} / {host:?}"
            );
        }
    }
}

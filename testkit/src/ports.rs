//! Free loopback ports for servers a test starts and that bind them later, in another process.
//!
//! A port the kernel hands out for `127.0.0.1:0` comes from its ephemeral range, the same range
//! it draws from for every outgoing connection on the machine. Between letting such a port go and
//! the server binding it (seconds, for a server that starts its parts one after another), any
//! connection anywhere may take it, and the server dies with "address already in use". So ports
//! are drawn at random from below the ephemeral range, where the kernel never hands out ports on
//! its own, and each is checked free by binding it; only another test drawing the same port in
//! the same moment can still take it, and servers that start slowly retry on fresh ports.

use std::net::TcpListener;

/// The lowest port drawn: above the well-known and most registered services' ports.
const LOWEST: u16 = 15_000;

/// `N` distinct ports on `127.0.0.1`, free when returned.
pub fn free_ports<const N: usize>() -> [u16; N] {
    let (low, high) = draw_range(&ephemeral_range());
    // Held until all are chosen, so that no port is chosen twice.
    let mut held: Vec<TcpListener> = Vec::with_capacity(N);
    let mut attempts = 0;
    while held.len() < N {
        attempts += 1;
        let listener = if attempts > 1_000 || low >= high {
            // A machine whose ephemeral range leaves nothing below it: the kernel's choice.
            TcpListener::bind("127.0.0.1:0").expect("bind a free loopback port")
        } else {
            let port = low + random_u16() % (high - low);
            match TcpListener::bind(("127.0.0.1", port)) {
                Ok(listener) => listener,
                Err(_) => continue, // taken: draw again
            }
        };
        held.push(listener);
    }
    std::array::from_fn(|i| {
        held[i]
            .local_addr()
            .expect("a bound listener has an address")
            .port()
    })
}

/// One free port on `127.0.0.1`; see [`free_ports`].
pub fn free_port() -> u16 {
    let [port] = free_ports::<1>();
    port
}

/// The kernel's ephemeral range as it is written in `/proc`, if it can be read.
fn ephemeral_range() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default()
}

/// The ports to draw from, `[low, high)`: from [`LOWEST`] to the start of the ephemeral range
/// (`"32768\t60999\n"` on Linux by default). An unreadable range is taken as Linux's default.
fn draw_range(ephemeral: &str) -> (u16, u16) {
    let start = ephemeral
        .split_whitespace()
        .next()
        .and_then(|first| first.parse::<u16>().ok())
        .unwrap_or(32_768);
    (LOWEST, start.max(LOWEST))
}

fn random_u16() -> u16 {
    use std::io::Read;
    let mut bytes = [0u8; 2];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    u16::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_draw_range_ends_where_the_ephemeral_range_starts() {
        let cases = [
            ("32768\t60999\n", (15_000, 32_768)),
            ("49152 65535", (15_000, 49_152)),
            ("", (15_000, 32_768)),
            ("garbage", (15_000, 32_768)),
            // Nothing left below the ephemeral range: an empty range, the kernel chooses.
            ("1024 65535", (15_000, 15_000)),
        ];
        for (ephemeral, expected) in cases {
            assert_eq!(draw_range(ephemeral), expected, "{ephemeral:?}");
        }
    }

    #[test]
    fn ports_are_distinct_free_and_below_the_ephemeral_range() {
        let (_, high) = draw_range(&ephemeral_range());
        let ports = free_ports::<16>();
        let mut sorted = ports.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 16, "{ports:?}");
        for port in ports {
            assert!(port < high, "{port} is in the ephemeral range");
            TcpListener::bind(("127.0.0.1", port)).expect("a returned port is free");
        }
    }
}

//! A hung server: it accepts connections and never answers.

use std::time::Duration;

/// A server that accepts connections on a loopback port and holds them open without sending a
/// byte, as a hung server does, until it hangs up on all of them.
pub struct SilentServer {
    pub port: u16,
    stop: std::sync::mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SilentServer {
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind loopback");
        let port = listener.local_addr().expect("address").port();
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            while stopped.try_recv().is_err() {
                match listener.accept() {
                    Ok((stream, _)) => held.push(stream),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Self {
            port,
            stop,
            thread: Some(thread),
        }
    }

    /// Closes every connection and the port.
    pub fn hang_up(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

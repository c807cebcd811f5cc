//! A tiny HTTP/1.1 server on loopback (std only) that publishes documents by path, answering
//! 401 unless the request carries the expected `Authorization` header: what a PromiseRelease
//! fetches its Promise from.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

pub(crate) struct PromiseServer {
    port: u16,
    documents: Arc<Mutex<HashMap<String, String>>>,
}

impl PromiseServer {
    /// Starts serving; every request must carry `Authorization: <authorization>`.
    pub(crate) fn start(authorization: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("address").port();
        let documents: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let served = documents.clone();
        let expected = authorization.to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let served = served.clone();
                let expected = expected.clone();
                std::thread::spawn(move || answer(stream, &served, &expected));
            }
        });
        Self { port, documents }
    }

    /// Publishes `body` at `path` (e.g. `/thing.yaml`).
    pub(crate) fn publish(&self, path: &str, body: &str) {
        self.documents
            .lock()
            .expect("documents")
            .insert(path.to_string(), body.to_string());
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

fn answer(stream: TcpStream, documents: &Mutex<HashMap<String, String>>, expected: &str) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_string();
    let mut authorization = None;
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line.trim().is_empty() => break,
            Ok(_) => {
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("authorization") {
                        authorization = Some(value.trim().to_string());
                    }
                }
            }
        }
    }
    let body = documents.lock().ok().and_then(|d| d.get(&path).cloned());
    let (status, body) = match (authorization.as_deref() == Some(expected), body) {
        (false, _) => ("401 Unauthorized", "unauthorized\n".to_string()),
        (true, None) => ("404 Not Found", "not found\n".to_string()),
        (true, Some(body)) => ("200 OK", body),
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/yaml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

//! `http://` on loopback: a small hyper server that checks Basic credentials and runs
//! `git http-backend` as a CGI for each request, as a web server in front of git would; or
//! `https://`, the same behind TLS with a certificate from a CA made for the server
//! ([`GitHttp::start_tls`]), which no system trusts.
//!
//! It runs on a thread with its own Tokio runtime, so it keeps serving while a test blocks its
//! own runtime (a store that pushes synchronously, for example).

use crate::{git_cli, require_program, scratch_dir};
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::thread::JoinHandle;
use tokio::io::AsyncWriteExt as _;

/// Serves every bare repository under its root, fetch and push, to one user with one password.
pub struct GitHttp {
    root: tempfile::TempDir,
    port: u16,
    /// The PEM certificate of the CA that issued the server's, when it serves TLS.
    ca_pem: Option<String>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<JoinHandle<()>>,
}

/// What each request needs; shared by all connections.
struct Cgi {
    http_backend: PathBuf,
    project_root: PathBuf,
    username: String,
    /// The whole `Authorization` header value we accept.
    expected_authorization: String,
}

impl GitHttp {
    /// Starts the server; requests must carry Basic credentials `username`:`password`.
    pub fn start(username: &str, password: &str) -> std::io::Result<Self> {
        Self::start_with(username, password, None)
    }

    /// [`GitHttp::start`] behind TLS, with a certificate for `127.0.0.1` and `localhost` issued
    /// by a CA of its own ([`GitHttp::ca_pem`]).
    pub fn start_tls(username: &str, password: &str) -> std::io::Result<Self> {
        let (acceptor, ca_pem) = crate::tls::acceptor()?;
        let mut server = Self::start_with(username, password, Some(acceptor))?;
        server.ca_pem = Some(ca_pem);
        Ok(server)
    }

    fn start_with(
        username: &str,
        password: &str,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> std::io::Result<Self> {
        let http_backend = find_http_backend()?;
        let root = scratch_dir("git-http-")?;
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        listener.set_nonblocking(true)?;
        let credentials =
            base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
        let cgi = Arc::new(Cgi {
            http_backend,
            project_root: root.path().to_path_buf(),
            username: username.to_owned(),
            expected_authorization: format!("Basic {credentials}"),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (shutdown, stopped) = tokio::sync::oneshot::channel();
        let server = std::thread::Builder::new()
            .name(format!("git-http-{port}"))
            .spawn(move || runtime.block_on(serve(listener, cgi, tls, stopped)))?;
        Ok(Self {
            root,
            port,
            ca_pem: None,
            shutdown: Some(shutdown),
            server: Some(server),
        })
    }

    /// `http://127.0.0.1:<port>/<repo>` (`https://` behind TLS).
    pub fn url(&self, repo: &str) -> String {
        let scheme = if self.ca_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://127.0.0.1:{}/{repo}", self.port)
    }

    /// The PEM certificate of the CA that issued the server's (TLS only).
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// Creates an empty bare repository `repo` (unborn branch `main`) that accepts pushes, and
    /// returns its path on disk.
    pub fn bare_repo(&self, repo: &str) -> std::io::Result<PathBuf> {
        let path = self.root.path().join(repo);
        git_cli::init_bare(&path)?;
        git_cli::git(&["config", "http.receivepack", "true"], &path);
        Ok(path)
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for GitHttp {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        // The runtime is dropped with the thread, cancelling open connections and killing their
        // CGI processes (`kill_on_drop`).
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

fn find_http_backend() -> std::io::Result<PathBuf> {
    require_program("git")?;
    let exec_path = git_cli::git(&["--exec-path"], Path::new("/"));
    let http_backend = Path::new(exec_path.trim()).join("git-http-backend");
    if http_backend.is_file() {
        Ok(http_backend)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "{} is missing: install git with scripts/test-deps.sh",
                http_backend.display()
            ),
        ))
    }
}

async fn serve(
    listener: std::net::TcpListener,
    cgi: Arc<Cgi>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(err) => return eprintln!("git http server on loopback: cannot listen: {err}"),
    };
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    eprintln!("git http server on loopback: accept failed: {err}");
                    continue;
                }
            },
        };
        let cgi = Arc::clone(&cgi);
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => serve_connection(stream, cgi).await,
                // A client that refuses the certificate ends the handshake: nothing to serve.
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(stream) => serve_connection(stream, cgi).await,
                    Err(err) => eprintln!("git https server on loopback: handshake failed: {err}"),
                },
            }
        });
    }
}

async fn serve_connection<S>(stream: S, cgi: Arc<Cgi>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request| {
        let cgi = Arc::clone(&cgi);
        async move { Ok::<_, Infallible>(handle(&cgi, request).await) }
    });
    let io = hyper_util::rt::TokioIo::new(stream);
    if let Err(err) = hyper::server::conn::http1::Builder::new()
        .serve_connection(io, service)
        .await
    {
        eprintln!("git http server on loopback: connection failed: {err}");
    }
}

async fn handle(cgi: &Cgi, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let authorized = request
        .headers()
        .get(AUTHORIZATION)
        .is_some_and(|value| value.as_bytes() == cgi.expected_authorization.as_bytes());
    if !authorized {
        return unauthorized();
    }
    let (parts, body) = request.into_parts();
    // Buffering the whole body handles chunked uploads: the CGI needs CONTENT_LENGTH.
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => {
            return plain(
                StatusCode::BAD_REQUEST,
                format!("cannot read the request body: {err}"),
            )
        }
    };
    match run_http_backend(cgi, &parts, body).await {
        Ok(response) => response,
        Err(err) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("git http-backend failed: {err}"),
        ),
    }
}

async fn run_http_backend(
    cgi: &Cgi,
    request: &hyper::http::request::Parts,
    body: Bytes,
) -> std::io::Result<Response<Full<Bytes>>> {
    let mut command = tokio::process::Command::new(&cgi.http_backend);
    command
        .envs(git_cli::hermetic_env())
        .env("GIT_PROJECT_ROOT", &cgi.project_root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GATEWAY_INTERFACE", "CGI/1.1")
        .env("SERVER_PROTOCOL", "HTTP/1.1")
        .env("REQUEST_METHOD", request.method.as_str())
        .env("PATH_INFO", request.uri.path())
        .env("QUERY_STRING", request.uri.query().unwrap_or(""))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_USER", &cgi.username)
        .env("REMOTE_ADDR", "127.0.0.1")
        .envs(cgi_header_variables(&request.headers))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .expect("stdin is piped, so the child has one");
    // Written concurrently with reading the output, so neither side can fill a pipe and stall.
    let feed = tokio::spawn(async move {
        let written = stdin.write_all(&body).await;
        drop(stdin);
        written
    });
    let output = child.wait_with_output().await?;
    // The backend may answer (an error, say) without reading its input: a broken pipe is fine.
    let _ = feed.await;
    if !output.stderr.is_empty() {
        eprintln!(
            "git http-backend: {}",
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    parse_cgi_response(&output.stdout)
}

/// The request's headers as CGI variables: `CONTENT_TYPE` and `HTTP_<NAME>` for the rest
/// (`Git-Protocol` → `HTTP_GIT_PROTOCOL`, `Content-Encoding` → `HTTP_CONTENT_ENCODING`).
/// Credentials are not passed on: the CGI gets `REMOTE_USER` instead.
fn cgi_header_variables(headers: &hyper::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| *name != AUTHORIZATION && *name != hyper::header::CONTENT_LENGTH)
        .filter_map(|(name, value)| {
            let value = value.to_str().ok()?.to_owned();
            let variable = name.as_str().to_ascii_uppercase().replace('-', "_");
            if *name == CONTENT_TYPE {
                Some((variable, value))
            } else {
                Some((format!("HTTP_{variable}"), value))
            }
        })
        .collect()
}

/// Splits a CGI's output into headers (with the `Status:` pseudo-header) and body.
fn parse_cgi_response(output: &[u8]) -> std::io::Result<Response<Full<Bytes>>> {
    let (head, body) = split_head(output)
        .ok_or_else(|| std::io::Error::other("the CGI output has no end of headers"))?;
    let head = std::str::from_utf8(head).map_err(std::io::Error::other)?;
    let mut response = Response::new(Full::new(Bytes::copy_from_slice(body)));
    for line in head.lines() {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| std::io::Error::other(format!("malformed CGI header {line:?}")))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_whitespace().next().unwrap_or_default();
            *response.status_mut() = code
                .parse::<u16>()
                .ok()
                .and_then(|code| StatusCode::from_u16(code).ok())
                .ok_or_else(|| std::io::Error::other(format!("bad CGI status {value:?}")))?;
        } else {
            let name = hyper::header::HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(std::io::Error::other)?;
            let value = HeaderValue::from_str(value).map_err(std::io::Error::other)?;
            response.headers_mut().append(name, value);
        }
    }
    Ok(response)
}

fn split_head(output: &[u8]) -> Option<(&[u8], &[u8])> {
    [&b"\r\n\r\n"[..], &b"\n\n"[..]]
        .iter()
        .filter_map(|separator| {
            let at = output
                .windows(separator.len())
                .position(|window| window == *separator)?;
            Some((at, &output[..at], &output[at + separator.len()..]))
        })
        .min_by_key(|(at, _, _)| *at)
        .map(|(_, head, body)| (head, body))
}

fn unauthorized() -> Response<Full<Bytes>> {
    let mut response = plain(
        StatusCode::UNAUTHORIZED,
        "authentication required".to_owned(),
    );
    response.headers_mut().insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"git\""),
    );
    response
}

fn plain(status: StatusCode, message: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(message)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CGI output, then the status, `Content-Type` and body it stands for.
    type Case = (&'static [u8], u16, Option<&'static str>, &'static [u8]);

    #[test]
    fn cgi_output_splits_into_status_headers_and_body() {
        let cases: &[Case] = &[
            (
                b"Content-Type: text/plain\r\n\r\nhello",
                200,
                Some("text/plain"),
                b"hello",
            ),
            (
                b"Status: 404 Not Found\nContent-Type: text/plain\n\nmissing",
                404,
                Some("text/plain"),
                b"missing",
            ),
            (b"Status: 403 Forbidden\r\n\r\n", 403, None, b""),
            (
                b"Content-Type: application/x-git\r\n\r\n\0\x01\n\nbinary",
                200,
                Some("application/x-git"),
                b"\0\x01\n\nbinary",
            ),
        ];
        for (output, status, content_type, body) in cases {
            let response = parse_cgi_response(output).expect("valid CGI output");
            assert_eq!(response.status().as_u16(), *status, "{output:?}");
            assert_eq!(
                response
                    .headers()
                    .get(CONTENT_TYPE)
                    .map(|value| value.to_str().expect("ascii")),
                *content_type,
                "{output:?}"
            );
            let actual = split_head(output).expect("has a head").1;
            assert_eq!(actual, *body, "{output:?}");
        }
    }

    #[test]
    fn cgi_output_without_end_of_headers_is_an_error() {
        assert!(parse_cgi_response(b"Content-Type: text/plain\r\n").is_err());
    }
}

# One image for `kratix-rs controller` and the adapter containers of pipeline Jobs
# (`kratix-rs pipeline-adapter reader|work-writer|status-writer`).
#
# Build stage: Alpine's Rust targets musl, and OpenSSL's static libraries (libgit2's https and
# libssh2) link in, so the binary is fully static.
FROM rust:1-alpine AS build
RUN apk add --no-cache musl-dev openssl-dev openssl-libs-static pkgconf perl make
ENV OPENSSL_STATIC=1 \
    RUSTFLAGS="-C target-feature=+crt-static"
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin kratix-rs \
    && strip target/release/kratix-rs \
    && ldd target/release/kratix-rs 2>&1 | grep -q -e "not a dynamic executable" -e "statically linked"

# Final stage: the binary, CA certificates for https state stores, no shell, a non-root user,
# and nothing to write but the volumes the Deployment mounts.
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /src/target/release/kratix-rs /kratix-rs
USER 65532:65532
ENTRYPOINT ["/kratix-rs"]

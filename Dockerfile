# transferd container image: `docker build -t transferd .` (see deploy/README.md).
#
# Stage 1 builds the release binary exactly as the README's `make build` does; stage 2 is a slim
# Debian with the runtime libraries, CA certificates, the binary and the Swift runtime libraries
# it links. Both stages are Debian 12, so the libcurl and SQLite the binary was built against are
# the ones it runs with.
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${SWIFT_IMAGE} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# The Swift image has libcurl4-openssl-dev and libsqlite3-dev already (install-deps.sh checks and
# skips them, and installs libssl-dev, libpsl-dev and libpq-dev if the image lacks them) but no make. Versions are not pinned:
# they follow Debian 12's security updates.
# hadolint ignore=DL3008
RUN apt-get update -q \
    && apt-get install -y -q --no-install-recommends make \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, so a change to the sources does not fetch the packages again.
COPY Package.swift Makefile ./
COPY scripts/install-deps.sh scripts/
RUN swift package resolve
COPY Sources/ Sources/
COPY Tests/ Tests/
RUN make build
# The binary links the Swift runtime dynamically (as `make build` produces it); copy exactly the
# Swift libraries it loads, at the paths its RUNPATH names, and fail on anything unresolved.
# transferctl, the operator's command line, goes next to it (`docker exec … transferctl top`).
RUN ldd .build/release/transferd .build/release/transferctl | tee /tmp/ldd.txt \
    && ! grep -q "not found" /tmp/ldd.txt \
    && mkdir -p /runtime/usr/local/bin \
    && awk '$3 ~ /\/lib\/swift\// { print $3 }' /tmp/ldd.txt | sort -u | xargs -r cp --parents -t /runtime \
    && cp .build/release/transferd .build/release/transferctl /runtime/usr/local/bin/

FROM ${RUNTIME_IMAGE}
# libcurl4, libsqlite3-0 and libssl3 (libcrypto, for SHA-256; libcurl4 needs it too) are what the
# binary links besides the Swift runtime, with libpsl5 (the Public Suffix List), which libcurl4
# depends on, and libpq5 (PostgreSQL's client library, for `--database postgres://…`);
# ca-certificates gives libcurl its CA bundle
# (/etc/ssl/certs/ca-certificates.crt); curl (a few hundred KiB on top of libcurl4) runs the
# HEALTHCHECK below.
# hadolint ignore=DL3008
RUN apt-get update -q \
    && apt-get install -y -q --no-install-recommends libcurl4 libsqlite3-0 libssl3 libpq5 ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10001 --user-group --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin transferd \
    && install -d -o 10001 -g 10001 -m 0750 /data
COPY --from=build /runtime/ /
# Fails the build here, not at the first start, if a library is missing from this stage.
RUN /usr/local/bin/transferd --version && /usr/local/bin/transferctl --version

# The documented TRANSFERD_* variables (README "Configuration"); anything else is set with -e or
# given as flags after the image name. A non-loopback listen address needs a token: it is read
# from a file mounted as a secret (compose secret, Kubernetes Secret). To pass the token in
# TRANSFERD_API_TOKEN instead, set TRANSFERD_API_TOKEN_FILE to the empty string. (DL3064: the
# variable holds the path of the secret, not the secret.)
# hadolint ignore=DL3064
ENV TRANSFERD_LISTEN=0.0.0.0:8080 \
    TRANSFERD_DATA_DIR=/data \
    TRANSFERD_API_TOKEN_FILE=/run/secrets/transferd/api-token
VOLUME ["/data"]
# transferd writes only beneath /data; it is also the working directory, where SQLite puts its
# temporary files when /tmp is read-only.
WORKDIR /data
EXPOSE 8080
USER 10001:10001
# Liveness, on the port TRANSFERD_LISTEN names. --noproxy: a proxy variable set for the container
# must not reroute the probe. A shell expands the port; Docker reserves exit code 2, hence
# `|| exit 1`.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["/bin/sh", "-c", "curl --fail --silent --show-error --noproxy '*' --max-time 4 --output /dev/null \"http://localhost:${TRANSFERD_LISTEN##*:}/healthz\" || exit 1"]
# Exec form: transferd is PID 1 and receives SIGTERM itself (it blocks the signal and sigwaits
# for it, which works for PID 1 too), then drains requests for up to 10 s and exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/transferd"]

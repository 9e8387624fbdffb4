# syntax=docker/dockerfile:1
#
# convsvc in a container: a static binary (CGO_ENABLED=0) on distroless, running as nonroot.
#
#   docker build -t convsvc .
#   docker run -d --name convsvc -p 8080:8080 -p 8081:8081 -v convsvc-data:/data \
#     -e CONVSVC_PUBLIC_URL=http://HOST:8080 -e CONVSVC_BLOB_PUBLIC_URL=http://HOST:8081 convsvc
#   docker logs convsvc          # the default API key is printed once, on the first start
#
# Signed upload and download URLs are built from CONVSVC_BLOB_PUBLIC_URL (--blob-public-url):
# set it to the address clients reach port 8081 at, or they get URLs naming 0.0.0.0.
# docker stop sends SIGTERM and waits 10s by default; give the drain its time with
# `docker stop -t 45` (or stop_grace_period in compose) when CONVSVC_DRAIN_TIMEOUT is 30s.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# VERSION (optional) overrides the module version `convsvc version` reads from the build info.
ARG VERSION=
RUN CGO_ENABLED=0 go build -tags nodynamic -trimpath -ldflags "-s -w -X github.com/convsvc/convsvc/cli.Version=${VERSION}" -o /out/convsvc . \
 && mkdir -p /out/data \
 && CONVSVC_WASM_CACHE_DIR=/out/wasm-cache /out/convsvc precompile

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/convsvc /usr/local/bin/convsvc
# An empty /data owned by nonroot, so a new named volume starts writable by the service.
COPY --from=build --chown=nonroot:nonroot /out/data /data
# The WebAssembly codecs compiled at build (precompile), so the first conversions load them; on a
# CPU with other features than the build machine's they are compiled again there at first use.
COPY --from=build --chown=nonroot:nonroot /out/wasm-cache /var/cache/convsvc
ENV CONVSVC_WASM_CACHE_DIR=/var/cache/convsvc
USER nonroot:nonroot
VOLUME /data
# 8080: the API (and GET /metrics unless CONVSVC_METRICS_LISTEN moves it); 8081: object storage.
EXPOSE 8080 8081
ENV CONVSVC_LOG_FORMAT=json
ENTRYPOINT ["/usr/local/bin/convsvc"]
CMD ["serve", "--data", "/data", "--listen", "0.0.0.0:8080", "--blob-listen", "0.0.0.0:8081"]

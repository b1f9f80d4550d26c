# syntax=docker/dockerfile:1
# sparkhost: a static binary on an empty base image, run as a non-root user.
#
#   docker build -t sparkhost .
#   docker run --rm -p 27015:27015/udp -p 9150:9150 -v sparkhost-data:/data sparkhost
#
# The image's config (deploy/docker/config.toml) runs the game port in
# internet mode on every interface (protocol v4, address validation) and the
# ops listener (metrics, probes, status page) on 0.0.0.0:9150; see
# docs/operations.md.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (no cgo: every dependency is pure Go), stripped, with VCS stamping
# off (the build context has no .git): pass the version in.
ARG VERSION=0.1.0-dev
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION}" -o /out/sparkhost ./cmd/sparkhost \
 && mkdir -p /out/data /out/etc

FROM scratch
COPY --from=build /out/sparkhost /usr/local/bin/sparkhost
COPY --from=build /src/scripts /usr/share/sparkhost/scripts
COPY deploy/docker/config.toml /etc/sparkhost/config.toml
# The data directory (identity key, bans, module databases) is a volume
# owned by the unprivileged user 10001.
COPY --from=build --chown=10001:10001 /out/data /data
USER 10001:10001
WORKDIR /usr/share/sparkhost
VOLUME ["/data"]
EXPOSE 27015/udp 9150/tcp
# The image has no shell, curl or wget: sparkhost probes itself.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/sparkhost", "health", "--addr", "127.0.0.1:9150"]
ENTRYPOINT ["/usr/local/bin/sparkhost"]
CMD ["run", "--config", "/etc/sparkhost/config.toml", "--module", "deathmatch"]

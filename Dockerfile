# Herald's container image: the static herald binary on an empty base, so
# that no base image is pulled from a registry.
#
# deploy/build-image.sh prepares the build context and builds it:
#   herald                 the binary, built with CGO_ENABLED=0
#   ca-certificates.crt    the build machine's CA bundle (Debian ca-certificates)
#   passwd, group          the unprivileged user herald (10001), from deploy/image
#   data/                  an empty directory: the SQLite volume
#
# Run it read-only, with /data on a volume or a tmpfs owned by 10001:
#   podman run --read-only -v herald-data:/data -p 8080:8080 herald
FROM scratch

COPY passwd group /etc/
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --chown=10001:10001 data/ /data/
COPY herald /usr/local/bin/herald

ENV HERALD_ADDR=0.0.0.0:8080 \
    HERALD_DATABASE_URL=sqlite:///data/herald.db \
    HERALD_LOG_FORMAT=json \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt

USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080

# The image has no shell and no curl: herald asks itself for /healthz.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["/usr/local/bin/herald", "healthcheck"]

ENTRYPOINT ["/usr/local/bin/herald"]
CMD ["serve"]

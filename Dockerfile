# syntax=docker/dockerfile:1
# gpulog container image: one static-ish binary on Debian 12 runtime libraries.
#   docker build -t gpulog:0.1.0 .
#   docker run --rm gpulog:0.1.0 --help
# The collector needs nvidia-smi at run time: the NVIDIA container toolkit
# injects it (NVIDIA_DRIVER_CAPABILITIES=utility); it is not in the image.

# ---- build stage: compilers and -dev packages, thrown away afterwards
FROM debian:12 AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential pkg-config \
      librdkafka-dev libpcre2-dev libjansson-dev libcurl4-openssl-dev \
      libyaml-dev libmicrohttpd-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN make -j"$(nproc)" BUILD=build WERROR=1 build/gpulog \
 && strip build/gpulog \
 && build/gpulog --version

# ---- runtime stage: only the shared libraries gpulog needs: exactly the
# packages dpkg-shlibdeps finds for the binary and for the libraries it
# dlopen()s (the Depends of `make deb`; tests/t_install.sh checks the two
# lists agree), plus CA certificates (TLS to Kafka/Elasticsearch) and tzdata (tz).
FROM debian:12-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libc6 libcurl4 libjansson4 libmicrohttpd12 libpcre2-8-0 librdkafka1 libyaml-0-2 zlib1g \
      ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 gpulog \
 && useradd --system --uid 10001 --gid gpulog --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin gpulog \
 && install -d -o gpulog -g gpulog -m 0700 /var/lib/gpulog \
 && install -d -m 0755 /etc/gpulog
COPY --from=build /src/build/gpulog /usr/bin/gpulog
# The ConfigMap (deploy/kubernetes/configmap.yaml) mounts gpulog.yaml here.
ENV GPULOG_STATE_DIR=/var/lib/gpulog
# Prometheus /metrics, /healthz, /readyz when metrics_addr is 0.0.0.0:9477.
EXPOSE 9477
USER 10001:10001
ENTRYPOINT ["/usr/bin/gpulog"]
CMD ["--help"]

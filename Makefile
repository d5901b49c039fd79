# gpulog - one non-recursive Makefile.
#   make            build build/gpulog
#   make run        build and run the main job on the bundled sample
#   make test       install missing packages, build, start services, run every test
#   make check      the fast lane: every test that needs no service (no install)
#   make SANITIZE=1 test   the same with -fsanitize=address,undefined (build-asan/)
#   make bench      benchmarks with figures    make fuzz   run the libFuzzer targets
#   make snapshot-seeds   rewrite the snapshot fuzz seeds from this build
#   make eval       detector quality table     make services-up / services-down
#   WERROR=1        turn warnings into errors (CI does)
#   make install / uninstall   PREFIX=/usr/local DESTDIR= BINDIR MANDIR SYSCONFDIR ...
#   make man        man pages in $(BUILD)/man     make deb   Debian package in $(BUILD)/

PKG_CONFIG ?= pkg-config
PKGS       := rdkafka libpcre2-8 jansson libcurl yaml-0.1 libmicrohttpd zlib
CC         ?= cc
ifeq ($(SANITIZE),1)
BUILD      ?= build-asan
SANFLAGS   := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
OPT        ?= -O1 -g
else
BUILD      ?= build
SANFLAGS   :=
OPT        ?= -O2 -g
endif

PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
# libcurl, libmicrohttpd and librdkafka are not linked: core/dynlib.c loads
# them with dlopen() on first use, so parse does not carry their pages.
LINK_PKGS  := libpcre2-8 jansson yaml-0.1 zlib
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(LINK_PKGS) 2>/dev/null) -ldl

WARN    := -Wall -Wextra -Wstrict-prototypes -Wwrite-strings -Wshadow -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN    += -Werror
endif
CFLAGS  ?= $(OPT)
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CPPFLAGS) $(CFLAGS) $(SANFLAGS) $(PKG_CFLAGS) -MMD -MP
LDLIBS  := $(PKG_LIBS) -lm -lpthread

# the layers: core at the bottom; parsers, ingest, detect, sinks side by side
# above it (the library); cmd/ on top (the subcommands, only in the binary)
MODULES := core parsers ingest detect sinks
LIB_SRC := $(foreach d,$(MODULES),$(wildcard $(d)/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CMD_SRC := $(wildcard cmd/*.c)
CMD_OBJ := $(CMD_SRC:%.c=$(BUILD)/%.o)
LIB     := $(BUILD)/libgpulog.a
BIN     := $(BUILD)/gpulog

TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BINS := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
REPLAY_BINS := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=$(BUILD)/tests/replay_%)
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BINS := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
# bench programs the integration tests drive (tests/t_es_sink.py uses es_push)
TEST_TOOLS := $(BUILD)/bench/es_push

.PHONY: all deps run test check test-unit bench fuzz snapshot-seeds eval clean services-up services-down golden \
        man install uninstall deb
all: $(BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(CMD_OBJ) $(LIB)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(wildcard tests/*.h) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

$(BUILD)/tests/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< tests/fuzz/replay.c $(LIB) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

deps:
	@scripts/deps.sh

# The main job on the embedded default: no GPU, Kafka or Elasticsearch needed.
run: deps
	@$(MAKE) --no-print-directory $(BIN)
	@scripts/run-demo.sh $(BIN)

# The whole suite. Services (Kafka, OpenSearch) are started for it and stopped after.
test: deps
	@$(MAKE) --no-print-directory $(BIN) $(TEST_BINS) $(REPLAY_BINS) $(TEST_TOOLS)
	@BUILD=$(BUILD) SANITIZE=$(SANITIZE) GPULOG_TEST_JOBS=$${GPULOG_TEST_JOBS:-2} scripts/test.sh

# The fast lane: the unit tests, the fuzz corpus replays and every script test
# without a "# needs:" line (scripts/test.sh), 3 at a time; no package install,
# no service.
check: $(BIN) $(TEST_BINS) $(REPLAY_BINS)
	@BUILD=$(BUILD) GPULOG_NO_SERVICES=1 GPULOG_TEST_JOBS=$${GPULOG_TEST_JOBS:-3} scripts/test.sh
test-unit: check

bench: deps
	@$(MAKE) --no-print-directory $(BIN) $(BENCH_BINS)
	@BUILD=$(BUILD) bench/run.sh

fuzz:
	@scripts/fuzz.sh $(or $(FUZZ_SECONDS),60)

# Rewrites the snapshot fuzz target's seeds (tests/fuzz/corpus/snapshot/seed-*)
# from this build; tests/test_snapshot_seeds.c fails in make check when they
# no longer decode (a state layout or the profile changed).
snapshot-seeds: $(BUILD)/tests/test_snapshot_seeds
	@GPULOG_REFRESH_SNAPSHOT_SEEDS=1 $<

eval: deps
	@$(MAKE) --no-print-directory $(BIN)
	@BUILD=$(BUILD) scripts/eval.sh

golden: $(BIN)
	@BUILD=$(BUILD) tests/golden/update.sh

services-up:
	@scripts/services.sh up

services-down:
	@scripts/services.sh down

# Installation. The man pages are made from the binary's --help texts and
# `gpulog config docs` (tools/genman.py); the units get ExecStart and the
# config path of this installation. An existing gpulog.yaml is kept, and
# uninstall removes it only when it is still the example.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/$(if $(filter /usr,$(PREFIX)),vendor-completions,site-functions)
UNITS      := gpulog-collect.service gpulog-detect.service
MAN_STAMP  := $(BUILD)/man/.stamp
# installed under $(DATADIR)/gpulog/ with their path, less a leading deploy/
SHARE_FILES := schemas/event.schema.json $(wildcard schemas/es/*.json) $(wildcard schemas/kibana/*.ndjson) \
  deploy/prometheus/gpulog-rules.yml deploy/prometheus/prometheus.yml deploy/grafana/gpulog-dashboard.json
# the paths of this installation in the units, man pages and example config
AT_PATHS   := sed -e 's|/usr/bin/gpulog|$(BINDIR)/gpulog|g' -e 's|/etc/gpulog|$(SYSCONFDIR)/gpulog|g'

man: $(MAN_STAMP)
$(MAN_STAMP): $(BIN) tools/genman.py
	@rm -rf $(BUILD)/man && mkdir -p $(BUILD)/man
	python3 tools/genman.py $(BIN) $(BUILD)/man
	@touch $@

install: $(BIN) $(MAN_STAMP)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	  $(DESTDIR)$(SYSCONFDIR)/gpulog $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) \
	  $(DESTDIR)$(DATADIR)/gpulog/schemas/es $(DESTDIR)$(DATADIR)/gpulog/schemas/kibana \
	  $(DESTDIR)$(DATADIR)/gpulog/prometheus $(DESTDIR)$(DATADIR)/gpulog/grafana
	install -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/gpulog
	for p in $(BUILD)/man/*.[15]; do d=$(DESTDIR)$(MANDIR)/man$${p##*.}/$${p##*/}; \
	  $(AT_PATHS) $$p > $$d && chmod 0644 $$d || exit 1; done
	test -e $(DESTDIR)$(SYSCONFDIR)/gpulog/gpulog.yaml || \
	  { $(AT_PATHS) deploy/gpulog.yaml > $(DESTDIR)$(SYSCONFDIR)/gpulog/gpulog.yaml && \
	    chmod 0644 $(DESTDIR)$(SYSCONFDIR)/gpulog/gpulog.yaml; }
	for u in $(UNITS); do d=$(DESTDIR)$(SYSTEMDUNITDIR)/$$u; \
	  $(AT_PATHS) deploy/systemd/$$u > $$d && chmod 0644 $$d || exit 1; done
	install -m 0644 deploy/completion/gpulog.bash $(DESTDIR)$(BASHCOMPDIR)/gpulog
	install -m 0644 deploy/completion/_gpulog $(DESTDIR)$(ZSHCOMPDIR)/_gpulog
	for f in $(SHARE_FILES); do install -m 0644 $$f $(DESTDIR)$(DATADIR)/gpulog/$${f#deploy/} || exit 1; done

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpulog $(DESTDIR)$(MANDIR)/man1/gpulog.1 $(DESTDIR)$(MANDIR)/man1/gpulog-*.1 \
	  $(DESTDIR)$(MANDIR)/man5/gpulog.yaml.5 $(DESTDIR)$(BASHCOMPDIR)/gpulog $(DESTDIR)$(ZSHCOMPDIR)/_gpulog \
	  $(addprefix $(DESTDIR)$(SYSTEMDUNITDIR)/,$(UNITS))
	rm -rf $(DESTDIR)$(DATADIR)/gpulog
	! $(AT_PATHS) deploy/gpulog.yaml | cmp -s - $(DESTDIR)$(SYSCONFDIR)/gpulog/gpulog.yaml || \
	  rm -f $(DESTDIR)$(SYSCONFDIR)/gpulog/gpulog.yaml
	-rmdir $(DESTDIR)$(SYSCONFDIR)/gpulog 2>/dev/null

# A Debian package (gpulog_VERSION_ARCH.deb in $(BUILD)/) with dpkg's own
# tools, from a hardened release build of its own: scripts/mkdeb.sh.
deb:
	@BUILD=$(BUILD) scripts/mkdeb.sh

clean:
	rm -rf build build-asan build-fuzz build-cov

-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d)

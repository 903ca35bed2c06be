# gpulse build. `make` builds build/rel/gpulse; `make check-build` builds
# the ASan+UBSan binary, unit tests, fuzz replayers and the stand-in NVML
# libraries that the test suite uses. scripts/test runs everything.

CC      ?= cc
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
PKGS    := libmicrohttpd jansson yaml-0.1 snappy sqlite3 libcurl gnutls ncursesw
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wstrict-prototypes \
           -Wmissing-prototypes -Wvla -Wformat=2 -Wno-format-nonliteral
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -DGP_VERSION='"$(VERSION)"' -Isrc $(WARN) -g -pthread \
                 $(PKG_CFLAGS)
LDLIBS  := $(PKG_LIBS) -ldl -lm -pthread

SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

LIB_SRC := $(sort $(wildcard src/lib/*.c src/sources/*.c src/agent/*.c src/ingest/*.c \
                            src/state/*.c src/store/*.c src/storage/*.c src/query/*.c src/server/*.c src/net/*.c \
                            src/report/*.c src/run/*.c src/insight/*.c src/notify/*.c \
                            src/top/*.c src/check/*.c))
TEST_SRC := $(sort $(wildcard tests/unit/*.c)) tests/runner.c
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZERS := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRC))

BENCH_TOOLS := build/rel/fleetgen build/rel/rwload build/rel/storetool
# The dashboard (docs/dashboard.md): web/'s files and the pinned uPlot
# (npm, web/package-lock.json) become build/gen/web_assets.c, compiled in.
WEB_FILES := $(sort $(wildcard web/*.html web/*.js web/*.css))
UPLOT_DIST := web/node_modules/uplot/dist
WEB_EMBED := $(WEB_FILES) $(UPLOT_DIST)/uPlot.iife.min.js $(UPLOT_DIST)/uPlot.min.css
GEN_SRC := build/gen/web_assets.c

REL_OBJ  := $(patsubst %.c,build/rel/%.o,$(LIB_SRC) $(GEN_SRC))
ASAN_OBJ := $(patsubst %.c,build/asan/%.o,$(LIB_SRC) $(GEN_SRC))

.PHONY: all check-build fakenvml fuzz clean bench-tools man install uninstall
all: build/rel/gpulse man

# The release bench tools are here because the server crash test drives
# the server with them (rwload, fleetgen) and judges with storetool.
check-build: build/asan/gpulse build/asan/unit-tests build/asan/notify-send fakenvml \
             $(addprefix build/asan/fuzz-,$(FUZZERS)) build/rel/gpulse $(BENCH_TOOLS) man

build/rel/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"; $(CC) $(CPPFLAGS) $(CFLAGS_COMMON) -O2 $(CFLAGS) -MMD -MP -c $< -o $@

build/asan/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC-SAN  $<"; $(CC) $(CFLAGS_COMMON) -O1 $(SAN) -DGP_TEST_DATA_DIR='"$(CURDIR)/tests/data"' \
	    -Itests -MMD -MP -c $< -o $@

# npm ci only when uPlot is missing or older than the lock (offline when
# npm's cache has it); the tool that embeds is built for this host.
web/node_modules/uplot/package.json: web/package-lock.json
	@command -v npm >/dev/null || { echo "gpulse: npm is needed to install uPlot for the dashboard:" \
	    "run scripts/deps.sh build (Debian's nodejs and npm)" >&2; exit 1; }
	npm ci --prefix web --silent --no-audit --no-fund --prefer-offline
	@touch $@
$(UPLOT_DIST)/%: web/node_modules/uplot/package.json ;

build/tools/embed: tools/embed.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O1 -o $@ $<

build/gen/web/%.gz: web/%
	@mkdir -p $(dir $@)
	gzip -9n -c $< >$@
build/gen/web/%.gz: $(UPLOT_DIST)/%
	@mkdir -p $(dir $@)
	gzip -9n -c $< >$@

# web/ itself: a file added or removed there changes the table.
$(GEN_SRC): build/tools/embed web $(WEB_EMBED) $(foreach f,$(WEB_EMBED),build/gen/web/$(notdir $f).gz)
	build/tools/embed $@ $(foreach f,$(WEB_EMBED),$(notdir $f)=$f:build/gen/web/$(notdir $f).gz)

build/rel/libgpulse.a: $(REL_OBJ)
	@rm -f $@
	ar rcs $@ $^

build/asan/libgpulse.a: $(ASAN_OBJ)
	@rm -f $@
	ar rcs $@ $^

# CPPFLAGS, CFLAGS and LDFLAGS are the packager's (dpkg-buildflags'
# hardening); CFLAGS come after ours so they win.
build/rel/gpulse: build/rel/src/main.o build/rel/libgpulse.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

build/asan/gpulse: build/asan/src/main.o build/asan/libgpulse.a
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

build/asan/unit-tests: $(patsubst %.c,build/asan/%.o,$(TEST_SRC)) build/asan/libgpulse.a
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

# The notification tests' driver of the HTTP channels (tests/integration/notify_send.c).
build/asan/notify-send: build/asan/tests/integration/notify_send.o build/asan/libgpulse.a
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

# Fuzz targets: built with gcc as corpus replayers (run in the test suite),
# and with clang + libFuzzer by `make fuzz` for real fuzzing.
build/asan/fuzz-%: build/asan/tests/fuzz/fuzz_%.o build/asan/tests/fuzz/replay.o build/asan/libgpulse.a
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

fuzz: $(addprefix build/fuzz/fuzz-,$(FUZZERS))
build/fuzz/fuzz-%: tests/fuzz/fuzz_%.c $(LIB_SRC) $(GEN_SRC)
	@mkdir -p $(dir $@)
	clang $(filter-out -Werror,$(CFLAGS_COMMON)) -O1 -fsanitize=fuzzer,address,undefined \
	    -Itests -o $@ $< $(LIB_SRC) $(GEN_SRC) $(LDLIBS)

# The stand-in NVML: the full Hopper-era library, and an old driver's
# library that lacks the _v2/_v3/GPM symbols.
FAKE_SRC := tests/fakenvml/fakenvml.c tests/fakenvml/scenario.c
fakenvml: build/fakenvml/full/libnvidia-ml.so.1 build/fakenvml/old/libnvidia-ml.so.1
build/fakenvml/full/libnvidia-ml.so.1: $(FAKE_SRC) $(wildcard tests/fakenvml/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -Wno-missing-prototypes -g -O1 -fPIC -shared \
	    -Wl,-soname,libnvidia-ml.so.1 -o $@ $(FAKE_SRC) -pthread -lm
build/fakenvml/old/libnvidia-ml.so.1: $(FAKE_SRC) $(wildcard tests/fakenvml/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -DFAKENVML_OLD_DRIVER $(WARN) -Wno-missing-prototypes -g -O1 \
	    -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $(FAKE_SRC) -pthread -lm

# Benchmark tools (bench/): the fleet data generator, the remote-write
# load sender and the store tool. Release flags against the release library.
bench-tools: $(BENCH_TOOLS)
build/rel/fleetgen: bench/fleetgen.c bench/fleetgen.h build/rel/libgpulse.a
	$(CC) $(CFLAGS_COMMON) -O2 -Ibench -o $@ $< build/rel/libgpulse.a $(LDLIBS)
build/rel/rwload: bench/rwload.c bench/bodies.c bench/fleetgen.h build/rel/libgpulse.a
	$(CC) $(CFLAGS_COMMON) -O2 -Ibench -o $@ bench/rwload.c bench/bodies.c build/rel/libgpulse.a $(LDLIBS)
build/rel/storetool: bench/storetool.c bench/bodies.c bench/fleetgen.h build/rel/libgpulse.a
	$(CC) $(CFLAGS_COMMON) -O2 -Ibench -o $@ bench/storetool.c bench/bodies.c build/rel/libgpulse.a $(LDLIBS)

# Series index speed (find per ingested series, selects): prints, asserts nothing.
.PHONY: bench-sindex
bench-sindex: build/rel/bench-sindex
	build/rel/bench-sindex
build/rel/bench-sindex: bench/sindex.c build/rel/libgpulse.a
	$(CC) $(CFLAGS_COMMON) -O2 -o $@ $^ $(LDLIBS)

# Detector evaluation cost over 10,000 GPUs (CPU per tick): prints, asserts nothing.
.PHONY: bench-detect
bench-detect: build/rel/bench-detect
	build/rel/bench-detect
build/rel/bench-detect: bench/detect_cost.c build/rel/libgpulse.a
	$(CC) $(CFLAGS_COMMON) -O2 -o $@ $^ $(LDLIBS)

# Man pages (man/*.in): their flag and key lists come from the settings
# tables through `gpulse help-man`, so they cannot drift from --help.
# The date is the packager's SOURCE_DATE_EPOCH, else the last commit's.
MAN_PAGES := build/man/gpulse.1 build/man/gpulse-agent.1 build/man/gpulse-server.1 \
             build/man/gpulse-repair.1 \
             build/man/gpulse.yml.5
MAN_DATE = $(shell date -u -d @$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || \
                  date +%s)} +%Y-%m-%d)
man: $(MAN_PAGES)
build/man/%: man/%.in build/rel/gpulse scripts/mkman VERSION
	@mkdir -p $(dir $@)
	scripts/mkman build/rel/gpulse $< $@ $(VERSION) $(MAN_DATE)

# `make install [PREFIX=/usr/local] [DESTDIR=]`: the binary, man pages,
# docs, example and system configuration, and the systemd units of
# deploy/systemd/ (with this install's paths) and its sysusers.d file. An existing configuration
# is kept; uninstall removes it only when it is unchanged.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/gpulse
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
LOCALSTATEDIR ?= $(if $(filter /usr,$(PREFIX)),/var,$(PREFIX)/var)
UNITDIR    ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
UNITS      := $(wildcard deploy/systemd/*.service)
SYSUSERS   := $(wildcard deploy/systemd/*.sysusers)
# The configuration installed under SYSCONFDIR: the example with every
# key, its store moved to the system's state directory.
ETC_CONFIG = sed 's|^  data_dir: ./gpulse-data$$|  data_dir: $(LOCALSTATEDIR)/lib/gpulse|' gpulse.example.yaml
ETC_FILE   = $(DESTDIR)$(SYSCONFDIR)/gpulse/gpulse.yml
DOCS       := README.md $(wildcard docs/*.md)
INSTALL    ?= install

install: build/rel/gpulse man
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	    $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(SYSCONFDIR)/gpulse
	$(INSTALL) -m 0755 build/rel/gpulse $(DESTDIR)$(BINDIR)/gpulse
	$(INSTALL) -m 0644 $(filter %.1,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 0644 $(filter %.5,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man5/
	$(INSTALL) -m 0644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	$(INSTALL) -m 0644 gpulse.example.yaml $(DESTDIR)$(DOCDIR)/examples/gpulse.yml
	@if [ -e $(ETC_FILE) ]; then echo "keeping $(ETC_FILE)"; else \
	    $(ETC_CONFIG) >$(ETC_FILE).new && grep -q '^  data_dir: $(LOCALSTATEDIR)/' $(ETC_FILE).new && \
	    chmod 0644 $(ETC_FILE).new && mv $(ETC_FILE).new $(ETC_FILE); fi
	$(if $(UNITS),$(INSTALL) -d $(DESTDIR)$(UNITDIR))
	$(foreach u,$(UNITS),sed -e 's|/usr/bin/gpulse|$(BINDIR)/gpulse|g' \
	    -e 's|/etc/gpulse/|$(SYSCONFDIR)/gpulse/|g' $(u) >$(DESTDIR)$(UNITDIR)/$(notdir $(u)) && \
	    chmod 0644 $(DESTDIR)$(UNITDIR)/$(notdir $(u));)
	$(if $(SYSUSERS),$(INSTALL) -d $(DESTDIR)$(SYSUSERSDIR))
	$(foreach u,$(SYSUSERS),$(INSTALL) -m 0644 $(u) $(DESTDIR)$(SYSUSERSDIR)/$(basename $(notdir $(u))).conf;)

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpulse $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(filter %.1,$(MAN_PAGES)))) \
	    $(addprefix $(DESTDIR)$(MANDIR)/man5/,$(notdir $(filter %.5,$(MAN_PAGES)))) \
	    $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(DOCS))) $(DESTDIR)$(DOCDIR)/examples/gpulse.yml \
	    $(addprefix $(DESTDIR)$(UNITDIR)/,$(notdir $(UNITS))) \
	    $(patsubst %,$(DESTDIR)$(SYSUSERSDIR)/%.conf,$(basename $(notdir $(SYSUSERS))))
	-rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null
	@if $(ETC_CONFIG) | cmp -s - $(ETC_FILE); then \
	    rm -f $(ETC_FILE); rmdir $(DESTDIR)$(SYSCONFDIR)/gpulse 2>/dev/null || true; \
	elif [ -e $(ETC_FILE) ]; then echo "keeping $(ETC_FILE) (changed since it was installed)"; fi

clean:
	rm -rf build

# build/debroot holds the package test's cached Debian root (its /etc/rc?.d are not ours).
-include $(shell find build -path build/debroot -prune -o -name '*.d' -type f -print 2>/dev/null)

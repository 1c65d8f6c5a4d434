# Build and install notify-route.
#
#   make                                   # the release build, as a distribution ships it
#   sudo make install                      # into /usr/local
#   make install PREFIX=$HOME/.local       # or anywhere; DESTDIR= for packaging
#   sudo make uninstall                    # removes exactly what install put there
#   make deb                               # notify-route_VERSION_ARCH.deb (config/debian/)
#   sudo make deps                         # the Debian packages the build and the tests need
#
# The default build is position-independent, links SQLite and libyaml as shared libraries and
# the Swift standard library statically. TUNED=1 builds what the benchmarks measure instead
# (config/tuned/release-flags.sh: a position-dependent notify-route, an ordering file, a
# version script, static SQLite and libyaml; README: Install says why they cannot be in
# Package.swift). CONFIGURATION=debug installs the debug build (.ci/install-check.sh: CI has
# built it already, and a release build costs minutes).

PREFIX ?= /usr/local
DESTDIR ?=
CONFIGURATION ?= release
# Install a `notify-send` symlink too (argv[0] mode): off by default, since it shadows
# libnotify's own notify-send for everyone whose PATH has $(PREFIX)/bin first.
NOTIFY_SEND_LINK ?= 0

BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man
BASHDIR = $(PREFIX)/share/bash-completion/completions
ZSHDIR = $(PREFIX)/share/zsh/site-functions
FISHDIR = $(PREFIX)/share/fish/vendor_completions.d
UNITDIR = $(PREFIX)/lib/systemd/user
SYSTEMUNITDIR = $(PREFIX)/lib/systemd/system
CATALOGDIR = $(PREFIX)/lib/systemd/catalog
DOCDIR = $(PREFIX)/share/doc/notify-route
# The binaries' debug information, by build ID, where gdb and debuginfod clients look (under /usr).
DEBUGDIR = $(PREFIX)/lib/debug/.build-id
# DEBUG_FILES=0 installs the stripped binaries without their debug files (make deb does).
DEBUG_FILES ?= 1
TUNED ?= 0

SWIFT ?= swift
SHELL = /bin/bash
ifeq ($(CONFIGURATION),debug)
SCRATCH ?= .build
BUILD = $(SWIFT) build --scratch-path $(SCRATCH)
else ifeq ($(TUNED),1)
# The scratch path of Tests/Benchmarks/run.sh: one release build serves both.
SCRATCH ?= .build-bench-release
BUILD = ROOT=$$PWD; source config/tuned/release-flags.sh; $(SWIFT) build "$${RELEASE_FLAGS[@]}" --scratch-path $(SCRATCH)
else
# No local rpath: the installed binaries load nothing from beside themselves. The rest gives up
# no hardening (Tests/Benchmarks/README.md, "The default build and the tuned one", has what each
# is worth): generic types' metadata through accessors instead of mangled names the runtime
# demangles at first use; the toolchain's lld, writing relative relocations compactly (DT_RELR,
# glibc 2.36); and no symbol exported from the executables, which nothing loads symbols from.
SCRATCH ?= .build-release
BUILD = $(SWIFT) build -c release --static-swift-stdlib --disable-local-rpath \
	-Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors \
	-Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic --scratch-path $(SCRATCH)
endif

# The release is written in one place, Sources/CBuildInfo/Release.h (plain `swift build` reads
# it too). A tree that is not the tag v$(RELEASE) adds its commit: 0.3.0+gabc1234(-dirty).
# Expanded once, when make starts: a commit during the build must not change it half-way.
# No # in these lines: make before 4.3 reads it as a comment, 4.3 passes \# on.
RELEASE := $(shell sed -n 's/.*NOTIFY_ROUTE_RELEASE "\(.*\)".*/\1/p' Sources/CBuildInfo/Release.h)
ifndef VERSION
COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null)
ifeq ($(COMMIT),)
VERSION := $(RELEASE)
else
DIRTY := $(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo -dirty)
TAGGED := $(shell git tag --points-at HEAD 2>/dev/null | grep -Fx 'v$(RELEASE)')
VERSION := $(if $(and $(TAGGED),$(if $(DIRTY),,x)),$(RELEASE),$(RELEASE)+g$(COMMIT)$(DIRTY))
endif
endif
GENERATED = $(SCRATCH)/install-files

.PHONY: all build version-header man completions install install-only uninstall clean-install-files deps deb version

all: build man completions

version:
	@echo $(VERSION)

# Rewritten only when the version changes; the C file is touched so that the build,
# which does not know a header that did not exist before, compiles it again.
version-header:
	@printf '#define NOTIFY_ROUTE_VERSION "%s"\n' '$(VERSION)' > .build-version.h.new
	@if ! cmp -s .build-version.h.new .build-version.h; then \
		mv .build-version.h.new .build-version.h; touch Sources/CBuildInfo/BuildInfo.c; \
	else rm -f .build-version.h.new; fi

# Two executables, installed side by side: notify-route, which links no network code, runs
# notify-route-network from its own directory for a command that needs a network sink.
# Each is stripped, its debug information kept in NAME.debug and named by a debug link.
build: version-header
	@$(BUILD) --product notify-route $${LEAN_FLAGS[@]}
	@$(BUILD) --product notify-route-network
	@mkdir -p $(GENERATED)
	@cp "$$($(BUILD) --show-bin-path)/notify-route" "$$($(BUILD) --show-bin-path)/notify-route-network" $(GENERATED)/
	@cd $(GENERATED) && for b in notify-route notify-route-network; do \
		objcopy --only-keep-debug --compress-debug-sections $$b $$b.debug && \
		objcopy --strip-all --remove-section=.comment --add-gnu-debuglink=$$b.debug $$b && chmod 0644 $$b.debug || exit 1; done

# swift-argument-parser's generate-manual (the tool behind its GenerateManual plugin),
# run on the binary just built: the plugin itself would build every product of the
# package (benchmarks, fuzzers) in another configuration first.
man: build
	@$(BUILD) --product generate-manual >/dev/null
	@rm -rf $(GENERATED)/man && mkdir -p $(GENERATED)/man
	@"$$($(BUILD) --show-bin-path)/generate-manual" $(GENERATED)/notify-route \
		--multi-page --output-directory $(GENERATED)/man
	@bash config/man/finish-pages.sh $(GENERATED)/notify-route $(GENERATED)/man

completions: build
	@mkdir -p $(GENERATED)/completions
	@for shell in bash zsh fish; do \
		$(GENERATED)/notify-route --generate-completion-script $$shell > $(GENERATED)/completions/notify-route.$$shell; done

# The build ID of an ELF file, as the path of its debug file under $(DEBUGDIR): ab/cdef....debug.
debug_path = $$(readelf -n $(1) | sed -n 's/^ *Build ID: \(..\)\(.*\)/\1\/\2.debug/p')

install: all
	@$(MAKE) --no-print-directory install-only VERSION='$(VERSION)'

# install without building first: what `make deb` stages from the build it has made.
install-only:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(BASHDIR) \
		$(DESTDIR)$(ZSHDIR) $(DESTDIR)$(FISHDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSTEMUNITDIR) $(DESTDIR)$(CATALOGDIR) $(DESTDIR)$(DOCDIR)
	install -m 0755 $(GENERATED)/notify-route $(GENERATED)/notify-route-network $(DESTDIR)$(BINDIR)/
	if [ "$(DEBUG_FILES)" = 1 ]; then for b in notify-route notify-route-network; do \
		path=$(call debug_path,$(GENERATED)/$$b) && [ -n "$$path" ] && \
		install -D -m 0644 $(GENERATED)/$$b.debug $(DESTDIR)$(DEBUGDIR)/$$path || exit 1; done; fi
	install -m 0644 $(GENERATED)/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(GENERATED)/man/*.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 $(GENERATED)/completions/notify-route.bash $(DESTDIR)$(BASHDIR)/notify-route
	install -m 0644 $(GENERATED)/completions/notify-route.zsh $(DESTDIR)$(ZSHDIR)/_notify-route
	install -m 0644 $(GENERATED)/completions/notify-route.fish $(DESTDIR)$(FISHDIR)/notify-route.fish
	for unit in notify-route.service notify-route-failure@.service; do \
		sed 's|/usr/local/bin/notify-route|$(BINDIR)/notify-route|' config/systemd/$$unit > $(DESTDIR)$(UNITDIR)/$$unit && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit || exit 1; done
	install -m 0644 config/systemd/notify-route.socket $(DESTDIR)$(UNITDIR)/notify-route.socket
	sed 's|/usr/local/bin/notify-route|$(BINDIR)/notify-route|' config/systemd/system/notify-route-failure@.service \
		> $(DESTDIR)$(SYSTEMUNITDIR)/notify-route-failure@.service && chmod 0644 $(DESTDIR)$(SYSTEMUNITDIR)/notify-route-failure@.service
	install -m 0644 config/journal/notify-route.catalog $(DESTDIR)$(CATALOGDIR)/notify-route.catalog
	install -m 0644 config/notify-route.yaml config/REFERENCE.md $(DESTDIR)$(DOCDIR)/
	if [ "$(NOTIFY_SEND_LINK)" = 1 ]; then ln -sf notify-route $(DESTDIR)$(BINDIR)/notify-send; fi
	@echo "installed notify-route $(VERSION) into $(DESTDIR)$(PREFIX)"
	@echo "journalctl -x reads $(CATALOGDIR) only after: journalctl --update-catalog (and only /usr/lib/systemd/catalog by default)"
	@echo "the user units: systemctl --user daemon-reload && systemctl --user enable --now notify-route.socket"

# Every file install writes, by name (not the directories: others' files live there). The
# debug files first: their names come from the installed binaries' build IDs.
uninstall:
	for b in notify-route notify-route-network; do \
		if [ -f $(DESTDIR)$(BINDIR)/$$b ]; then path=$(call debug_path,$(DESTDIR)$(BINDIR)/$$b); \
		[ -z "$$path" ] || { rm -f $(DESTDIR)$(DEBUGDIR)/$$path; rmdir $$(dirname $(DESTDIR)$(DEBUGDIR)/$$path) 2>/dev/null || true; }; fi; done
	rm -f $(DESTDIR)$(BINDIR)/notify-route $(DESTDIR)$(BINDIR)/notify-route-network $(DESTDIR)$(MANDIR)/man1/notify-route.1 $(DESTDIR)$(MANDIR)/man1/notify-route.*.1 \
		$(DESTDIR)$(MANDIR)/man5/notify-route.yaml.5 $(DESTDIR)$(BASHDIR)/notify-route $(DESTDIR)$(ZSHDIR)/_notify-route \
		$(DESTDIR)$(FISHDIR)/notify-route.fish $(DESTDIR)$(UNITDIR)/notify-route.service $(DESTDIR)$(UNITDIR)/notify-route.socket \
		$(DESTDIR)$(UNITDIR)/notify-route-failure@.service $(DESTDIR)$(SYSTEMUNITDIR)/notify-route-failure@.service \
		$(DESTDIR)$(CATALOGDIR)/notify-route.catalog $(DESTDIR)$(DOCDIR)/notify-route.yaml $(DESTDIR)$(DOCDIR)/REFERENCE.md
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null
	if [ -L $(DESTDIR)$(BINDIR)/notify-send ] && [ "$$(readlink $(DESTDIR)$(BINDIR)/notify-send)" = notify-route ]; then \
		rm -f $(DESTDIR)$(BINDIR)/notify-send; fi

# The Debian 12 packages that build, install and test notify-route (.ci/setup runs this target).
# libyaml-dev, libsqlite3-dev: the config parser and the state database; binutils: install strips
# the binaries and keeps their debug files (objcopy, readelf); make; man-db: install-check renders the
# man pages; dpkg-dev: make deb (dpkg-shlibdeps). libnotify-bin: notify-send (a benchmark peer) and
# libnotify4, which the desktop sink loads. For the tests: sqlite3 reads the state database;
# libsystemd-dev and libnotify-dev, the real headers that .ci/check-c-headers.sh holds the plugins'
# declarations to (and the benchmarks' C peer); systemd: journald and journalctl; tzdata, dbus,
# python3-dbusmock, tmux: the components of Tests/with-components.sh; prometheus-alertmanager (its
# templates live in the package), curl and openssl (a certificate nobody trusts): the network sink tests.
DEPS = libyaml-dev libsqlite3-dev binutils make man-db dpkg-dev libnotify-bin sqlite3 libsystemd-dev libnotify-dev \
	systemd tzdata dbus python3-dbusmock tmux prometheus-alertmanager curl openssl
deps:
	@need=(); for p in $(DEPS); do \
		dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q "install ok installed" || need+=("$$p"); done; \
	if [ $${#need[@]} -gt 0 ]; then \
		export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && \
		apt-get install -y -qq --no-install-recommends "$${need[@]}" >/dev/null; fi

# A Debian package of the default release build, made with dpkg-deb alone (config/debian/make-deb.sh).
deb: all
	@rm -rf $(SCRATCH)/deb && $(MAKE) --no-print-directory install-only VERSION='$(VERSION)' DESTDIR=$$PWD/$(SCRATCH)/deb/root \
		PREFIX=/usr DEBUG_FILES=0 NOTIFY_SEND_LINK=0 ZSHDIR=/usr/share/zsh/vendor-completions >/dev/null
	@bash config/debian/make-deb.sh '$(VERSION)' $(SCRATCH)/deb

clean-install-files:
	rm -rf $(GENERATED) .build-version.h
